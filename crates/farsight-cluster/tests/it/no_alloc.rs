//! The per-frame calls allocate nothing once the caller's buffer has capacity.
//!
//! Counted on the calling thread only (farsight-cluster runs no threads of its own),
//! so the other tests of this program, running beside it, do not disturb the count.
use farsight_cluster::{model_levels, ClusterDag, CutView, InstanceBounds, LevelMetric, LevelView};
use farsight_format::ClusterInfo;
use farsight_lod::ProjectionInfo;
use farsight_testkit::CountingAlloc;
use glam::Vec3;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

#[test]
fn cut_and_levels_do_not_allocate_per_frame() {
    let level0: Vec<ClusterInfo> = (0..64)
        .map(|i| ClusterInfo {
            sphere: [i as f32, 0.0, 0.0, 0.8],
            parent_sphere: [32.0, 0.0, 0.0, 40.0],
            error: 0.0,
            parent_error: f32::MAX,
            triangle_count: 1,
            material: 0,
            group: 0,
        })
        .collect();
    let dag = ClusterDag::from_infos(&[&level0]).unwrap();
    let errors = dag.level_max_parent_errors();
    let mut out = Vec::with_capacity(dag.clusters.len());
    let (allocations, ()) = GLOBAL.count_this_thread(|| {
        for f in 0..100 {
            let view = CutView {
                camera_local: Vec3::new(f as f32, 3.0, 0.0),
                scale: 1.0,
                projection: ProjectionInfo::perspective(1.0),
                viewport_height: 1080.0,
                threshold_px: 1.0,
            };
            dag.cut(&view, &mut out);
            dag.cut_flat(&view, &mut out);
            let lv = LevelView {
                camera: view.camera_local,
                projection: view.projection,
                viewport_height: 1080.0,
                threshold_px: 1.0,
                bias: 1,
            };
            let inst = InstanceBounds {
                center: Vec3::ZERO,
                radius: 40.0,
                scale: 1.0,
            };
            std::hint::black_box(model_levels(LevelMetric::ParentErrors(&errors), &inst, &lv));
        }
    });
    assert_eq!(allocations, 0);
}
