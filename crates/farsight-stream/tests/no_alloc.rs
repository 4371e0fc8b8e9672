//! The cluster scheduler allocates nothing per frame in steady state, and the region
//! BVH's sphere query allocates nothing at all: counted by a global allocator.

use farsight_geom::{Aabb, Bvh, Sphere};
use farsight_stream::cluster::{
    ChunkCompletion, ClusterScheduler, Decision, LevelDesc, ModelDesc, ModelRequest,
    SchedulerConfig,
};
use farsight_testkit::CountingAlloc;
use glam::Vec3;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

fn step(
    s: &mut ClusterScheduler,
    req: &[ModelRequest],
    out: &mut Vec<Decision>,
    pending: &mut Vec<ChunkCompletion>,
) {
    out.clear();
    s.step(req, pending, out);
    pending.clear();
    for d in out.iter() {
        if let Decision::Read { request, .. } = d {
            pending.push(ChunkCompletion {
                request: *request,
                ok: true,
            });
        }
    }
}

#[test]
fn steady_state_frames_and_sphere_queries_allocate_nothing() {
    let models: Vec<ModelDesc> = (0..2000u32)
        .map(|m| ModelDesc {
            levels: (0..6u64)
                .map(|l| LevelDesc {
                    file: m,
                    offset: l * 1000,
                    bytes: 1000 + l,
                })
                .collect(),
        })
        .collect();
    let mut s = ClusterScheduler::new(SchedulerConfig::default(), &models);
    let mut out = Vec::with_capacity(1 << 16);
    let mut pending = Vec::with_capacity(1 << 16);
    // Two request patterns that alternate: levels load, age past 60 frames, and are
    // evicted and reloaded, so slabs and scratch reach their working size first.
    let pattern = |phase: u32| -> Vec<ModelRequest> {
        (0..2000u32)
            .map(|m| {
                let fit = ((m + phase) % 6) as u8;
                ModelRequest {
                    fit,
                    keep: fit,
                    wanted: fit,
                    screen_size: (m % 97) as f32,
                    visible: true,
                }
            })
            .collect()
    };
    let (a, b) = (pattern(0), pattern(3));
    for f in 0..1000u32 {
        step(
            &mut s,
            if (f / 100) % 2 == 0 { &a } else { &b },
            &mut out,
            &mut pending,
        );
    }
    let before = GLOBAL.count();
    assert!(before > 0, "the counter sees the warm-up's allocations");
    let mut evictions = 0;
    for f in 1000..1600u32 {
        step(
            &mut s,
            if (f / 100) % 2 == 0 { &a } else { &b },
            &mut out,
            &mut pending,
        );
        evictions += out
            .iter()
            .filter(|d| matches!(d, Decision::Evict { .. }))
            .count();
    }
    let after = GLOBAL.count();
    assert!(evictions > 0, "the run evicted and reloaded");
    assert_eq!(after - before, 0, "allocations in 600 steady-state frames");

    let boxes: Vec<Aabb> = (0..10_000)
        .map(|i| {
            let c = Vec3::new((i % 100) as f32 * 10.0, 0.0, (i / 100) as f32 * 10.0);
            Aabb::from_center_extent(c, Vec3::splat(4.0))
        })
        .collect();
    let bvh = Bvh::build(&boxes).unwrap();
    let mut hits = 0u64;
    let before = GLOBAL.count();
    for q in 0..1000 {
        let p = Vec3::new((q % 37) as f32 * 25.0, 0.0, (q % 41) as f32 * 23.0);
        bvh.for_each_in_sphere(&Sphere::new(p, 60.0), |_| hits += 1);
    }
    assert_eq!(GLOBAL.count() - before, 0);
    assert!(hits > 1000);
}
