//! One resident-memory budget and one upload budget per frame for every system, and
//! the one bias that coarsens every system under pressure.

use serde::{Deserialize, Serialize};

/// The systems of a frame, in loop order (also the order of their hashes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemId {
    Regions = 0,
    Visibility = 1,
    Clusters = 2,
    Buildings = 3,
    Terrain = 4,
    Budget = 5,
}

/// Number of systems.
pub const SYSTEMS: usize = 6;

impl SystemId {
    pub const ALL: [SystemId; SYSTEMS] = [
        SystemId::Regions,
        SystemId::Visibility,
        SystemId::Clusters,
        SystemId::Buildings,
        SystemId::Terrain,
        SystemId::Budget,
    ];

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
    /// Share of both that the cluster scheduler may take at most (its own lane: it
    /// runs first; buildings and terrain share what it left this frame).
    pub cluster_share: f32,
    /// Frames of pressure (or calm) before the bias moves by one.
    pub bias_frames: u32,
    pub max_bias: u8,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            memory: 512 << 20,
            upload: 8 << 20,
            cluster_share: 0.5,
            bias_frames: 30,
            max_bias: 3,
        }
    }
}

impl Budget {
    pub fn cluster_upload(&self) -> u64 {
        (self.upload as f64 * self.cluster_share as f64) as u64
    }
    pub fn cluster_memory(&self) -> u64 {
        (self.memory as f64 * self.cluster_share as f64) as u64
    }
}

/// One upload a system asks for: coarsest-first (`rank` 0 is a coarsest level, a
/// thing with nothing to draw), then larger on screen first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ask {
    pub rank: u8,
    pub screen: f32,
    pub bytes: u64,
    /// The system's own key (a building level, a chunk).
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
