//! Tile LOD streaming (seed 000's per-tile LOD): a manifest of tiles, each with
//! `lod_levels` (a file per level and its switch distance). Only the active level of
//! a tile is loaded; the level is chosen by `farsight-lod`'s tile rule with the
//! hysteresis factor, from the camera position taken through the scene-root
//! transform, so LOD and streaming agree when the root moves.
//!
//! The manifest and each level file are farsight containers. A level file's payload
//! is one record ([`TILE_PAYLOAD`]) handed to the engine's [`TileSink`] as bytes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use farsight_format::{
    AlignedBytes, Container, FileWriter, Manifest, RecordIndex, RecordTag, Version,
};
use farsight_geom::Aabb;
use farsight_lod::{select_tile_level, DEFAULT_TILE_HYSTERESIS_FACTOR};
use glam::{Mat4, Vec3};
use serde::{Deserialize, Serialize};

use crate::io::IoPool;
use crate::region::SceneError;

/// Record kind of a tile level's payload.
pub const TILE_PAYLOAD: RecordTag = RecordTag(*b"TILE");

/// One LOD level of a tile: its file (relative to the manifest) and the furthest
/// distance it is used at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TileLodLevel {
    pub file: String,
    pub switch_distance: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TileEntry {
    pub name: String,
    /// Bounds in scene-root space.
    pub min: [f32; 3],
    pub max: [f32; 3],
    /// Finest first, switch distances increasing.
    pub lod_levels: Vec<TileLodLevel>,
}

/// The tile manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TileManifest {
    pub tiles: Vec<TileEntry>,
}

impl Manifest for TileManifest {
    fn visit_records(&self, _visit: &mut dyn FnMut(RecordIndex, RecordTag)) {}
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct TileLevelManifest {
    payload: RecordIndex,
}

impl Manifest for TileLevelManifest {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        visit(self.payload, TILE_PAYLOAD);
    }
}

/// Writes one tile level file holding `payload`.
pub fn write_tile_level(path: &Path, payload: &[u8]) -> Result<(), SceneError> {
    let mut w = FileWriter::new(Version::Full);
    let payload_index = w.add_record(TILE_PAYLOAD, payload);
    w.write_to(
        &TileLevelManifest {
            payload: payload_index,
        },
        path,
    )
    .map_err(|source| SceneError::Format {
        path: path.to_owned(),
        source,
    })
}

/// Writes the manifest.
pub fn write_tile_manifest(path: &Path, manifest: &TileManifest) -> Result<(), SceneError> {
    FileWriter::new(Version::Full)
        .write_to(manifest, path)
        .map_err(|source| SceneError::Format {
            path: path.to_owned(),
            source,
        })
}

/// Reads one tile level's payload (worker thread).
pub fn read_tile_level(path: &Path) -> Result<Vec<u8>, SceneError> {
    let fmt = |source| SceneError::Format {
        path: path.to_owned(),
        source,
    };
    let bytes = AlignedBytes::read_file(path).map_err(fmt)?;
    let file = Container::<TileLevelManifest>::read(&bytes).map_err(fmt)?;
    Ok(file
        .record(file.manifest().payload)
        .map_err(fmt)?
        .bytes
        .to_vec())
}

/// Why a tile manifest was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TileError {
    #[error(transparent)]
    Scene(#[from] SceneError),
    #[error("{path}: tile {tile} ({name}): {what}")]
    BadTile {
        path: PathBuf,
        tile: u32,
        name: String,
        what: &'static str,
    },
}

/// What the engine implements to show tiles. `show` replaces whatever level the tile
/// showed before: only one level of a tile exists at a time.
pub trait TileSink {
    fn show(&mut self, tile: u32, level: u8, payload: &[u8]);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TileState {
    /// Level chosen by the LOD rule last frame (the hysteresis reference).
    target: Option<u8>,
    /// Level whose payload the sink shows.
    shown: Option<u8>,
    /// Level being read.
    loading: Option<u8>,
}

/// Counters of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TileFrameStats {
    pub loads_started: u32,
    pub switches: u32,
    pub failures: u32,
    pub tiles_shown: u32,
}

/// Streams the tiles of one manifest.
pub struct TileStreamer<S: TileSink> {
    dir: PathBuf,
    tiles: Vec<TileEntry>,
    bounds: Vec<Aabb>,
    switches: Vec<Vec<f32>>,
    state: Vec<TileState>,
    pool: IoPool<Result<Vec<u8>, SceneError>>,
    drained: Vec<(u64, Result<Vec<u8>, SceneError>)>,
    hysteresis_factor: f32,
    sink: S,
}

impl<S: TileSink> std::fmt::Debug for TileStreamer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileStreamer")
            .field("tiles", &self.tiles.len())
            .finish()
    }
}

impl<S: TileSink> TileStreamer<S> {
    /// Opens and checks a manifest: every tile has a finite box and at least one
    /// level, switch distances increase, file names stay in the manifest's folder.
    pub fn open(manifest: &Path, sink: S, threads: usize) -> Result<Self, TileError> {
        let fmt = |source| SceneError::Format {
            path: manifest.to_owned(),
            source,
        };
        let bytes = AlignedBytes::read_file(manifest).map_err(fmt)?;
        let m = Container::<TileManifest>::read(&bytes)
            .map_err(fmt)?
            .into_manifest();
        let mut bounds = Vec::with_capacity(m.tiles.len());
        let mut switches = Vec::with_capacity(m.tiles.len());
        for (i, t) in m.tiles.iter().enumerate() {
            let bad = |what| TileError::BadTile {
                path: manifest.to_owned(),
                tile: i as u32,
                name: t.name.clone(),
                what,
            };
            let b = Aabb::new(Vec3::from(t.min), Vec3::from(t.max));
            if !(b.min.is_finite() && b.max.is_finite() && b.min.cmple(b.max).all()) {
                return Err(bad("bounds are not finite with min <= max"));
            }
            if t.lod_levels.is_empty() || t.lod_levels.len() > 255 {
                return Err(bad("needs 1 to 255 lod_levels"));
            }
            let s: Vec<f32> = t.lod_levels.iter().map(|l| l.switch_distance).collect();
            if s.iter().any(|d| !d.is_finite() || *d < 0.0) || s.windows(2).any(|w| w[0] > w[1]) {
                return Err(bad(
                    "switch distances must be finite, non-negative and increasing",
                ));
            }
            for l in &t.lod_levels {
                let p = Path::new(&l.file);
                if p.is_absolute()
                    || p.components()
                        .any(|c| !matches!(c, std::path::Component::Normal(_)))
                {
                    return Err(bad("a level file leaves the manifest's folder"));
                }
            }
            bounds.push(b);
            switches.push(s);
        }
        Ok(Self {
            dir: manifest.parent().unwrap_or(Path::new(".")).to_owned(),
            state: vec![
                TileState {
                    target: None,
                    shown: None,
                    loading: None
                };
                m.tiles.len()
            ],
            tiles: m.tiles,
            bounds,
            switches,
            pool: IoPool::new(threads, "farsight-tile-io"),
            drained: Vec::new(),
            hysteresis_factor: DEFAULT_TILE_HYSTERESIS_FACTOR,
            sink,
        })
    }

    pub fn with_hysteresis_factor(mut self, factor: f32) -> Self {
        self.hysteresis_factor = factor;
        self
    }

    pub fn sink(&self) -> &S {
        &self.sink
    }

    pub fn len(&self) -> usize {
        self.tiles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tiles.is_empty()
    }

    /// The level the tile shows, if any.
    pub fn shown(&self, tile: u32) -> Option<u8> {
        self.state[tile as usize].shown
    }

    /// The level the LOD rule chose last frame.
    pub fn target(&self, tile: u32) -> Option<u8> {
        self.state[tile as usize].target
    }

    /// Waits up to `timeout` for a level read to finish.
    pub fn wait_for_io(&mut self, timeout: Duration) {
        self.pool.wait_some(timeout, &mut self.drained);
    }

    /// One frame. `camera` is the camera's world position and `scene_root` the
    /// scene root's local-to-world transform: distances are measured in root space,
    /// as the entity LOD measures them.
    pub fn update(&mut self, camera: Vec3, scene_root: &Mat4) -> TileFrameStats {
        let mut st = TileFrameStats::default();
        self.pool.drain(&mut self.drained);
        self.drained.sort_by_key(|d| d.0);
        for (id, result) in self.drained.drain(..) {
            let (tile, level) = ((id >> 8) as u32, (id & 0xff) as u8);
            let s = &mut self.state[tile as usize];
            s.loading = None;
            match result {
                Ok(payload) => {
                    // Swap in one call: the old level is gone the moment the new one shows.
                    self.sink.show(tile, level, &payload);
                    s.shown = Some(level);
                    st.switches += 1;
                }
                Err(e) => {
                    log::error!("tile {tile} level {level}: {e}; keeping the level shown");
                    st.failures += 1;
                }
            }
        }
        let local = effective_camera_position(camera, scene_root);
        for (i, s) in self.state.iter_mut().enumerate() {
            let d = self.bounds[i].distance_squared(local).sqrt();
            let level = select_tile_level(
                s.target.map(usize::from),
                d,
                &self.switches[i],
                self.hysteresis_factor,
            ) as u8;
            s.target = Some(level);
            if s.shown != Some(level) && s.loading.is_none() {
                let path: Arc<Path> = Arc::from(
                    self.dir
                        .join(&self.tiles[i].lod_levels[level as usize].file),
                );
                self.pool.submit(((i as u64) << 8) | level as u64, move || {
                    read_tile_level(&path)
                });
                s.loading = Some(level);
                st.loads_started += 1;
            }
            st.tiles_shown += u32::from(s.shown.is_some());
        }
        st
    }
}

/// The camera in scene-root space: seed 000's `effectiveCameraPosition`.
#[inline]
pub fn effective_camera_position(camera: Vec3, scene_root: &Mat4) -> Vec3 {
    scene_root.inverse().transform_point3(camera)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct Shown {
        tiles: HashMap<u32, (u8, Vec<u8>)>,
        shows: u32,
    }

    impl TileSink for Shown {
        fn show(&mut self, tile: u32, level: u8, payload: &[u8]) {
            self.tiles.insert(tile, (level, payload.to_vec()));
            self.shows += 1;
        }
    }

    fn write_tiles(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("farsight-tiles-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut tiles = Vec::new();
        for t in 0..4u32 {
            let x = t as f32 * 100.0;
            let mut levels = Vec::new();
            for (l, d) in [50.0f32, 150.0, 400.0].iter().enumerate() {
                let file = format!("tile{t}-lod{l}.farsight");
                write_tile_level(&dir.join(&file), &vec![(t * 10 + l as u32) as u8; 100 >> l])
                    .unwrap();
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
        // Root moved under a still camera: tile 0 is now 540 units away.
        settle(&mut b, cam, &shift);
        assert_eq!(b.shown(0), Some(2));
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
            }],
        };
        let bad = dir.join("bad.farsight");
        write_tile_manifest(&bad, &m).unwrap();
        let err = TileStreamer::open(&bad, Shown::default(), 1).unwrap_err();
        assert!(err.to_string().contains("increasing"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
