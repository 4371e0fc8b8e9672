//! Where a metropolis bake spends its time, stage by stage, on one thread:
//! `cargo run --release -p farsight-building --features bake --example bake_profile -- [KIT] [GRID]`.
//!
//! Stages: recipe generation (the metropolis), simplification (every level's
//! recipe), the bake (kernel calls counted and timed by kind, the rest is turning
//! kernel output into meshes, provenance and batches), concatenation of the far level
//! at 35 m cells, bands, the full and the cooked encode, and writing the files to a
//! scratch folder (removed at the end).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use farsight_building::bake::{
    bake_cached, Kernel, KernelError, KernelMesh, ManifoldKernel, MeshCache,
};
use farsight_building::{bands, metropolis, Geometry, Kit, LodCell, LodPolicy, RecordCache};
use glam::DAffine3;

/// Calls and CPU nanoseconds per kernel operation: solid, union, subtract, mesh.
#[derive(Default)]
struct Timed {
    calls: [AtomicU64; 4],
    nanos: [AtomicU64; 4],
}

impl Timed {
    fn time<T>(&self, op: usize, f: impl FnOnce() -> T) -> T {
        let start = cpu();
        let out = f();
        self.calls[op].fetch_add(1, Ordering::Relaxed);
        let spent = ((cpu() - start) * 1e9) as u64;
        self.nanos[op].fetch_add(spent, Ordering::Relaxed);
        out
    }

    fn secs(&self) -> f64 {
        self.nanos
            .iter()
            .map(|n| n.load(Ordering::Relaxed) as f64 / 1e9)
            .sum()
    }
}

impl Kernel for Timed {
    type Solid = <ManifoldKernel as Kernel>::Solid;
    fn solid(
        &self,
        geometry: &Geometry,
        transform: &DAffine3,
        operand: u32,
    ) -> Result<Self::Solid, KernelError> {
        self.time(0, || ManifoldKernel.solid(geometry, transform, operand))
    }
    fn union(&self, solids: &[Self::Solid]) -> Result<Self::Solid, KernelError> {
        self.time(1, || ManifoldKernel.union(solids))
    }
    fn subtract(
        &self,
        solid: &Self::Solid,
        cutter: &Self::Solid,
    ) -> Result<Self::Solid, KernelError> {
        self.time(2, || ManifoldKernel.subtract(solid, cutter))
    }
    fn mesh(&self, solid: &Self::Solid) -> Result<KernelMesh, KernelError> {
        self.time(3, || ManifoldKernel.mesh(solid))
    }
}

/// CPU seconds this thread has run (Linux's schedstat; 0 elsewhere): on a loaded
/// machine a stage's CPU time says more than its wall time.
fn cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e9)
}

/// A stage's start: wall clock and CPU time.
struct Start(Instant, f64);

impl Start {
    fn now() -> Start {
        Start(Instant::now(), cpu())
    }
    fn elapsed(&self) -> (f64, f64) {
        (self.0.elapsed().as_secs_f64(), cpu() - self.1)
    }
}

fn tangents(m: &farsight_format::MeshData) -> Vec<[f32; 4]> {
    farsight_building::uv_gradient_tangents(m)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kit_name = args.first().map_or("corporate", String::as_str);
    let grid: u32 = args
        .get(1)
        .map_or(8, |g| g.parse().expect("GRID is a number"));
    let kit = Kit::builtin(kit_name).expect("a built-in kit: corporate or dark-city");
    let mut stages: Vec<(&str, (f64, f64))> = Vec::new();
    let mut stage = |name, t: Start| stages.push((name, t.elapsed()));

    let t = Start::now();
    let city = metropolis(&kit, grid, 1);
    stage("recipe generation", t);

    let ladder = LodPolicy::ladder();
    let t = Start::now();
    for b in &city {
        for p in ladder.iter().filter(|p| p.simplifies()) {
            std::hint::black_box(b.simplified(p));
        }
    }
    stage("simplify (apart from the bake)", t);

    let kernel = Timed::default();
    let cache = MeshCache::new();
    let t = Start::now();
    let baked: Vec<_> = city
        .iter()
        .map(|b| bake_cached(b, &ladder, &kernel, &cache).unwrap().0)
        .collect();
    let bake_secs = t.elapsed();
    stages.push(("bake: kernel", (kernel.secs(), kernel.secs())));
    stages.push((
        "bake: the rest",
        (bake_secs.0 - kernel.secs(), bake_secs.1 - kernel.secs()),
    ));

    let t = Start::now();
    for b in &baked {
        let last = b.levels.last().unwrap();
        std::hint::black_box(last.concatenated(LodCell::Side(35.0), &Default::default()));
    }
    stages.push(("concatenate (35 m cells, apart)", t.elapsed()));

    let t = Start::now();
    for b in &baked {
        std::hint::black_box(bands(b, farsight_building::DEFAULT_CROSSFADE));
    }
    stages.push(("bands", t.elapsed()));

    let t = Start::now();
    let text: usize = city.iter().map(|b| ron::to_string(b).unwrap().len()).sum();
    stages.push(("(recipes as RON, apart)", t.elapsed()));
    let t = Start::now();
    let colliders: usize = baked
        .iter()
        .map(|b| {
            let hulls: Vec<_> = b.levels[0]
                .colliders
                .iter()
                .map(|c| (&c.instance, c.hull))
                .collect();
            ron::to_string(&hulls).unwrap().len()
        })
        .sum();
    stages.push(("(hulls as RON, apart)", t.elapsed()));
    println!("recipe text {text} bytes, hull text {colliders} bytes");
    let records = RecordCache::new();
    let t = Start::now();
    let full: Vec<Vec<u8>> = baked
        .iter()
        .map(|b| b.write_full_with(&records).unwrap())
        .collect();
    stages.push(("encode full", t.elapsed()));

    let records = RecordCache::new();
    let t = Start::now();
    let cooked: Vec<Vec<u8>> = baked
        .iter()
        .map(|b| b.write_cooked_with(&tangents, &records).unwrap())
        .collect();
    stages.push(("encode cooked", t.elapsed()));

    let dir = std::env::temp_dir().join(format!("farsight-bake-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = Start::now();
    for (b, (f, c)) in city.iter().zip(full.iter().zip(&cooked)) {
        std::fs::write(dir.join(format!("{}.farsight", b.id)), f).unwrap();
        std::fs::write(dir.join(format!("{}.cooked.farsight", b.id)), c).unwrap();
    }
    stages.push(("write files", t.elapsed()));
    let _ = std::fs::remove_dir_all(&dir);

    println!("{kit_name} {grid} x {grid} metropolis, one thread (wall s, CPU s)");
    for (name, (wall, cpu)) in &stages {
        println!("  {name:<34} {wall:>9.4} {cpu:>9.4}");
    }
    let names = ["solid", "union", "subtract", "mesh"];
    for (k, name) in names.iter().enumerate() {
        println!(
            "  kernel {name:<10} {:>7} calls {:>9.4} s",
            kernel.calls[k].load(Ordering::Relaxed),
            kernel.nanos[k].load(Ordering::Relaxed) as f64 / 1e9
        );
    }
    println!(
        "  elements meshed {} ({} from the cache)",
        cache.misses(),
        cache.hits()
    );
    // Bake and full files as the CLI makes them (fresh caches), on 1 and 2 threads,
    // the buildings dealt out in turn: wall seconds.
    for threads in [1usize, 2] {
        let (cache, records) = (MeshCache::new(), RecordCache::new());
        let t = Instant::now();
        std::thread::scope(|s| {
            for k in 0..threads {
                let (cache, records, city, ladder) = (&cache, &records, &city, &ladder);
                s.spawn(move || {
                    for b in city.iter().skip(k).step_by(threads) {
                        let (baked, _) = bake_cached(b, ladder, &ManifoldKernel, cache).unwrap();
                        std::hint::black_box(baked.write_full_with(records).unwrap());
                    }
                });
            }
        });
        println!(
            "  bake + full files on {threads} thread(s): {:.3} s wall",
            t.elapsed().as_secs_f64()
        );
    }
    let mb = |v: &[Vec<u8>]| v.iter().map(Vec::len).sum::<usize>() as f64 / 1e6;
    println!(
        "  bake {:.3} s wall, {:.3} s CPU ({:.2} ms CPU per building); full {:.2} MB, cooked {:.2} MB",
        bake_secs.0,
        bake_secs.1,
        bake_secs.1 * 1e3 / city.len() as f64,
        mb(&full),
        mb(&cooked)
    );
}
