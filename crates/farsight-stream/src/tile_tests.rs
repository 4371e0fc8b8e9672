//! Tile streaming: one level per tile, the hysteresis band, the scene root, the
//! unload distance, and bad files.

use super::*;
use std::collections::HashMap;

#[derive(Default)]
struct Shown {
    tiles: HashMap<u32, (u8, Vec<u8>)>,
    shows: u32,
    hides: u32,
}

impl TileSink for Shown {
    fn show(&mut self, tile: u32, level: u8, payload: &[u8]) {
        self.tiles.insert(tile, (level, payload.to_vec()));
        self.shows += 1;
    }
    fn hide(&mut self, tile: u32) {
        assert!(
            self.tiles.remove(&tile).is_some(),
            "tile {tile} hidden twice"
        );
        self.hides += 1;
    }
}

fn write_tiles(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("farsight-tiles-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut tiles = Vec::new();
    for t in 0..4u32 {
        let x = t as f32 * 100.0;
        let mut levels = Vec::new();
        for (l, d) in [50.0f32, 150.0, 400.0].iter().enumerate() {
            let file = format!("tile{t}-lod{l}.farsight");
            write_tile_level(&dir.join(&file), &vec![(t * 10 + l as u32) as u8; 100 >> l]).unwrap();
            levels.push(TileLodLevel {
                file,
                switch_distance: *d,
            });
        }
        tiles.push(TileEntry {
            name: format!("tile {t}"),
            min: [x, 0.0, 0.0],
            max: [x + 100.0, 10.0, 100.0],
            lod_levels: levels,
            unload_distance: None,
        });
    }
    let path = dir.join("tiles.farsight");
    write_tile_manifest(&path, &TileManifest { tiles }).unwrap();
    path
}

fn settle(s: &mut TileStreamer<Shown>, camera: Vec3, root: &Mat4) {
    for _ in 0..50 {
        s.update(camera, root);
        s.wait_for_io(Duration::from_millis(5));
    }
    s.update(camera, root);
}

#[test]
fn only_the_active_level_is_loaded_and_switches_use_the_hysteresis_band() {
    let path = write_tiles("band");
    let mut s = TileStreamer::open(&path, Shown::default(), 2).unwrap();
    let root = Mat4::IDENTITY;
    // Tile 0 spans x 0..100; a camera at x = -40 is 40 away: level 0.
    settle(&mut s, Vec3::new(-40.0, 5.0, 50.0), &root);
    assert_eq!(s.shown(0), Some(0));
    assert_eq!(s.sink().tiles[&0], (0, vec![0u8; 100]));
    // 60 away: past 50, level 1.
    settle(&mut s, Vec3::new(-60.0, 5.0, 50.0), &root);
    assert_eq!(s.shown(0), Some(1));
    assert_eq!(s.sink().tiles[&0], (1, vec![1u8; 50]));
    // 47 away: inside 50 but not inside 50 * 0.9 = 45: stays at level 1.
    settle(&mut s, Vec3::new(-47.0, 5.0, 50.0), &root);
    assert_eq!(s.shown(0), Some(1));
    // 44 away: back to level 0.
    settle(&mut s, Vec3::new(-44.0, 5.0, 50.0), &root);
    assert_eq!(s.shown(0), Some(0));
    // Tile 3 (x 300..400) is 344 away: its last level.
    assert_eq!(s.shown(3), Some(2));
    assert_eq!(s.sink().tiles.len(), 4, "one level per tile");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn moving_the_scene_root_moves_the_tiles_with_it() {
    let path = write_tiles("root");
    let mut a = TileStreamer::open(&path, Shown::default(), 1).unwrap();
    let mut b = TileStreamer::open(&path, Shown::default(), 1).unwrap();
    let cam = Vec3::new(-60.0, 5.0, 50.0);
    let shift = Mat4::from_translation(Vec3::new(500.0, 0.0, -30.0));
    settle(&mut a, cam, &Mat4::IDENTITY);
    // Root and camera moved together: the same levels.
    settle(&mut b, shift.transform_point3(cam), &shift);
    for t in 0..4 {
        assert_eq!(a.shown(t), b.shown(t), "tile {t}");
    }
    // Root moved under a still camera: tile 0 is now 540 units away, past its
    // last level's 400: unloaded.
    settle(&mut b, cam, &shift);
    assert_eq!(b.shown(0), None);
    assert!(!b.sink().tiles.contains_key(&0));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_corrupt_level_keeps_the_level_shown_and_a_bad_manifest_is_refused() {
    let path = write_tiles("corrupt");
    let dir = path.parent().unwrap().to_owned();
    let lvl = dir.join("tile0-lod1.farsight");
    let mut b = std::fs::read(&lvl).unwrap();
    let n = b.len();
    b[n - 3] ^= 1;
    std::fs::write(&lvl, b).unwrap();
    let mut s = TileStreamer::open(&path, Shown::default(), 1).unwrap();
    settle(&mut s, Vec3::new(-40.0, 5.0, 50.0), &Mat4::IDENTITY);
    assert_eq!(s.shown(0), Some(0));
    for _ in 0..3 {
        s.update(Vec3::new(-60.0, 5.0, 50.0), &Mat4::IDENTITY);
        s.wait_for_io(Duration::from_millis(20));
    }
    assert_eq!(
        s.shown(0),
        Some(0),
        "the failed level 1 never replaced level 0"
    );

    let m = TileManifest {
        tiles: vec![TileEntry {
            name: "bad".into(),
            min: [0.0; 3],
            max: [1.0; 3],
            lod_levels: vec![
                TileLodLevel {
                    file: "a".into(),
                    switch_distance: 10.0,
                },
                TileLodLevel {
                    file: "b".into(),
                    switch_distance: 5.0,
                },
            ],
            unload_distance: None,
        }],
    };
    let bad = dir.join("bad.farsight");
    write_tile_manifest(&bad, &m).unwrap();
    let err = TileStreamer::open(&bad, Shown::default(), 1).unwrap_err();
    assert!(err.to_string().contains("increasing"), "{err}");
    let mut m = m;
    m.tiles[0].lod_levels[1].switch_distance = 20.0;
    m.tiles[0].unload_distance = Some(15.0);
    write_tile_manifest(&bad, &m).unwrap();
    let err = TileStreamer::open(&bad, Shown::default(), 1).unwrap_err();
    assert!(err.to_string().contains("unload_distance"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_tile_past_its_unload_distance_holds_nothing_and_comes_back_inside_the_band() {
    let path = write_tiles("unload");
    let root = Mat4::IDENTITY;
    let mut s = TileStreamer::open(&path, Shown::default(), 2).unwrap();
    // Tile 0 spans x 0..100, its last level reaches 400: 390 away shows level 2.
    settle(&mut s, Vec3::new(-390.0, 5.0, 50.0), &root);
    assert_eq!(s.shown(0), Some(2));
    // 410 away: past the last level, the tile is hidden and holds nothing.
    let st = s.update(Vec3::new(-410.0, 5.0, 50.0), &root);
    assert_eq!(st.unloads, 1, "tile 0 was the only one showing");
    assert_eq!((s.shown(0), s.target(0)), (None, None));
    assert!(!s.sink().tiles.contains_key(&0));
    settle(&mut s, Vec3::new(-410.0, 5.0, 50.0), &root);
    assert_eq!(s.shown(0), None, "nothing loads while out of range");
    // 380 away: inside 400 but not inside 400 * 0.9 = 360: still unloaded.
    settle(&mut s, Vec3::new(-380.0, 5.0, 50.0), &root);
    assert_eq!(s.shown(0), None);
    // 350 away: back with its last level.
    settle(&mut s, Vec3::new(-350.0, 5.0, 50.0), &root);
    assert_eq!(s.shown(0), Some(2));
    assert_eq!(s.sink().tiles[&0], (2, vec![2u8; 25]));
    assert_eq!(s.sink().hides, 1);
    // A far first frame loads nothing at all; tiles 0..3 are 1000..1300 away.
    let mut far = TileStreamer::open(&path, Shown::default(), 1).unwrap();
    settle(&mut far, Vec3::new(-1000.0, 5.0, 50.0), &root);
    assert_eq!(far.sink().shows, 0);
    assert!((0..4).all(|t| far.shown(t).is_none()));

    // An explicit unload distance keeps the last level further out.
    let dir = path.parent().unwrap();
    let bytes = AlignedBytes::read_file(&path).unwrap();
    let mut m = Container::<TileManifest>::read(&bytes)
        .unwrap()
        .into_manifest();
    m.tiles[0].unload_distance = Some(600.0);
    let wide = dir.join("wide.farsight");
    write_tile_manifest(&wide, &m).unwrap();
    let mut w = TileStreamer::open(&wide, Shown::default(), 1).unwrap();
    settle(&mut w, Vec3::new(-550.0, 5.0, 50.0), &root);
    assert_eq!(w.shown(0), Some(2), "past the last switch, inside 600");
    settle(&mut w, Vec3::new(-610.0, 5.0, 50.0), &root);
    assert_eq!(w.shown(0), None);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn tile_manifests_and_level_files_refuse_another_version_word() {
    use farsight_format::FormatError;
    let path = write_tiles("version");
    let level = path.with_file_name("tile0-lod0.farsight");
    assert_eq!(read_tile_level(&level).unwrap(), vec![0u8; 100]);
    let set_word = |p: &Path| {
        let mut b = std::fs::read(p).unwrap();
        b[12..16].copy_from_slice(&2u32.to_le_bytes());
        std::fs::write(p, b).unwrap();
    };
    let wrong = |e: SceneError| match e {
        SceneError::Format {
            source: FormatError::WrongVersion { found, expected },
            ..
        } => (found, expected),
        e => panic!("{e}"),
    };
    set_word(&level);
    assert_eq!(wrong(read_tile_level(&level).unwrap_err()), (2, 1));
    set_word(&path);
    match TileStreamer::open(&path, Shown::default(), 1) {
        Err(TileError::Scene(e)) => assert_eq!(wrong(e), (2, 1)),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a version 2 tile manifest opened"),
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
