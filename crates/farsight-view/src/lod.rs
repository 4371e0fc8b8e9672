//! Seed 000's entity LOD component: levels with residency and a url, the current and
//! previous level, the active mesh asset id for batching, and fades.

use farsight_lod::{LevelSpec, LodError, LodLevels};

use crate::objects::{MeshHandle, ObjectId};

/// Where an LOD level's mesh is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Residency {
    Resident,
    Loading,
    NotResident,
    #[default]
    Unknown,
}

/// One authored level.
#[derive(Clone, Debug, PartialEq)]
pub struct EntityLodLevel {
    pub mesh: MeshHandle,
    /// Furthest distance this level draws at (60-degree reference view, bias 1).
    pub max_distance: f32,
    /// Share of the viewport height at which this level takes over from the previous
    /// one, for components that select by screen size.
    pub screen_percentage: Option<f32>,
    pub residency: Residency,
    /// Where a streamer reloads the level from; the active mesh id is `<url>_LOD<i>`.
    pub url: String,
}

impl EntityLodLevel {
    pub fn new(mesh: MeshHandle, max_distance: f32, url: impl Into<String>) -> Self {
        Self {
            mesh,
            max_distance,
            screen_percentage: None,
            residency: Residency::Resident,
            url: url.into(),
        }
    }
}

/// Why an LOD component was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LodComponentError {
    #[error(transparent)]
    Levels(#[from] LodError),
    #[error("LOD components hold at most {max} levels, found {found}")]
    TooManyLevels { max: usize, found: usize },
}

/// A level change, emitted only when the drawn level actually changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LodChanged {
    pub object: ObjectId,
    pub from: Option<u8>,
    pub to: u8,
}

/// The LOD component of one object.
///
/// The fields the per-frame pass reads (ranges, meshes, residency, current level)
/// sit inline so a million components stream through the cache as one flat array;
/// urls, names and fade state live behind a box the pass never touches.
#[derive(Clone, Debug, PartialEq)]
pub struct EntityLod {
    /// `max_distance * bias` per level.
    pub(crate) ranges: [f32; Self::MAX_LEVELS],
    pub(crate) meshes: [MeshHandle; Self::MAX_LEVELS],
    pub(crate) count: u8,
    /// Bit `i` set when level `i` is resident.
    pub(crate) resident_mask: u8,
    pub(crate) screen_size: bool,
    pub(crate) using_fallback: bool,
    pub(crate) current: Option<u8>,
    pub(crate) desired: u8,
    pub(crate) cold: Box<LodCold>,
}

/// What the pass does not read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LodCold {
    pub(crate) rules: LodLevels,
    pub(crate) levels: Vec<EntityLodLevel>,
    pub(crate) previous: Option<u8>,
    /// 1.0 when no fade is running.
    pub(crate) transition_progress: f32,
    pub(crate) active_mesh_asset_id: String,
}

impl EntityLod {
    /// Levels a component may hold (inline in the hot part).
    pub const MAX_LEVELS: usize = 8;

    /// Refuses empty level lists, levels not ordered near to far, bad distances or
    /// screen percentages, and more than [`EntityLod::MAX_LEVELS`] levels.
    pub fn new(levels: Vec<EntityLodLevel>) -> Result<Self, LodComponentError> {
        if levels.len() > Self::MAX_LEVELS {
            return Err(LodComponentError::TooManyLevels {
                max: Self::MAX_LEVELS,
                found: levels.len(),
            });
        }
        let rules = LodLevels::new(
            levels
                .iter()
                .map(|l| LevelSpec {
                    max_distance: l.max_distance,
                    screen_percentage: l.screen_percentage,
                })
                .collect(),
        )?;
        let mut s = Self {
            ranges: [0.0; Self::MAX_LEVELS],
            meshes: [MeshHandle::NONE; Self::MAX_LEVELS],
            count: levels.len() as u8,
            resident_mask: 0,
            screen_size: false,
            using_fallback: false,
            current: None,
            desired: 0,
            cold: Box::new(LodCold {
                rules,
                levels,
                previous: None,
                transition_progress: 1.0,
                active_mesh_asset_id: String::new(),
            }),
        };
        s.refresh_hot();
        Ok(s)
    }

    /// Select by screen size (seed 000 `selectsByScreenSize`), optionally with a radius
    /// override.
    pub fn by_screen_size(mut self, radius_override: Option<f32>) -> Self {
        self.cold.rules = self.cold.rules.clone().by_screen_size(radius_override);
        self.refresh_hot();
        self
    }

    /// Per-component quality bias of seed 002 (ranges scale by it).
    pub fn with_bias(mut self, bias: f32) -> Result<Self, LodComponentError> {
        self.cold.rules = self.cold.rules.clone().with_bias(bias)?;
        self.refresh_hot();
        Ok(self)
    }

    fn refresh_hot(&mut self) {
        let c = &self.cold;
        self.resident_mask = 0;
        for (i, l) in c.levels.iter().enumerate() {
            self.ranges[i] = l.max_distance * c.rules.bias;
            self.meshes[i] = l.mesh;
            if l.residency == Residency::Resident {
                self.resident_mask |= 1 << i;
            }
        }
        self.screen_size = c.rules.selects_by_screen_size;
    }

    pub fn set_residency(&mut self, level: usize, r: Residency) {
        self.cold.levels[level].residency = r;
        self.refresh_hot();
    }

    pub fn rules(&self) -> &LodLevels {
        &self.cold.rules
    }

    pub fn levels(&self) -> &[EntityLodLevel] {
        &self.cold.levels
    }

    pub fn current(&self) -> Option<u8> {
        self.current
    }

    pub fn previous(&self) -> Option<u8> {
        self.cold.previous
    }

    pub fn desired(&self) -> u8 {
        self.desired
    }

    pub fn using_fallback(&self) -> bool {
        self.using_fallback
    }

    /// Fade progress in `[0, 1]`; 1 when no fade runs.
    pub fn transition_progress(&self) -> f32 {
        self.cold.transition_progress
    }

    pub fn in_transition(&self) -> bool {
        self.cold.transition_progress < 1.0
    }

    /// `<url>_LOD<index>` of the drawn level: the batching key.
    pub fn active_mesh_asset_id(&self) -> &str {
        &self.cold.active_mesh_asset_id
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.count as usize
    }

    #[inline]
    pub(crate) fn is_resident(&self, level: usize) -> bool {
        self.resident_mask & (1u8 << level) != 0
    }

    /// Applies a resolved level (seed 000 `applyLOD`); returns the change event when
    /// the drawn level actually changed.
    pub(crate) fn apply(
        &mut self,
        object: ObjectId,
        desired: u8,
        level: u8,
        fallback: bool,
        fade: bool,
    ) -> Option<LodChanged> {
        self.desired = desired;
        self.using_fallback = fallback;
        if self.current == Some(level) {
            return None;
        }
        let from = self.current;
        self.current = Some(level);
        let c = &mut *self.cold;
        c.previous = from;
        c.active_mesh_asset_id.clear();
        use std::fmt::Write;
        let _ = write!(
            c.active_mesh_asset_id,
            "{}_LOD{}",
            c.levels[level as usize].url, level
        );
        c.transition_progress = if fade && from.is_some() { 0.0 } else { 1.0 };
        Some(LodChanged {
            object,
            from,
            to: level,
        })
    }
}
