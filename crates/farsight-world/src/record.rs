//! Recording and replay: every input of every frame (camera, edits, streaming
//! sources and the I/O that completed) and every system's decision hash.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::budget::{SystemId, SYSTEMS};
use crate::building_io::{BuildingDone, MAX_BUILDING_FILE};
use crate::manifest::{finite3, positive, BadField, MAX_LEVEL_BYTES};
use crate::world::WorldConfig;

/// A terrain edit: a sphere added (`carve == false`) or carved out.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Edit {
    /// The sphere's centre, in world coordinates.
    pub center: [f32; 3],
    /// The sphere's radius, in metres.
    pub radius: f32,
    /// Carve the sphere out (air) rather than fill it (rock).
    pub carve: bool,
}

/// A terrain mesh the background mesher finished and the view published: the
/// terrain's I/O completion. `level == u8::MAX`: the chunk was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TerrainPublication {
    /// The chunk, in chunk coordinates.
    pub chunk: [i32; 3],
    /// The level published (`u8::MAX`: the chunk left the view).
    pub level: u8,
    /// The mesh's bytes once uploaded.
    pub bytes: u64,
    /// The chunk has no surface at that level: nothing to upload or draw.
    pub empty: bool,
}

/// Everything a frame takes in. The loop fills the completions while it runs live;
/// a replay hands them back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameInput {
    /// The camera's position.
    pub camera: [f32; 3],
    /// The point the camera looks at.
    pub target: [f32; 3],
    /// A loading screen: nothing is drawn (a teleport's or the start's), so no hole
    /// is counted.
    pub loading: bool,
    /// A second streaming source (a teleport's target, streamed in ahead).
    pub prefetch: Option<[f32; 3]>,
    /// Terrain edits applied at the start of the frame, in order.
    pub edits: Vec<Edit>,
    /// Region reads that finished (region, ok), in the order the streamer saw them.
    pub regions_done: Vec<(u32, bool)>,
    /// Cluster chunk reads that finished (request, ok).
    pub chunks_done: Vec<(u64, bool)>,
    /// Terrain meshes published this frame, in chunk order.
    pub terrain: Vec<TerrainPublication>,
    /// Building file reads that finished, in the order the loop saw them.
    #[serde(default)]
    pub buildings_done: Vec<BuildingDone>,
}

/// A recorded run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// The world folder, as given to `fly`.
    pub world: PathBuf,
    /// The settings the run was flown with.
    pub config: WorldConfig,
    /// Every frame's input, loading screens included.
    pub frames: Vec<FrameInput>,
    /// Per frame, one hash per system in [`SystemId::ALL`] order.
    pub hashes: Vec<[u64; SYSTEMS]>,
}

/// Why a recording could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The recording could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The recording.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not a recording (or could not be written as RON).
    #[error("{path}: not a farsight world recording: {message}")]
    Parse {
        /// The recording.
        path: PathBuf,
        /// The RON parser's message.
        message: String,
    },
    /// A value of the recording the loop refuses (its settings, a frame's input).
    #[error("{path}: {bad}")]
    Field {
        /// The recording.
        path: PathBuf,
        /// The field, its value and why it is refused.
        #[source]
        bad: BadField,
    },
    /// The recording holds a different number of inputs and hash rows.
    #[error("{path}: {frames} frames of input but {hashes} frames of hashes")]
    Length {
        /// The recording.
        path: PathBuf,
        /// Frames of input.
        frames: usize,
        /// Frames of hashes.
        hashes: usize,
    },
}

/// The first decision a replay made differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("frame {frame}: the {} system decided differently (recorded hash {recorded:#018x}, replayed {replayed:#018x})", system.name())]
pub struct Mismatch {
    /// The frame, counted from the recording's first.
    pub frame: u32,
    /// The system whose hash differs first.
    pub system: SystemId,
    /// The hash the recording holds.
    pub recorded: u64,
    /// The hash the replay computed.
    pub replayed: u64,
}

impl Recording {
    /// Writes the recording as RON to `path`.
    pub fn write(&self, path: &Path) -> Result<(), RecordError> {
        let text = ron::to_string(self).map_err(|e| RecordError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        std::fs::write(path, text).map_err(|source| RecordError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Reads a recording from `path`, every value checked as the loop would check it.
    pub fn read(path: &Path) -> Result<Self, RecordError> {
        let text = std::fs::read_to_string(path).map_err(|source| RecordError::Io {
            path: path.to_owned(),
            source,
        })?;
        let r: Recording = ron::from_str(&text).map_err(|e| RecordError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        if r.frames.len() != r.hashes.len() {
            return Err(RecordError::Length {
                path: path.to_owned(),
                frames: r.frames.len(),
                hashes: r.hashes.len(),
            });
        }
        r.check().map_err(|bad| RecordError::Field {
            path: path.to_owned(),
            bad,
        })?;
        Ok(r)
    }

    /// The settings and every frame's input against what the loop can run with.
    fn check(&self) -> Result<(), BadField> {
        self.config.check().map_err(|mut bad| {
            bad.field.insert_str(0, "config.");
            bad
        })?;
        for (f, input) in self.frames.iter().enumerate() {
            let at = |field: &str| format!("frames[{f}].{field}");
            finite3(&at("camera"), &input.camera)?;
            finite3(&at("target"), &input.target)?;
            if let Some(p) = &input.prefetch {
                finite3(&at("prefetch"), p)?;
            }
            for (e, edit) in input.edits.iter().enumerate() {
                finite3(&at(&format!("edits[{e}].center")), &edit.center)?;
                positive(&at(&format!("edits[{e}].radius")), edit.radius)?;
            }
            for (k, p) in input.terrain.iter().enumerate() {
                if p.bytes > MAX_LEVEL_BYTES {
                    return Err(BadField::new(
                        &at(&format!("terrain[{k}].bytes")),
                        p.bytes,
                        "more than 4 GiB for one chunk's mesh",
                    ));
                }
            }
            for (k, b) in input.buildings_done.iter().enumerate() {
                if b.bytes > MAX_BUILDING_FILE {
                    return Err(BadField::new(
                        &at(&format!("buildings_done[{k}].bytes")),
                        b.bytes,
                        "more than a building file may hold",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The first system whose replayed hash differs from the recorded one at `frame`.
    pub fn compare(&self, frame: usize, replayed: &[u64; SYSTEMS]) -> Result<(), Mismatch> {
        let recorded = &self.hashes[frame];
        for s in SystemId::ALL {
            let i = s as usize;
            if recorded[i] != replayed[i] {
                return Err(Mismatch {
                    frame: frame as u32,
                    system: s,
                    recorded: recorded[i],
                    replayed: replayed[i],
                });
            }
        }
        Ok(())
    }
}
