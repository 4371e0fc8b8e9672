//! The resident pool on the GPU and the streamer's real [`Uploader`].
//!
//! Three pools, each one wgpu storage buffer with its own [`RangeAllocator`]:
//! vertices (the cluster file's 32-byte vertices as stored), indices (the fixed
//! cluster slots as stored, level-local: a row's `vertex_base` is added in the
//! shader) and the cluster table ([`GpuCluster`] rows). A small model table
//! ([`GpuModel`]) and the resident list (per model, the table rows of its ready
//! levels) are rewritten when residency changes, never per instance or per frame.
//!
//! A level is placed in all three pools on its first copy; vertices and indices
//! go straight from the streamer's staging ring to their pool; the header and
//! cluster records are gathered on the CPU and become table rows when the level
//! is ready, which the scheduler says on a frame after its last copy was queued.
//! A level is resident once per model, whatever the number of instances.
//!
//! Copies go through the GPU staging ring ([`StagingRing`]: three mappable
//! slices, 33 MB in all by default, as the streamer's `staging_size`) and are
//! submitted at `end_frame`, before the frame's drawing; the streamer's budget
//! (`upload_budget`, at most a slice) counts exactly the bytes written here. A
//! word split across two copies is written through the queue once whole.

use std::collections::HashMap;
use std::ops::Range;

use farsight_format::{ClusterInfo, ClusterLevelHeader};
use farsight_stream::cluster::{CookedModel, Uploader};

use super::alloc::RangeAllocator;
use super::layout::{
    pack_clusters, GpuCluster, GpuModel, LevelLayout, LevelPlacement, Region, HEADER_BYTES,
    VERTEX_BYTES,
};
use super::staging::StagingRing;
use super::stats::{PlacementFailure, PoolKind};

/// Sizes of the pools, in their units. The defaults fit wgpu's default limits
/// (128 MiB a storage binding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSettings {
    /// Vertices the vertex pool holds (32 bytes each).
    pub vertices: u64,
    /// Indices the index pool holds (4 bytes each; 384 a cluster).
    pub indices: u64,
    /// Rows of the cluster table (64 bytes each), and entries of the resident list.
    pub clusters: u64,
    /// Rows of the model table.
    pub models: u64,
    /// Bytes of the staging ring (the streamer's `SchedulerConfig::staging_size`).
    pub staging_bytes: u64,
    /// Slices of the staging ring, one a frame in flight.
    pub staging_slices: u32,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self {
            vertices: 4 << 20,
            indices: 32 << 20,
            clusters: 1 << 18,
            models: 4096,
            staging_bytes: 33 << 20,
            staging_slices: 3,
        }
    }
}

impl PoolSettings {
    /// GPU bytes of the three pools, the model table and the resident list.
    pub fn bytes(&self) -> u64 {
        self.vertices * VERTEX_BYTES
            + self.indices * 4
            + self.clusters * (std::mem::size_of::<GpuCluster>() as u64 + 4)
            + self.models * std::mem::size_of::<GpuModel>() as u64
            + self.staging_bytes
    }
}

/// The GPU buffers of the pool, for the cut and draw passes to bind.
#[derive(Clone, Debug)]
pub struct PoolBuffers {
    /// The 32-byte vertices of every resident level.
    pub vertices: wgpu::Buffer,
    /// The index slots of every resident level (level-local indices).
    pub indices: wgpu::Buffer,
    /// [`GpuCluster`] rows.
    pub clusters: wgpu::Buffer,
    /// [`GpuModel`] rows.
    pub models: wgpu::Buffer,
    /// Per model, the table rows of its resident clusters (`u32`s).
    pub resident: wgpu::Buffer,
}

/// A level placed in the pools.
#[derive(Debug)]
struct Placed {
    vertices: Range<u64>,
    indices: Range<u64>,
    rows: Range<u64>,
    /// The header and cluster records, gathered until the level is ready.
    head: Vec<u8>,
    head_arrived: u64,
    /// Bytes of a 4-byte word split across two copies, by the word's pool byte
    /// offset: the bytes so far and which of them arrived.
    split_words: HashMap<(bool, u64), ([u8; 4], u8)>,
    ready: bool,
}

#[derive(Debug)]
struct ModelState {
    layouts: Vec<LevelLayout>,
    levels: HashMap<u8, Placed>,
    bounds: Option<([f32; 3], [f32; 3])>,
}

/// Counters of the uploader, for the on-screen figures and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UploadStats {
    /// Bytes written to the GPU since the last `end_frame`.
    pub frame_bytes: u64,
    /// Bytes written in the last frame that ended (the per-frame upload figure).
    pub last_frame_bytes: u64,
    /// Bytes written over the run.
    pub total_bytes: u64,
    /// Levels that could not be placed (a pool full or too fragmented): they are
    /// never drawn; the coarser level stays.
    pub placement_failures: u64,
    /// Levels made ready whose records disagreed with the model's manifest.
    pub refused_levels: u64,
    /// Clusters in the resident list.
    pub resident_clusters: u64,
    /// Copies that found the frame's staging slice full and went through
    /// `Queue::write_buffer` instead (the budget should keep this at zero).
    pub staging_full: u64,
    /// The last level that could not be placed: which pool refused it, and
    /// whether that pool was full or only too fragmented.
    pub last_placement_failure: Option<PlacementFailure>,
}

/// Why a model could not be added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddModelError {
    /// The model table is full.
    #[error("the model table holds {0} models")]
    TableFull(u64),
    /// A level's size does not fit its cluster count.
    #[error(transparent)]
    Layout(#[from] super::layout::LayoutError),
}

/// The streamer's uploader into the GPU pools.
#[derive(Debug)]
pub struct GpuUploader {
    queue: wgpu::Queue,
    ring: StagingRing,
    buffers: PoolBuffers,
    settings: PoolSettings,
    vertex_alloc: RangeAllocator,
    index_alloc: RangeAllocator,
    row_alloc: RangeAllocator,
    models: Vec<ModelState>,
    dirty: bool,
    stats: UploadStats,
    max_resident: u32,
    rows: Vec<GpuCluster>,
}

fn storage(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16),
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

impl GpuUploader {
    /// Allocates the pools on `device`; copies go through `queue`.
    pub fn new(device: &wgpu::Device, queue: wgpu::Queue, settings: PoolSettings) -> Self {
        let buffers = PoolBuffers {
            vertices: storage(
                device,
                "farsight vertex pool",
                settings.vertices * VERTEX_BYTES,
            ),
            indices: storage(device, "farsight index pool", settings.indices * 4),
            clusters: storage(
                device,
                "farsight cluster table",
                settings.clusters * std::mem::size_of::<GpuCluster>() as u64,
            ),
            models: storage(
                device,
                "farsight model table",
                settings.models * std::mem::size_of::<GpuModel>() as u64,
            ),
            resident: storage(device, "farsight resident list", settings.clusters * 4),
        };
        Self {
            ring: StagingRing::new(device, settings.staging_bytes, settings.staging_slices),
            queue,
            buffers,
            settings,
            vertex_alloc: RangeAllocator::new(settings.vertices),
            index_alloc: RangeAllocator::new(settings.indices),
            row_alloc: RangeAllocator::new(settings.clusters),
            models: Vec::new(),
            dirty: false,
            stats: UploadStats::default(),
            max_resident: 0,
            rows: Vec::new(),
        }
    }

    /// Registers a model by its levels' `(clusters, record bytes)`, finest first;
    /// returns its number (the streamer's model number when added in the same
    /// order).
    pub fn add_model(&mut self, levels: &[(u32, u64)]) -> Result<u32, AddModelError> {
        if self.models.len() as u64 >= self.settings.models {
            return Err(AddModelError::TableFull(self.settings.models));
        }
        let layouts = levels
            .iter()
            .map(|&(c, b)| LevelLayout::new(c, b))
            .collect::<Result<Vec<_>, _>>()?;
        self.models.push(ModelState {
            layouts,
            levels: HashMap::new(),
            bounds: None,
        });
        self.dirty = true;
        Ok(self.models.len() as u32 - 1)
    }

    /// Registers a cooked model (see [`GpuUploader::add_model`]).
    pub fn add_cooked(&mut self, model: &CookedModel) -> Result<u32, AddModelError> {
        let levels: Vec<(u32, u64)> = model.levels().map(|l| (l.clusters, l.bytes)).collect();
        self.add_model(&levels)
    }

    /// The pool's buffers.
    pub fn buffers(&self) -> &PoolBuffers {
        &self.buffers
    }

    /// The pool sizes.
    pub fn settings(&self) -> PoolSettings {
        self.settings
    }

    /// The counters.
    pub fn stats(&self) -> UploadStats {
        self.stats
    }

    /// Models registered (rows of the model table in use).
    pub fn model_count(&self) -> u32 {
        self.models.len() as u32
    }

    /// The most resident clusters of any model: the cut's dispatch width.
    pub fn max_resident(&self) -> u32 {
        self.max_resident
    }

    /// The cluster-table rows of a level, when it is placed.
    pub fn level_rows(&self, model: u32, level: u8) -> Option<Range<u64>> {
        let m = self.models.get(model as usize)?;
        m.levels.get(&level).map(|p| p.rows.clone())
    }

    /// The levels the cut sees of a model: the ready levels from the coarsest
    /// down, stopping at the first that is not ready (finest first).
    pub fn drawn_levels(&self, model: u32) -> Vec<u8> {
        let Some(m) = self.models.get(model as usize) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for l in (0..m.layouts.len() as u8).rev() {
            match m.levels.get(&l) {
                Some(p) if p.ready => out.push(l),
                _ => break,
            }
        }
        out.reverse();
        out
    }

    /// The clusters the cut sees of a model: the rows of its [`Self::drawn_levels`]
    /// (without making the list).
    pub fn drawn_clusters(&self, model: u32) -> u64 {
        let Some(m) = self.models.get(model as usize) else {
            return 0;
        };
        let mut n = 0;
        for l in (0..m.layouts.len() as u8).rev() {
            match m.levels.get(&l) {
                Some(p) if p.ready => n += p.rows.end - p.rows.start,
                _ => break,
            }
        }
        n
    }

    /// Free units of the vertex, index and row pools.
    pub fn free_units(&self) -> [u64; 3] {
        [
            self.vertex_alloc.free_units(),
            self.index_alloc.free_units(),
            self.row_alloc.free_units(),
        ]
    }

    /// Places the level in the pools unless it is; false when there is no room.
    fn place(&mut self, model: u32, level: u8) -> bool {
        let Some(layout) = self
            .models
            .get(model as usize)
            .and_then(|m| m.layouts.get(level as usize).copied())
        else {
            return false;
        };
        let m = &mut self.models[model as usize];
        if m.levels.contains_key(&level) {
            return true;
        }
        let v = self.vertex_alloc.alloc(u64::from(layout.vertices));
        let i = self.index_alloc.alloc(layout.index_count());
        let r = self.row_alloc.alloc(u64::from(layout.clusters));
        let (Some(v), Some(i), Some(r)) = (v.clone(), i.clone(), r.clone()) else {
            // Say which pool refused it (its own range is `None`, so its free
            // units are as they were), and whether it was full or fragmented.
            let refused = [
                (
                    PoolKind::Vertices,
                    &self.vertex_alloc,
                    &v,
                    u64::from(layout.vertices),
                ),
                (
                    PoolKind::Indices,
                    &self.index_alloc,
                    &i,
                    layout.index_count(),
                ),
                (
                    PoolKind::ClusterRows,
                    &self.row_alloc,
                    &r,
                    u64::from(layout.clusters),
                ),
            ]
            .into_iter()
            .find(|(.., got, _)| got.is_none());
            if let Some((pool, a, _, needed)) = refused {
                self.stats.last_placement_failure = Some(PlacementFailure {
                    model,
                    level,
                    pool,
                    needed,
                    free: a.free_units(),
                    largest_free: a.largest_free(),
                });
            }
            // Give back what was placed: the level stays unplaced.
            for (a, got) in [
                (&mut self.vertex_alloc, v),
                (&mut self.index_alloc, i),
                (&mut self.row_alloc, r),
            ] {
                if let Some(got) = got {
                    let _ = a.free(got);
                }
            }
            return false;
        };
        m.levels.insert(
            level,
            Placed {
                vertices: v,
                indices: i,
                rows: r,
                head: vec![0; layout.head_bytes() as usize],
                head_arrived: 0,
                split_words: HashMap::new(),
                ready: false,
            },
        );
        true
    }

    /// Writes `bytes` at byte `at` of `buffer`: the whole words through the
    /// staging ring, the bytes of words that `bytes` covers only partly held back
    /// until the rest of the word arrives (then written through the queue).
    #[allow(clippy::too_many_arguments)]
    fn write(
        queue: &wgpu::Queue,
        ring: &mut StagingRing,
        stats: &mut UploadStats,
        buffer: &wgpu::Buffer,
        words: &mut HashMap<(bool, u64), ([u8; 4], u8)>,
        key: bool,
        at: u64,
        bytes: &[u8],
    ) {
        let end = at + bytes.len() as u64;
        let (a4, e4) = (at.next_multiple_of(4), end / 4 * 4);
        if a4 < e4 {
            let whole = &bytes[(a4 - at) as usize..(e4 - at) as usize];
            if !ring.copy(whole, buffer, a4) {
                stats.staging_full += 1;
                queue.write_buffer(buffer, a4, whole);
            }
        }
        let mut partial = |pos: u64| {
            let word = pos / 4 * 4;
            let entry = words.entry((key, word)).or_insert(([0; 4], 0));
            entry.0[(pos - word) as usize] = bytes[(pos - at) as usize];
            entry.1 |= 1 << (pos - word);
            if entry.1 == 0xF {
                let full = entry.0;
                words.remove(&(key, word));
                queue.write_buffer(buffer, word, &full);
            }
        };
        if a4 >= e4 {
            (at..end).for_each(&mut partial);
        } else {
            (at..a4).chain(e4..end).for_each(&mut partial);
        }
    }

    /// Rewrites the model table and resident list from the ready levels.
    fn rebuild(&mut self) {
        let mut table = Vec::with_capacity(self.models.len());
        let mut resident: Vec<u32> = Vec::new();
        self.max_resident = 0;
        for (k, m) in self.models.iter().enumerate() {
            let levels = self.drawn_levels(k as u32);
            let start = resident.len() as u32;
            for l in &levels {
                resident.extend(m.levels[l].rows.clone().map(|r| r as u32));
            }
            let (lo, hi) = m.bounds.unwrap_or_default();
            let count = resident.len() as u32 - start;
            self.max_resident = self.max_resident.max(count);
            table.push(GpuModel {
                bounds_min: lo,
                finest_resident: levels.first().map_or(u32::MAX, |&l| u32::from(l)),
                bounds_max: hi,
                resident_start: start,
                resident_count: count,
                pad: [0; 3],
            });
        }
        self.stats.resident_clusters = resident.len() as u64;
        if !table.is_empty() {
            self.queue
                .write_buffer(&self.buffers.models, 0, bytemuck::cast_slice(&table));
        }
        if !resident.is_empty() {
            self.queue
                .write_buffer(&self.buffers.resident, 0, bytemuck::cast_slice(&resident));
        }
    }
}

impl Uploader for GpuUploader {
    fn queue_copy(&mut self, model: u32, level: u8, offset_in_level: u64, bytes: &[u8]) {
        let Some(layout) = self
            .models
            .get(model as usize)
            .and_then(|m| m.layouts.get(level as usize).copied())
        else {
            return;
        };
        if !self.place(model, level) {
            self.stats.placement_failures += 1;
            match self.stats.last_placement_failure {
                Some(f) => bevy::log::error!("farsight: {f}; its coarser level stays drawn"),
                None => bevy::log::error!(
                    "farsight: no room in the GPU pools for model {model} level {level}; \
                     its coarser level stays drawn"
                ),
            }
            return;
        }
        let Some(p) = self.models[model as usize].levels.get_mut(&level) else {
            return;
        };
        for piece in layout.split(offset_in_level, bytes.len() as u64) {
            let src = &bytes[piece.src as usize..(piece.src + piece.len) as usize];
            match piece.region {
                Region::Head => {
                    p.head[piece.dst as usize..(piece.dst + piece.len) as usize]
                        .copy_from_slice(src);
                    p.head_arrived += piece.len;
                }
                Region::Vertices => Self::write(
                    &self.queue,
                    &mut self.ring,
                    &mut self.stats,
                    &self.buffers.vertices,
                    &mut p.split_words,
                    false,
                    p.vertices.start * VERTEX_BYTES + piece.dst,
                    src,
                ),
                Region::Indices => Self::write(
                    &self.queue,
                    &mut self.ring,
                    &mut self.stats,
                    &self.buffers.indices,
                    &mut p.split_words,
                    true,
                    p.indices.start * 4 + piece.dst,
                    src,
                ),
            }
        }
        self.stats.frame_bytes += bytes.len() as u64;
        self.stats.total_bytes += bytes.len() as u64;
    }

    fn level_ready(&mut self, model: u32, level: u8) {
        let Some(m) = self.models.get_mut(model as usize) else {
            return;
        };
        let Some(layout) = m.layouts.get(level as usize).copied() else {
            return;
        };
        let Some(p) = m.levels.get_mut(&level) else {
            return;
        };
        let hs = HEADER_BYTES as usize;
        let header: ClusterLevelHeader = bytemuck::pod_read_unaligned(&p.head[..hs]);
        if p.head_arrived != layout.head_bytes()
            || header.cluster_count != layout.clusters
            || header.vertex_count != layout.vertices
            || !p.split_words.is_empty()
        {
            self.stats.refused_levels += 1;
            bevy::log::error!(
                "farsight: model {model} level {level} arrived incomplete or unlike its \
                 manifest; it is not drawn"
            );
            return;
        }
        let infos: Vec<ClusterInfo> = bytemuck::pod_collect_to_vec(&p.head[hs..]);
        self.rows.clear();
        let at = LevelPlacement {
            model,
            level: u32::from(level),
            first_index: p.indices.start as u32,
            vertex_base: p.vertices.start as u32,
        };
        pack_clusters(&infos, at, &mut self.rows);
        let row_bytes = std::mem::size_of::<GpuCluster>() as u64;
        if !self.rows.is_empty() {
            self.queue.write_buffer(
                &self.buffers.clusters,
                p.rows.start * row_bytes,
                bytemuck::cast_slice(&self.rows),
            );
        }
        p.head = Vec::new();
        p.ready = true;
        m.bounds = Some((header.bounds_min, header.bounds_max));
        self.dirty = true;
    }

    fn evict(&mut self, model: u32, level: u8) {
        let Some(m) = self.models.get_mut(model as usize) else {
            return;
        };
        if let Some(p) = m.levels.remove(&level) {
            // The ranges are this allocator's own: giving them back cannot fail.
            let _ = self.vertex_alloc.free(p.vertices);
            let _ = self.index_alloc.free(p.indices);
            let _ = self.row_alloc.free(p.rows);
            self.dirty |= p.ready;
        }
    }

    fn end_frame(&mut self) {
        self.ring.submit(&self.queue);
        if self.dirty {
            self.rebuild();
            self.dirty = false;
        }
        self.stats.last_frame_bytes = self.stats.frame_bytes;
        self.stats.frame_bytes = 0;
    }
}
