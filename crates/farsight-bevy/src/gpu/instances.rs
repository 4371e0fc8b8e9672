//! The GPU path's per-frame CPU work over instances, made to cost what changed
//! rather than how many instances there are (issue 29, "Measured").
//!
//! - [`LevelRequests`]: the streamer's per-model requests (fit, keep, wanted,
//!   screen size). Each model keeps a bounding tree over its instances (sorted
//!   along a Morton curve, 16 children a node), refitted only where an instance
//!   changed; each frame a pruned search finds the instance that needs the finest
//!   level and the largest on screen, so a frame visits a few nodes per model
//!   instead of every instance. The answer is exactly the per-instance one
//!   (`farsight_cluster::model_levels_over`): the levels only depend on one number
//!   per instance that grows as it nears the camera or grows in scale, the node
//!   bounds never undershoot it, and the levels are then computed on the instance
//!   that maximises it.
//! - [`write_rows`]: changed instance rows written to the GPU in a few
//!   `write_buffer` calls (runs of nearby rows together), not one call a row.

use farsight_cluster::{model_levels, InstanceBounds, LevelMetric, LevelView};
use farsight_lod::pixels_per_unit;
use farsight_stream::cluster::ModelRequest;
use glam::Vec3;

use super::{GpuInstance, InstanceTable};

/// Children of one tree node (and instances of one leaf).
const FANOUT: usize = 16;
/// No model at this slot.
const NONE: u32 = u32::MAX;

/// A node's bounds: the box of its instances' centres, their largest radius and
/// largest scale (a radius of infinity: some instance is not finite, never pruned).
#[derive(Clone, Copy, Debug)]
struct Node {
    lo: Vec3,
    hi: Vec3,
    radius: f32,
    scale: f32,
}

impl Node {
    const EMPTY: Node = Node {
        lo: Vec3::INFINITY,
        hi: Vec3::NEG_INFINITY,
        radius: 0.0,
        scale: 0.0,
    };

    fn add_instance(&mut self, b: &InstanceBounds) {
        if !(b.center.is_finite() && b.radius.is_finite() && b.scale.is_finite()) {
            self.radius = f32::INFINITY;
            return;
        }
        self.lo = self.lo.min(b.center);
        self.hi = self.hi.max(b.center);
        self.radius = self.radius.max(b.radius);
        self.scale = self.scale.max(b.scale);
    }

    fn add_node(&mut self, n: &Node) {
        self.lo = self.lo.min(n.lo);
        self.hi = self.hi.max(n.hi);
        self.radius = self.radius.max(n.radius);
        self.scale = self.scale.max(n.scale);
    }

    /// Upper bounds of [`Keys`] over the node's instances.
    fn bound(&self, view: &LevelView) -> Keys {
        if self.radius == f32::INFINITY {
            return Keys {
                level: f32::INFINITY,
                screen: f32::INFINITY,
            };
        }
        if self.lo.x > self.hi.x {
            // No instance below.
            return Keys {
                level: f32::NEG_INFINITY,
                screen: f32::NEG_INFINITY,
            };
        }
        let q = view.camera.clamp(self.lo, self.hi);
        // A margin for rounding: each instance's distance is computed in f32 from
        // numbers at most this large.
        let magnitude = view.camera.abs().max_element()
            + self.lo.abs().max(self.hi.abs()).max_element()
            + self.radius;
        let near = q.distance(view.camera) - self.radius - 1e-5 * magnitude;
        let level = pixels_per_unit(near.max(0.0), view.projection, view.viewport_height)
            * self.scale
            * (1.0 + 1e-5);
        let screen = self.radius * view.viewport_height * 0.5 * view.projection.p11
            / near.max(1e-3)
            * (1.0 + 1e-5);
        let sure = |k: f32| if k >= 0.0 { k } else { f32::INFINITY };
        Keys {
            level: sure(level),
            screen: sure(screen),
        }
    }
}

/// The two numbers a model's request is the largest of, over its instances.
#[derive(Clone, Copy, Debug)]
struct Keys {
    /// Pixels per model unit, as `model_levels` computes it: finer levels the
    /// larger (its levels are monotone in it).
    level: f32,
    /// The request's screen size: the radius's pixels, as the CPU path computes it.
    screen: f32,
}

impl Keys {
    fn of(b: &InstanceBounds, view: &LevelView) -> Keys {
        let centre = b.center.distance(view.camera);
        let distance = (centre - b.radius).max(0.0);
        let level = pixels_per_unit(distance, view.projection, view.viewport_height) * b.scale;
        let d = (centre - b.radius).max(1e-3);
        let screen = b.radius * view.viewport_height * 0.5 * view.projection.p11 / d;
        Keys { level, screen }
    }
}

/// One model's instances in tree order and the tree over them.
#[derive(Clone, Debug, Default)]
struct ModelSet {
    /// `(slot, bounds)`, sorted along the Morton curve at the last rebuild.
    items: Vec<(u32, InstanceBounds)>,
    /// `levels[0]`: one node per `FANOUT` items; `levels[k + 1]`: one per
    /// `FANOUT` nodes of `levels[k]`; the last has one node.
    levels: Vec<Vec<Node>>,
    /// Instances added or removed since the last rebuild.
    rebuild: bool,
    /// Leaves whose instances moved since the last refit.
    refit: Vec<u32>,
    /// Moves since the last rebuild (past the instance count, rebuild: the
    /// curve's order keeps the boxes tight).
    moves: usize,
    /// The slot of the last search's answer (where the next search starts).
    hint: u32,
}

impl ModelSet {
    /// Sorts the items along the Morton curve of their centres and builds the tree;
    /// `at` gets each slot's new index.
    fn build(&mut self, at: &mut [(u32, u32)]) {
        self.rebuild = false;
        self.refit.clear();
        self.moves = 0;
        self.levels.clear();
        if self.items.is_empty() {
            return;
        }
        let mut all = Node::EMPTY;
        for (_, b) in &self.items {
            all.add_instance(b);
        }
        let size = (all.hi - all.lo).max(Vec3::splat(f32::MIN_POSITIVE));
        let code = |c: Vec3| -> u32 {
            let q = ((c - all.lo) / size * 1023.0).clamp(Vec3::ZERO, Vec3::splat(1023.0));
            let spread = |v: f32| -> u32 {
                // Non-finite centres land at 0 (`as` saturates, NaN to 0).
                let mut x = v as u32 & 1023;
                x = (x | (x << 16)) & 0x0300_00ff;
                x = (x | (x << 8)) & 0x0300_f00f;
                x = (x | (x << 4)) & 0x030c_30c3;
                (x | (x << 2)) & 0x0924_9249
            };
            spread(q.x) | (spread(q.y) << 1) | (spread(q.z) << 2)
        };
        self.items
            .sort_by_cached_key(|&(slot, b)| (code(b.center), slot));
        for (i, &(slot, _)) in self.items.iter().enumerate() {
            at[slot as usize].1 = i as u32;
        }
        let leaves = self
            .items
            .chunks(FANOUT)
            .map(|c| {
                let mut n = Node::EMPTY;
                c.iter().for_each(|(_, b)| n.add_instance(b));
                n
            })
            .collect();
        self.levels.push(leaves);
        while self.levels.last().is_some_and(|l| l.len() > 1) {
            let up = self.levels.last().map_or_else(Vec::new, |l| {
                l.chunks(FANOUT)
                    .map(|c| {
                        let mut n = Node::EMPTY;
                        c.iter().for_each(|x| n.add_node(x));
                        n
                    })
                    .collect()
            });
            self.levels.push(up);
        }
    }

    /// Recomputes the nodes above the moved instances.
    fn refit(&mut self) {
        let mut dirty = std::mem::take(&mut self.refit);
        for k in 0..self.levels.len() {
            dirty.sort_unstable();
            dirty.dedup();
            for &j in &dirty {
                let j = j as usize;
                let mut n = Node::EMPTY;
                if k == 0 {
                    let end = (j * FANOUT + FANOUT).min(self.items.len());
                    self.items[j * FANOUT..end]
                        .iter()
                        .for_each(|(_, b)| n.add_instance(b));
                } else {
                    let below = &self.levels[k - 1];
                    let end = (j * FANOUT + FANOUT).min(below.len());
                    below[j * FANOUT..end].iter().for_each(|x| n.add_node(x));
                }
                self.levels[k][j] = n;
            }
            dirty.iter_mut().for_each(|j| *j /= FANOUT as u32);
        }
        dirty.clear();
        self.refit = dirty;
    }

    /// The instance with the largest level key and the largest screen size, by a
    /// search that skips every node whose bounds cannot beat what was found,
    /// starting from item `hint` (last frame's answer: near the answer when the
    /// camera moved a little, so most nodes are skipped from the start). Returns
    /// the index of that instance, its bounds and the largest screen size.
    fn finest(
        &self,
        view: &LevelView,
        hint: usize,
        stack: &mut Vec<(usize, usize, Keys)>,
    ) -> (usize, f32) {
        let first = if hint < self.items.len() { hint } else { 0 };
        let mut best = (first, Keys::of(&self.items[first].1, view));
        let mut screen = best.1.screen.max(0.0);
        if best.1.level.is_nan() {
            // Its levels are the coarsest: any other instance's are as fine.
            best.1.level = f32::NEG_INFINITY;
        }
        let Some(top) = self.levels.len().checked_sub(1) else {
            return (best.0, screen);
        };
        stack.clear();
        stack.push((top, 0, self.levels[top][0].bound(view)));
        while let Some((k, j, b)) = stack.pop() {
            if b.level <= best.1.level && b.screen <= screen {
                continue;
            }
            let start = j * FANOUT;
            if k == 0 {
                let end = (start + FANOUT).min(self.items.len());
                for (i, (_, inst)) in self.items[start..end].iter().enumerate() {
                    let keys = Keys::of(inst, view);
                    if keys.level > best.1.level {
                        best = (start + i, keys);
                    }
                    screen = screen.max(keys.screen);
                }
                continue;
            }
            let below = &self.levels[k - 1];
            let end = (start + FANOUT).min(below.len());
            // Each child's bound once; the most promising searched first (pushed
            // last), those that cannot beat what was found not at all.
            let from = stack.len();
            for (c, node) in below[start..end].iter().enumerate() {
                let b = node.bound(view);
                if b.level > best.1.level || b.screen > screen {
                    stack.push((k - 1, start + c, b));
                }
            }
            stack[from..].sort_unstable_by(|a, b| a.2.level.total_cmp(&b.2.level));
        }
        (best.0, screen)
    }
}

/// The streamer's requests from every instance, at a cost per frame that grows
/// with the models and the changed instances, not with the instance count (see
/// the module's doc). Instances are kept by slot, as the plugin's instance table.
#[derive(Clone, Debug, Default)]
pub struct LevelRequests {
    models: Vec<ModelSet>,
    /// Per slot: `(model, index in the model's items)`, `NONE` for no model.
    at: Vec<(u32, u32)>,
    stack: Vec<(usize, usize, Keys)>,
}

impl LevelRequests {
    /// No instances.
    pub fn new() -> Self {
        Self::default()
    }

    /// Slot `slot` holds an instance of `model` with these bounds (added, moved, or
    /// given another model).
    pub fn set(&mut self, slot: u32, model: u32, bounds: InstanceBounds) {
        let s = slot as usize;
        if self.at.len() <= s {
            self.at.resize(s + 1, (NONE, NONE));
        }
        let (old, i) = self.at[s];
        if old == model {
            let set = &mut self.models[model as usize];
            set.items[i as usize].1 = bounds;
            set.refit.push(i / FANOUT as u32);
            set.moves += 1;
            if set.moves > set.items.len() {
                set.rebuild = true;
            }
            return;
        }
        self.clear(slot);
        let m = model as usize;
        if self.models.len() <= m {
            self.models.resize_with(m + 1, ModelSet::default);
        }
        let set = &mut self.models[m];
        self.at[s] = (model, set.items.len() as u32);
        set.items.push((slot, bounds));
        set.rebuild = true;
    }

    /// Slot `slot` holds no instance.
    pub fn clear(&mut self, slot: u32) {
        let Some(&(m, i)) = self.at.get(slot as usize) else {
            return;
        };
        if m == NONE {
            return;
        }
        self.at[slot as usize] = (NONE, NONE);
        let set = &mut self.models[m as usize];
        set.items.swap_remove(i as usize);
        if let Some(&(moved, _)) = set.items.get(i as usize) {
            self.at[moved as usize].1 = i;
        }
        set.rebuild = true;
    }

    /// Slots from `len` on hold no instance.
    pub fn truncate(&mut self, len: u32) {
        for s in len..self.at.len() as u32 {
            self.clear(s);
        }
        self.at.truncate(len as usize);
    }

    /// Instances of `model`.
    pub fn count(&self, model: u32) -> usize {
        self.models.get(model as usize).map_or(0, |s| s.items.len())
    }

    /// For `model`: the bounds of an instance whose `model_levels` is the finest
    /// over its instances, and the largest screen size (the CPU path's pixels of
    /// the radius); `None` without instances.
    pub fn finest(&mut self, model: u32, view: &LevelView) -> Option<(InstanceBounds, f32)> {
        let set = self.models.get_mut(model as usize)?;
        if set.items.is_empty() {
            return None;
        }
        if set.rebuild {
            set.build(&mut self.at);
        } else if !set.refit.is_empty() {
            set.refit();
        }
        let hint = match self.at.get(set.hint as usize) {
            Some(&(m, i)) if m == model => i as usize,
            _ => 0,
        };
        let (i, screen) = set.finest(view, hint, &mut self.stack);
        let (slot, bounds) = set.items[i];
        set.hint = slot;
        Some((bounds, screen))
    }

    /// The requests of models `0..metrics.len()` (each model's parent errors, finest
    /// level first) into `out`: a model without instances asks for its coarsest
    /// level only (`coarsest(model)`), the others for the finest levels any of their
    /// instances needs, at `view.bias`.
    pub fn requests(
        &mut self,
        metrics: &[Vec<f32>],
        view: &LevelView,
        coarsest: impl Fn(u32) -> u8,
        out: &mut Vec<ModelRequest>,
    ) {
        out.clear();
        for (m, errors) in metrics.iter().enumerate() {
            let c = coarsest(m as u32);
            let mut req = ModelRequest::unseen(c);
            if let Some((inst, screen)) = self.finest(m as u32, view) {
                let l = model_levels(LevelMetric::ParentErrors(errors), &inst, view);
                req.fit = l.fit as u8;
                req.keep = l.keep as u8;
                req.wanted = ModelRequest::wanted_for(l.fit as u8, view.bias as u8, c);
                req.screen_size = screen;
                req.visible = true;
            }
            out.push(req);
        }
    }
}

/// Rows nearer than this are written in one call with the unchanged rows between.
const ROW_GAP: u32 = 32;

/// Writes the rows of `slots` (sorted, without repeats) into `table`, `row(slot)`
/// giving each: one `write_buffer` per run of slots closer than 32 rows, the
/// rows between rewritten unchanged. Returns false, writing nothing more, when a
/// run does not fit the table.
pub fn write_rows(
    table: &mut InstanceTable,
    queue: &wgpu::Queue,
    slots: &[u32],
    row: impl Fn(u32) -> GpuInstance,
    scratch: &mut Vec<GpuInstance>,
) -> bool {
    let mut i = 0;
    while i < slots.len() {
        let first = slots[i];
        let mut last = first;
        i += 1;
        while i < slots.len() && slots[i] - last <= ROW_GAP {
            last = slots[i];
            i += 1;
        }
        scratch.clear();
        scratch.extend((first..=last).map(&row));
        if !table.write(queue, first, scratch) {
            return false;
        }
    }
    true
}
