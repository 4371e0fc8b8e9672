//! Tile LOD streaming (docs/design/entity-lod.md#tile-streaming): a manifest of tiles, each with
//! `lod_levels` (a file per level and its switch distance). Only the active level of
//! a tile is loaded; the level is chosen by `farsight-lod`'s tile rule with the
//! hysteresis factor, from the camera position taken through the scene-root
//! transform, so LOD and streaming agree when the root moves. Past its unload
//! distance (by default its last level's switch distance) a tile shows nothing and
//! holds no level; it comes back inside the same hysteresis band.
//!
//! The manifest and each level file are farsight containers. A level file's payload
//! is one record ([`TILE_PAYLOAD`]) handed to the engine's [`TileSink`] as bytes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use farsight_format::{
    AlignedBytes, Container, FileWriter, FormatError, Manifest, RawFile, RecordIndex, RecordTag,
    Version,
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
    /// The level file's path relative to the manifest's folder; it may not leave
    /// that folder (no `..`, no absolute path).
    pub file: String,
    /// The furthest distance, in scene-root units from the tile's box, at which this
    /// level is used; finite, not negative, not below the previous level's.
    pub switch_distance: f32,
}

/// One tile of a [`TileManifest`]: its box and its levels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TileEntry {
    /// A name for messages; not used to find files.
    pub name: String,
    /// Bounds in scene-root space: the lowest corner, finite.
    pub min: [f32; 3],
    /// Bounds in scene-root space: the highest corner, `>= min` on every axis.
    pub max: [f32; 3],
    /// Finest first, switch distances increasing.
    pub lod_levels: Vec<TileLodLevel>,
    /// Past this distance the tile shows nothing and holds no level in memory (seed
    /// 000: streaming loads and unloads the active level by distance). Absent: the
    /// last level's switch distance, the furthest any level is used at. It comes
    /// back once inside `unload_distance * hysteresis_factor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unload_distance: Option<f32>,
}

/// The tile manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TileManifest {
    /// The tiles; a tile's index here is the number a [`TileSink`] is given.
    pub tiles: Vec<TileEntry>,
}

impl Manifest for TileManifest {
    fn visit_records(&self, _visit: &mut dyn FnMut(RecordIndex, RecordTag)) {}

    /// Tile manifests are written as version 1 (the checksum does not cover the
    /// version word, so another one is refused here).
    fn check(&self, file: &RawFile<'_>) -> Result<(), FormatError> {
        file.require_version(Version::Full)
    }
}

/// The manifest of a tile level file: the record holding its payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TileLevelManifest {
    /// The [`TILE_PAYLOAD`] record.
    pub payload: RecordIndex,
}

impl Manifest for TileLevelManifest {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        visit(self.payload, TILE_PAYLOAD);
    }

    /// Tile level files are written as version 1, as the manifest is.
    fn check(&self, file: &RawFile<'_>) -> Result<(), FormatError> {
        file.require_version(Version::Full)
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
    /// The manifest could not be read or is not a sound tile manifest container.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// A tile breaks a rule [`TileStreamer::open`] checks.
    #[error("{path}: tile {tile} ({name}): {what}")]
    BadTile {
        /// The manifest's path.
        path: PathBuf,
        /// The tile's index in the manifest.
        tile: u32,
        /// The tile's name.
        name: String,
        /// The rule it breaks.
        what: &'static str,
    },
}

/// What the engine implements to show tiles. `show` replaces whatever level the tile
/// showed before: only one level of a tile exists at a time. `hide` drops the tile's
/// level: the camera went past its unload distance.
pub trait TileSink {
    /// Shows level `level` (0 finest) of tile `tile` from the level file's payload
    /// record, replacing what the tile showed.
    fn show(&mut self, tile: u32, level: u8, payload: &[u8]);
    /// Drops whatever tile `tile` shows.
    fn hide(&mut self, tile: u32);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TileState {
    /// Level chosen by the LOD rule last frame (the hysteresis reference); `None`
    /// while the tile is past its unload distance or before the first frame.
    target: Option<u8>,
    /// The tile was placed (in or out of range) at least once.
    seen: bool,
    /// Level whose payload the sink shows.
    shown: Option<u8>,
    /// Level being read.
    loading: Option<u8>,
}

/// Counters of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TileFrameStats {
    /// Level reads submitted this frame.
    pub loads_started: u32,
    /// Levels handed to [`TileSink::show`] this frame.
    pub switches: u32,
    /// Tiles that went past their unload distance this frame and were hidden.
    pub unloads: u32,
    /// Level reads that failed this frame (the tile keeps what it showed).
    pub failures: u32,
    /// Tiles in range that show a level at the end of the frame.
    pub tiles_shown: u32,
}

/// Streams the tiles of one manifest.
pub struct TileStreamer<S: TileSink> {
    dir: PathBuf,
    tiles: Vec<TileEntry>,
    bounds: Vec<Aabb>,
    switches: Vec<Vec<f32>>,
    unload: Vec<f32>,
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
        let mut unload = Vec::with_capacity(m.tiles.len());
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
            let last = s[s.len() - 1];
            let u = t.unload_distance.unwrap_or(last);
            if !u.is_finite() || u < last {
                return Err(bad(
                    "unload_distance must be finite and at least the last switch distance",
                ));
            }
            bounds.push(b);
            switches.push(s);
            unload.push(u);
        }
        Ok(Self {
            dir: manifest.parent().unwrap_or(Path::new(".")).to_owned(),
            state: vec![
                TileState {
                    target: None,
                    seen: false,
                    shown: None,
                    loading: None
                };
                m.tiles.len()
            ],
            tiles: m.tiles,
            bounds,
            switches,
            unload,
            pool: IoPool::new(threads, "farsight-tile-io"),
            drained: Vec::new(),
            hysteresis_factor: DEFAULT_TILE_HYSTERESIS_FACTOR,
            sink,
        })
    }

    /// The same streamer with another hysteresis factor (default
    /// [`DEFAULT_TILE_HYSTERESIS_FACTOR`], 0.9): a tile moves to a finer level, or
    /// comes back after unloading, only inside `distance * factor`. Expected in `(0, 1]`.
    pub fn with_hysteresis_factor(mut self, factor: f32) -> Self {
        self.hysteresis_factor = factor;
        self
    }

    /// The engine's sink, to inspect what it shows.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The number of tiles in the manifest.
    pub fn len(&self) -> usize {
        self.tiles.len()
    }

    /// True for a manifest with no tiles.
    pub fn is_empty(&self) -> bool {
        self.tiles.is_empty()
    }

    /// The level the tile shows, if any.
    pub fn shown(&self, tile: u32) -> Option<u8> {
        self.state[tile as usize].shown
    }

    /// The level the LOD rule chose last frame; `None` past the unload distance.
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
                // Read for a tile that went out of range meanwhile: nothing to show.
                Ok(_) if s.target.is_none() => {}
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
            // In range: inside the unload distance, or inside it times the
            // hysteresis factor to come back once out (the same band as a switch
            // to a finer level).
            let reach = if s.seen && s.target.is_none() {
                self.unload[i] * self.hysteresis_factor
            } else {
                self.unload[i]
            };
            s.seen = true;
            if d > reach {
                s.target = None;
                if s.shown.take().is_some() {
                    self.sink.hide(i as u32);
                    st.unloads += 1;
                }
                continue;
            }
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

/// The camera in scene-root space (docs/design/entity-lod.md#the-camera-every-rule-measures-from), the one
/// entity LOD uses too.
pub use farsight_lod::effective_camera_position;

#[cfg(test)]
#[path = "tile_tests.rs"]
mod tests;
