//! `world.ron` and a recording are text a user may edit by hand: every field the
//! loop cannot use is refused on load with a typed error naming the field.

use std::path::{Path, PathBuf};

use farsight_testkit::scratch;
use farsight_world::{
    generate, BadField, FrameInput, RecordError, Recording, SyntheticConfig, World, WorldConfig,
    WorldError, WorldManifest, MANIFEST_FILE,
};

/// Writes `m` changed by `edit` and reads it back: the field it names.
fn refused(dir: &Path, m: &WorldManifest, edit: impl FnOnce(&mut WorldManifest)) -> BadField {
    let mut bad = m.clone();
    edit(&mut bad);
    bad.write(dir).unwrap();
    let e = WorldManifest::read(dir).unwrap_err();
    let text = e.to_string();
    match e {
        WorldError::Field { path, bad } => {
            assert!(path.ends_with(MANIFEST_FILE), "{text}");
            assert!(text.contains(&bad.field), "{text}");
            bad
        }
        other => panic!("not a field error: {other}"),
    }
}

fn world(name: &str) -> (PathBuf, WorldManifest) {
    let dir = scratch(name);
    let m = generate(&dir, &SyntheticConfig::small(), &mut |_| {}).unwrap();
    (dir, m)
}

#[test]
fn non_finite_numbers_in_world_ron_are_refused_by_field() {
    let (dir, m) = world("numbers");
    let f = refused(&dir, &m, |m| m.buildings[0].offset[1] = f32::NAN);
    assert_eq!(f.field, "buildings[0].offset");
    let f = refused(&dir, &m, |m| m.buildings[2].min[0] = f32::INFINITY);
    assert_eq!(f.field, "buildings[2].min");
    let f = refused(&dir, &m, |m| {
        m.buildings[1].levels[1].until = Some(f32::NAN)
    });
    assert_eq!(f.field, "buildings[1].levels[1].until");
    let f = refused(&dir, &m, |m| m.terrain.hill_scale = f32::NEG_INFINITY);
    assert_eq!(f.field, "terrain.hill_scale");
    let f = refused(&dir, &m, |m| m.terrain.base_height = f32::NAN);
    assert_eq!(f.field, "terrain.base_height");
    let f = refused(&dir, &m, |m| m.props[0].radius = f32::NAN);
    assert_eq!(f.field, "props[0].radius");
    let f = refused(&dir, &m, |m| m.extent[1] = -5.0);
    assert_eq!(f.field, "extent[1]");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unbounded_sizes_and_counts_in_world_ron_are_refused_by_field() {
    let (dir, m) = world("sizes");
    let f = refused(&dir, &m, |m| m.buildings[0].levels[0].bytes = u64::MAX);
    assert_eq!(f.field, "buildings[0].levels[0].bytes");
    assert_eq!(f.found, u64::MAX.to_string());
    let f = refused(&dir, &m, |m| {
        m.buildings[3].levels[2].bytes = farsight_world::MAX_LEVEL_BYTES + 1
    });
    assert_eq!(f.field, "buildings[3].levels[2].bytes");
    // Levels out of order, a limitless level before the last, too many levels.
    let f = refused(&dir, &m, |m| m.buildings[0].levels[1].until = Some(1.0));
    assert_eq!(f.field, "buildings[0].levels[1].until");
    let f = refused(&dir, &m, |m| m.buildings[0].levels[0].until = None);
    assert_eq!(f.field, "buildings[0].levels[0].until");
    let f = refused(&dir, &m, |m| {
        let l = m.buildings[0].levels[0].clone();
        m.buildings[0].levels = vec![l; 9];
    });
    assert_eq!(f.field, "buildings[0].levels");
    let f = refused(&dir, &m, |m| m.terrain.chunks_side = i32::MAX);
    assert_eq!(f.field, "terrain.chunks_side");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn paths_leaving_the_world_folder_are_refused_by_field() {
    let (dir, m) = world("paths");
    let f = refused(&dir, &m, |m| {
        m.models[0].file = "../outside.farsight".into()
    });
    assert_eq!(f.field, "models[0].file");
    let f = refused(&dir, &m, |m| {
        m.terrain.file = "/etc/terrain.farsight".into()
    });
    assert_eq!(f.field, "terrain.file");
    let f = refused(&dir, &m, |m| {
        m.scene = "regions/../../scene.farsight".into()
    });
    assert_eq!(f.field, "scene");
    let f = refused(&dir, &m, |m| m.buildings[4].file = "/tmp/b.farsight".into());
    assert_eq!(f.field, "buildings[4].file");
    let f = refused(&dir, &m, |m| m.models[1].file = String::new());
    assert_eq!(f.field, "models[1].file");
    // The unchanged manifest still reads.
    m.write(&dir).unwrap();
    WorldManifest::read(&dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes a recording with `edit` applied and reads it back: the field it names.
fn recording_refused(dir: &Path, edit: impl FnOnce(&mut Recording)) -> BadField {
    let mut rec = Recording {
        world: dir.to_owned(),
        config: WorldConfig::default(),
        frames: vec![FrameInput::default(); 2],
        hashes: vec![[0; farsight_world::SYSTEMS]; 2],
    };
    edit(&mut rec);
    let path = dir.join("edited.rec");
    rec.write(&path).unwrap();
    let e = Recording::read(&path).unwrap_err();
    let text = e.to_string();
    match e {
        RecordError::Field { path: p, bad } => {
            assert_eq!(p, path);
            assert!(text.contains(&bad.field), "{text}");
            bad
        }
        other => panic!("not a field error: {other}"),
    }
}

#[test]
fn a_recording_with_settings_the_loop_cannot_use_is_refused_by_field() {
    let dir = scratch("recording");
    let f = recording_refused(&dir, |r| r.config.draw_distance = f32::NAN);
    assert_eq!(f.field, "config.draw_distance");
    let f = recording_refused(&dir, |r| r.config.budget.reserve = -0.5);
    assert_eq!(f.field, "config.budget.reserve");
    let f = recording_refused(&dir, |r| r.config.source_radius = f32::INFINITY);
    assert_eq!(f.field, "config.source_radius");
    let f = recording_refused(&dir, |r| r.config.collision_radius = -1.0);
    assert_eq!(f.field, "config.collision_radius");
    let f = recording_refused(&dir, |r| r.config.io_threads = 1 << 20);
    assert_eq!(f.field, "config.io_threads");
    let f = recording_refused(&dir, |r| r.config.budget.memory = 0);
    assert_eq!(f.field, "config.budget.memory");
    let f = recording_refused(&dir, |r| r.frames[1].camera[2] = f32::NAN);
    assert_eq!(f.field, "frames[1].camera");
    let f = recording_refused(&dir, |r| {
        r.frames[0].edits.push(farsight_world::Edit {
            center: [0.0; 3],
            radius: f32::NAN,
            carve: true,
        })
    });
    assert_eq!(f.field, "frames[0].edits[0].radius");
    // An unchanged recording reads.
    let rec = Recording {
        world: dir.clone(),
        config: WorldConfig::default(),
        frames: vec![FrameInput::default()],
        hashes: vec![[0; farsight_world::SYSTEMS]],
    };
    rec.write(&dir.join("ok.rec")).unwrap();
    Recording::read(&dir.join("ok.rec")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_world_opened_with_settings_it_cannot_use_is_refused_by_field() {
    let (dir, _) = world("config");
    let config = WorldConfig {
        draw_distance: f32::NAN,
        ..WorldConfig::default()
    };
    match World::open(&dir, config).unwrap_err() {
        WorldError::Config(bad) => assert_eq!(bad.field, "draw_distance"),
        other => panic!("not a settings error: {other}"),
    }
    let mut config = WorldConfig::default();
    config.budget.reserve = -0.25;
    match World::open_replay(&dir, config).unwrap_err() {
        WorldError::Config(bad) => assert_eq!(bad.field, "budget.reserve"),
        other => panic!("not a settings error: {other}"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
