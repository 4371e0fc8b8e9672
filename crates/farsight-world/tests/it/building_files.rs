//! The loop makes building levels resident from their files: an intact world reads
//! each file it needs, counts the bytes it really read and draws without a hole;
//! a world whose building files are deleted, truncated or bit-flipped retries, gives
//! the levels up, says so, and counts the buildings it cannot draw as holes. The
//! building reads are I/O completions: a recording replays through them.

use std::path::Path;

use farsight_building::bake::{bake, ManifoldKernel};
use farsight_building::{uv_gradient_tangents, BakedBuilding, Kit, LodPolicy};
use farsight_testkit::scratch;
use farsight_testkit::world::recording;
use farsight_world::{
    generate, BuildingLevel, EntityKind, Flight, FrameReport, Recording, SyntheticConfig, SystemId,
    World, WorldConfig, WorldManifest,
};

/// One baked building of the corporate kit, as a cooked file.
fn cooked_building() -> (BakedBuilding, Vec<u8>) {
    let kit = Kit::builtin("corporate").unwrap();
    let recipe = kit.building(0, 0, 7);
    let baked = bake(&recipe, &LodPolicy::ladder(), &ManifoldKernel).unwrap();
    let bytes = baked.write_cooked(&uv_gradient_tangents).unwrap();
    (baked, bytes)
}

/// A small generated world whose every building is backed by a copy of one cooked
/// building file (its own name, the file's id and level count).
fn world_with_building_files(dir: &Path) -> WorldManifest {
    let (baked, bytes) = cooked_building();
    generate(dir, &SyntheticConfig::small(), &mut |_| {}).unwrap();
    let mut m = WorldManifest::read(dir).unwrap();
    std::fs::create_dir_all(dir.join("buildings")).unwrap();
    let n = baked.level_count();
    for (i, b) in m.buildings.iter_mut().enumerate() {
        b.id = baked.id().to_owned();
        b.file = format!("buildings/b{i}.farsight");
        std::fs::write(dir.join(&b.file), &bytes).unwrap();
        b.levels = (0..n)
            .map(|l| BuildingLevel {
                until: (l + 1 < n).then(|| 60.0 * 2.5f32.powi(l as i32)),
                bytes: (256u64 << 10) >> (2 * l),
            })
            .collect();
    }
    m.write(dir).unwrap();
    m
}

/// Flies the scripted flight with loading screens, recording it; returns every
/// report (loading frames included).
fn fly(world: &mut World, frames: u32, rec: &mut Recording) -> Vec<FrameReport> {
    let flight = Flight::new(world.manifest(), frames);
    let mut reports = Vec::new();
    farsight_testkit::world::fly(world, &flight, frames, rec, &mut |r, _| reports.push(r));
    reports
}

#[test]
fn an_intact_world_reads_its_building_files_and_draws_without_holes() {
    let dir = scratch("intact");
    let m = world_with_building_files(&dir);
    let size = std::fs::metadata(dir.join(&m.buildings[0].file))
        .unwrap()
        .len();
    let config = WorldConfig::default();
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let reports = fly(&mut world, 60, &mut rec);

    let flown = reports.iter().filter(|r| !r.loading);
    assert_eq!(
        flown.filter(|r| r.holes() > 0).count(),
        0,
        "frames with a hole"
    );
    let reads: u32 = reports.iter().map(|r| r.building_reads).sum();
    let read_bytes: u64 = reports.iter().map(|r| r.building_read_bytes).sum();
    assert!(reads > 0, "no building file was read");
    assert_eq!(
        reports.iter().map(|r| r.building_read_errors).sum::<u32>(),
        0
    );
    assert_eq!(reports.last().unwrap().building_levels_failed, 0);
    // Every read read the whole file, and the report counts exactly those bytes.
    let done: Vec<_> = rec.frames.iter().flat_map(|f| &f.buildings_done).collect();
    assert_eq!(done.len() as u32, reads);
    assert!(done.iter().all(|d| d.ok && d.bytes == size), "{done:?}");
    assert_eq!(read_bytes, size * reads as u64);
    assert!(
        reports
            .iter()
            .any(|r| r.systems[SystemId::Buildings as usize].memory > 0),
        "building levels became resident"
    );

    // The reads are inputs: the recording replays, and a read that never arrived
    // changes the buildings' decisions at its frame.
    let path = dir.join("flight.rec");
    rec.write(&path).unwrap();
    let rec = Recording::read(&path).unwrap();
    let mut replay = World::open_replay(&dir, rec.config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }
    let k = rec
        .frames
        .iter()
        .position(|f| !f.buildings_done.is_empty())
        .unwrap();
    let mut lost = rec.clone();
    lost.frames[k].buildings_done.clear();
    let mut replay = World::open_replay(&dir, rec.config).unwrap();
    let first = lost
        .frames
        .iter()
        .enumerate()
        .find_map(|(i, input)| lost.compare(i, &replay.replay(input).hashes).err())
        .expect("the replay differs");
    assert_eq!(
        (first.frame as usize, first.system),
        (k, SystemId::Buildings),
        "{first}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Damages every building file with `damage` and flies: no panic, the loading
/// screens end, every read fails, each level read is retried and then given up,
/// and the buildings in view are holes.
fn damaged(name: &str, damage: &dyn Fn(&Path)) {
    let dir = scratch(name);
    let m = world_with_building_files(&dir);
    for b in &m.buildings {
        damage(&dir.join(&b.file));
    }
    let config = WorldConfig::default();
    let mut world = World::open(&dir, config).unwrap();
    let mut rec = recording(&dir, config);
    let reports = fly(&mut world, 40, &mut rec);

    let holes = reports
        .iter()
        .filter(|r| !r.loading && r.systems[SystemId::Buildings as usize].holes > 0)
        .count();
    assert!(
        holes > 0,
        "{name}: buildings that cannot be drawn are holes"
    );
    let last = reports.last().unwrap();
    assert!(last.building_levels_failed > 0, "{name}: levels given up");
    let errors: u32 = reports.iter().map(|r| r.building_read_errors).sum();
    assert!(
        errors >= 4 * last.building_levels_failed,
        "{name}: {errors} failed reads for {} levels given up (a first read and three retries each)",
        last.building_levels_failed
    );
    let done: Vec<_> = rec.frames.iter().flat_map(|f| &f.buildings_done).collect();
    assert!(done.iter().all(|d| !d.ok), "{name}: a damaged file read");
    // A building with nothing to draw is listed with its box and no level.
    let mut listed = 0;
    for (kind, b, level) in world.objects() {
        if let EntityKind::Building(i) = kind {
            let entry = &m.buildings[i as usize];
            assert_eq!(level, None, "{name}: {} draws a level", entry.id);
            assert!(
                b.min.is_finite() && b.max.is_finite() && !b.is_empty(),
                "{name}: {} listed with the box {b:?}",
                entry.id
            );
            listed += 1;
        }
    }
    assert!(listed > 0, "{name}: no building loaded at the end");
    // Memory is held while a read is on its way, but nothing is uploaded.
    assert!(
        reports
            .iter()
            .all(|r| r.systems[SystemId::Buildings as usize].upload == 0),
        "{name}: nothing uploaded from a damaged file"
    );
    // The failures replay too.
    let mut replay = World::open_replay(&dir, rec.config).unwrap();
    for (i, input) in rec.frames.iter().enumerate() {
        rec.compare(i, &replay.replay(input).hashes).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn deleted_building_files_are_retried_given_up_and_counted_as_holes() {
    damaged("deleted", &|p| std::fs::remove_file(p).unwrap());
}

#[test]
fn truncated_building_files_are_retried_given_up_and_counted_as_holes() {
    damaged("truncated", &|p| {
        let bytes = std::fs::read(p).unwrap();
        std::fs::write(p, &bytes[..bytes.len() * 2 / 3]).unwrap();
    });
}

#[test]
fn bit_flipped_building_files_are_retried_given_up_and_counted_as_holes() {
    damaged("flipped", &|p| {
        let mut bytes = std::fs::read(p).unwrap();
        let k = bytes.len() / 2;
        bytes[k] ^= 0x10;
        std::fs::write(p, &bytes).unwrap();
    });
}
