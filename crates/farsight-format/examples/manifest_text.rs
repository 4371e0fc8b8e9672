//! Times the crate's hand-written manifest printer against `ron`'s pretty printer
//! on cluster manifests from a corpus-sized one (one level, 20 instances, as
//! SimpleInstancing's 18.7 KB manifest) up to 10,000 instances (1.3 MB of text), and
//! checks they print the same bytes.
//!
//! `cargo run -p farsight-format --example manifest_text --config 'profile.dev.package.farsight-format.opt-level=3'`

use std::time::Instant;

use farsight_format::{ClusterLevelEntry, ClusterMeshManifest, RecordIndex, NO_PARENT_ERROR};

fn manifest(levels: usize, instances: usize) -> ClusterMeshManifest {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut f = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 * 10.0 - 5.0
    };
    ClusterMeshManifest {
        name: "stress".into(),
        bounds_min: [f(), f(), f()],
        bounds_max: [f(), f(), f()],
        levels: (0..levels)
            .map(|l| ClusterLevelEntry {
                record: RecordIndex(l as u32),
                max_parent_error: if l + 1 == levels { NO_PARENT_ERROR } else { f().abs() },
                triangles: 100_000 >> l.min(16),
                clusters: 1000 >> l.min(9),
                vertices: 60_000 >> l.min(16),
                bytes: 2_000_000 >> l.min(20),
            })
            .collect(),
        materials: (0..16).map(|m| format!("material_{m}")).collect(),
        instances: (0..instances).map(|_| std::array::from_fn(|_| f())).collect(),
        ..Default::default()
    }
}

fn best_ns(runs: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut len = 0;
    for _ in 0..runs {
        let t = Instant::now();
        len = std::hint::black_box(f());
        best = best.min(t.elapsed().as_nanos() as f64);
    }
    (best, len)
}

fn main() {
    println!("levels instances   bytes   farsight_us   ron_us   ratio");
    for (levels, instances, runs) in [(1, 0, 2000), (1, 20, 1000), (25, 20, 1000), (25, 1000, 50), (25, 10_000, 10)] {
        let m = manifest(levels, instances);
        let ours = farsight_format::manifest_text_for_bench(&m).unwrap();
        let theirs = ron::ser::to_string_pretty(&m, ron::ser::PrettyConfig::default()).unwrap();
        assert_eq!(ours, theirs.as_bytes(), "the printers disagree");
        let (a, len) = best_ns(runs, || farsight_format::manifest_text_for_bench(&m).unwrap().len());
        let (b, _) = best_ns(runs, || {
            ron::ser::to_string_pretty(&m, ron::ser::PrettyConfig::default()).unwrap().len()
        });
        println!(
            "{levels:6} {instances:9} {len:7} {:13.1} {:8.1} {:7.2}",
            a / 1e3,
            b / 1e3,
            b / a
        );
    }
}
