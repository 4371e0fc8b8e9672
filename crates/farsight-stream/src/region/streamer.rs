//! Desired states and transitions: a pure function of (state, sources, loads).

use farsight_geom::{sphere_intersects_aabb, Aabb, Bvh, Sphere};

use super::state::{ActualState, RegionState, RegionStatus, StreamingSource, Transition};

/// Radius factor a loaded region is tested against, so it does not flicker on the
/// boundary: a region loads inside `radius` and unloads outside `radius * 1.1`.
pub const DEFAULT_REGION_HYSTERESIS: f32 = 1.1;

/// A region file read finished: `ok == false` when the read or the parse failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoadCompletion {
    /// The region whose file was read.
    pub region: u32,
    /// True when its file was read and parsed.
    pub ok: bool,
}

/// What one frame decided. Buffers are reused frame to frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionFrame {
    /// Every state change, at most one per region.
    pub transitions: Vec<Transition>,
    /// Regions whose files to read now.
    pub loads: Vec<u32>,
    /// Regions whose read finished: create their entities now.
    pub creates: Vec<u32>,
    /// Regions whose entities to drop now.
    pub drops: Vec<u32>,
    /// Regions that became active.
    pub activates: Vec<u32>,
    /// Regions that stopped being active (their entities stay while resident).
    pub deactivates: Vec<u32>,
}

impl RegionFrame {
    fn clear(&mut self) {
        self.transitions.clear();
        self.loads.clear();
        self.creates.clear();
        self.drops.clear();
        self.activates.clear();
        self.deactivates.clear();
    }
}

/// The region state machine (docs/design/region-streaming-and-cluster-lod.md#region-states). Region 0 is special: it is raised to at
/// least `Resident` whenever any other region is loaded or wants to be, loads first
/// and unloads last.
#[derive(Debug)]
pub struct RegionStreamer {
    bounds: Vec<Aabb>,
    bvh: Bvh,
    authored: Vec<RegionState>,
    desired: Vec<RegionState>,
    actual: Vec<ActualState>,
    sources: Vec<u32>,
    overrides: Vec<Option<RegionState>>,
    load_failed: Vec<bool>,
    moved: Vec<bool>,
    edit_mode: bool,
    hysteresis: f32,
    frame: u64,
}

impl RegionStreamer {
    /// `bounds[i]` and `authored[i]` describe region `i`. The bounds must be finite
    /// with `min <= max` (the scene reader checks this for files).
    pub fn new(
        bounds: Vec<Aabb>,
        authored: Vec<RegionState>,
    ) -> Result<Self, farsight_geom::BvhBuildError> {
        assert_eq!(bounds.len(), authored.len());
        let n = bounds.len();
        let bvh = Bvh::build(&bounds)?;
        Ok(Self {
            bounds,
            bvh,
            desired: authored.clone(),
            authored,
            actual: vec![ActualState::Unloaded; n],
            sources: vec![0; n],
            overrides: vec![None; n],
            load_failed: vec![false; n],
            moved: vec![false; n],
            edit_mode: false,
            hysteresis: DEFAULT_REGION_HYSTERESIS,
            frame: 0,
        })
    }

    /// The same streamer with another unload factor (default
    /// [`DEFAULT_REGION_HYSTERESIS`]): a loaded region stays while a source's sphere,
    /// radius times `factor`, still touches it. Panics when `factor < 1`.
    pub fn with_hysteresis(mut self, factor: f32) -> Self {
        assert!(factor >= 1.0, "hysteresis factor {factor} must be >= 1");
        self.hysteresis = factor;
        self
    }

    /// The number of regions.
    pub fn len(&self) -> usize {
        self.bounds.len()
    }

    /// True for a world of no regions.
    pub fn is_empty(&self) -> bool {
        self.bounds.is_empty()
    }

    /// Every region's box, in region order.
    pub fn bounds(&self) -> &[Aabb] {
        &self.bounds
    }

    /// The tree over the region boxes that source queries walk.
    pub fn bvh(&self) -> &Bvh {
        &self.bvh
    }

    /// What region `region` is now.
    pub fn actual(&self, region: u32) -> ActualState {
        self.actual[region as usize]
    }

    /// What region `region` was asked to be by the last frame (override, edit mode,
    /// sources and authored state combined).
    pub fn desired(&self, region: u32) -> RegionState {
        self.desired[region as usize]
    }

    /// True once region `region`'s file failed to read or parse; it is not retried.
    pub fn load_failed(&self, region: u32) -> bool {
        self.load_failed[region as usize]
    }

    /// The override (docs/design/region-streaming-and-cluster-lod.md#region-states): beats the authored state, every source and the
    /// edit mode until cleared with `None`.
    pub fn set_override(&mut self, region: u32, state: Option<RegionState>) {
        self.overrides[region as usize] = state;
    }

    /// The editor's edit world: every region is `Active`.
    pub fn set_edit_mode(&mut self, on: bool) {
        self.edit_mode = on;
    }

    /// Writes the authored state (the scene file's state line).
    pub fn set_authored(&mut self, region: u32, state: RegionState) {
        self.authored[region as usize] = state;
    }

    /// Everything a tool shows about region `region`.
    pub fn status(&self, region: u32) -> RegionStatus {
        let i = region as usize;
        let d = self.desired[i];
        RegionStatus {
            actual: self.actual[i],
            desired: (self.actual[i].as_state() != Some(d)).then_some(d),
            sources: self.sources[i],
            load_failed: self.load_failed[i],
            authored: self.authored[i],
            override_state: self.overrides[i],
        }
    }

    /// Regions in each actual state: `[Unloaded, Loading, Resident, Active, Unloading]`.
    pub fn counts(&self) -> [usize; 5] {
        let mut c = [0; 5];
        for a in &self.actual {
            c[*a as usize] += 1;
        }
        c
    }

    /// One frame: apply finished loads, compute desired states, take at most one
    /// transition per region. `out` is cleared first.
    pub fn update(
        &mut self,
        sources: &[StreamingSource],
        completions: &[LoadCompletion],
        out: &mut RegionFrame,
    ) {
        out.clear();
        self.moved.iter_mut().for_each(|m| *m = false);
        for c in completions {
            let i = c.region as usize;
            if self.actual[i] != ActualState::Loading {
                continue;
            }
            let to = if c.ok {
                out.creates.push(c.region);
                ActualState::Resident
            } else {
                self.load_failed[i] = true;
                log::warn!("region {}: load failed; it will not retry", c.region);
                ActualState::Unloaded
            };
            self.transition(c.region, to, out);
        }
        self.compute_desired(sources);
        for r in 0..self.len() as u32 {
            if !self.moved[r as usize] {
                self.step_region(r, out);
            }
        }
        self.frame += 1;
    }

    fn transition(&mut self, region: u32, to: ActualState, out: &mut RegionFrame) {
        let i = region as usize;
        debug_assert!(
            !self.moved[i],
            "two transitions of region {region} in one frame"
        );
        out.transitions.push(Transition {
            region,
            from: self.actual[i],
            to,
        });
        self.actual[i] = to;
        self.moved[i] = true;
    }

    fn compute_desired(&mut self, sources: &[StreamingSource]) {
        for i in 0..self.len() {
            // The editor's edit world loads everything.
            self.desired[i] = if self.edit_mode {
                RegionState::Active
            } else {
                self.authored[i]
            };
            self.sources[i] = 0;
        }
        for s in sources {
            let outer = Sphere::new(s.position, s.radius * self.hysteresis);
            let inner = Sphere::new(s.position, s.radius);
            let (bounds, actual) = (&self.bounds, &self.actual);
            let (desired, counts) = (&mut self.desired, &mut self.sources);
            self.bvh.for_each_in_sphere(&outer, |r| {
                let i = r as usize;
                if actual[i].is_loaded() || sphere_intersects_aabb(&inner, &bounds[i]) {
                    counts[i] += 1;
                    desired[i] = desired[i].max(s.target);
                }
            });
        }
        if self.len() > 1 {
            // What the others want after their overrides: an override that asks for a
            // region raises region 0 too, or that region would wait for it forever.
            let others = (1..self.len()).any(|i| {
                let wants = self.overrides[i].unwrap_or(self.desired[i]);
                self.actual[i] != ActualState::Unloaded || wants != RegionState::Unloaded
            });
            if others {
                self.desired[0] = self.desired[0].max(RegionState::Resident);
            }
        }
        for i in 0..self.len() {
            if let Some(o) = self.overrides[i] {
                self.desired[i] = o;
            }
        }
    }

    fn step_region(&mut self, r: u32, out: &mut RegionFrame) {
        let i = r as usize;
        let d = self.desired[i];
        match self.actual[i] {
            ActualState::Unloaded => {
                if d == RegionState::Unloaded || self.load_failed[i] {
                    return;
                }
                // Region 0 first (unless it failed: the rest of the world still loads).
                let zero_ready = i == 0
                    || matches!(self.actual[0], ActualState::Resident | ActualState::Active)
                    || self.load_failed[0];
                if zero_ready {
                    out.loads.push(r);
                    self.transition(r, ActualState::Loading, out);
                }
            }
            ActualState::Loading => {}
            ActualState::Resident | ActualState::Active => {
                let cur = self.actual[i];
                match d {
                    RegionState::Unloaded => {
                        // Region 0 last.
                        if i == 0 && self.actual[1..].iter().any(|a| *a != ActualState::Unloaded) {
                            return;
                        }
                        out.drops.push(r);
                        self.transition(r, ActualState::Unloading, out);
                    }
                    RegionState::Active if cur == ActualState::Resident => {
                        out.activates.push(r);
                        self.transition(r, ActualState::Active, out);
                    }
                    RegionState::Resident if cur == ActualState::Active => {
                        out.deactivates.push(r);
                        self.transition(r, ActualState::Resident, out);
                    }
                    _ => {}
                }
            }
            ActualState::Unloading => self.transition(r, ActualState::Unloaded, out),
        }
    }
}
