//! An app reaches every type the plugins' API names through farsight-bevy alone:
//! this file names no library crate of farsight.

use bevy::prelude::default;
use farsight_bevy::prelude::*;
use farsight_bevy::{CookedModel, FrameStats, ModelLevels};

#[test]
fn the_types_the_api_names_come_through_the_bevy_crate() {
    // Settings an app writes: the cluster scheduler's budgets, the LOD rules.
    let settings = FarsightClusterConfig {
        scheduler: SchedulerConfig {
            upload_budget: 1 << 20,
            ..SchedulerConfig::default()
        },
        ..FarsightClusterConfig::default()
    };
    assert_eq!(settings.scheduler.upload_budget, 1 << 20);
    let lod: LodConfig = FarsightConfig::default().lod;
    let _ = FarsightConfig { lod, ..default() };
    // Errors an app's setup meets, matched by type.
    let e: LodComponentError = FarsightLod::new(Vec::new()).unwrap_err();
    assert!(!e.to_string().is_empty());
    let missing = std::env::temp_dir().join("farsight-bevy-prelude-no-such-file.farsight");
    match CookedModel::open(&missing) {
        Err(CookedModelError::Io { path, .. }) => assert_eq!(path, missing),
        r => panic!("opening a missing file: {r:?}"),
    }
    // What the resources report.
    let _: FrameStats = FarsightClusters::default().stats();
    let _: Option<ModelLevels> = FarsightClusters::default().levels(0);
    // The GPU path's switch and figures.
    let _ = (
        FarsightGpuClustersPlugin::default(),
        GpuClusterTint::new(true),
    );
    let _: u64 = GpuClusterStats::default().clusters_tested;
    // The library crates themselves, for what the prelude leaves out.
    let _ = farsight_bevy::farsight_stream::cluster::MAX_LEVELS;
    let _ = farsight_bevy::farsight_view::RenderConfig::default();
}
