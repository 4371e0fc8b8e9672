//! The entity LOD component (docs/design/entity-lod.md): levels with residency and a url, the current and
//! previous level, the active mesh asset id for batching, and fades.

use std::sync::Arc;

use farsight_lod::{LevelSpec, LodError, LodLevels};

use crate::objects::{MeshHandle, ObjectId};

/// Where an LOD level's mesh is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Residency {
    /// In memory and drawable; the only state the resident fallback accepts.
    Resident,
    /// A load is under way; not drawable yet.
    Loading,
    /// Known to be out of memory.
    NotResident,
    /// Not reported by any streamer yet; treated as not drawable.
    #[default]
    Unknown,
}

/// One authored level.
#[derive(Clone, Debug, PartialEq)]
pub struct EntityLodLevel {
    /// The mesh drawn while this level is current.
    pub mesh: MeshHandle,
    /// Furthest distance this level draws at (60-degree reference view, bias 1).
    pub max_distance: f32,
    /// Share of the viewport height at which this level takes over from the previous
    /// one, for components that select by screen size.
    pub screen_percentage: Option<f32>,
    /// The residency the component starts with ([`EntityLodLevel::new`] says
    /// resident); a streamer changes it later with [`EntityLod::set_residency`].
    pub residency: Residency,
    /// Where a streamer reloads the level from; the active mesh id is `<url>_LOD<i>`.
    /// Shared, not copied: the levels of every clone of a component point at one string.
    pub url: Arc<str>,
}

impl EntityLodLevel {
    /// A resident level selected by distance only, drawing `mesh` out to
    /// `max_distance`, reloaded from `url`.
    pub fn new(mesh: MeshHandle, max_distance: f32, url: impl Into<Arc<str>>) -> Self {
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
    /// The levels break a rule of [`LodLevels::new`] (order, range, share or bias).
    #[error(transparent)]
    Levels(#[from] LodError),
    /// More levels than the inline per-object state has room for.
    #[error("LOD components hold at most {max} levels, found {found}")]
    TooManyLevels {
        /// [`EntityLod::MAX_LEVELS`].
        max: usize,
        /// The number of levels given.
        found: usize,
    },
}

/// A level change, emitted only when the drawn level actually changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LodChanged {
    /// The object whose drawn level changed.
    pub object: ObjectId,
    /// The level drawn before; `None` on the object's first selection.
    pub from: Option<u8>,
    /// The level drawn now (0 the finest).
    pub to: u8,
}

/// The LOD component of one object.
///
/// Each object's own state (residency, current and desired level, fallback, fade)
/// sits inline, 32 bytes, so a million components stream through the cache as one
/// flat array. The authored part (rules, ranges, meshes, levels, urls and the
/// `<url>_LOD<i>` asset ids) is shared behind an `Arc`: clone one component per
/// design and a million objects hold one copy of it per design, which the pass
/// finds in cache.
#[derive(Clone, Debug, PartialEq)]
pub struct EntityLod {
    pub(crate) count: u8,
    /// Bit `i` set when level `i` is resident.
    pub(crate) resident_mask: u8,
    pub(crate) screen_size: bool,
    pub(crate) using_fallback: bool,
    pub(crate) current: Option<u8>,
    pub(crate) desired: u8,
    /// Current residency per level (the shared levels keep the authored one).
    pub(crate) residency: [Residency; Self::MAX_LEVELS],
    pub(crate) cold: LodCold,
}

/// What the pass reads rarely: the fade state and the shared authored part.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LodCold {
    pub(crate) previous: Option<u8>,
    /// 1.0 when no fade is running.
    pub(crate) transition_progress: f32,
    pub(crate) shared: Arc<LodShared>,
}

/// The authored part of a component, shared by its clones.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LodShared {
    /// `max_distance * bias` per level.
    pub(crate) ranges: [f32; EntityLod::MAX_LEVELS],
    pub(crate) meshes: [MeshHandle; EntityLod::MAX_LEVELS],
    pub(crate) rules: LodLevels,
    pub(crate) levels: Vec<EntityLodLevel>,
    /// `<url>_LOD<i>` per level, built once so a level switch allocates nothing.
    pub(crate) asset_ids: Vec<Box<str>>,
}

impl LodShared {
    /// Heap bytes of this shared part (itself, its level list, urls and ids; a url
    /// shared between levels is counted once per level, an upper bound).
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + 2 * std::mem::size_of::<usize>() // the Arc's counts
            + self.levels.capacity() * std::mem::size_of::<EntityLodLevel>()
            + self.levels.iter().map(|l| l.url.len()).sum::<usize>()
            + self.asset_ids.iter().map(|a| a.len()).sum::<usize>()
            + self.asset_ids.capacity() * std::mem::size_of::<Box<str>>()
            + std::mem::size_of_val(self.rules.levels())
    }
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
        let mut residency = [Residency::Unknown; Self::MAX_LEVELS];
        for (r, l) in residency.iter_mut().zip(&levels) {
            *r = l.residency;
        }
        let asset_ids = levels
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{}_LOD{i}", l.url).into_boxed_str())
            .collect();
        let mut s = Self {
            count: levels.len() as u8,
            resident_mask: 0,
            screen_size: false,
            using_fallback: false,
            current: None,
            desired: 0,
            residency,
            cold: LodCold {
                previous: None,
                transition_progress: 1.0,
                shared: Arc::new(LodShared {
                    ranges: [0.0; Self::MAX_LEVELS],
                    meshes: [MeshHandle::NONE; Self::MAX_LEVELS],
                    rules,
                    levels,
                    asset_ids,
                }),
            },
        };
        s.refresh_hot();
        Ok(s)
    }

    /// Whether `other` shares this component's authored part (rules, levels, urls,
    /// asset ids) rather than holding a copy: true for clones.
    pub fn shares_levels_with(&self, other: &EntityLod) -> bool {
        Arc::ptr_eq(&self.cold.shared, &other.cold.shared)
    }

    /// Select by screen size (docs/design/entity-lod.md#choosing-a-level-by-screen-size), optionally with a radius
    /// override.
    pub fn by_screen_size(mut self, radius_override: Option<f32>) -> Self {
        let shared = Arc::make_mut(&mut self.cold.shared);
        shared.rules = shared.rules.clone().by_screen_size(radius_override);
        self.refresh_hot();
        self
    }

    /// Per-component quality bias (docs/design/entity-lod.md#choosing-a-level-by-distance): ranges scale by it.
    pub fn with_bias(mut self, bias: f32) -> Result<Self, LodComponentError> {
        let shared = Arc::make_mut(&mut self.cold.shared);
        shared.rules = shared.rules.clone().with_bias(bias)?;
        self.refresh_hot();
        Ok(self)
    }

    fn refresh_hot(&mut self) {
        // Only at build time (new, bias, screen size): a clone of a built component
        // shares the result untouched.
        let count = self.len();
        let c = Arc::make_mut(&mut self.cold.shared);
        for (i, l) in c.levels.iter().enumerate() {
            c.ranges[i] = l.max_distance * c.rules.bias;
            c.meshes[i] = l.mesh;
        }
        self.resident_mask = 0;
        for i in 0..count {
            if self.residency[i] == Residency::Resident {
                self.resident_mask |= 1 << i;
            }
        }
        self.screen_size = c.rules.selects_by_screen_size;
    }

    /// Sets level `level`'s residency for this object only (clones keep theirs).
    /// Panics when `level` is not below [`EntityLod::level_count`].
    pub fn set_residency(&mut self, level: usize, r: Residency) {
        assert!(level < self.len(), "level {level} of {}", self.len());
        self.residency[level] = r;
        if r == Residency::Resident {
            self.resident_mask |= 1 << level;
        } else {
            self.resident_mask &= !(1 << level);
        }
    }

    /// Level `level`'s current residency (what [`EntityLod::set_residency`] set last,
    /// else the authored one).
    pub fn residency(&self, level: usize) -> Residency {
        self.residency[level]
    }

    /// The number of authored levels (1 to [`EntityLod::MAX_LEVELS`]).
    pub fn level_count(&self) -> usize {
        self.len()
    }

    /// The validated ranges, bias and screen-size choice the pass selects with.
    pub fn rules(&self) -> &LodLevels {
        &self.cold.shared.rules
    }

    /// The levels as authored; their `residency` is the authored one, the current
    /// one is [`EntityLod::residency`].
    pub fn levels(&self) -> &[EntityLodLevel] {
        &self.cold.shared.levels
    }

    /// The level drawn now; `None` before the first pass selected one, or while
    /// no level was ever resident.
    pub fn current(&self) -> Option<u8> {
        self.current
    }

    /// The level drawn before the last change (what a fade blends from).
    pub fn previous(&self) -> Option<u8> {
        self.cold.previous
    }

    /// The level the rules ask for, whether or not it is resident.
    pub fn desired(&self) -> u8 {
        self.desired
    }

    /// True when the drawn level is not the desired one because the desired one is
    /// not resident.
    pub fn using_fallback(&self) -> bool {
        self.using_fallback
    }

    /// Fade progress in `[0, 1]`; 1 when no fade runs.
    pub fn transition_progress(&self) -> f32 {
        self.cold.transition_progress
    }

    /// True while a fade between two levels runs (progress below 1).
    pub fn in_transition(&self) -> bool {
        self.cold.transition_progress < 1.0
    }

    /// `<url>_LOD<index>` of the drawn level: the batching key.
    pub fn active_mesh_asset_id(&self) -> &str {
        self.current
            .map_or("", |l| &self.cold.shared.asset_ids[l as usize])
    }

    /// `max_distance * bias` per level (what the pass compares distances with).
    #[inline]
    pub(crate) fn ranges(&self) -> &[f32; Self::MAX_LEVELS] {
        &self.cold.shared.ranges
    }

    /// Each level's mesh.
    #[inline]
    pub(crate) fn meshes(&self) -> &[MeshHandle; Self::MAX_LEVELS] {
        &self.cold.shared.meshes
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.count as usize
    }

    #[inline]
    pub(crate) fn is_resident(&self, level: usize) -> bool {
        self.resident_mask & (1u8 << level) != 0
    }

    /// Applies a resolved level (docs/design/entity-lod.md#applying-a-level); returns the change event when
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
        let c = &mut self.cold;
        c.previous = from;
        c.transition_progress = if fade && from.is_some() { 0.0 } else { 1.0 };
        Some(LodChanged {
            object,
            from,
            to: level,
        })
    }
}
