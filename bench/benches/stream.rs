//! Streaming benchmarks: the region BVH (build and ~100-hit sphere queries at 10k,
//! 100k and 1M regions) beside `obvhs` (its fastest build preset, queried through its
//! box traversal with an exact sphere test at the leaves) and a linear scan in the
//! same run; and the cluster scheduler's per-frame cost at 100k models / 1M levels.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use farsight_geom::{linear_query_sphere, sphere_intersects_aabb, Aabb, Bvh, BvhBuilder};
use farsight_stream::cluster::{
    ChunkCompletion, ClusterScheduler, Decision, FrameStats, LevelDesc, ModelDesc, ModelRequest,
    SchedulerConfig,
};
use glam::Vec3;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[path = "../../crates/farsight-geom/examples/support/world.rs"]
mod world;
use world::{queries, regions};

fn to_obvhs(b: &Aabb) -> obvhs::aabb::Aabb {
    obvhs::aabb::Aabb::new(
        glam_obvhs::Vec3A::from_array(b.min.to_array()),
        glam_obvhs::Vec3A::from_array(b.max.to_array()),
    )
}

fn bvh_build(c: &mut Criterion) {
    let mut g = c.benchmark_group("stream/bvh_build");
    g.sample_size(10);
    for n in [10_000usize, 100_000, 1_000_000] {
        let boxes = regions(n);
        let mut builder = BvhBuilder::default();
        let mut bvh = Bvh::default();
        g.bench_with_input(BenchmarkId::new("farsight", n), &boxes, |b, boxes| {
            b.iter(|| builder.rebuild(&mut bvh, black_box(boxes)).unwrap())
        });
        let ob: Vec<obvhs::aabb::Aabb> = boxes.iter().map(to_obvhs).collect();
        g.bench_with_input(BenchmarkId::new("obvhs_fastest", n), &ob, |b, ob| {
            b.iter(|| {
                let mut t = std::time::Duration::ZERO;
                obvhs::bvh2::builder::build_bvh2(
                    black_box(ob),
                    obvhs::BvhBuildParams::fastest_build(),
                    &mut t,
                )
            })
        });
        // The floor any build pays: one pass over the boxes (their union).
        g.bench_with_input(BenchmarkId::new("floor_one_pass", n), &boxes, |b, boxes| {
            b.iter(|| {
                black_box(boxes)
                    .iter()
                    .fold(Aabb::EMPTY, |a, b| a.union(*b))
            })
        });
    }
    g.finish();
}

fn bvh_query(c: &mut Criterion) {
    let mut g = c.benchmark_group("stream/sphere_query_100_hits");
    for n in [10_000usize, 100_000, 1_000_000] {
        let boxes = regions(n);
        let qs = queries(n, 256);
        let bvh = Bvh::build(&boxes).unwrap();
        let mut out = Vec::with_capacity(1024);
        let mut hits = 0usize;
        for q in &qs {
            out.clear();
            bvh.query_sphere(q, &mut out);
            hits += out.len();
        }
        eprintln!(
            "{n} regions: {:.1} hits per query on average",
            hits as f64 / qs.len() as f64
        );
        let mut i = 0;
        g.bench_function(BenchmarkId::new("farsight", n), |b| {
            b.iter(|| {
                i = (i + 1) % qs.len();
                out.clear();
                bvh.query_sphere(black_box(&qs[i]), &mut out);
                out.len()
            })
        });
        let ob: Vec<obvhs::aabb::Aabb> = boxes.iter().map(to_obvhs).collect();
        let mut t = std::time::Duration::ZERO;
        let obvh =
            obvhs::bvh2::builder::build_bvh2(&ob, obvhs::BvhBuildParams::fastest_build(), &mut t);
        g.bench_function(BenchmarkId::new("obvhs_fastest", n), |b| {
            b.iter(|| {
                i = (i + 1) % qs.len();
                let s = black_box(&qs[i]);
                let qb = to_obvhs(&Aabb::from_center_extent(s.center, Vec3::splat(s.radius)));
                out.clear();
                obvh.aabb_traverse(qb, |bvh, node| {
                    let node = &bvh.nodes[node as usize];
                    for k in node.first_index..node.first_index + node.prim_count {
                        let id = bvh.primitive_indices[k as usize];
                        if sphere_intersects_aabb(s, &boxes[id as usize]) {
                            out.push(id);
                        }
                    }
                    true
                });
                out.len()
            })
        });
        if n <= 100_000 {
            g.bench_function(BenchmarkId::new("linear_scan", n), |b| {
                b.iter(|| {
                    i = (i + 1) % qs.len();
                    out.clear();
                    linear_query_sphere(&boxes, black_box(&qs[i]), &mut out);
                    out.len()
                })
            });
        }
    }
    g.finish();
}

/// The scheduler warmed up on 100k models of 10 levels (1M levels), with its
/// requests: every model asks for a level between 3 and 9.
struct WarmScheduler {
    s: ClusterScheduler,
    req: Vec<ModelRequest>,
    out: Vec<Decision>,
    pending: Vec<ChunkCompletion>,
}

const N_MODELS: u32 = 100_000;

/// One frame with reads completing at once.
fn step(w: &mut WarmScheduler) -> FrameStats {
    w.out.clear();
    let st = w.s.step(&w.req, &w.pending, &mut w.out);
    w.pending.clear();
    w.pending.extend(w.out.iter().filter_map(|d| match d {
        Decision::Read { request, .. } => Some(ChunkCompletion {
            request: *request,
            ok: true,
        }),
        _ => None,
    }));
    st
}

fn warm_scheduler() -> WarmScheduler {
    let models: Vec<ModelDesc> = (0..N_MODELS)
        .map(|m| ModelDesc {
            levels: (0..10u64)
                .map(|l| LevelDesc {
                    file: m,
                    offset: l * 4096,
                    bytes: 4096,
                })
                .collect(),
        })
        .collect();
    let config = SchedulerConfig {
        memory_capacity: u64::MAX,
        ..SchedulerConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let req: Vec<ModelRequest> = (0..N_MODELS)
        .map(|_| {
            let fit = rng.random_range(3..10u8);
            ModelRequest {
                fit,
                keep: fit.saturating_sub(1),
                wanted: fit,
                screen_size: rng.random_range(0.0..500.0),
                visible: true,
            }
        })
        .collect();
    let mut w = WarmScheduler {
        s: ClusterScheduler::new(config, &models),
        req,
        out: Vec::new(),
        pending: Vec::new(),
    };
    // Load everything the requests ask for.
    let mut resident = 0;
    for _ in 0..3000 {
        let st = step(&mut w);
        resident = st.levels_resident;
        if st.levels_loading == 0 && w.pending.is_empty() && st.reads_issued == 0 {
            break;
        }
    }
    eprintln!(
        "scheduler warm: {} models, {} levels resident",
        w.s.model_count(),
        resident
    );
    w
}

/// Steady state: every model asks for the levels it has; churn: 1% of the models
/// move one level finer or coarser each frame. The warm-up runs only when one of
/// these is selected by the filter.
fn scheduler(c: &mut Criterion) {
    let mut g = c.benchmark_group("stream/scheduler_frame");
    g.sample_size(20);
    let mut warm: Option<WarmScheduler> = None;
    g.bench_function("steady_100k_models_1M_levels", |b| {
        let w = warm.get_or_insert_with(warm_scheduler);
        b.iter(|| step(black_box(&mut *w)))
    });
    // The floor any frame pays: reading every model's request once (an integer sum
    // over all its fields, so nothing but the reads limits it).
    g.bench_function("floor_read_requests_100k", |b| {
        let w = warm.get_or_insert_with(warm_scheduler);
        b.iter(|| {
            black_box(&w.req).iter().fold(0u32, |n, r| {
                n.wrapping_add(u32::from(r.fit) + u32::from(r.keep) + u32::from(r.wanted))
                    .wrapping_add(r.screen_size.to_bits() ^ u32::from(r.visible))
            })
        })
    });
    let mut f = 0u32;
    g.bench_function("churn_1pct_100k_models_1M_levels", |b| {
        let w = warm.get_or_insert_with(warm_scheduler);
        b.iter(|| {
            f = f.wrapping_add(1);
            for k in 0..1000u32 {
                let m = ((f.wrapping_mul(7919) + k * 101) % N_MODELS) as usize;
                let r = &mut w.req[m];
                r.fit = if r.fit > 3 && (f + k) % 2 == 0 {
                    r.fit - 1
                } else {
                    (r.fit + 1).min(9)
                };
                r.keep = r.fit.saturating_sub(1);
                r.wanted = r.fit;
            }
            step(black_box(&mut *w))
        })
    });
    g.finish();
}

criterion_group!(benches, bvh_build, bvh_query, scheduler);
criterion_main!(benches);
