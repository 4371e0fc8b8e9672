//! One resident-memory pool and one upload pool per frame for every system, and
//! the one bias that coarsens every system under pressure.
//!
//! Every frame the loop gathers what each system asks of the pools (cluster levels
//! loading or to start, building levels, terrain meshes) as [`Ask`]s, sorts them
//! into one order (coarsest first across every system, then larger on screen) and
//! grants them in that order: the cluster scheduler gets the sum of what its asks
//! were granted as its budgets for the frame, and buildings and terrain take what
//! the scheduler left, in the same order. Finer levels of any system fill the memory
//! only up to `1 - reserve` of it; the rest is kept for coarsest levels, so one
//! system wanting everything cannot leave another with nothing to draw.

use serde::{Deserialize, Serialize};

/// The systems of a frame, in loop order (also the order of their hashes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemId {
    /// Region streaming: reads, creation and activation of regions.
    Regions = 0,
    /// The visibility pass over every loaded object.
    Visibility = 1,
    /// Cluster-level residency of the cluster-LOD models.
    Clusters = 2,
    /// Baked buildings' levels: file reads and uploads.
    Buildings = 3,
    /// The voxel terrain: edits, meshes, bases and colliders.
    Terrain = 4,
    /// The pools and the one bias over every system.
    Budget = 5,
}

/// Number of systems.
pub const SYSTEMS: usize = 6;

impl SystemId {
    /// Every system, in loop order.
    pub const ALL: [SystemId; SYSTEMS] = [
        SystemId::Regions,
        SystemId::Visibility,
        SystemId::Clusters,
        SystemId::Buildings,
        SystemId::Terrain,
        SystemId::Budget,
    ];

    /// A short lower-case name, for reports.
    pub fn name(self) -> &'static str {
        match self {
            SystemId::Regions => "regions",
            SystemId::Visibility => "visibility",
            SystemId::Clusters => "clusters",
            SystemId::Buildings => "buildings",
            SystemId::Terrain => "terrain",
            SystemId::Budget => "budget",
        }
    }
}

/// The world's budgets.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Resident bytes across cluster levels, building meshes, terrain meshes and
    /// colliders.
    pub memory: u64,
    /// Bytes uploaded per frame across every system.
    pub upload: u64,
    /// Share of the memory only coarsest levels (a thing's first level to draw) may
    /// use: finer levels of every system together stay under `1 - reserve`.
    pub reserve: f32,
    /// Frames of pressure (or calm) before the bias moves by one.
    pub bias_frames: u32,
    /// The coarsest the bias goes (steps coarser than every desired level).
    pub max_bias: u8,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            memory: 512 << 20,
            upload: 8 << 20,
            reserve: 0.125,
            bias_frames: 30,
            max_bias: 3,
        }
    }
}

impl Budget {
    /// The memory finer levels of every system may fill together.
    pub fn fine_memory(&self) -> u64 {
        (self.memory as f64 * (1.0 - self.reserve.clamp(0.0, 1.0) as f64)) as u64
    }

    /// Whether `held + need` bytes fit the pool for an ask of `rank` (0: a coarsest
    /// level, which may use the reserve) that frees `freed` bytes when granted.
    pub(crate) fn fits(&self, rank: u8, held: u64, need: u64, freed: u64) -> bool {
        let limit = if rank == 0 {
            self.memory
        } else {
            self.fine_memory()
        };
        held + need <= limit + freed
    }
}

/// One thing a system asks of the pools: coarsest-first (`rank` 0 is a coarsest
/// level, a thing with nothing to draw; each finer level one more), then larger on
/// screen first (pixels of the bounding sphere's radius, for every system alike).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ask {
    pub rank: u8,
    pub screen: f32,
    /// Bytes to upload (what is left of it).
    pub bytes: u64,
    /// The index of its target in the loop's list (systems gathered in a fixed
    /// order, so ties are deterministic).
    pub key: u64,
}

/// Sorts asks into the budget's order: coarsest first, then screen size, then key
/// (a total order, so the result does not depend on how the asks were gathered).
pub(crate) fn order(asks: &mut [Ask]) {
    asks.sort_unstable_by(|a, b| {
        a.rank
            .cmp(&b.rank)
            .then(b.screen.total_cmp(&a.screen))
            .then(a.key.cmp(&b.key))
    });
}

/// The bias controller: pressure for `bias_frames` frames raises the bias by one,
/// calm for as long lowers it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Bias {
    pub bias: u8,
    pressure: u32,
    calm: u32,
}

impl Bias {
    pub fn update(&mut self, pressure: bool, budget: &Budget) {
        if pressure {
            self.calm = 0;
            self.pressure += 1;
            if self.pressure >= budget.bias_frames && self.bias < budget.max_bias {
                self.bias += 1;
                self.pressure = 0;
            }
        } else {
            self.pressure = 0;
            self.calm += 1;
            if self.calm >= budget.bias_frames && self.bias > 0 {
                self.bias -= 1;
                self.calm = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_go_coarsest_first_then_larger_on_screen() {
        let a = |rank, screen, key| Ask {
            rank,
            screen,
            bytes: 1,
            key,
        };
        let mut asks = vec![a(1, 50.0, 1), a(0, 1.0, 2), a(1, 90.0, 3), a(0, 5.0, 4)];
        order(&mut asks);
        let keys: Vec<u64> = asks.iter().map(|a| a.key).collect();
        assert_eq!(keys, [4, 2, 3, 1]);
    }

    #[test]
    fn the_bias_rises_under_pressure_and_falls_in_calm() {
        let budget = Budget {
            bias_frames: 3,
            max_bias: 2,
            ..Budget::default()
        };
        let mut b = Bias::default();
        for _ in 0..9 {
            b.update(true, &budget);
        }
        assert_eq!(b.bias, 2, "capped at max_bias");
        for _ in 0..3 {
            b.update(false, &budget);
        }
        assert_eq!(b.bias, 1);
    }
}

#[cfg(test)]
mod pool_tests {
    use super::*;

    #[test]
    fn finer_levels_leave_the_reserve_to_coarsest_levels() {
        let b = Budget {
            memory: 1000,
            reserve: 0.25,
            ..Budget::default()
        };
        assert_eq!(b.fine_memory(), 750);
        assert!(b.fits(1, 700, 50, 0));
        assert!(
            !b.fits(1, 700, 51, 0),
            "a finer level may not enter the reserve"
        );
        assert!(b.fits(0, 700, 300, 0), "a coarsest level may");
        assert!(!b.fits(0, 700, 301, 0), "nothing passes the pool");
        assert!(
            b.fits(1, 750, 40, 40),
            "a replacement frees what it replaces"
        );
    }
}
