//! Render LOD and residency: which chunks are meshed at which level, the pending
//! requests with their serials, batches to the workers, and serial-checked,
//! time-budgeted publication (at most `publish_max` results and stopping once the
//! budget has passed, whatever the grouping) in which one edit's chunks appear in
//! the same frame whenever they fit in one refresh (a larger edit spans several),
//! and the editor's picking copy of the displayed surface (skirts omitted).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glam::{IVec3, Vec3};

use crate::cell::{chunk_bounds, ChunkMap, ChunkSet, CHUNK_SIZE};
use crate::changes::{affected_chunks, removal_affected, Changes};
use crate::collider::ChunkShape;
use crate::field::LEVELS;
use crate::grid::VoxelGrid;
use crate::mesh::ChunkMesh;
use crate::view_query::Clock;
use crate::water::WaterMesh;
use crate::workers::{MeshRequest, MeshResult, MeshWorkers};

/// The seed's numbers; every field is public so a game can tune them.
#[derive(Clone, Debug, PartialEq)]
pub struct TerrainViewConfig {
    /// Boundaries between levels 0|1, 1|2, 2|3 (distance to the bounding sphere).
    pub thresholds: [f32; 3],
    /// Level-dependent hysteresis band around each threshold.
    pub hysteresis: f32,
    /// Level transitions admitted per scan, nearest first.
    pub max_transitions: usize,
    /// Camera movement that triggers a new scan.
    pub rescan_distance: f32,
    /// Chunks within this distance are meshed and drawn; they are loaded a chunk
    /// further out and kept two chunks further (world units).
    pub draw_distance: f32,
    /// Chunks started per worker batch.
    pub batch: usize,
    /// Requests in flight at most (whole batches).
    pub max_in_flight: usize,
    /// Results published per refresh at most, and the time after which a refresh
    /// stops (checked between results).
    pub publish_max: usize,
    /// Time after which a refresh stops publishing (2 ms by default).
    pub publish_budget: Duration,
    /// Keep a CPU copy of each displayed surface (skirts omitted) for
    /// [`TerrainView::pick`]: on in an editor, off in a game (docs/design/voxel-terrain.md#render-levels-and-residency).
    pub picking: bool,
}

impl Default for TerrainViewConfig {
    fn default() -> Self {
        Self {
            thresholds: [320.0, 720.0, 1500.0],
            hysteresis: 48.0,
            max_transitions: 48,
            rescan_distance: 8.0,
            draw_distance: 1500.0,
            batch: 32,
            max_in_flight: 64,
            publish_max: 32,
            publish_budget: Duration::from_millis(2),
            picking: false,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    serial: u64,
    level: u8,
    water: bool,
    /// Revision of the edit this request belongs to (0: a pure LOD request).
    group: u64,
    sent: bool,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct ChunkState {
    /// Level of the published mesh (kept for empty results too).
    pub(crate) level: Option<u8>,
    pub(crate) mesh: Option<Arc<ChunkMesh>>,
    pub(crate) water: Option<Arc<WaterMesh>>,
    /// The picking copy of `mesh` (editor only).
    pub(crate) pick: Option<Arc<ChunkShape>>,
    pub(crate) pending: Option<Pending>,
    /// The grid was replaced (full refresh): re-mesh through the normal scan, with
    /// water, keeping the old mesh until then.
    pub(crate) stale: bool,
}

/// Counters of one [`TerrainView::update`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ViewStats {
    /// True when the camera moved far enough (or the draw distance changed) for a
    /// new level scan.
    pub scanned: bool,
    /// Level changes the scan admitted (at most `max_transitions`).
    pub transitions: usize,
    /// Chunks re-requested because an edit reached them.
    pub edit_requests: usize,
    /// Requests handed to the meshing workers.
    pub dispatched: usize,
    /// Meshes published (made visible).
    pub published: usize,
    /// Meshes published, by level.
    pub published_per_level: [usize; LEVELS as usize],
    /// Results dropped because a newer request for their chunk superseded them.
    pub stale_dropped: usize,
    /// Chunks forgotten for leaving the kept range (or edited out of range).
    pub discarded: usize,
    /// Time spent publishing, by the view's clock.
    pub publish_time: Duration,
    /// Worker time spent meshing the results received.
    pub mesh_time: Duration,
    /// True when the grid could give no delta, so every chunk is re-meshed.
    pub full_refresh: bool,
}

/// The renderer's side of the terrain. Call [`TerrainView::update`] once a frame.
#[derive(Debug)]
pub struct TerrainView {
    /// The live settings; changes take effect at the next update.
    pub settings: TerrainViewConfig,
    pub(crate) chunks: ChunkMap<ChunkState>,
    pub(crate) workers: MeshWorkers,
    next_serial: u64,
    generation: u64,
    pub(crate) revision: u64,
    last_scan: Option<(Vec3, f32)>,
    rescan: bool,
    pub(crate) ready: ChunkMap<MeshResult>,
    /// Edit groups with requests still unpublished, by revision.
    pub(crate) groups: BTreeMap<u64, Vec<IVec3>>,
    /// The group a publication limit interrupted: resumed first next refresh.
    publishing: Option<u64>,
    pub(crate) camera: Vec3,
    pub(crate) clock: Clock,
    /// Scan scratch, kept so a scan that changes nothing allocates nothing.
    candidates: ChunkSet,
    work: Vec<(f32, IVec3, u8)>,
    /// No new batch goes to the workers (results in flight still publish).
    paused: bool,
}

/// Distance from `camera` to the bounding sphere of `chunk` (0 inside).
pub fn chunk_distance(camera: Vec3, chunk: IVec3) -> f32 {
    let b = chunk_bounds(chunk);
    (camera.distance(b.center()) - b.radius()).max(0.0)
}

impl TerrainView {
    /// A view with nothing published, meshing on `threads` worker threads (at
    /// least one), measuring its publication budget in wall time.
    pub fn new(settings: TerrainViewConfig, threads: usize) -> Self {
        Self {
            settings,
            chunks: ChunkMap::default(),
            workers: MeshWorkers::new(threads),
            next_serial: 1,
            generation: 0,
            revision: 0,
            last_scan: None,
            rescan: true,
            ready: ChunkMap::default(),
            groups: BTreeMap::new(),
            publishing: None,
            camera: Vec3::ZERO,
            clock: Clock::wall(),
            candidates: ChunkSet::default(),
            work: Vec::new(),
            paused: false,
        }
    }

    /// Stops (or resumes) handing batches to the meshing workers: requests keep
    /// their serials and wait, published meshes stay, results already in flight
    /// still publish. A game pausing background work, or a test standing in for a
    /// mesher that cannot keep up.
    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    /// True while [`TerrainView::set_paused`] holds back new batches.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Measure the publication budget with `clock` instead of wall time.
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    fn preload(&self) -> f32 {
        self.settings.draw_distance + CHUNK_SIZE
    }

    fn retain(&self) -> f32 {
        self.settings.draw_distance + 2.0 * CHUNK_SIZE
    }

    /// The level `farsight-lod`'s banded rule picks for `chunk`.
    pub fn desired_level(&self, chunk: IVec3, current: Option<u8>) -> u8 {
        let d = chunk_distance(self.camera, chunk);
        farsight_lod::select_banded(
            current.map(|c| c as usize),
            d,
            &self.settings.thresholds,
            self.settings.hysteresis,
        ) as u8
    }

    fn request(&mut self, chunk: IVec3, level: u8, water: bool, group: u64) {
        let serial = self.next_serial;
        self.next_serial += 1;
        let st = self.chunks.entry(chunk).or_default();
        let (old_water, old_group) = st.pending.map_or((false, 0), |p| (p.water, p.group));
        let group = if group == 0 { old_group } else { group };
        st.pending = Some(Pending {
            serial,
            level,
            water: water || old_water,
            group,
            sent: false,
        });
        self.ready.remove(&chunk);
        if group != 0 {
            debug_assert!(
                old_group == 0 || old_group == group,
                "groups merge before requests"
            );
            let g = self.groups.entry(group).or_default();
            if !g.contains(&chunk) {
                g.push(chunk);
            }
        }
    }

    /// Fold edit group `from` into `into` (relabelling its pending requests).
    fn merge_group(&mut self, from: u64, into: u64) {
        if from == into {
            return;
        }
        if self.publishing == Some(from) {
            self.publishing = Some(into);
        }
        if let Some(members) = self.groups.remove(&from) {
            for m in &members {
                if let Some(p) = self.chunks.get_mut(m).and_then(|s| s.pending.as_mut()) {
                    p.group = into;
                }
            }
            let g = self.groups.entry(into).or_default();
            for m in members {
                if !g.contains(&m) {
                    g.push(m);
                }
            }
        }
    }

    /// One frame: follow grid changes, rescan levels when due, start batches, and
    /// publish finished results within the budget.
    pub fn update(&mut self, grid: &VoxelGrid, camera: Vec3) -> ViewStats {
        let mut stats = ViewStats::default();
        self.camera = camera;
        let grid_changed = (grid.generation(), grid.revision()) != (self.generation, self.revision);
        if grid_changed {
            self.follow_changes(grid, &mut stats);
        }
        let moved = self.last_scan.is_none_or(|(c, d)| {
            c.distance(camera) >= self.settings.rescan_distance || d != self.settings.draw_distance
        });
        if grid_changed || moved || self.rescan {
            stats.scanned = true;
            self.scan(grid, &mut stats);
        }
        self.dispatch(grid, &mut stats);
        self.publish(&mut stats);
        stats
    }

    fn follow_changes(&mut self, grid: &VoxelGrid, stats: &mut ViewStats) {
        let mut dirty = ChunkSet::default();
        match grid.changes_since(self.generation, self.revision) {
            Changes::Full(_) => {
                // Not one edit but a new grid: everything is re-meshed through the
                // bounded, nearest-first scan instead of one giant edit group.
                stats.full_refresh = true;
                for st in self.chunks.values_mut() {
                    st.stale = true;
                    st.pending = None;
                }
                self.ready.clear();
                self.groups.clear();
                self.publishing = None;
                self.rescan = true;
            }
            Changes::Delta { changed, removed } => {
                let levels: ChunkMap<u8> = self
                    .chunks
                    .iter()
                    .filter_map(|(k, s)| s.pending.map(|p| p.level).or(s.level).map(|l| (*k, l)))
                    .collect();
                for ch in &changed {
                    affected_chunks(
                        ch.global_bounds(),
                        |c| levels.get(&c).copied().unwrap_or(0),
                        &mut dirty,
                    );
                }
                for r in removed {
                    removal_affected(r, &mut dirty);
                }
            }
        }
        self.generation = grid.generation();
        self.revision = grid.revision();
        let preload = self.preload();
        let mut dirty: Vec<IVec3> = dirty.into_iter().collect();
        dirty.sort_unstable_by_key(|c| (c.z, c.y, c.x));
        // One group per edit, keyed by the oldest revision it covers: a chunk still
        // pending for an older edit pulls that edit's group into this one, so no
        // frame shows the older edit without the newer one or the reverse.
        let mut group = grid.revision();
        let mut olds = Vec::new();
        for c in &dirty {
            if let Some(p) = self.chunks.get(c).and_then(|s| s.pending) {
                if p.group != 0 {
                    group = group.min(p.group);
                    olds.push(p.group);
                }
            }
        }
        for g in olds {
            self.merge_group(g, group);
        }
        for c in dirty {
            let d = chunk_distance(self.camera, c);
            if d > preload {
                // An edited mesh outside preload range is discarded, even in the
                // retention band, so it cannot reappear stale.
                if self.chunks.remove(&c).is_some() {
                    stats.discarded += 1;
                }
                self.ready.remove(&c);
                continue;
            }
            let current = self
                .chunks
                .get(&c)
                .and_then(|s| s.pending.map(|p| p.level).or(s.level));
            let level = self.desired_level(c, current);
            self.request(c, level, true, group);
            stats.edit_requests += 1;
        }
    }

    fn scan(&mut self, grid: &VoxelGrid, stats: &mut ViewStats) {
        let (preload, retain) = (self.preload(), self.retain());
        // Drop what left the retention band.
        let cam = self.camera;
        let before = self.chunks.len();
        self.chunks.retain(|c, _| chunk_distance(cam, *c) <= retain);
        stats.discarded += before - self.chunks.len();
        let live = &self.chunks;
        self.ready.retain(|c, _| live.contains_key(c));
        for g in self.groups.values_mut() {
            g.retain(|c| live.contains_key(c));
        }
        self.groups.retain(|_, g| !g.is_empty());
        // Candidates: written chunks and their neighbours within preload range.
        let mut cand = std::mem::take(&mut self.candidates);
        cand.clear();
        for c in grid.chunk_coords() {
            if chunk_distance(cam, c) > preload + CHUNK_SIZE * 2.0 {
                continue;
            }
            removal_affected(c, &mut cand);
        }
        let mut work = std::mem::take(&mut self.work);
        work.clear();
        for &c in &cand {
            let d = chunk_distance(cam, c);
            if d > preload {
                continue;
            }
            let st = self.chunks.get(&c);
            let current = st.and_then(|s| s.pending.map(|p| p.level).or(s.level));
            let want = self.desired_level(c, st.and_then(|s| s.level));
            let stale = st.is_some_and(|s| s.stale && s.pending.is_none());
            if current != Some(want) || stale {
                work.push((d, c, want));
            }
        }
        work.sort_unstable_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then((a.1.z, a.1.y, a.1.x).cmp(&(b.1.z, b.1.y, b.1.x)))
        });
        let take = work.len().min(self.settings.max_transitions);
        for &(_, c, level) in &work[..take] {
            let first = self
                .chunks
                .get(&c)
                .is_none_or(|s| (s.level.is_none() || s.stale) && s.pending.is_none());
            // A first mesh needs water too; a pure LOD change keeps the water.
            self.request(c, level, first, 0);
        }
        stats.transitions = take;
        self.rescan = work.len() > take;
        self.last_scan = Some((cam, self.settings.draw_distance));
        self.candidates = cand;
        self.work = work;
    }

    fn dispatch(&mut self, grid: &VoxelGrid, stats: &mut ViewStats) {
        while !self.paused
            && self.workers.in_flight() + self.settings.batch <= self.settings.max_in_flight
        {
            let cam = self.camera;
            let mut todo: Vec<(f32, IVec3, Pending)> = self
                .chunks
                .iter()
                .filter_map(|(c, s)| {
                    s.pending
                        .filter(|p| !p.sent)
                        .map(|p| (chunk_distance(cam, *c), *c, p))
                })
                .collect();
            if todo.is_empty() {
                break;
            }
            todo.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.2.serial.cmp(&b.2.serial)));
            todo.truncate(self.settings.batch);
            let chunks: Vec<IVec3> = todo.iter().map(|t| t.1).collect();
            let snapshot = Arc::new(grid.snapshot_of(&chunks));
            let reqs: Vec<MeshRequest> = todo
                .iter()
                .map(|&(_, chunk, p)| MeshRequest {
                    chunk,
                    level: p.level,
                    serial: p.serial,
                    water: p.water,
                    picking: self.settings.picking,
                })
                .collect();
            for c in &chunks {
                if let Some(p) = self.chunks.get_mut(c).and_then(|s| s.pending.as_mut()) {
                    p.sent = true;
                }
            }
            stats.dispatched += reqs.len();
            self.workers.submit(snapshot, reqs);
        }
    }

    fn accept(&mut self, r: MeshResult, stats: &mut ViewStats) {
        let c = r.request.chunk;
        let current = self
            .chunks
            .get(&c)
            .and_then(|s| s.pending)
            .map(|p| p.serial);
        if current == Some(r.request.serial) {
            stats.mesh_time += r.mesh_time;
            self.ready.insert(c, r);
        } else {
            stats.stale_dropped += 1;
        }
    }

    fn install(&mut self, c: IVec3, stats: &mut ViewStats) {
        let Some(r) = self.ready.remove(&c) else {
            return;
        };
        let Some(st) = self.chunks.get_mut(&c) else {
            return;
        };
        st.pending = None;
        st.stale = false;
        st.level = Some(r.request.level);
        st.mesh = (!r.mesh.is_empty()).then(|| Arc::new(r.mesh));
        st.pick = r.pick.map(Arc::new);
        if let Some(w) = r.water {
            st.water = (!w.is_empty()).then(|| Arc::new(w));
        }
        stats.published += 1;
        stats.published_per_level[r.request.level as usize] += 1;
    }

    fn publish(&mut self, stats: &mut ViewStats) {
        while let Some(r) = self.workers.try_recv() {
            self.accept(r, stats);
        }
        let start = self.clock.now();
        let mut order: Vec<(f32, IVec3)> = self
            .ready
            .keys()
            .map(|&c| (chunk_distance(self.camera, c), c))
            .collect();
        order.sort_unstable_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then((a.1.z, a.1.y, a.1.x).cmp(&(b.1.z, b.1.y, b.1.x)))
        });
        let mut count = 0;
        // A group whose publication a limit interrupted goes on first.
        if let Some(g) = self.publishing {
            if !self.install_group(g, start, &mut count, stats) {
                stats.publish_time = self.clock.now().saturating_sub(start);
                return;
            }
        }
        for (_, c) in order {
            if self.limit_reached(start, count) {
                break;
            }
            if !self.ready.contains_key(&c) {
                continue; // published with its group already
            }
            let group = self
                .chunks
                .get(&c)
                .and_then(|s| s.pending)
                .map_or(0, |p| p.group);
            if group == 0 {
                self.install(c, stats);
                count += 1;
                continue;
            }
            let members = &self.groups[&group];
            if !members.iter().all(|m| self.ready.contains_key(m)) {
                continue;
            }
            // Hold a whole edit back until it fits in this refresh's count; one
            // larger than a refresh can ever take goes out over several, from now.
            let max = self.settings.publish_max;
            if members.len() > max - count && members.len() <= max {
                break;
            }
            if !self.install_group(group, start, &mut count, stats) {
                break;
            }
        }
        stats.publish_time = self.clock.now().saturating_sub(start);
    }

    /// Both publication limits, checked between results: the count, and the time
    /// budget (the first result of a refresh always goes through).
    fn limit_reached(&self, start: Duration, count: usize) -> bool {
        count >= self.settings.publish_max
            || (count > 0 && self.clock.now().saturating_sub(start) >= self.settings.publish_budget)
    }

    /// Installs the ready members of `group` while the limits allow; true when the
    /// whole group is out. An interrupted group is remembered and resumed first.
    fn install_group(
        &mut self,
        group: u64,
        start: Duration,
        count: &mut usize,
        stats: &mut ViewStats,
    ) -> bool {
        self.publishing = Some(group);
        let mut members = self.groups.remove(&group).unwrap_or_default();
        let mut i = 0;
        while i < members.len() {
            if !self.ready.contains_key(&members[i]) {
                i += 1; // re-requested since: it follows when it is ready
                continue;
            }
            if self.limit_reached(start, *count) {
                break;
            }
            let m = members.swap_remove(i);
            self.install(m, stats);
            *count += 1;
        }
        if members.is_empty() {
            self.publishing = None;
            return true;
        }
        self.groups.insert(group, members);
        false
    }

    /// Wait (up to `timeout`) until nothing is pending, publishing as results come.
    /// For tests and tools; a game calls `update` every frame instead.
    pub fn settle(&mut self, grid: &VoxelGrid, camera: Vec3, timeout: Duration) -> bool {
        let start = Instant::now();
        loop {
            self.update(grid, camera);
            if self.pending_count() == 0 && !self.rescan {
                return true;
            }
            if start.elapsed() > timeout {
                return false;
            }
            if let Some(r) = self.workers.recv_timeout(Duration::from_millis(5)) {
                let mut s = ViewStats::default();
                self.accept(r, &mut s);
            }
        }
    }
}
