//! The plugin's per-frame cost against Bevy's own visibility systems (issue 12 part 5).
//!
//! # Scene
//! N entities on a city grid (lots 12 m apart, a 20 m street every 8 lots, boxes 3-7 m
//! wide and 4-40 m tall), each with `Mesh3d`, `MeshMaterial3d<StandardMaterial>` and a
//! `Transform`; one camera flying a circle over the city at 30 m, turning and moving
//! every frame; 1% of the entities moved every frame (a different 1% each frame), so
//! transform propagation and the mirror have incremental work. Headless `App`: the
//! plugins the tests use (`MinimalPlugins`, assets, meshes, transforms, cameras), no
//! renderer and no GPU. Sizes: 10k, 100k, 1M.
//!
//! # The sides
//! - `farsight/N`: the scene plus [`FarsightPlugin`] (every entity with a 3-level
//!   `FarsightLod` at 60 / 200 / 600 m, the distance cull at 800 m and the size cull
//!   at 2 px on, the full LOD pass every frame). Timed: every `FarsightSet` (Regions,
//!   Terrain, Mirror, Pass, Apply, Restrict): the whole cost a user adds. Bevy's own
//!   visibility systems still run in this app (farsight restricts their list, it does
//!   not replace them) and are not part of this figure; the bench prints them beside
//!   it.
//! - `bevy/N`: the same scene without farsight: Bevy's normal cost. Timed: Bevy's
//!   visibility sets (`UpdateFrusta`, `VisibilityPropagate` with
//!   `reset_view_visibility`, `CalculateBounds`, `CheckVisibility` with
//!   `check_visibility_ranges` and the CPU frustum cull, and
//!   `MarkNewlyHiddenEntitiesInvisible`): one frustum cull per entity, no LOD, no
//!   size cull.
//! - `bevy_ranges/N`: Bevy's own way to draw levels: each of the N objects is three
//!   entities (one per level) with an abrupt `VisibilityRange` (0-60, 60-200,
//!   200-600 m), so 3N entities; the same visibility sets timed. This is what farsight
//!   replaces, with one entity per object.
//!
//! # The method
//! `PostUpdate` runs on the single-threaded executor, so its systems run one after
//! another in the order of the built schedule (the systems themselves still use all
//! cores: Bevy's `par_iter` on its compute pool, farsight's pass on rayon's). Marker
//! systems that read the clock are ordered around the timed sets, and the bench checks,
//! in the built schedule, that exactly the expected systems lie between each pair of
//! markers (it panics naming any other). Each criterion iteration is one whole
//! `App::update` (camera moved, 1% of the entities moved); the time criterion records
//! is the sum of the marked spans only. The first frames (spawning, first mirror,
//! bounds) are run before measuring.
//!
//! Dev profile (`--profile dev`: Bevy at opt-level 1, as the tests and examples are
//! built; a release build of Bevy is more than this two-core machine can make next to
//! other work), both sides at the same optimisation. `FARSIGHT_BENCH_1M=0` skips 1M;
//! `FARSIGHT_BENCH_SIZES=1000000` runs only the sizes listed. `bevy_ranges` at 1M
//! (3M entities, about 3.3 GB) runs only with `FARSIGHT_BENCH_RANGES_1M=1`.
//!
//! `cargo bench -p farsight-bevy --bench plugin --profile dev -- --warm-up-time 1 --measurement-time 3`

use std::any::TypeId;
use std::time::{Duration, Instant};

use bevy::asset::{AssetEventSystems, AssetPlugin};
use bevy::camera::visibility::{VisibilityRange, VisibilitySystems};
use bevy::camera::CameraPlugin;
use bevy::ecs::schedule::graph::Direction;
use bevy::ecs::schedule::{
    ApplyDeferred, InternedSystemSet, SingleThreadedExecutor, SystemKey, SystemSet,
};
use bevy::mesh::{mark_3d_meshes_as_changed_if_their_assets_changed, MeshPlugin};
use bevy::prelude::*;
use bevy::transform::{TransformPlugin, TransformSystems};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use farsight_bevy::{FarsightConfig, FarsightLod, FarsightPlugin, FarsightSet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Level ranges, near to far (m).
const RANGES: [f32; 3] = [60.0, 200.0, 600.0];

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Farsight,
    Bevy,
    BevyRanges,
}

/// Spans timed each frame: farsight's sets (three spans), Bevy's visibility sets.
const MIRROR: usize = 0; // Regions, Terrain, Mirror
const PASS: usize = 1;
const APPLY: usize = 2;
const RESTRICT: usize = 3;
const BEVY: usize = 4; // Bevy's visibility sets; in the farsight app it holds the spans above
const SPANS: usize = 5;

#[derive(Resource, Default)]
struct Clock {
    open: [Option<Instant>; SPANS],
    total: [Duration; SPANS],
}

/// The marker systems' own sets, to find them in the built schedule.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Begin(usize);

#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct End(usize);

fn begin<const I: usize>(mut c: ResMut<Clock>) {
    c.open[I] = Some(Instant::now());
}

fn end<const I: usize>(mut c: ResMut<Clock>) {
    if let Some(t) = c.open[I].take() {
        c.total[I] += t.elapsed();
    }
}

/// The moving parts of a scene.
#[derive(Resource)]
struct Scene {
    objects: Vec<Entity>,
    camera: Entity,
    frame: u64,
    /// Half the city's side (m).
    half: f32,
}

fn build(n: usize, side: Side) -> App {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        AssetPlugin::default(),
        MeshPlugin,
        TransformPlugin,
        CameraPlugin,
    ));
    app.init_asset::<StandardMaterial>();
    app.init_resource::<Clock>();
    app.edit_schedule(PostUpdate, |s| {
        s.set_executor(SingleThreadedExecutor::new());
    });
    // Bevy's visibility sets: from after transform propagation (and the asset events
    // `CalculateBounds` waits for) to after the last of them.
    app.add_systems(
        PostUpdate,
        (
            begin::<BEVY>
                .in_set(Begin(BEVY))
                .after(TransformSystems::Propagate)
                .after(AssetEventSystems)
                .after(mark_3d_meshes_as_changed_if_their_assets_changed)
                .before(VisibilitySystems::UpdateFrusta)
                .before(VisibilitySystems::VisibilityPropagate)
                .before(VisibilitySystems::CalculateBounds),
            end::<BEVY>
                .in_set(End(BEVY))
                .after(VisibilitySystems::MarkNewlyHiddenEntitiesInvisible),
        ),
    );
    if side == Side::Farsight {
        app.add_plugins(FarsightPlugin);
        app.insert_resource(FarsightConfig {
            cull_min_pixels: 2.0,
            cull_max_distance: 800.0,
            // The full LOD pass every frame, not every fourth (the default).
            lod: farsight_lod::LodConfig {
                update_frame_interval: 1,
                ..Default::default()
            },
            ..Default::default()
        });
        app.add_systems(
            PostUpdate,
            (
                begin::<MIRROR>
                    .in_set(Begin(MIRROR))
                    .after(Begin(BEVY))
                    .after(VisibilitySystems::VisibilityPropagate)
                    .before(FarsightSet::Regions)
                    .before(FarsightSet::Terrain)
                    .before(FarsightSet::Clusters),
                (
                    end::<MIRROR>.in_set(End(MIRROR)),
                    begin::<PASS>.in_set(Begin(PASS)),
                )
                    .chain()
                    .after(FarsightSet::Mirror)
                    .before(FarsightSet::Pass),
                (
                    end::<PASS>.in_set(End(PASS)),
                    begin::<APPLY>.in_set(Begin(APPLY)),
                )
                    .chain()
                    .after(FarsightSet::Pass)
                    .before(FarsightSet::Apply),
                end::<APPLY>
                    .in_set(End(APPLY))
                    .after(FarsightSet::Apply)
                    .before(VisibilitySystems::CalculateBounds),
                begin::<RESTRICT>
                    .in_set(Begin(RESTRICT))
                    .after(VisibilitySystems::CheckVisibility)
                    .before(FarsightSet::Restrict),
                end::<RESTRICT>
                    .in_set(End(RESTRICT))
                    .after(FarsightSet::Restrict)
                    .before(VisibilitySystems::MarkNewlyHiddenEntitiesInvisible),
            ),
        );
    }

    let levels: Vec<Handle<Mesh>> = {
        let mut meshes = app.world_mut().resource_mut::<Assets<Mesh>>();
        [3, 1, 0]
            .into_iter()
            .map(|k| meshes.add(Sphere::new(0.5).mesh().ico(k).unwrap()))
            .collect()
    };
    let material = app
        .world_mut()
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial::default());

    // The city: a square grid of lots, a street every 8 lots.
    let lots = (n as f64).sqrt().ceil() as usize;
    let pitch = |i: usize| i as f32 * 12.0 + (i / 8) as f32 * 20.0;
    let half = pitch(lots) * 0.5;
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut transforms = Vec::with_capacity(n);
    for i in 0..n {
        let (x, z) = (pitch(i % lots) - half, pitch(i / lots) - half);
        let size = Vec3::new(
            rng.random_range(3.0..7.0),
            rng.random_range(4.0..40.0),
            rng.random_range(3.0..7.0),
        );
        transforms
            .push(Transform::from_translation(Vec3::new(x, size.y * 0.5, z)).with_scale(size));
    }
    let world = app.world_mut();
    let objects: Vec<Entity> = match side {
        Side::Farsight => {
            let lod = FarsightLod::from_ranges(levels.iter().cloned().zip(RANGES)).unwrap();
            world
                .spawn_batch(transforms.into_iter().map(|t| {
                    (
                        Mesh3d(levels[0].clone()),
                        MeshMaterial3d(material.clone()),
                        t,
                        lod.clone(),
                    )
                }))
                .collect()
        }
        Side::Bevy => world
            .spawn_batch(transforms.into_iter().map(|t| {
                (
                    Mesh3d(levels[0].clone()),
                    MeshMaterial3d(material.clone()),
                    t,
                )
            }))
            .collect(),
        Side::BevyRanges => {
            let mut out = Vec::with_capacity(3 * n);
            for (l, mesh) in levels.iter().enumerate() {
                let start = if l == 0 { 0.0 } else { RANGES[l - 1] };
                let range = VisibilityRange::abrupt(start, RANGES[l]);
                out.extend(world.spawn_batch(transforms.iter().map(|t| {
                    (
                        Mesh3d(mesh.clone()),
                        MeshMaterial3d(material.clone()),
                        *t,
                        range.clone(),
                    )
                })));
            }
            out
        }
    };
    let camera = world
        .spawn((Camera3d::default(), Transform::default()))
        .id();
    app.insert_resource(Scene {
        objects,
        camera,
        frame: 0,
        half,
    });
    app
}

/// One frame: the camera moves along its circle, 1% of the entities move, update.
fn frame(app: &mut App) {
    let world = app.world_mut();
    let (camera, eye, target, range) = {
        let mut s = world.resource_mut::<Scene>();
        s.frame += 1;
        let a = s.frame as f32 * 0.01;
        let r = s.half * 0.5;
        let eye = Vec3::new(r * a.cos(), 30.0, r * a.sin());
        // Looking ahead along the circle, slightly down.
        let target = eye + Vec3::new(-a.sin(), -0.15, a.cos()) * 100.0;
        let n = s.objects.len();
        let k = (n / 100).max(1);
        let first = (s.frame as usize * k) % n;
        (s.camera, eye, target, first..(first + k).min(n))
    };
    *world.get_mut::<Transform>(camera).unwrap() =
        Transform::from_translation(eye).looking_at(target, Vec3::Y);
    let up = if world.resource::<Scene>().frame % 2 == 0 {
        0.25
    } else {
        -0.25
    };
    for i in range {
        let e = world.resource::<Scene>().objects[i];
        world.get_mut::<Transform>(e).unwrap().translation.y += up;
    }
    app.update();
}

/// Checks the systems between the markers of each span in the built schedule (system
/// names need Bevy's `debug` feature, so by set membership): Bevy's visibility span
/// holds only systems of the `VisibilitySystems` sets (and, in the farsight app,
/// farsight's spans), each farsight span only systems of the `FarsightSet`s, besides
/// the schedule's sync points. Any other system makes the bench panic, so a span never
/// silently times someone else's work. Returns how many systems each span holds.
fn check_spans(app: &App, side: Side) -> [usize; SPANS] {
    let schedule = app.world().resource::<Schedules>().get(PostUpdate).unwrap();
    let graph = schedule.graph();
    let keys: Vec<(SystemKey, TypeId)> = schedule
        .systems()
        .unwrap()
        .map(|(k, s)| (k, s.system_type()))
        .collect();
    let members = |sets: &[InternedSystemSet]| -> Vec<SystemKey> {
        sets.iter()
            .flat_map(|&set| graph.systems_in_set(set).into_iter().flatten().copied())
            .collect()
    };
    let at = |set: InternedSystemSet| {
        let k = members(&[set])[0];
        keys.iter().position(|&(key, _)| key == k).unwrap()
    };
    let span = |i: usize| &keys[at(Begin(i).intern()) + 1..at(End(i).intern())];
    let bevy_sets = [
        VisibilitySystems::UpdateFrusta.intern(),
        VisibilitySystems::VisibilityPropagate.intern(),
        VisibilitySystems::CalculateBounds.intern(),
        VisibilitySystems::CheckVisibility.intern(),
        VisibilitySystems::MarkNewlyHiddenEntitiesInvisible.intern(),
    ];
    let farsight_sets = FarsightSet::ALL.map(|s| s.intern());
    let bevy = members(&bevy_sets);
    let farsight = members(&farsight_sets);
    let markers = members(
        &(0..SPANS)
            .flat_map(|i| [Begin(i).intern(), End(i).intern()])
            .collect::<Vec<_>>(),
    );
    let sync = TypeId::of::<ApplyDeferred>();
    let mut counts = [0; SPANS];
    for (i, count) in counts.iter_mut().enumerate() {
        if side != Side::Farsight && i != BEVY {
            continue;
        }
        for &(k, t) in span(i) {
            let ok = t == sync
                || if i == BEVY {
                    bevy.contains(&k)
                        || (side == Side::Farsight
                            && (farsight.contains(&k) || markers.contains(&k)))
                } else {
                    farsight.contains(&k)
                };
            if !ok {
                // Named by their sets (system names need Bevy's `debug` feature).
                let sets: Vec<String> = graph
                    .hierarchy()
                    .graph()
                    .neighbors_directed(k.into(), Direction::Incoming)
                    .map(|n| graph.get_node_name(&n))
                    .filter(|n| !n.starts_with("SystemTypeSet"))
                    .collect();
                panic!("a system of no timed set runs inside span {i}, in sets {sets:?}");
            }
            *count += usize::from(t != sync && !markers.contains(&k));
        }
    }
    counts
}

/// This process's resident memory now (`VmRSS`) and at its peak (`VmHWM`), MiB.
fn rss_mib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn bench(c: &mut Criterion) {
    let mut sizes = vec![10_000, 100_000];
    if std::env::var("FARSIGHT_BENCH_1M").as_deref() != Ok("0") {
        sizes.push(1_000_000);
    }
    // `FARSIGHT_BENCH_SIZES=1000000` runs the listed sizes only.
    if let Ok(list) = std::env::var("FARSIGHT_BENCH_SIZES") {
        sizes = list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect();
    }
    // 3M entities at 1M objects: about 3.3 GB resident (330 MB measured at 100k).
    let ranges_1m = std::env::var("FARSIGHT_BENCH_RANGES_1M").as_deref() == Ok("1");
    let mut g = c.benchmark_group("bevy_plugin");
    g.sample_size(10);
    for &n in &sizes {
        for (side, name) in [
            (Side::Farsight, "farsight"),
            (Side::Bevy, "bevy"),
            (Side::BevyRanges, "bevy_ranges"),
        ] {
            if side == Side::BevyRanges && n >= 1_000_000 && !ranges_1m {
                eprintln!(
                    "bevy_plugin/bevy_ranges/{n}: skipped (3 entities per object, more memory \
                     than a 2 GiB run allows; FARSIGHT_BENCH_RANGES_1M=1 runs it)"
                );
                continue;
            }
            let mut app = build(n, side);
            for _ in 0..5 {
                frame(&mut app);
            }
            let counts = check_spans(&app, side);
            eprintln!("bevy_plugin/{name}/{n}: systems in the spans (mirror, pass, apply, restrict, Bevy's): {counts:?}");
            app.world_mut().resource_mut::<Clock>().total = Default::default();
            let mut frames = 0u64;
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter_custom(|iters| {
                    let before = app.world().resource::<Clock>().total;
                    for _ in 0..iters {
                        frame(&mut app);
                    }
                    frames += iters;
                    let after = app.world().resource::<Clock>().total;
                    let d = |i: usize| after[i] - before[i];
                    match side {
                        Side::Farsight => d(MIRROR) + d(PASS) + d(APPLY) + d(RESTRICT),
                        _ => d(BEVY),
                    }
                })
            });
            let (rss, peak) = rss_mib();
            eprintln!("bevy_plugin/{name}/{n}: resident {rss} MiB (peak so far {peak} MiB)");
            let t = app.world().resource::<Clock>().total;
            let per = |d: Duration| d.as_secs_f64() * 1e3 / frames.max(1) as f64;
            if side == Side::Farsight {
                let ours = per(t[MIRROR] + t[PASS] + t[APPLY] + t[RESTRICT]);
                eprintln!(
                    "bevy_plugin/farsight/{n}: mean over {frames} frames: farsight {ours:.3} ms \
                     (mirror {:.3}, pass {:.3}, apply {:.3}, restrict {:.3}); Bevy's visibility \
                     sets in the same app {:.3} ms",
                    per(t[MIRROR]),
                    per(t[PASS]),
                    per(t[APPLY]),
                    per(t[RESTRICT]),
                    per(t[BEVY]) - ours,
                );
            } else {
                eprintln!(
                    "bevy_plugin/{name}/{n}: mean over {frames} frames: Bevy's visibility sets {:.3} ms",
                    per(t[BEVY])
                );
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
