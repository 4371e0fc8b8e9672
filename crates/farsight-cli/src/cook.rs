//! `farsight cook mesh IN -o OUT [--lod-chain|--clusters]`: import a glTF or OBJ
//! mesh, prepare it and write a discrete LOD chain or a cluster LOD DAG.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use farsight_mesh::{
    cook_clusters, encode_lod_chain, generate_lod_chain, import_prepared, write_atomically,
    ClusterConfig, LodChainConfig,
};

#[derive(Args)]
pub struct CookArgs {
    #[command(subcommand)]
    what: CookWhat,
}

#[derive(Subcommand)]
enum CookWhat {
    /// Cook a .gltf, .glb or .obj mesh into a farsight file.
    Mesh(MeshArgs),
}

#[derive(Args)]
struct MeshArgs {
    /// Input mesh (.gltf with its .bin, .glb, or .obj).
    input: PathBuf,
    /// Output farsight file.
    #[arg(short, long)]
    output: PathBuf,
    /// Write a discrete LOD chain (seed 002): half, then a quarter per level.
    #[arg(long, conflicts_with = "clusters")]
    lod_chain: bool,
    /// Write a cluster LOD DAG (seed 003); the default.
    #[arg(long)]
    clusters: bool,
    /// Most triangles per cluster (4..=128).
    #[arg(long, default_value_t = ClusterConfig::default().max_triangles)]
    cluster_triangles: usize,
    /// Target clusters per DAG group.
    #[arg(long, default_value_t = ClusterConfig::default().partition_size)]
    group_size: usize,
    /// Most levels, LOD0 included.
    #[arg(long)]
    max_levels: Option<usize>,
}

pub fn run(args: CookArgs) -> Result<(), Box<dyn std::error::Error>> {
    let CookWhat::Mesh(a) = args.what;
    let steps = 4;
    let bar = ProgressBar::new(steps);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:20}] {pos}/{len} {msg} ({elapsed})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(100));
    bar.set_message(format!("importing {}", a.input.display()));
    let (prepared, mut warnings) = import_prepared(&a.input)?;
    bar.inc(1);
    let tris = prepared.mesh.triangle_count();
    let mut report = Vec::new();
    let bytes = if a.lod_chain {
        bar.set_message(format!("simplifying {tris} triangles into a LOD chain"));
        let mut config = LodChainConfig::default();
        if let Some(m) = a.max_levels {
            config.max_levels = m;
        }
        let chain = generate_lod_chain(&prepared.mesh, &config);
        bar.inc(1);
        warnings.extend(chain.warnings.iter().cloned());
        report.push(format!(
            "{:<24} {:>10} {:>12} {:>14}",
            "level", "triangles", "error", "hand-over"
        ));
        for l in &chain.levels {
            report.push(format!(
                "{:<24} {:>10} {:>12.6} {:>14.3}",
                l.name,
                l.mesh.triangle_count(),
                l.error,
                l.max_distance
            ));
        }
        bar.set_message("encoding");
        let bytes = encode_lod_chain(&prepared.mesh.name, &chain)?;
        bar.inc(1);
        bytes
    } else {
        let mut config = ClusterConfig {
            max_triangles: a.cluster_triangles,
            partition_size: a.group_size,
            ..ClusterConfig::default()
        };
        if let Some(m) = a.max_levels {
            config.max_levels = m;
        }
        bar.set_message(format!(
            "building the cluster DAG of {tris} triangles and checking every cut"
        ));
        let mesh = cook_clusters(&prepared.mesh, &config)?;
        bar.inc(1);
        warnings.extend(mesh.warnings.iter().cloned());
        report.push(format!(
            "{:<6} {:>10} {:>9} {:>8} {:>12} {:>15} {:>12}",
            "level", "triangles", "clusters", "copied", "max error", "max parent err", "hand-over"
        ));
        for (i, l) in mesh.levels.iter().enumerate() {
            let parent = l.max_parent_error();
            let (parent, hand_over) = if parent == f32::MAX {
                ("always".to_owned(), "never".to_owned())
            } else {
                (
                    format!("{parent:.6}"),
                    format!("{:.3}", farsight_mesh::one_pixel_distance(parent)),
                )
            };
            report.push(format!(
                "{:<6} {:>10} {:>9} {:>8} {:>12.6} {:>15} {:>12}",
                i,
                l.triangle_count(),
                l.clusters.len(),
                l.copied_clusters,
                l.max_error(),
                parent,
                hand_over
            ));
        }
        report.push(
            "hand-over: distance (model units, scale 1) past which the level is no longer \
             needed: its max parent error covers under 1 px of 1080 lines at 60 degrees"
                .to_owned(),
        );
        bar.set_message("encoding");
        let bytes = mesh.encode()?;
        bar.inc(1);
        bytes
    };
    bar.set_message(format!("writing {}", a.output.display()));
    write_atomically(&a.output, &bytes)?;
    bar.inc(1);
    bar.finish_and_clear();
    println!(
        "{} -> {} ({} bytes)",
        a.input.display(),
        a.output.display(),
        bytes.len()
    );
    for line in report {
        println!("{line}");
    }
    for w in warnings {
        println!("warning: {w:?}");
    }
    Ok(())
}
