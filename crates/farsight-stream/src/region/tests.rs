//! Regions: one transition per frame, region 0 first and last, hysteresis, override,
//! edit mode, and a corrupt file that fails its region alone.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use farsight_geom::Aabb;
use glam::Vec3;

use super::*;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("farsight-region-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A `side x side` grid of 100-unit regions on the ground; region `i` holds `i % 7 + 1`
/// entities. Region 0 is the grid cell at the origin.
fn grid(side: u32) -> Vec<RegionSpec> {
    (0..side * side)
        .map(|i| {
            let (x, z) = ((i % side) as f32 * 100.0, (i / side) as f32 * 100.0);
            RegionSpec {
                name: format!("cell {i}"),
                bounds: Aabb::new(Vec3::new(x, 0.0, z), Vec3::new(x + 100.0, 50.0, z + 100.0)),
                authored: RegionState::Unloaded,
                entities: (0..i % 7 + 1)
                    .map(|k| EntityRecord {
                        id: i * 16 + k,
                        model: k,
                        position: Vec3::new(x + 10.0 * k as f32, 0.0, z + 50.0),
                        scale: 1.0,
                    })
                    .collect(),
            }
        })
        .collect()
}

fn legal(from: ActualState, to: ActualState) -> bool {
    use ActualState::*;
    matches!(
        (from, to),
        (Unloaded, Loading)
            | (Loading, Resident)
            | (Loading, Unloaded)
            | (Resident, Active)
            | (Active, Resident)
            | (Resident, Unloading)
            | (Active, Unloading)
            | (Unloading, Unloaded)
    )
}

fn source(x: f32, z: f32, radius: f32) -> StreamingSource {
    StreamingSource {
        position: Vec3::new(x, 25.0, z),
        radius,
        target: RegionState::Active,
    }
}

#[test]
fn at_most_one_transition_per_region_per_frame_and_region_zero_first_and_last() {
    let dir = temp_dir("flight");
    let index = write_scene(&dir, &grid(12)).unwrap();
    let mut w = RegionWorld::open(&index, CountingSink::default(), 2).unwrap();
    let mut saw_zero_wait = false;
    for f in 0..600u32 {
        // Two sources: one flying a circle, one that teleports every 150 frames.
        let t = f as f32 * 0.02;
        let a = source(600.0 + 400.0 * t.cos(), 600.0 + 400.0 * t.sin(), 180.0);
        let b = source(((f / 150) % 4) as f32 * 300.0 + 50.0, 900.0, 120.0);
        let sources: &[StreamingSource] = if f < 500 { &[a, b] } else { &[] };
        let frame = w.frame(sources).clone();
        // Region 0's entities are created before any other region starts loading
        // (possibly earlier in the same frame).
        let zero_now = w.streamer().actual(0);
        let mut seen = HashSet::new();
        for t in &frame.transitions {
            assert!(
                seen.insert(t.region),
                "frame {f}: region {} moved twice",
                t.region
            );
            assert!(legal(t.from, t.to), "frame {f}: {t:?}");
            if t.region != 0 && t.to == ActualState::Loading {
                assert!(
                    matches!(zero_now, ActualState::Resident | ActualState::Active),
                    "frame {f}: region {} loads before region 0",
                    t.region
                );
            }
        }
        if frame.loads.contains(&0) && w.streamer().counts()[1] == 1 {
            saw_zero_wait = true;
        }
        // Region 0 unloads last.
        if frame.drops.contains(&0) {
            assert!((1..w.streamer().len() as u32)
                .all(|r| w.streamer().actual(r) == ActualState::Unloaded));
        }
        // Region 0 stays at least resident while anything else is loaded.
        if (1..w.streamer().len() as u32).any(|r| w.streamer().actual(r).is_loaded()) {
            assert!(w.streamer().desired(0) >= RegionState::Resident);
        }
        // The sink's view agrees with the states.
        for r in 0..w.streamer().len() as u32 {
            let has = w.sink().entities.contains_key(&r);
            let a = w.streamer().actual(r);
            assert_eq!(
                has,
                matches!(a, ActualState::Resident | ActualState::Active),
                "region {r} {a:?}"
            );
        }
        w.wait_for_io(Duration::from_millis(1));
    }
    assert!(saw_zero_wait, "region 0 was loaded alone first");
    // Sources gone: everything unloads, region 0 last.
    assert_eq!(w.streamer().counts()[0], 144, "{:?}", w.streamer().counts());
    assert_eq!(w.sink().live_entities(), 0);
    assert!(w.sink().created_total > 0 && w.sink().created_total == w.sink().dropped_total);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn settle(w: &mut RegionWorld<CountingSink>, sources: &[StreamingSource], frames: u32) {
    for _ in 0..frames {
        w.frame(sources);
        w.wait_for_io(Duration::from_millis(2));
    }
}

#[test]
fn a_corrupt_region_file_fails_that_region_only_and_is_not_retried() {
    let dir = temp_dir("corrupt");
    let index = write_scene(&dir, &grid(4)).unwrap();
    // Flip a byte in the middle of region 5's file: the container's checksum catches it.
    let p = dir.join("region-5.farsight");
    let mut bytes = std::fs::read(&p).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&p, bytes).unwrap();
    // And truncate region 9's.
    let p9 = dir.join("region-9.farsight");
    let b9 = std::fs::read(&p9).unwrap();
    std::fs::write(&p9, &b9[..b9.len() - 7]).unwrap();

    let mut w = RegionWorld::open(&index, CountingSink::default(), 2).unwrap();
    let everything = [source(200.0, 200.0, 1000.0)];
    settle(&mut w, &everything, 60);
    let s = w.streamer();
    for r in 0..16u32 {
        if r == 5 || r == 9 {
            assert!(s.load_failed(r), "region {r}");
            assert_eq!(s.actual(r), ActualState::Unloaded);
            assert_eq!(
                s.status(r).to_string(),
                "Unloaded -> Active 1 src load failed"
            );
        } else {
            assert!(!s.load_failed(r));
            assert_eq!(s.actual(r), ActualState::Active, "region {r}");
            assert_eq!(w.sink().entities[&r], (r % 7 + 1) as usize, "region {r}");
        }
    }
    assert_eq!(w.errors().len(), 2, "one read each, no retry");
    let msg = w
        .errors()
        .iter()
        .map(|e| e.1.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        msg.contains("region-5.farsight") && msg.contains("region-9.farsight"),
        "{msg}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn streamer(n: u32) -> RegionStreamer {
    let specs = grid(n);
    RegionStreamer::new(
        specs.iter().map(|r| r.bounds).collect(),
        vec![RegionState::Unloaded; (n * n) as usize],
    )
    .unwrap()
}

/// Drives a streamer with loads that succeed on the next frame (no I/O).
fn tick(
    s: &mut RegionStreamer,
    sources: &[StreamingSource],
    pending: &mut Vec<LoadCompletion>,
    out: &mut RegionFrame,
) {
    let done = std::mem::take(pending);
    s.update(sources, &done, out);
    pending.extend(
        out.loads
            .iter()
            .map(|&region| LoadCompletion { region, ok: true }),
    );
}

#[test]
fn a_loaded_region_is_kept_until_radius_times_hysteresis() {
    let mut s = streamer(3);
    let (mut pending, mut out) = (Vec::new(), RegionFrame::default());
    // Region 2 spans x 200..300 on the first row; the source at x = 150, z = 50 with
    // radius 60 reaches it (50 away).
    for _ in 0..10 {
        tick(&mut s, &[source(150.0, 50.0, 60.0)], &mut pending, &mut out);
    }
    assert_eq!(s.actual(2), ActualState::Active);
    // 62 away: outside the radius, inside radius * 1.1 = 66: stays.
    for _ in 0..10 {
        tick(&mut s, &[source(138.0, 50.0, 60.0)], &mut pending, &mut out);
    }
    assert_eq!(s.actual(2), ActualState::Active);
    assert_eq!(s.status(2).sources, 1);
    // 70 away: unloads.
    for _ in 0..10 {
        tick(&mut s, &[source(130.0, 50.0, 60.0)], &mut pending, &mut out);
    }
    assert_eq!(s.actual(2), ActualState::Unloaded);
    // Coming back to 62 away does not load it: it must come inside the radius.
    for _ in 0..10 {
        tick(&mut s, &[source(138.0, 50.0, 60.0)], &mut pending, &mut out);
    }
    assert_eq!(s.actual(2), ActualState::Unloaded);
}

#[test]
fn an_override_beats_sources_and_edit_mode_until_cleared() {
    let mut s = streamer(3);
    let (mut pending, mut out) = (Vec::new(), RegionFrame::default());
    s.set_override(4, Some(RegionState::Unloaded));
    s.set_override(8, Some(RegionState::Resident));
    s.set_edit_mode(true);
    for _ in 0..10 {
        tick(
            &mut s,
            &[source(150.0, 150.0, 500.0)],
            &mut pending,
            &mut out,
        );
    }
    for r in 0..9 {
        let want = match r {
            4 => ActualState::Unloaded,
            8 => ActualState::Resident,
            _ => ActualState::Active,
        };
        assert_eq!(s.actual(r), want, "region {r}");
    }
    assert_eq!(s.status(4).override_state, Some(RegionState::Unloaded));
    assert_eq!(s.status(4).sources, 1);
    s.set_override(4, None);
    s.set_edit_mode(false);
    for _ in 0..10 {
        tick(&mut s, &[], &mut pending, &mut out);
    }
    assert_eq!(
        s.actual(4),
        ActualState::Unloaded,
        "no source, authored Unloaded"
    );
    assert_eq!(s.actual(8), ActualState::Resident, "still overridden");
    assert_eq!(
        s.actual(0),
        ActualState::Resident,
        "region 0 holds while 8 is loaded"
    );
}

#[test]
fn an_override_alone_loads_its_region_and_raises_region_zero() {
    let mut s = streamer(3);
    let (mut pending, mut out) = (Vec::new(), RegionFrame::default());
    // Every region authored Unloaded, no source anywhere: only the override asks.
    s.set_override(2, Some(RegionState::Active));
    for _ in 0..10 {
        tick(&mut s, &[], &mut pending, &mut out);
    }
    assert_eq!(s.actual(2), ActualState::Active, "the override loads it");
    assert_eq!(s.actual(0), ActualState::Resident, "region 0 came first");
    for r in [1, 3, 4, 5, 6, 7, 8] {
        assert_eq!(s.actual(r), ActualState::Unloaded, "region {r}");
    }
    // An override that wants its region unloaded does not hold region 0 up.
    s.set_override(2, Some(RegionState::Unloaded));
    for _ in 0..10 {
        tick(&mut s, &[], &mut pending, &mut out);
    }
    assert_eq!(s.actual(2), ActualState::Unloaded);
    assert_eq!(s.actual(0), ActualState::Unloaded, "nothing else is loaded");
}

#[test]
fn the_status_row_shows_desired_only_while_transitioning() {
    let mut s = streamer(2);
    let (mut pending, mut out) = (Vec::new(), RegionFrame::default());
    tick(&mut s, &[source(50.0, 50.0, 10.0)], &mut pending, &mut out);
    assert_eq!(s.status(0).to_string(), "Loading -> Active 1 src");
    for _ in 0..3 {
        tick(&mut s, &[source(50.0, 50.0, 10.0)], &mut pending, &mut out);
    }
    assert_eq!(s.status(0).to_string(), "Active 1 src");
    assert_eq!(s.status(3).to_string(), "Unloaded");
}

/// Sets the version word (offset 12, outside the checksum) of the file at `path`.
fn set_version_word(path: &std::path::Path, word: u32) {
    let mut b = std::fs::read(path).unwrap();
    b[12..16].copy_from_slice(&word.to_le_bytes());
    std::fs::write(path, b).unwrap();
}

#[test]
fn scene_indexes_and_region_files_refuse_another_version_word() {
    use farsight_format::FormatError;
    let dir = temp_dir("version");
    let index = write_scene(&dir, &grid(2)).unwrap();
    let region = Scene::open(&index).unwrap().region_path(1);
    assert_eq!(read_region_file(&region).unwrap().len(), 2);
    let wrong = |e: SceneError| match e {
        SceneError::Format {
            source: FormatError::WrongVersion { found, expected },
            ..
        } => (found, expected),
        e => panic!("{e}"),
    };
    set_version_word(&region, 2);
    assert_eq!(wrong(read_region_file(&region).unwrap_err()), (2, 1));
    set_version_word(&index, 2);
    assert_eq!(wrong(Scene::open(&index).unwrap_err()), (2, 1));
    let _ = std::fs::remove_dir_all(&dir);
}
