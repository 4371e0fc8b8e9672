//! The cost of the plain GPU cut (issue 29 part 2): every resident cluster of every
//! instance tested, no hierarchy.
//!
//! Scene: the bunny cooked with clusters, every level resident, `N` instances on a
//! grid (N = 100, 1,000), one camera above the grid; an iteration records the cut,
//! submits it and waits for the device. Clusters tested per iteration: N times the
//! bunny's resident clusters (printed). Run on whatever adapter wgpu finds (lavapipe
//! here, a software rasteriser on the CPU: its figure says what the pass costs where
//! there is no GPU at all); without one it prints why and measures nothing.
//! `cargo bench --workspace --bench gpu_cut --profile dev` (the dev profile builds
//! with the Bevy the tests build).

use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use farsight_bevy::gpu::{
    headless_device, CutCamera, CutPipeline, GpuInstance, GpuUploader, InstanceTable, PoolSettings,
};
use farsight_lod::ProjectionInfo;
use farsight_mesh::{cook_file, ClusterConfig, CookKind};
use farsight_stream::cluster::{CookedModel, Uploader};
use glam::{Affine3A, Mat4, Vec3};

fn bench(c: &mut Criterion) {
    let (device, queue, info) = match headless_device() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("no GPU adapter ({e}): nothing measured");
            return;
        }
    };
    eprintln!("adapter: {} ({:?})", info.name, info.device_type);
    let dir = farsight_testkit::scratch("gpu_cut_bench");
    let src = farsight_testkit::mesh("bunny.obj");
    let bytes = cook_file(&src, &CookKind::Clusters(ClusterConfig::default()))
        .unwrap()
        .bytes;
    let path = dir.join("bunny.farsight");
    std::fs::write(&path, &bytes).unwrap();
    let model = CookedModel::open(Path::new(&path)).unwrap();
    let mut up = GpuUploader::new(&device, queue.clone(), PoolSettings::default());
    let m = up.add_cooked(&model).unwrap();
    for (l, level) in model.levels().enumerate() {
        let at = level.offset as usize;
        up.queue_copy(m, l as u8, 0, &bytes[at..at + level.bytes as usize]);
    }
    up.end_frame();
    for l in 0..model.level_count() {
        up.level_ready(m, l as u8);
    }
    up.end_frame();
    let [_, _, _, r] = model.error_bounds();
    let pipeline = CutPipeline::new(&device);
    let out = pipeline.outputs(&device, 1 << 22);
    let proj = Mat4::perspective_rh(1.0, 16.0 / 9.0, 0.01, 1e5);
    let eye = Vec3::new(0.0, 20.0 * r, 0.0);
    let cam = CutCamera {
        view_projection: proj * Mat4::look_at_rh(eye, Vec3::new(10.0 * r, 0.0, 10.0 * r), Vec3::Y),
        position: eye,
        projection: ProjectionInfo::from_matrix(&proj),
        viewport_height: 1080.0,
        threshold_px: 1.0,
        frustum: true,
    };
    let mut group = c.benchmark_group("gpu_cut");
    for n in [100u32, 1_000] {
        let side = (n as f32).sqrt().ceil() as u32;
        let rows: Vec<GpuInstance> = (0..n)
            .map(|i| {
                let at = Vec3::new((i % side) as f32, 0.0, (i / side) as f32) * 3.0 * r;
                GpuInstance::new(m, &Affine3A::from_translation(at))
            })
            .collect();
        let mut table = InstanceTable::new(&device, n);
        table.write(&queue, 0, &rows);
        eprintln!(
            "{n} instances: {} clusters tested a cut",
            u64::from(n) * u64::from(up.max_resident())
        );
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                pipeline.submit(&device, &queue, &up, &table, &cam, &out);
                device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
