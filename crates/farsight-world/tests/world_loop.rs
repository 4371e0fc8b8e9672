//! The loop over a generated world: a flight with loading screens, teleports and
//! edits draws no hole and holds the budget; the recorded run replays to the same
//! hashes; a changed input is found at its frame; bad manifests are refused.

use std::path::PathBuf;
use std::time::Duration;

use farsight_stream::cluster::CookedModel;
use farsight_world::{
    generate, Flight, FrameInput, FrameReport, Recording, SyntheticSpec, SystemId, World,
    WorldConfig, WorldError, WorldManifest, MANIFEST_FILE, SYSTEMS,
};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("farsight-world-lib-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn recording(dir: &std::path::Path, config: WorldConfig) -> Recording {
    Recording {
        world: dir.to_owned(),
        config,
        frames: Vec::new(),
        hashes: Vec::new(),
    }
}

fn fly(world: &mut World, frames: u32, rec: &mut Recording) -> (u32, u32, u8) {
    let flight = Flight::new(world.manifest(), frames);
    fly_with(world, &flight, frames, rec, &mut |_| {})
}

/// Flies `flight`, handing every flown (not loading) frame's report to `each`.
fn fly_with(
    world: &mut World,
    flight: &Flight,
    frames: u32,
    rec: &mut Recording,
    each: &mut dyn FnMut(&FrameReport),
) -> (u32, u32, u8) {
    let mut input = FrameInput::default();
    let (mut holes, mut over, mut bias) = (0, 0, 0);
    for f in 0..frames {
        let ff = flight.frame(f);
        input.camera = ff.camera.to_array();
        input.target = ff.target.to_array();
        input.prefetch = ff.prefetch.map(|p| p.to_array());
        input.edits.clear();
        if f == 0 || ff.teleport {
            input.loading = true;
            for n in 0..5000 {
                let r = world.step(&mut input);
                rec.frames.push(input.clone());
                rec.hashes.push(r.hashes);
                if n > 2 && world.ready() {
                    break;
                }
                world.wait_for_io(Duration::from_millis(1));
            }
            assert!(
                world.ready(),
                "frame {f}: the loading screen waits on {:?}",
                world.waiting_on()
            );
        }
        input.loading = false;
        input.edits = ff.edits;
        let r = world.step(&mut input);
        rec.frames.push(input.clone());
        rec.hashes.push(r.hashes);
        each(&r);
        holes += u32::from(r.holes() > 0);
        over += u32::from(r.over_budget);
        bias = bias.max(r.bias);
    }
    (holes, over, bias)
}

#[test]
fn a_generated_world_flies_without_holes_and_replays_to_the_same_decisions() {
    let dir = scratch("fly");
    let spec = SyntheticSpec::small();
    let m = generate(&dir, &spec, &mut |_| {}).unwrap();
    assert_eq!(m.buildings.len(), spec.buildings as usize);
    let config = WorldConfig::default();
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let (holes, over, _) = fly(&mut world, 90, &mut rec);
    assert_eq!(holes, 0, "frames with a hole");
    assert_eq!(over, 0, "frames over budget");
    assert!(world.store().len() > 50, "objects streamed in");
    assert!(rec.frames.iter().any(|f| !f.edits.is_empty()));
    assert!(rec.frames.iter().any(|f| f.prefetch.is_some()));

    let path = dir.join("flight.rec");
    rec.write(&path).unwrap();
    let rec = Recording::read(&path).unwrap();
    let mut replay = World::open_replay(&dir, rec.config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }

    // An edit that never happened changes the terrain's decisions at its frame.
    let k = rec.frames.iter().position(|f| !f.edits.is_empty()).unwrap();
    let mut tampered = rec.clone();
    tampered.frames[k].edits.clear();
    let mut replay = World::open_replay(&dir, rec.config).unwrap();
    let mut first = None;
    for (i, input) in tampered.frames.iter().enumerate() {
        if let Err(m) = tampered.compare(i, &replay.replay(input).hashes) {
            first = Some(m);
            break;
        }
    }
    let m = first.expect("the replay differs");
    assert_eq!((m.frame as usize, m.system), (k, SystemId::Terrain), "{m}");
    assert!(m.to_string().contains(&format!("frame {k}")) && m.to_string().contains("terrain"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_tight_budget_raises_the_bias_and_is_still_held() {
    let dir = scratch("tight");
    generate(&dir, &SyntheticSpec::small(), &mut |_| {}).unwrap();
    let mut config = WorldConfig::default();
    config.budget.upload = 96 << 10;
    config.budget.memory = 64 << 20;
    config.budget.bias_frames = 5;
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let (_, over, bias) = fly(&mut world, 60, &mut rec);
    assert_eq!(over, 0, "frames over budget");
    assert!(bias > 0, "pressure coarsened the world");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_manifests_are_refused_with_the_path() {
    let dir = scratch("bad");
    let e = WorldManifest::read(&dir).unwrap_err();
    assert!(matches!(e, WorldError::Io { .. }) && e.to_string().contains(MANIFEST_FILE));
    std::fs::write(dir.join(MANIFEST_FILE), "not ron at all (").unwrap();
    let e = WorldManifest::read(&dir).unwrap_err();
    assert!(matches!(e, WorldError::Manifest { .. }), "{e}");
    generate(&dir, &SyntheticSpec::small(), &mut |_| {}).unwrap();
    let mut m = WorldManifest::read(&dir).unwrap();
    m.version = 99;
    m.write(&dir).unwrap();
    let e = WorldManifest::read(&dir).unwrap_err();
    assert!(e.to_string().contains("version 99"), "{e}");
    m.version = farsight_world::WORLD_VERSION;
    m.write(&dir).unwrap();
    // A truncated model file is refused, naming it.
    let model = dir.join(&m.models[0].file);
    let bytes = std::fs::read(&model).unwrap();
    std::fs::write(&model, &bytes[..bytes.len() / 3]).unwrap();
    let e = World::open(&dir, WorldConfig::default()).unwrap_err();
    assert!(matches!(e, WorldError::Model(_)), "{e}");
    assert!(e.to_string().contains(&m.models[0].file), "{e}");
    m.models[0].file = "models/missing.farsight".into();
    m.write(&dir).unwrap();
    let e = World::open(&dir, WorldConfig::default()).unwrap_err();
    assert!(e.to_string().contains("missing.farsight"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn one_system_wanting_the_whole_pool_leaves_every_other_its_coarsest_levels() {
    let dir = scratch("pool");
    // Many models, many instances, all near the camera on a small ground: their
    // finest levels alone want more than the whole pool.
    let spec = SyntheticSpec {
        models: 120,
        objects: 6_000,
        ..SyntheticSpec::small()
    };
    let m = generate(&dir, &spec, &mut |_| {}).unwrap();
    let demand: u64 = m
        .models
        .iter()
        .map(|e| {
            let c = CookedModel::open(dir.join(&e.file)).unwrap();
            c.levels().map(|l| l.bytes).sum::<u64>()
        })
        .sum();
    let mut config = WorldConfig::default();
    config.budget.memory = 16 << 20;
    config.budget.upload = 1 << 20;
    config.budget.bias_frames = 10;
    assert!(
        demand > config.budget.memory,
        "the clusters alone want {demand} bytes"
    );
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let flight = Flight::new(world.manifest(), 120);
    let (mut peak, mut peak_upload, mut clusters_peak) = (0, 0, 0);
    let mut others = [0u64; SYSTEMS];
    let (holes, over, bias) = fly_with(&mut world, &flight, 120, &mut rec, &mut |r| {
        for s in SystemId::ALL {
            assert_eq!(
                r.systems[s as usize].holes,
                0,
                "frame {}: {} has a hole",
                r.frame,
                s.name()
            );
            others[s as usize] = others[s as usize].max(r.systems[s as usize].memory);
        }
        assert!(
            r.memory <= config.budget.memory,
            "frame {}: {} resident",
            r.frame,
            r.memory
        );
        assert!(
            r.upload <= config.budget.upload,
            "frame {}: {} uploaded",
            r.frame,
            r.upload
        );
        peak = peak.max(r.memory);
        peak_upload = peak_upload.max(r.upload);
        clusters_peak = clusters_peak.max(r.systems[SystemId::Clusters as usize].memory);
    });
    eprintln!(
        "demand {demand}, peak {peak} (clusters {clusters_peak}), upload peak {peak_upload}, per system {others:?}, bias {bias}"
    );
    assert_eq!((holes, over), (0, 0), "frames with a hole, over budget");
    assert!(bias > 0, "pressure coarsened every system");
    assert!(others[SystemId::Buildings as usize] > 0 && others[SystemId::Terrain as usize] > 0);
    assert!(
        clusters_peak <= config.budget.fine_memory(),
        "the clusters' finer levels stay out of the reserve"
    );
    assert!(
        peak > config.budget.memory / 2,
        "the pool was used: {peak} of {}",
        config.budget.memory
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_paused_terrain_mesher_leaves_no_hole_and_the_flight_still_replays() {
    let dir = scratch("paused");
    // Ground much larger than the draw distance: chunks come into range all along
    // the flight, and the mesher is paused after the first loading screen.
    let spec = SyntheticSpec {
        chunks_side: 12,
        ..SyntheticSpec::small()
    };
    generate(&dir, &spec, &mut |_| {}).unwrap();
    let config = WorldConfig {
        draw_distance: 150.0,
        source_radius: 150.0,
        ..WorldConfig::default()
    };
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let frames = 120;
    let flight = Flight::new(world.manifest(), frames);
    let mut input = FrameInput::default();
    let ff = flight.frame(0);
    input.camera = ff.camera.to_array();
    input.target = ff.target.to_array();
    input.loading = true;
    for _ in 0..5000 {
        let r = world.step(&mut input);
        rec.frames.push(input.clone());
        rec.hashes.push(r.hashes);
        if world.ready() {
            break;
        }
        world.wait_for_io(Duration::from_millis(1));
    }
    assert!(world.ready(), "{:?}", world.waiting_on());
    let meshed = world
        .terrain_levels()
        .filter(|(_, l)| *l == Some(0))
        .count();
    world.set_terrain_meshing_paused(true);
    let (mut drawn, mut base) = (0, 0);
    let (holes, over, _) = fly_with(&mut world, &flight, frames, &mut rec, &mut |r| {
        assert_eq!(
            r.systems[SystemId::Terrain as usize].holes,
            0,
            "frame {}: a terrain hole with the mesher paused",
            r.frame
        );
    });
    for (c, level) in world.terrain_levels() {
        drawn += 1;
        if level == Some(farsight_terrain::LEVELS - 1) && world.terrain_base_mesh(c).is_some() {
            base += 1;
        }
    }
    assert_eq!((holes, over), (0, 0));
    assert!(meshed > 0, "the mesher ran before the pause");
    assert!(
        base > 0,
        "chunks that came into range draw their base: {base} of {drawn}"
    );

    // The base meshes are the loop's own decisions: the recording replays.
    let mut replay = World::open_replay(&dir, config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
