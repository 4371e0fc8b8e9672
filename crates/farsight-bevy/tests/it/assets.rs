//! Cluster files and cooked LOD chains through Bevy's asset server: loaded by handle,
//! drawn from their handle, and each loader refusing the other kinds of farsight file
//! with a message naming what it found. No window, no GPU.

use crate::common;

use std::path::Path;
use std::time::Duration;

use bevy::asset::LoadState;
use bevy::prelude::*;
use farsight_bevy::prelude::*;
use farsight_bevy::{ClusterCut, FarsightClusters, LodChainAsset};
use farsight_format::{AlignedBytes, CookConfig};
use farsight_mesh::{
    cook_file, read_lod_chain, ChainRecords, ClusterConfig, CookKind, LodChainConfig,
};
use farsight_testkit::{mesh as corpus, scratch as temp};

/// `mesh` cooked as `kind` into `dir/name`.
fn cook(mesh: &str, kind: &CookKind, dir: &Path, name: &str) {
    let bytes = cook_file(&corpus(mesh), kind).unwrap().bytes;
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn clusters() -> CookKind {
    CookKind::Clusters(ClusterConfig::default())
}

fn chain(records: ChainRecords) -> CookKind {
    CookKind::LodChain(LodChainConfig::default(), records)
}

/// An app whose asset folder is `root`.
fn app(root: &Path) -> App {
    common::asset_app(root)
}

/// Updates until the asset has loaded or failed; its final state.
fn settle<A: Asset>(app: &mut App, h: &Handle<A>) -> LoadState {
    for _ in 0..5000 {
        app.update();
        let state = app.world().resource::<AssetServer>().load_state(h);
        if matches!(state, LoadState::Loaded | LoadState::Failed(_)) {
            return state;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the asset never loaded");
}

fn failure<A: Asset>(app: &mut App, path: &str) -> String {
    let h: Handle<A> = app.world().resource::<AssetServer>().load(path.to_owned());
    match settle(app, &h) {
        LoadState::Failed(e) => e.to_string(),
        s => panic!("{path} loaded as {}: {s:?}", std::any::type_name::<A>()),
    }
}

#[test]
fn a_cluster_file_loads_as_an_asset_and_draws_from_its_handle() {
    let d = temp("cluster");
    cook("bunny.obj", &clusters(), &d, "bunny.farsight");
    let mut app = app(&d);
    let handle: Handle<ClusterModelAsset> =
        app.world().resource::<AssetServer>().load("bunny.farsight");
    app.world_mut().spawn((
        Camera3d::default(),
        Transform::from_xyz(0.3, 0.2, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let e = app
        .world_mut()
        .spawn(FarsightClusterModel::from_asset(handle.clone()))
        .id();
    assert!(matches!(settle(&mut app, &handle), LoadState::Loaded));
    let asset = app.world().resource::<Assets<ClusterModelAsset>>();
    let asset = asset.get(&handle).unwrap();
    assert_eq!(asset.geometry_count(), 1);
    let model = asset.model(0).unwrap().clone();
    assert_eq!(asset.path(), d.join("bunny.farsight"));
    let n = model.level_count();
    let coarsest = model.level(n - 1).unwrap();
    // Drawn from the frame its load was announced: the asset brought its coarsest
    // level, nothing had to stream first.
    let mut cut = ClusterCut::default();
    for _ in 0..2 {
        app.update();
        cut = app.world().get::<ClusterCut>(e).unwrap().clone();
        if cut.finest_resident.is_some() {
            break;
        }
    }
    assert_eq!(cut.finest_resident, Some(n as u8 - 1));
    assert_eq!(cut.triangles, coarsest.triangles);
    assert!(app.world().get::<Mesh3d>(e).is_some());
    let m = cut.model.unwrap();
    assert!(app
        .world()
        .resource::<FarsightClusters>()
        .is_resident(m, n as u8 - 1));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_cooked_lod_chain_loads_as_an_asset_and_becomes_the_entitys_lod() {
    let d = temp("chain");
    let kind = chain(ChainRecords::Cooked(CookConfig::default()));
    cook("bunny.obj", &kind, &d, "bunny.farsight");
    let mut app = app(&d);
    let handle: Handle<LodChainAsset> =
        app.world().resource::<AssetServer>().load("bunny.farsight");
    let e = app.world_mut().spawn(FarsightLodChain(handle.clone())).id();
    assert!(matches!(settle(&mut app, &handle), LoadState::Loaded));
    app.update();
    app.update();
    // The levels are the file's, as the bake-time reader sees them.
    let bytes = AlignedBytes::read_file(d.join("bunny.farsight")).unwrap();
    let file = read_lod_chain(&bytes).unwrap();
    let want = &file.manifest().levels;
    let chain = app
        .world()
        .resource::<Assets<LodChainAsset>>()
        .get(&handle)
        .unwrap()
        .clone();
    assert!(want.len() >= 2, "the bunny cooks to {} levels", want.len());
    assert_eq!(chain.levels.len(), want.len());
    let meshes = app.world().resource::<Assets<Mesh>>();
    for (got, want) in chain.levels.iter().zip(want) {
        assert_eq!(got.max_distance, want.max_distance);
        assert_eq!(got.triangles, want.triangles);
        let mesh = meshes.get(&got.mesh).expect("each level's mesh is loaded");
        assert_eq!(mesh.indices().unwrap().len() as u32, 3 * want.triangles);
    }
    let lod = app
        .world()
        .get::<FarsightLod>(e)
        .expect("the chain became a FarsightLod");
    let levels: Vec<_> = lod
        .levels()
        .iter()
        .map(|l| (l.mesh.clone(), l.max_distance))
        .collect();
    let from_chain: Vec<_> = chain
        .levels
        .iter()
        .map(|l| (l.mesh.clone(), l.max_distance))
        .collect();
    assert_eq!(levels, from_chain);
    assert_eq!(
        app.world().get::<Mesh3d>(e).unwrap().0,
        chain.levels[0].mesh
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn each_loader_refuses_another_kind_of_file_naming_what_it_found() {
    let d = temp("kinds");
    cook("bunny.obj", &clusters(), &d, "clusters.farsight");
    let cooked = chain(ChainRecords::Cooked(CookConfig::default()));
    cook("bunny.obj", &cooked, &d, "chain.farsight");
    cook(
        "bunny.obj",
        &chain(ChainRecords::Full),
        &d,
        "full-chain.farsight",
    );
    std::fs::write(d.join("text.farsight"), b"not a farsight file at all").unwrap();
    let mut app = app(&d);

    let e = failure::<ClusterModelAsset>(&mut app, "chain.farsight");
    assert!(
        e.contains("a cooked LOD chain file, not a cluster model file"),
        "{e}"
    );
    let e = failure::<LodChainAsset>(&mut app, "clusters.farsight");
    assert!(
        e.contains("a cluster model file, not a cooked LOD chain file"),
        "{e}"
    );
    // The building loader too: a cluster file loaded as a building said only that its
    // RON did not parse.
    let e = failure::<farsight_bevy::BuildingAsset>(&mut app, "clusters.farsight");
    assert!(
        e.contains("a cluster model file, not a building file"),
        "{e}"
    );
    let e = failure::<farsight_bevy::BuildingAsset>(&mut app, "chain.farsight");
    assert!(
        e.contains("a cooked LOD chain file, not a building file"),
        "{e}"
    );
    let e = failure::<LodChainAsset>(&mut app, "full-chain.farsight");
    assert!(e.contains("full-precision LOD chain"), "{e}");
    for e in [
        failure::<ClusterModelAsset>(&mut app, "text.farsight"),
        failure::<LodChainAsset>(&mut app, "text.farsight"),
    ] {
        assert!(e.contains("not a farsight file"), "{e}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A cluster file changed on disk and reloaded (what Bevy's file watcher does): the
/// instance drawn from the handle draws the new file's coarsest level.
#[test]
fn a_reloaded_cluster_file_is_drawn_anew() {
    let d = temp("reload");
    cook("bunny.obj", &clusters(), &d, "model.farsight");
    let mut app = app(&d);
    let server = app.world().resource::<AssetServer>().clone();
    let handle: Handle<ClusterModelAsset> = server.load("model.farsight");
    app.world_mut().spawn((
        Camera3d::default(),
        Transform::from_xyz(0.3, 0.2, 2.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let e = app
        .world_mut()
        .spawn(FarsightClusterModel::from_asset(handle.clone()))
        .id();
    assert!(matches!(settle(&mut app, &handle), LoadState::Loaded));
    app.update();
    let before = app.world().get::<ClusterCut>(e).unwrap().clone();
    assert!(before.finest_resident.is_some());

    let other = d.join("other");
    std::fs::create_dir_all(&other).unwrap();
    cook("alien.glb", &clusters(), &other, "model.farsight");
    let model = farsight_bevy::CookedModel::open(other.join("model.farsight")).unwrap();
    let n = model.level_count();
    let coarsest = model.level(n - 1).unwrap();
    std::fs::rename(other.join("model.farsight"), d.join("model.farsight")).unwrap();
    let rebuilds = app.world().get::<ClusterCut>(e).unwrap().rebuilds;
    server.reload("model.farsight");
    let reloaded = |app: &App| {
        let cut = app.world().get::<ClusterCut>(e).unwrap();
        let clusters = app.world().resource::<FarsightClusters>();
        clusters.models()[cut.model.unwrap() as usize].level(n - 1) == Some(coarsest)
    };
    for _ in 0..5000 {
        app.update();
        if reloaded(&app) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(reloaded(&app), "the model never took the new file's head");
    app.update();
    let cut = app.world().get::<ClusterCut>(e).unwrap().clone();
    assert!(cut.rebuilds > rebuilds, "the mesh was not rewritten");
    assert!(cut.finest_resident.is_some());
    let clusters = app.world().resource::<FarsightClusters>();
    assert_eq!(
        clusters.models()[cut.model.unwrap() as usize].level_count(),
        n
    );
    std::fs::remove_dir_all(&d).unwrap();
}
