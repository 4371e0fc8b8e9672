//! `farsight cook mesh IN... -o OUT [--lod-chain [--cooked]|--clusters]`: import glTF or OBJ
//! meshes, prepare them and write a discrete LOD chain or a cluster LOD DAG each.
//! Several inputs cook in parallel (rayon, one mesh per core, results in input
//! order); `OUT` is then a directory and each file is named after its input.
//!
//! `farsight cook --manifest LIST --shard i/n --cache DIR`: a deterministic share
//! of a content list cooked into a content-addressed cache ([`manifest`]).

mod entry;
mod manifest;

pub(crate) use entry::check_bytes as check_entry_bytes;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use farsight_mesh::{
    cook_file_with, write_atomically, ChainRecords, ClusterConfig, CookKind, CookOutput, Cooked,
    LodChainConfig, TextureConfig,
};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CookArgs {
    #[command(subcommand)]
    what: Option<CookWhat>,
    #[command(flatten)]
    content: manifest::ContentArgs,
}

#[derive(Subcommand)]
enum CookWhat {
    /// Cook .gltf, .glb or .obj meshes into farsight files.
    Mesh(MeshArgs),
}

#[derive(Args)]
struct MeshArgs {
    /// Input meshes (.gltf with its .bin, .glb, or .obj); several cook in parallel.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output farsight file, or with several inputs (or an existing directory) the
    /// directory that receives `<input name>.farsight` for each.
    #[arg(short, long)]
    output: PathBuf,
    /// Write a discrete LOD chain: each level keeps about half, then a quarter, of the
    /// triangles of the one before.
    #[arg(long, conflicts_with = "clusters")]
    lod_chain: bool,
    /// With --lod-chain: store the levels cooked for a GPU (the cooked file, version
    /// 2: 16-bit positions and uvs, octahedral normals and tangents, predicted,
    /// meshopt + zstd coded) instead of full precision.
    #[arg(long, requires = "lod_chain")]
    cooked: bool,
    /// Write a cluster LOD DAG (clusters of triangles simplified in groups, level
    /// by level, for fine-grained streaming); the default.
    #[arg(long)]
    clusters: bool,
    /// Most triangles per cluster (4..=128).
    #[arg(long, default_value_t = ClusterConfig::default().max_triangles as u64,
          value_parser = clap::value_parser!(u64).range(4..=128))]
    cluster_triangles: u64,
    /// Target clusters per DAG group.
    #[arg(long, default_value_t = ClusterConfig::default().partition_size as u64,
          value_parser = clap::value_parser!(u64).range(1..=4096))]
    group_size: u64,
    /// Most levels, LOD0 included.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    max_levels: Option<u64>,
    /// Store the materials' images inside the cooked file instead of beside it
    /// (beside it, each is `<content hash>.<png|jpg|...>`, written once however
    /// many models use it).
    #[arg(long)]
    embed_textures: bool,
    /// Scale images larger than N pixels on a side down to fit (Catmull-Rom
    /// resampling; KTX2 and WebP are copied as they are).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_texture_size: Option<u32>,
    /// Store each image's mip chain too (each level half the one before, to 1x1).
    #[arg(long)]
    mips: bool,
}

/// Where each input's file goes; refuses two inputs that would write one file.
fn outputs(a: &MeshArgs) -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    if a.inputs.len() == 1 && !a.output.is_dir() {
        return Ok(vec![a.output.clone()]);
    }
    if !a.output.is_dir() {
        return Err(format!(
            "{} inputs need -o to name an existing directory; {} is not one",
            a.inputs.len(),
            a.output.display()
        )
        .into());
    }
    let mut out: Vec<PathBuf> = Vec::with_capacity(a.inputs.len());
    for input in &a.inputs {
        let stem = input.file_stem().unwrap_or(input.as_os_str());
        let path = a.output.join(Path::new(stem).with_extension("farsight"));
        if let Some(i) = out.iter().position(|p| *p == path) {
            return Err(format!(
                "{} and {} would both write {}",
                a.inputs[i].display(),
                input.display(),
                path.display()
            )
            .into());
        }
        out.push(path);
    }
    Ok(out)
}

/// What `cook mesh` and a content list's items choose: the kind of file and its
/// options, as [`CookKind`].
pub(crate) struct KindConfig {
    pub lod_chain: bool,
    pub cooked: bool,
    pub cluster_triangles: u64,
    pub group_size: u64,
    pub max_levels: Option<u64>,
}

impl KindConfig {
    pub(crate) fn kind(&self) -> CookKind {
        if self.lod_chain {
            let mut config = LodChainConfig::default();
            if let Some(m) = self.max_levels {
                config.max_levels = m as usize;
            }
            let records = if self.cooked {
                ChainRecords::Cooked(farsight_format::CookConfig::default())
            } else {
                ChainRecords::Full
            };
            CookKind::LodChain(config, records)
        } else {
            let mut config = ClusterConfig {
                max_triangles: self.cluster_triangles as usize,
                partition_size: self.group_size as usize,
                ..ClusterConfig::default()
            };
            if let Some(m) = self.max_levels {
                config.max_levels = m as usize;
            }
            CookKind::Clusters(config)
        }
    }
}

pub fn run(args: CookArgs) -> Result<(), Box<dyn std::error::Error>> {
    let a = match args.what {
        Some(CookWhat::Mesh(a)) => a,
        None => return manifest::run(args.content),
    };
    let kind = KindConfig {
        lod_chain: a.lod_chain,
        cooked: a.cooked,
        cluster_triangles: a.cluster_triangles,
        group_size: a.group_size,
        max_levels: a.max_levels,
    }
    .kind();
    let textures = TextureConfig {
        embed: a.embed_textures,
        max_size: a.max_texture_size,
        mips: a.mips,
    };
    let outputs = outputs(&a)?;
    // Every output is checked before any mesh cooks; inputs must exist.
    for input in &a.inputs {
        if !input.is_file() {
            return Err(format!("{}: no such file", input.display()).into());
        }
    }
    for o in &outputs {
        crate::output::check_output_file(o, "cooked file")?;
    }
    let bar = ProgressBar::new(a.inputs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:20}] {pos}/{len} meshes {msg} ({elapsed})")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(100));
    let what = if a.lod_chain {
        "importing, simplifying into LOD chains"
    } else {
        "importing, building cluster DAGs and checking every cut"
    };
    bar.set_message(what);
    // Each mesh cooks and writes on its own; results come back in input order.
    let results: Vec<Result<CookOutput, farsight_mesh::CookError>> = a
        .inputs
        .par_iter()
        .zip(&outputs)
        .map(|(input, output)| {
            let r = cook_file_with(input, &kind, &textures).and_then(|out| {
                write_atomically(output, &out.bytes)?;
                let dir = output.parent().unwrap_or(Path::new("."));
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                out.looks
                    .write_beside(dir)
                    .map_err(|source| farsight_mesh::CookError::Write {
                        path: dir.to_owned(),
                        source,
                    })?;
                Ok(out)
            });
            bar.inc(1);
            r
        })
        .collect();
    bar.finish_and_clear();
    let mut failed = 0;
    for ((input, output), r) in a.inputs.iter().zip(&outputs).zip(results) {
        match r {
            Ok(out) => print_report(&out, output),
            Err(e) => {
                failed += 1;
                // Import errors name the file themselves; name it once.
                let text = e.to_string();
                if text.contains(&input.display().to_string()) {
                    crate::output::say(format_args!("{text} (nothing written)"));
                } else {
                    crate::output::say(format_args!(
                        "{}: {text} (nothing written)",
                        input.display()
                    ));
                }
            }
        }
    }
    if failed > 0 {
        return Err(format!("{failed} of {} meshes failed", a.inputs.len()).into());
    }
    Ok(())
}

fn print_report(out: &CookOutput, output: &Path) {
    println!(
        "{} -> {} ({} bytes)",
        out.input.display(),
        output.display(),
        out.bytes.len()
    );
    match &out.cooked {
        Cooked::LodChain { chains, instances } => {
            if !instances.is_empty() {
                println!(
                    "{} geometries stored once each, drawn by {} instances",
                    chains.len(),
                    instances.len()
                );
            }
            println!(
                "{:<24} {:>10} {:>12} {:>14}",
                "level", "triangles", "error", "hand-over"
            );
            for l in chains.iter().flat_map(|c| &c.levels) {
                println!(
                    "{:<24} {:>10} {:>12.6} {:>14.3}",
                    l.name,
                    l.mesh.triangle_count(),
                    l.error,
                    l.max_distance
                );
            }
        }
        Cooked::Clusters(mesh) => {
            if !mesh.instances.is_empty() {
                println!(
                    "1 geometry stored once, drawn by {} instances",
                    mesh.instances.len()
                );
            }
            print_cluster_levels(mesh);
            print_hand_over_note();
        }
        Cooked::ClusterScene { meshes, placements } => {
            println!(
                "{} geometries stored once each, drawn by {} instances",
                meshes.len(),
                placements.len()
            );
            for (g, mesh) in meshes.iter().enumerate() {
                let drawn = placements
                    .iter()
                    .filter(|p| p.geometry as usize == g)
                    .count();
                println!("geometry {g}: {} (drawn {drawn}x)", mesh.name);
                print_cluster_levels(mesh);
            }
            print_hand_over_note();
        }
    }
    let t = &out.looks.table;
    if !t.is_empty() {
        let bytes: usize = out.looks.images.iter().map(|i| i.bytes.len()).sum();
        println!(
            "{} materials, {} textures, {} images ({bytes} bytes) {}",
            t.materials.len(),
            t.textures.len(),
            out.looks.images.len(),
            if out.looks.embed {
                "inside the file"
            } else {
                "beside the file"
            }
        );
    }
    for w in &out.warnings {
        println!("warning: {w}");
    }
}

/// The level table of one cluster DAG, and what its hand-over column means.
fn print_cluster_levels(mesh: &farsight_mesh::ClusterMesh) {
    println!("materials: {}", mesh.materials.join(", "));
    println!(
        "{:<6} {:>10} {:>9} {:>8} {:>12} {:>15} {:>12}",
        "level", "triangles", "clusters", "copied", "max error", "max parent err", "hand-over"
    );
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
        println!(
            "{:<6} {:>10} {:>9} {:>8} {:>12.6} {:>15} {:>12}",
            i,
            l.triangle_count(),
            l.clusters.len(),
            l.copied_clusters,
            l.max_error(),
            parent,
            hand_over
        );
    }
}

fn print_hand_over_note() {
    println!(
        "hand-over: distance (model units, scale 1) past which the level is no longer \
         needed: its max parent error covers under 1 px of 1080 lines at 60 degrees"
    );
}
