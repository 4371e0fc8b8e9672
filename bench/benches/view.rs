//! The visibility pass (cull + LOD + gather) at 10k, 100k and 1M objects, on one
//! thread and on all threads, beside the memory floor: one pass that reads the same
//! input columns and writes the same output columns with no logic.
//!
//! `cargo bench -p farsight-bench --bench view`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use farsight_geom::Aabb;
use farsight_view::scenes::{city_block, street_camera};
use farsight_view::{
    CameraStore, EntityLod, FrameContext, ObjectDraw, ObjectStore, RenderConfig, VisibilitySystem,
};
use glam::Mat4;
use rayon::prelude::*;

/// The store's packed per-object hot fields, same layout (20 bytes).
#[derive(Clone, Copy)]
struct Hot {
    flags: u8,
    mesh: u32,
    material: u32,
    lod_slot: u32,
    skin_slot: u32,
}

/// The input and output columns of the pass as plain arrays.
struct FloorColumns {
    hot: Vec<Hot>,
    world: Vec<Mat4>,
    bounds: Vec<Aabb>,
    entity: Vec<u64>,
    /// The objects' LOD components (a copy of the store's side table), indexed by
    /// `Hot::lod_slot`: the pass reads one per LOD object.
    lods: Vec<EntityLod>,
    out_models: Vec<Mat4>,
    out_bounds: Vec<Aabb>,
    out_draws: Vec<ObjectDraw>,
    out_skin_first: Vec<u32>,
    out_entities: Vec<u64>,
    out_lod: Vec<u8>,
}

impl FloorColumns {
    fn new(store: &ObjectStore) -> Self {
        let n = store.len();
        let ids = (0..n as u32).map(farsight_view::ObjectId);
        let mut lods = Vec::new();
        let hot = ids
            .clone()
            .map(|i| Hot {
                flags: 1,
                mesh: store.mesh(i).0,
                material: store.material(i).0,
                lod_slot: match store.lod(i) {
                    Some(l) => {
                        lods.push(l.clone());
                        (lods.len() - 1) as u32
                    }
                    None => u32::MAX,
                },
                skin_slot: u32::MAX,
            })
            .collect();
        Self {
            hot,
            lods,
            world: ids
                .clone()
                .map(|i| store.world(i).unwrap_or(Mat4::IDENTITY))
                .collect(),
            bounds: ids.map(|i| store.bounds(i)).collect(),
            entity: (0..n as u64).collect(),
            out_models: vec![Mat4::IDENTITY; n],
            out_bounds: vec![Aabb::EMPTY; n],
            out_draws: vec![ObjectDraw::default(); n],
            out_skin_first: vec![0; n],
            out_entities: vec![0; n],
            out_lod: vec![0; n],
        }
    }

    /// Copy every input column to its output column, chunked like the pass. With
    /// `with_lod`, also read each LOD object's component (its current level goes to
    /// the LOD column), as the pass must.
    fn run(&mut self, with_lod: bool) {
        const CHUNK: usize = 1024;
        let FloorColumns {
            hot,
            world,
            bounds,
            entity,
            lods,
            out_models,
            out_bounds,
            out_draws,
            out_skin_first,
            out_entities,
            out_lod,
        } = self;
        let (hot, world, bounds, entity, lods) = (&*hot, &*world, &*bounds, &*entity, &*lods);
        (
            out_models.par_chunks_mut(CHUNK),
            out_bounds.par_chunks_mut(CHUNK),
            out_draws.par_chunks_mut(CHUNK),
            out_skin_first.par_chunks_mut(CHUNK),
            out_entities.par_chunks_mut(CHUNK),
            out_lod.par_chunks_mut(CHUNK),
        )
            .into_par_iter()
            .enumerate()
            .for_each(|(ci, (m, b, d, sf, e, l))| {
                let base = ci * CHUNK;
                for k in 0..m.len() {
                    let i = base + k;
                    m[k] = world[i];
                    b[k] = bounds[i];
                    let h = hot[i];
                    d[k] = ObjectDraw {
                        mesh: farsight_view::MeshHandle(h.mesh),
                        material: farsight_view::MaterialHandle(h.material),
                        skin_count: h.skin_slot,
                    };
                    sf[k] = h.lod_slot;
                    e[k] = entity[i];
                    l[k] = if with_lod {
                        lods.get(h.lod_slot as usize)
                            .map_or(h.flags, |c| c.current().unwrap_or(u8::MAX))
                    } else {
                        h.flags
                    };
                }
            });
    }
}

fn bench_pass(c: &mut Criterion) {
    let threads_all = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut group = c.benchmark_group("view_pass");
    group.sample_size(10);
    group.warm_up_time(std::time::Duration::from_millis(500));
    group.measurement_time(std::time::Duration::from_secs(3));
    for n in [10_000usize, 100_000, 1_000_000] {
        let mut store = ObjectStore::with_capacity(n);
        let layout = city_block(&mut store, n, 9);
        let mut cams = CameraStore::new();
        cams.insert(street_camera(&layout));
        let mut settings = RenderConfig {
            cull_min_pixels: 2.0,
            cull_max_distance: 1500.0,
            ..Default::default()
        };
        // Every frame runs the full LOD selection: no throttle discount in the figure.
        settings.lod.update_frame_interval = 1;
        let mut floor = FloorColumns::new(&store);
        group.throughput(Throughput::Elements(n as u64));
        for (label, threads) in [("1thread", 1usize), ("all", threads_all)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut sys = VisibilitySystem::new();
            let mut frame = 0u64;
            group.bench_with_input(BenchmarkId::new(format!("pass/{label}"), n), &n, |b, _| {
                b.iter(|| {
                    frame += 1;
                    let ctx = FrameContext {
                        frame,
                        host_view: None,
                        cameras: &cams,
                        world_epoch: 0,
                        settings: &settings,
                        stereo_eyes: None,
                    };
                    pool.install(|| sys.update(&mut store, &ctx).objects.visible.len())
                })
            });
            group.bench_with_input(BenchmarkId::new(format!("floor/{label}"), n), &n, |b, _| {
                b.iter(|| pool.install(|| floor.run(false)))
            });
            group.bench_with_input(
                BenchmarkId::new(format!("floor_with_lod/{label}"), n),
                &n,
                |b, _| b.iter(|| pool.install(|| floor.run(true))),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench_pass);
criterion_main!(benches);
