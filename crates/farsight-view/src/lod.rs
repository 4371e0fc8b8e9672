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
#[derive(Clone, Debug, PartialEq)]
pub struct EntityLod {
    pub(crate) rules: LodLevels,
    pub(crate) levels: Vec<EntityLodLevel>,
    /// Bit `i` set when level `i` is resident: the pass reads this, not the levels.
    pub(crate) resident_mask: u64,
    pub(crate) current: Option<u8>,
    pub(crate) previous: Option<u8>,
    pub(crate) desired: u8,
    pub(crate) using_fallback: bool,
    /// 1.0 when no fade is running.
    pub(crate) transition_progress: f32,
    pub(crate) active_mesh_asset_id: String,
}

impl EntityLod {
    pub const MAX_LEVELS: usize = 64;

    /// Refuses empty level lists, levels not ordered near to far, bad distances or
    /// screen percentages, and more than 64 levels.
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
            rules,
            levels,
            resident_mask: 0,
            current: None,
            previous: None,
            desired: 0,
            using_fallback: false,
            transition_progress: 1.0,
            active_mesh_asset_id: String::new(),
        };
        s.refresh_mask();
        Ok(s)
    }

    /// Select by screen size (seed 000 `selectsByScreenSize`), optionally with a radius
    /// override.
    pub fn by_screen_size(mut self, radius_override: Option<f32>) -> Self {
        self.rules = self.rules.by_screen_size(radius_override);
        self
    }

    /// Per-component quality bias of seed 002 (ranges scale by it).
    pub fn with_bias(mut self, bias: f32) -> Result<Self, LodComponentError> {
        self.rules = self.rules.with_bias(bias)?;
        Ok(self)
    }

    fn refresh_mask(&mut self) {
        self.resident_mask = self
            .levels
            .iter()
            .enumerate()
            .filter(|(_, l)| l.residency == Residency::Resident)
            .fold(0, |m, (i, _)| m | (1u64 << i));
    }

    pub fn set_residency(&mut self, level: usize, r: Residency) {
        self.levels[level].residency = r;
        self.refresh_mask();
    }

    pub fn rules(&self) -> &LodLevels {
        &self.rules
    }

    pub fn levels(&self) -> &[EntityLodLevel] {
        &self.levels
    }

    pub fn current(&self) -> Option<u8> {
        self.current
    }

    pub fn previous(&self) -> Option<u8> {
        self.previous
    }

    pub fn desired(&self) -> u8 {
        self.desired
    }

    pub fn using_fallback(&self) -> bool {
        self.using_fallback
    }

    /// Fade progress in `[0, 1]`; 1 when no fade runs.
    pub fn transition_progress(&self) -> f32 {
        self.transition_progress
    }

    pub fn in_transition(&self) -> bool {
        self.transition_progress < 1.0
    }

    /// `<url>_LOD<index>` of the drawn level: the batching key.
    pub fn active_mesh_asset_id(&self) -> &str {
        &self.active_mesh_asset_id
    }

    #[inline]
    pub(crate) fn is_resident(&self, level: usize) -> bool {
        self.resident_mask & (1u64 << level) != 0
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
        self.previous = from;
        self.current = Some(level);
        self.active_mesh_asset_id.clear();
        use std::fmt::Write;
        let _ = write!(
            self.active_mesh_asset_id,
            "{}_LOD{}",
            self.levels[level as usize].url, level
        );
        self.transition_progress = if fade && from.is_some() { 0.0 } else { 1.0 };
        Some(LodChanged {
            object,
            from,
            to: level,
        })
    }
}
