//! Region states, sources and the status a tool shows.

use std::fmt;

use glam::Vec3;
use serde::{Deserialize, Serialize};

/// A state a region can be asked to be in (authored, desired, a source's target, an
/// override). Ordered: `Unloaded < Resident < Active`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RegionState {
    /// Not in memory.
    Unloaded,
    /// Entities exist but are neither drawn nor simulated.
    Resident,
    /// Entities exist and take part in the frame.
    Active,
}

/// What a region actually is, including the two transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActualState {
    /// Not in memory: no entities exist.
    Unloaded,
    /// Its file is being read on a worker thread.
    Loading,
    /// Its entities exist but are neither drawn nor simulated.
    Resident,
    /// Its entities exist and take part in the frame.
    Active,
    /// Its entities were dropped this frame; it is `Unloaded` next frame.
    Unloading,
}

impl ActualState {
    /// Entities exist (or are about to): counts as loaded for hysteresis and region 0.
    pub fn is_loaded(self) -> bool {
        matches!(
            self,
            ActualState::Loading | ActualState::Resident | ActualState::Active
        )
    }

    /// The stable state this corresponds to, for comparing with a desired state.
    pub fn as_state(self) -> Option<RegionState> {
        match self {
            ActualState::Unloaded => Some(RegionState::Unloaded),
            ActualState::Resident => Some(RegionState::Resident),
            ActualState::Active => Some(RegionState::Active),
            ActualState::Loading | ActualState::Unloading => None,
        }
    }
}

/// A point that pulls regions in: the player, a camera, a cutscene's focus.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamingSource {
    /// The source's centre, world space.
    pub position: Vec3,
    /// How far it reaches, world units: regions whose box the sphere touches.
    pub radius: f32,
    /// What it raises the regions it reaches to (usually `Active`).
    pub target: RegionState,
}

/// One state change of one region in one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Transition {
    /// The region's number.
    pub region: u32,
    /// Its state before the frame.
    pub from: ActualState,
    /// Its state after the frame.
    pub to: ActualState,
}

/// The collapsed row of the region panel (docs/design/region-streaming-and-cluster-lod.md#region-states), plus the expanded fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionStatus {
    /// What the region is now.
    pub actual: ActualState,
    /// Shown only when it differs from `actual`: the region is transitioning.
    pub desired: Option<RegionState>,
    /// Streaming sources asking for it this frame.
    pub sources: u32,
    /// The read or parse failed; it will not retry.
    pub load_failed: bool,
    /// The state the scene file gives it.
    pub authored: RegionState,
    /// A tool's override, which beats every other request while set.
    pub override_state: Option<RegionState>,
}

impl fmt::Display for RegionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.actual)?;
        if let Some(d) = self.desired {
            write!(f, " -> {d:?}")?;
        }
        if self.sources > 0 {
            write!(f, " {} src", self.sources)?;
        }
        if self.load_failed {
            write!(f, " load failed")?;
        }
        if let Some(o) = self.override_state {
            write!(f, " (override {o:?})")?;
        }
        Ok(())
    }
}
