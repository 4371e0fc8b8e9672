//! The per-frame decisions: a pure function of (state, requests, completed reads).

use super::types::{
    ChunkCompletion, Decision, FrameStats, LevelDesc, ModelDesc, ModelDescError, ModelRequest,
    SchedulerConfig, MAX_LEVELS,
};

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChunkState {
    Reading,
    Arrived,
    Copied,
}

#[derive(Clone, Copy, Debug)]
struct Chunk {
    load: u32,
    index: u16,
    attempts: u8,
    state: ChunkState,
    request: u64,
    len: u64,
    /// Next chunk of the same load, `NONE` at the end.
    next: u32,
}

#[derive(Clone, Copy, Debug)]
struct Load {
    model: u32,
    level: u8,
    total: u16,
    copied: u16,
    last_copy_frame: u64,
    first_chunk: u32,
    live: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Masks {
    resident: u32,
    loading: u32,
    failed: u32,
}

#[derive(Clone, Copy, Debug)]
struct Candidate {
    coarsest_first: u8,
    screen_size: f32,
    model: u32,
    level: u8,
}

/// The cluster streamer (docs/design/region-streaming-and-cluster-lod.md#streaming-under-a-budget), without any I/O: feed it each frame's requests and the reads
/// that completed since the last frame; it appends the frame's [`Decision`]s.
///
/// Same state, same requests, same completions in the same order: same decisions.
/// Steady state allocates nothing (slabs and scratch keep their capacity).
#[derive(Debug)]
pub struct ClusterScheduler {
    config: SchedulerConfig,
    chunk_size: u64,
    /// Per model: index of its first level in the flat arrays, and its level count.
    model_first: Vec<u32>,
    model_count: Vec<u8>,
    masks: Vec<Masks>,
    levels: Vec<LevelDesc>,
    resident_since: Vec<u64>,
    loads: Vec<Load>,
    free_loads: Vec<u32>,
    load_order: Vec<u32>,
    chunks: Vec<Chunk>,
    free_chunks: Vec<u32>,
    candidates: Vec<Candidate>,
    /// Scratch of the scan: models with levels nobody asked for (at most one entry
    /// per model, so it never grows past its first capacity).
    evictable: Vec<(u32, u32)>,
    frame: u64,
    next_request: u64,
    bias: u8,
    pressure_run: u32,
    calm_run: u32,
    pending_bytes: u64,
    loading_bytes: u64,
    resident_bytes: u64,
    levels_resident: u64,
}

impl ClusterScheduler {
    /// A scheduler for `models`. Panics (a programmer mistake) on a model with no
    /// level or more than [`MAX_LEVELS`]; [`ClusterScheduler::try_new`] reports it.
    pub fn new(config: SchedulerConfig, models: &[ModelDesc]) -> Self {
        match Self::try_new(config, models) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    /// A scheduler for `models`, refusing a model with no level or more than
    /// [`MAX_LEVELS`] (counts that may come from a file).
    pub fn try_new(config: SchedulerConfig, models: &[ModelDesc]) -> Result<Self, ModelDescError> {
        if let Some((model, m)) = models
            .iter()
            .enumerate()
            .find(|(_, m)| m.levels.is_empty() || m.levels.len() > MAX_LEVELS)
        {
            return Err(ModelDescError::LevelCount {
                model: model as u32,
                levels: m.levels.len(),
            });
        }
        let mut s = Self {
            config,
            chunk_size: config.effective_chunk(),
            model_first: Vec::with_capacity(models.len()),
            model_count: Vec::with_capacity(models.len()),
            masks: vec![Masks::default(); models.len()],
            levels: Vec::new(),
            resident_since: Vec::new(),
            loads: Vec::new(),
            free_loads: Vec::new(),
            load_order: Vec::new(),
            chunks: Vec::new(),
            free_chunks: Vec::new(),
            candidates: Vec::with_capacity(models.len()),
            evictable: Vec::with_capacity(models.len()),
            frame: 0,
            next_request: 0,
            bias: 0,
            pressure_run: 0,
            calm_run: 0,
            pending_bytes: 0,
            loading_bytes: 0,
            resident_bytes: 0,
            levels_resident: 0,
        };
        for m in models {
            s.model_first.push(s.levels.len() as u32);
            s.model_count.push(m.levels.len() as u8);
            s.levels.extend_from_slice(&m.levels);
        }
        s.resident_since = vec![0; s.levels.len()];
        Ok(s)
    }

    /// Where level `level` of `model` is stored.
    pub fn level_desc(&self, model: u32, level: u8) -> LevelDesc {
        self.levels[self.level_index(model, level)]
    }

    /// The configuration in use, with the budgets [`set_budgets`](Self::set_budgets) set last.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// Sets the upload budget and the memory capacity the next [`step`](Self::step)s
    /// use: a caller sharing one pool between several systems hands the scheduler
    /// its share each frame. The chunk size and the staging ring stay as created
    /// (from the creation config), so a frame's budget smaller than a chunk copies
    /// nothing that frame and reports `budget_exhausted`. A capacity below what is
    /// held evicts nothing by itself; it stops new loads.
    pub fn set_budgets(&mut self, upload_budget: u64, memory_capacity: u64) {
        self.config.upload_budget = upload_budget;
        self.config.memory_capacity = memory_capacity;
    }

    /// Bytes of resident levels plus levels loading (what the memory capacity bounds).
    pub fn held_bytes(&self) -> u64 {
        self.resident_bytes + self.loading_bytes
    }

    /// The chunk size reads and copies use (fixed at creation).
    pub fn chunk_size(&self) -> u64 {
        self.chunk_size
    }

    /// The number of models scheduled.
    pub fn model_count(&self) -> usize {
        self.model_first.len()
    }

    /// The number of levels of `model` (1 to [`MAX_LEVELS`](super::MAX_LEVELS)).
    pub fn level_count(&self, model: u32) -> u8 {
        self.model_count[model as usize]
    }

    /// Index of the coarsest level of `model`.
    pub fn coarsest(&self, model: u32) -> u8 {
        self.model_count[model as usize] - 1
    }

    /// The global bias the next frame's `wanted` levels should add.
    pub fn bias(&self) -> u8 {
        self.bias
    }

    /// The frame the next [`step`](Self::step) will decide.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// True from the level's [`Decision::Ready`](super::Decision) until its eviction.
    pub fn is_resident(&self, model: u32, level: u8) -> bool {
        self.masks[model as usize].resident & (1 << level) != 0
    }

    /// True while the level's reads or copies are under way.
    pub fn is_loading(&self, model: u32, level: u8) -> bool {
        self.masks[model as usize].loading & (1 << level) != 0
    }

    /// True once the level was given up; it is not requested again.
    pub fn is_failed(&self, model: u32, level: u8) -> bool {
        self.masks[model as usize].failed & (1 << level) != 0
    }

    /// The level `model` draws when it asks for `fit`: the finest level at or
    /// coarser than `fit` whose whole chain up to the coarsest is resident (a failed
    /// level draws its coarser parent). `None`: nothing to draw.
    pub fn drawn_level(&self, model: u32, fit: u8) -> Option<u8> {
        let c = self.coarsest(model);
        chain_low(self.masks[model as usize].resident, c).map(|low| low.max(fit.min(c)))
    }

    /// Decides one frame. `requests` has one entry per model; `completions` are the
    /// reads that finished since the last step, in the order the caller recorded.
    pub fn step(
        &mut self,
        requests: &[ModelRequest],
        completions: &[ChunkCompletion],
        out: &mut Vec<Decision>,
    ) -> FrameStats {
        assert_eq!(
            requests.len(),
            self.model_first.len(),
            "one request per model"
        );
        let frame = self.frame;
        let mut st = FrameStats {
            frame,
            ..FrameStats::default()
        };
        for c in completions {
            self.complete(*c, out, &mut st);
        }
        self.promote_ready(out, &mut st);
        self.copy_arrived(out, &mut st);
        self.scan_models(requests, out, &mut st);
        self.start_loads(requests, out, &mut st);
        self.update_bias(&st);
        self.frame += 1;
        st.bias = self.bias;
        st.levels_resident = self.levels_resident;
        st.bytes_resident = self.resident_bytes;
        st.levels_loading = self.load_order.len() as u32;
        st
    }

    fn complete(&mut self, c: ChunkCompletion, out: &mut Vec<Decision>, st: &mut FrameStats) {
        let slot = (c.request & 0xffff_ffff) as u32;
        let Some(ch) = self.chunks.get(slot as usize).copied() else {
            return;
        };
        if ch.request != c.request || ch.state != ChunkState::Reading {
            return; // A read of a cancelled load, or a duplicate report.
        }
        if c.ok {
            self.chunks[slot as usize].state = ChunkState::Arrived;
            return;
        }
        let load = self.loads[ch.load as usize];
        if ch.attempts < self.config.max_retries {
            let request = self.new_request(slot);
            let chunk = &mut self.chunks[slot as usize];
            chunk.attempts += 1;
            chunk.request = request;
            let d =
                self.levels[(self.model_first[load.model as usize] + load.level as u32) as usize];
            out.push(Decision::Read {
                request,
                model: load.model,
                level: load.level,
                chunk: ch.index,
                file: d.file,
                offset: d.offset + ch.index as u64 * self.chunk_size,
                len: ch.len,
            });
            st.retries += 1;
            st.reads_issued += 1;
            return;
        }
        // Out of retries: the level fails, and loads finer than it lose their parent.
        let (model, level) = (load.model, load.level);
        self.masks[model as usize].failed |= 1 << level;
        out.push(Decision::Failed { model, level });
        st.failures += 1;
        if level == self.coarsest(model) {
            log::error!(
                "cluster model {model}: its coarsest level {level} failed to load after {} retries; \
                 the model will never be drawn",
                self.config.max_retries
            );
        } else {
            log::warn!(
                "cluster model {model}: level {level} failed to load; drawing coarser levels"
            );
        }
        for i in 0..self.load_order.len() {
            let li = self.load_order[i];
            let l = self.loads[li as usize];
            if l.live && l.model == model && l.level <= level {
                self.cancel_load(li);
            }
        }
        self.load_order.retain(|&li| self.loads[li as usize].live);
    }

    fn new_request(&mut self, slot: u32) -> u64 {
        self.next_request += 1;
        (self.next_request << 32) | slot as u64
    }

    fn level_index(&self, model: u32, level: u8) -> usize {
        (self.model_first[model as usize] + level as u32) as usize
    }

    fn free_load(&mut self, li: u32) {
        let load = self.loads[li as usize];
        let mut c = load.first_chunk;
        while c != NONE {
            let next = self.chunks[c as usize].next;
            if self.chunks[c as usize].state != ChunkState::Copied {
                self.pending_bytes -= self.chunks[c as usize].len;
            }
            self.chunks[c as usize].request = u64::MAX;
            self.free_chunks.push(c);
            c = next;
        }
        let bytes = self.levels[self.level_index(load.model, load.level)].bytes;
        self.loading_bytes -= bytes;
        self.masks[load.model as usize].loading &= !(1 << load.level);
        self.loads[li as usize].live = false;
        self.free_loads.push(li);
    }

    fn cancel_load(&mut self, li: u32) {
        self.free_load(li);
    }

    fn promote_ready(&mut self, out: &mut Vec<Decision>, st: &mut FrameStats) {
        let frame = self.frame;
        for i in 0..self.load_order.len() {
            let li = self.load_order[i];
            let l = self.loads[li as usize];
            // Ready only once the last copy was queued on an earlier frame: this
            // frame's copies reach the GPU when this frame is submitted.
            // And only on top of its parent, so a resident chain never has a gap.
            let parent_ok = l.level == self.coarsest(l.model)
                || self.masks[l.model as usize].resident & (1 << (l.level + 1)) != 0;
            if l.copied == l.total && l.last_copy_frame < frame && parent_ok {
                self.free_load(li);
                let idx = self.level_index(l.model, l.level);
                self.masks[l.model as usize].resident |= 1 << l.level;
                self.resident_since[idx] = frame;
                self.resident_bytes += self.levels[idx].bytes;
                self.levels_resident += 1;
                out.push(Decision::Ready {
                    model: l.model,
                    level: l.level,
                });
                st.levels_ready += 1;
            }
        }
        self.load_order.retain(|&li| self.loads[li as usize].live);
    }

    fn copy_arrived(&mut self, out: &mut Vec<Decision>, st: &mut FrameStats) {
        let slice = self.config.slice_size();
        let slice_base = (self.frame % self.config.frames_in_flight.max(1) as u64) * slice;
        let mut used = 0u64;
        let mut budget = self.config.upload_budget;
        // Loads already under way, in the order they started; strictly in order so a
        // big chunk is not starved by small ones behind it.
        'loads: for i in 0..self.load_order.len() {
            let li = self.load_order[i];
            let mut c = self.loads[li as usize].first_chunk;
            while c != NONE {
                let ch = self.chunks[c as usize];
                if ch.state == ChunkState::Arrived {
                    if ch.len > budget {
                        st.budget_exhausted = true;
                        break 'loads;
                    }
                    if used + ch.len > slice {
                        st.staging_full = true;
                        break 'loads;
                    }
                    let l = self.loads[li as usize];
                    out.push(Decision::Copy {
                        request: ch.request,
                        model: l.model,
                        level: l.level,
                        chunk: ch.index,
                        staging_offset: slice_base + used,
                        len: ch.len,
                    });
                    used += ch.len;
                    budget -= ch.len;
                    self.pending_bytes -= ch.len;
                    self.chunks[c as usize].state = ChunkState::Copied;
                    let load = &mut self.loads[li as usize];
                    load.copied += 1;
                    load.last_copy_frame = self.frame;
                }
                c = ch.next;
            }
        }
        st.bytes_uploaded = used;
    }

    /// One pass over the models: holes, evictions, and the levels to start.
    fn scan_models(
        &mut self,
        requests: &[ModelRequest],
        out: &mut Vec<Decision>,
        st: &mut FrameStats,
    ) {
        self.candidates.clear();
        self.evictable.clear();
        // One read-only pass (no bounds checks, no calls); the rare evictions are
        // carried out after it, in model order. Eviction changes no mask this pass
        // reads again, so deferring it changes no decision.
        let models = requests
            .iter()
            .zip(&self.model_count)
            .zip(&self.masks)
            .enumerate();
        for (m, ((r, &count), &mk)) in models {
            let c = count - 1;
            let all = if count as usize == MAX_LEVELS {
                u32::MAX
            } else {
                (1u32 << count) - 1
            };
            st.holes += u32::from(r.visible && mk.resident & (1 << c) == 0);
            let keep = r.keep.min(c);
            let asked = all & !((1u32 << keep) - 1);
            let evictable = mk.resident & !asked & !(1 << c);
            if evictable != 0 {
                self.evictable.push((m as u32, evictable));
            }
            let wanted = r.wanted.min(c);
            let want = all & !((1u32 << wanted) - 1);
            let missing = want & !(mk.resident | mk.loading | mk.failed);
            if missing == 0 {
                continue;
            }
            let h = 31 - missing.leading_zeros();
            // Everything coarser than the first level to start must be resident or on
            // its way (a failed level blocks every finer one).
            let above = all & !((2u64 << h) - 1) as u32;
            if (mk.resident | mk.loading) & above != above {
                continue;
            }
            self.candidates.push(Candidate {
                coarsest_first: u8::from(h as u8 != c),
                screen_size: r.screen_size,
                model: m as u32,
                level: h as u8,
            });
        }
        for i in 0..self.evictable.len() {
            let (m, evictable) = self.evictable[i];
            self.evict(m, evictable, out, st);
        }
    }

    fn evict(&mut self, m: u32, evictable: u32, out: &mut Vec<Decision>, st: &mut FrameStats) {
        let c = self.coarsest(m);
        let mut finer_stays = false;
        for l in 0..c {
            let bit = 1u32 << l;
            let mk = self.masks[m as usize];
            if mk.loading & bit != 0 {
                finer_stays = true;
            } else if mk.resident & bit != 0 {
                let idx = self.level_index(m, l);
                let old_enough =
                    self.frame - self.resident_since[idx] >= self.config.evict_after_frames;
                if evictable & bit != 0 && !finer_stays && old_enough {
                    self.masks[m as usize].resident &= !bit;
                    self.resident_bytes -= self.levels[idx].bytes;
                    self.levels_resident -= 1;
                    out.push(Decision::Evict { model: m, level: l });
                    st.evictions += 1;
                } else {
                    finer_stays = true;
                }
            }
        }
    }

    fn start_loads(
        &mut self,
        requests: &[ModelRequest],
        out: &mut Vec<Decision>,
        st: &mut FrameStats,
    ) {
        // Models missing their coarsest level first, then by size on screen, ties by
        // model index.
        self.candidates.sort_unstable_by(|a, b| {
            a.coarsest_first
                .cmp(&b.coarsest_first)
                .then(b.screen_size.total_cmp(&a.screen_size))
                .then(a.model.cmp(&b.model))
        });
        let budget = self.config.upload_budget;
        // Two passes: the coarsest level of every model that has none, then the finer
        // levels, so no finer level of any model starts ahead of a missing coarsest.
        let n = self.candidates.len();
        'models: for k in 0..2 * n {
            let (coarsest_pass, i) = (k < n, k % n);
            let cand = self.candidates[i];
            if coarsest_pass && cand.coarsest_first != 0 {
                continue;
            }
            let m = cand.model;
            let wanted = if coarsest_pass {
                cand.level
            } else {
                requests[m as usize].wanted.min(self.coarsest(m))
            };
            // Within a model, coarse before fine: each level lands on its parent.
            let mut l = cand.level as i32;
            while l >= wanted as i32 {
                let level = l as u8;
                l -= 1;
                let mk = self.masks[m as usize];
                let bit = 1u32 << level;
                if (mk.resident | mk.loading) & bit != 0 {
                    continue;
                }
                if mk.failed & bit != 0 {
                    break;
                }
                let bytes = self.levels[self.level_index(m, level)].bytes;
                if self.resident_bytes + self.loading_bytes + bytes > self.config.memory_capacity {
                    st.memory_full = true;
                    break 'models;
                }
                // Keep about one frame of uploads queued ahead; a level larger than
                // the budget may still start when nothing is pending.
                if self.pending_bytes > 0 && self.pending_bytes + bytes > budget {
                    st.budget_exhausted = true;
                    break 'models;
                }
                self.start(m, level, out, st);
            }
        }
    }

    fn start(&mut self, m: u32, level: u8, out: &mut Vec<Decision>, st: &mut FrameStats) {
        let d = self.levels[self.level_index(m, level)];
        let total = d.bytes.div_ceil(self.chunk_size).max(1);
        if total > u16::MAX as u64 {
            // A size no chunk index can cover (a corrupt index, say): the level fails
            // as a read would, instead of the frame panicking.
            log::error!(
                "cluster model {m}: level {level} claims {} bytes, more than {} chunks; it will not load",
                d.bytes,
                u16::MAX
            );
            self.masks[m as usize].failed |= 1 << level;
            out.push(Decision::Failed { model: m, level });
            st.failures += 1;
            return;
        }
        let li = match self.free_loads.pop() {
            Some(li) => li,
            None => {
                self.loads.push(Load {
                    model: 0,
                    level: 0,
                    total: 0,
                    copied: 0,
                    last_copy_frame: 0,
                    first_chunk: NONE,
                    live: false,
                });
                self.loads.len() as u32 - 1
            }
        };
        let mut prev = NONE;
        let mut first = NONE;
        for k in 0..total {
            let len = (d.bytes - k * self.chunk_size).min(self.chunk_size);
            let slot = match self.free_chunks.pop() {
                Some(s) => s,
                None => {
                    self.chunks.push(Chunk {
                        load: 0,
                        index: 0,
                        attempts: 0,
                        state: ChunkState::Copied,
                        request: u64::MAX,
                        len: 0,
                        next: NONE,
                    });
                    self.chunks.len() as u32 - 1
                }
            };
            let request = self.new_request(slot);
            self.chunks[slot as usize] = Chunk {
                load: li,
                index: k as u16,
                attempts: 0,
                state: ChunkState::Reading,
                request,
                len,
                next: NONE,
            };
            if prev == NONE {
                first = slot;
            } else {
                self.chunks[prev as usize].next = slot;
            }
            prev = slot;
            out.push(Decision::Read {
                request,
                model: m,
                level,
                chunk: k as u16,
                file: d.file,
                offset: d.offset + k * self.chunk_size,
                len,
            });
            st.reads_issued += 1;
        }
        self.loads[li as usize] = Load {
            model: m,
            level,
            total: total as u16,
            copied: 0,
            last_copy_frame: 0,
            first_chunk: first,
            live: true,
        };
        self.load_order.push(li);
        self.masks[m as usize].loading |= 1 << level;
        self.pending_bytes += d.bytes;
        self.loading_bytes += d.bytes;
    }

    fn update_bias(&mut self, st: &FrameStats) {
        let pressure = st.budget_exhausted || st.staging_full || st.memory_full;
        if pressure {
            self.calm_run = 0;
            self.pressure_run += 1;
            if self.pressure_run >= self.config.bias_frames {
                self.bias = (self.bias + 1).min(self.config.max_bias);
                self.pressure_run = 0;
            }
        } else {
            self.pressure_run = 0;
            self.calm_run += 1;
            if self.calm_run >= self.config.bias_frames {
                self.bias = self.bias.saturating_sub(1);
                self.calm_run = 0;
            }
        }
    }
}

/// Lowest level `low` such that every level `low..=coarsest` is set in `resident`.
#[inline]
fn chain_low(resident: u32, coarsest: u8) -> Option<u8> {
    if resident & (1 << coarsest) == 0 {
        return None;
    }
    // Clear the bits above the coarsest, then find the highest missing level below it.
    let below = !resident & ((1u64 << coarsest) - 1) as u32;
    if below == 0 {
        Some(0)
    } else {
        Some((32 - below.leading_zeros()) as u8)
    }
}
