//! The GPU path's main-world systems (`GpuClusterSystems::Gather` in `PostUpdate`,
//! `GpuClusterSystems::Publish` in `First`) allocate nothing in steady state: a
//! camera moving every frame, 1% of the instances moved each frame. Counted on the
//! thread that runs the app (both schedules on the single-threaded executor), in a
//! child process of its own (a Bevy renderer per process; no other test's
//! allocations). The built schedules are checked to hold only those systems
//! between the counting markers. `FARSIGHT_ALLOC_BACKTRACE=1` prints the backtrace
//! of each counted allocation.

use std::time::Duration;

use bevy::app::ScheduleRunnerPlugin;
use bevy::camera::visibility::VisibilitySystems;
use bevy::ecs::intern::Interned;
use bevy::ecs::schedule::{
    ApplyDeferred, ScheduleLabel, SingleThreadedExecutor, SystemKey, SystemSet,
};
use bevy::prelude::*;
use bevy::render::pipelined_rendering::PipelinedRenderingPlugin;
use bevy::window::ExitCondition;
use bevy::winit::WinitPlugin;
use farsight_bevy::gpu::{
    FarsightGpuClustersPlugin, GpuClusterStats, GpuClusterSystems, GpuClustersActive,
};
use farsight_bevy::prelude::*;
use farsight_bevy::FarsightSet;
use farsight_mesh::{cook_file, ClusterConfig, CookKind};
use farsight_testkit::{CountingAlloc, Threads};

use super::gpu_bevy::have_gpu;
use super::GLOBAL;

/// Set in the child process that counts.
const CHILD: &str = "FARSIGHT_GPU_ALLOC_CHILD";

#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct CountOn;

#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct CountOff;

fn count_on() {
    GLOBAL.open_window(Threads::Marked);
}

fn count_off() {
    GLOBAL.close_window();
}

/// Checks that in `label`'s built schedule only systems of `set` (and sync
/// points) lie between the markers; returns how many.
fn only_between(app: &App, label: Interned<dyn ScheduleLabel>, set: GpuClusterSystems) -> usize {
    let schedule = app.world().resource::<Schedules>().get(label).unwrap();
    let graph = schedule.graph();
    let members = |s: Interned<dyn SystemSet>| -> Vec<SystemKey> {
        graph
            .systems_in_set(s)
            .into_iter()
            .flatten()
            .copied()
            .collect()
    };
    let (on, off, ours) = (
        members(CountOn.intern()),
        members(CountOff.intern()),
        members(set.intern()),
    );
    let sync = std::any::TypeId::of::<ApplyDeferred>();
    let (mut inside, mut count) = (false, 0);
    for (k, s) in schedule.systems().unwrap() {
        if on.contains(&k) {
            inside = true;
        } else if off.contains(&k) {
            inside = false;
        } else if inside && s.system_type() != sync {
            assert!(
                ours.contains(&k),
                "a system outside {set:?} runs while counting in {label:?}"
            );
            count += 1;
        }
    }
    count
}

fn count_frames() {
    CountingAlloc::mark_this_thread();
    let dir = farsight_testkit::scratch("gpu_alloc");
    let file = dir.join("bunny.farsight");
    let bytes = cook_file(
        &farsight_testkit::mesh("bunny.obj"),
        &CookKind::Clusters(ClusterConfig::default()),
    )
    .unwrap()
    .bytes;
    std::fs::write(&file, bytes).unwrap();

    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                ..default()
            })
            .disable::<WinitPlugin>()
            .disable::<PipelinedRenderingPlugin>(),
        ScheduleRunnerPlugin::run_loop(Duration::ZERO),
        FarsightPlugin,
        FarsightGpuClustersPlugin::default(),
    ));
    app.finish();
    app.cleanup();
    assert!(
        app.world().contains_resource::<GpuClustersActive>(),
        "the GPU path was not chosen"
    );
    for label in [PostUpdate.intern(), First.intern()] {
        app.edit_schedule(label, |s| {
            s.set_executor(SingleThreadedExecutor::new());
        });
    }
    app.add_systems(
        PostUpdate,
        (
            count_on
                .in_set(CountOn)
                .after(bevy::transform::TransformSystems::Propagate)
                .after(VisibilitySystems::VisibilityPropagate)
                .after(FarsightSet::Regions)
                .after(FarsightSet::Terrain)
                .before(GpuClusterSystems::Gather),
            count_off.in_set(CountOff).after(GpuClusterSystems::Gather),
        ),
    );
    app.add_systems(
        First,
        (
            count_on.in_set(CountOn).before(GpuClusterSystems::Publish),
            count_off.in_set(CountOff).after(GpuClusterSystems::Publish),
        ),
    );
    let world = app.world_mut();
    let material = world
        .resource_mut::<Assets<StandardMaterial>>()
        .add(StandardMaterial::default());
    let n = 400usize;
    let objects: Vec<Entity> = (0..n)
        .map(|i| {
            let at = Vec3::new((i % 20) as f32 * 0.5, 0.0, (i / 20) as f32 * -0.5);
            world
                .spawn((
                    FarsightClusterModel::new(&file),
                    Transform::from_translation(at).with_scale(Vec3::splat(2.0)),
                    MeshMaterial3d(material.clone()),
                ))
                .id()
        })
        .collect();
    let camera = world
        .spawn((Camera3d::default(), Transform::default()))
        .id();
    let cycle = 40u64;
    let frame = |app: &mut App, f: u64| {
        let a = (f % cycle) as f32 / cycle as f32 * std::f32::consts::TAU;
        let w = app.world_mut();
        let eye = Vec3::new(5.0 + 3.0 * a.cos(), 1.5, 2.0 + 3.0 * a.sin());
        *w.get_mut::<Transform>(camera).unwrap() =
            Transform::from_translation(eye).looking_at(Vec3::new(5.0, 0.0, -5.0), Vec3::Y);
        let k = n / 100;
        let first = (f as usize * k) % n;
        let up = if f % 2 == 0 { 0.1 } else { -0.1 };
        for &e in &objects[first..first + k] {
            w.get_mut::<Transform>(e).unwrap().translation.y += up;
        }
        app.update();
    };
    for f in 0..3 * cycle {
        frame(&mut app, f);
    }
    assert!(only_between(&app, PostUpdate.intern(), GpuClusterSystems::Gather) >= 1);
    assert!(only_between(&app, First.intern(), GpuClusterSystems::Publish) >= 1);
    let before = *app.world().resource::<GpuClusterStats>();
    GLOBAL.reset_window();
    GLOBAL.set_backtraces(std::env::var_os("FARSIGHT_ALLOC_BACKTRACE").is_some());
    for f in 3 * cycle..4 * cycle {
        frame(&mut app, f);
    }
    let allocations = GLOBAL.window_count();
    GLOBAL.set_backtraces(false);
    // The frames did the work: instances placed, figures published every frame.
    let after = *app.world().resource::<GpuClusterStats>();
    assert_eq!(after.instances, n as u32);
    assert!(after.frame > before.frame, "no figures published");
    assert!(after.resident_clusters > 0, "nothing streamed");
    assert_eq!(
        allocations, 0,
        "allocations in the GPU path's main-world systems over {cycle} steady frames"
    );
}

/// The GPU path's main-world systems allocate nothing per frame once warm.
#[test]
fn gpu_main_world_systems_allocate_nothing_in_steady_state() {
    if std::env::var_os(CHILD).is_some() {
        count_frames();
        return;
    }
    if !have_gpu() {
        return;
    }
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let test = format!("{module}::gpu_main_world_systems_allocate_nothing_in_steady_state");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture"])
        .env(CHILD, "1")
        .status()
        .unwrap();
    assert!(status.success(), "the counting run failed");
}
