//! What the GPU path tells the main world, and the one switch the main world
//! gives it: [`GpuClusterTint`] (level tints on or off) and [`GpuClusterStats`]
//! (clusters tested and drawn, pool bytes, uploads, overflow, placement failures).
//!
//! Every figure but the drawn count is known on the CPU when the render world
//! prepares a frame. The drawn count and the visible list's overflow are the cut's
//! own counters: after the cut, they are copied (24 bytes) into one of a few small
//! mappable buffers, mapped once the frame is submitted, and read on a later frame
//! when the map has completed, so they arrive a frame or two late. They are for
//! display: nothing read back steers the cut, the streamer or the draw, and a
//! frame whose buffers are all still in flight copies nothing.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bevy::prelude::*;
use bevy::render::Extract;

use super::cut::CutOutputs;
use super::layout::{GpuCluster, VERTEX_BYTES};
use super::GpuUploader;

/// Level tints on the GPU path: while `on`, each drawn cluster is coloured by its
/// level (green level 0, yellow 1, red 2, then blue, purple and cyan) instead of
/// its shading's base colour, to see the cut. A main-world resource, read by the
/// render world every frame; off by default. The CPU path tints by
/// [`FarsightClusterModel::level_colors`](crate::FarsightClusterModel::level_colors)
/// instead.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuClusterTint {
    /// Whether clusters wear their level's tint.
    pub on: bool,
}

impl GpuClusterTint {
    /// The tint, on or off.
    pub fn new(on: bool) -> Self {
        Self { on }
    }
}

/// Which of the GPU pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// The vertex pool (32-byte vertices).
    Vertices,
    /// The index pool (4-byte indices, 384 a cluster slot).
    Indices,
    /// The cluster table's rows (and the resident list's entries).
    ClusterRows,
}

/// A level the pools could not place (it is never drawn; its coarser level is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacementFailure {
    /// The model (its number in the uploader).
    pub model: u32,
    /// The level (0 the finest).
    pub level: u8,
    /// The pool that had no range long enough.
    pub pool: PoolKind,
    /// Units the level needed in that pool.
    pub needed: u64,
    /// Units free in that pool then.
    pub free: u64,
    /// The longest free range of that pool then.
    pub largest_free: u64,
}

impl PlacementFailure {
    /// Whether the pool had the units but not in one range (too fragmented),
    /// rather than too few units at all (full).
    pub fn fragmented(&self) -> bool {
        self.free >= self.needed
    }
}

impl std::fmt::Display for PlacementFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = if self.fragmented() {
            "too fragmented"
        } else {
            "full"
        };
        write!(
            f,
            "the {:?} pool is {why} for model {} level {}: it needs {} units, {} are free, \
             the longest free range is {}",
            self.pool, self.model, self.level, self.needed, self.free, self.largest_free
        )
    }
}

/// The GPU path's figures, in the main world, updated every frame while
/// [`FarsightGpuClustersPlugin`](super::FarsightGpuClustersPlugin) draws (they stay
/// at zero on the CPU path: see [`GpuClustersActive`](super::GpuClustersActive)).
/// The figures of one rendered frame arrive in the main world one update later;
/// the drawn count and the overflow come from the GPU a frame or two later still
/// ([`GpuClusterStats::drawn_frame`] says which frame they are of).
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuClusterStats {
    /// Render frames prepared so far (the frame the figures below, but the drawn
    /// ones, are of).
    pub frame: u64,
    /// Instances in the instance table.
    pub instances: u32,
    /// Clusters the cut tests this frame: for every instance, every resident
    /// cluster of its model.
    pub clusters_tested: u64,
    /// Clusters the cut of frame [`GpuClusterStats::drawn_frame`] drew (the
    /// indirect draw's instance count, read back).
    pub clusters_drawn: u32,
    /// The frame whose cut `clusters_drawn` and `visible_overflow` are of; 0 while
    /// nothing has been read back yet.
    pub drawn_frame: u64,
    /// Visible clusters that did not fit in the visible list in that frame (not
    /// drawn); above zero, the list is too small (warned once in the log).
    pub visible_overflow: u32,
    /// Most visible clusters the list holds.
    pub visible_capacity: u32,
    /// Clusters in the resident list (every model's drawable levels).
    pub resident_clusters: u64,
    /// GPU bytes of the pools in use: vertices, indices, cluster-table rows and
    /// resident-list entries of the levels placed.
    pub resident_bytes: u64,
    /// GPU bytes of the pools in all (in use or not) and the staging ring.
    pub pool_bytes: u64,
    /// Bytes copied to the GPU in the last frame.
    pub uploaded_bytes: u64,
    /// Bytes copied to the GPU since the start.
    pub uploaded_total: u64,
    /// Levels the pools could not place since the start.
    pub placement_failures: u64,
    /// The last of them: which pool, and whether it was full or too fragmented.
    pub last_placement_failure: Option<PlacementFailure>,
}

/// The figures shared between the render world (writing) and the main world
/// (copying them into its [`GpuClusterStats`] each update).
#[derive(Resource, Clone, Default)]
pub(super) struct SharedStats(Arc<Mutex<GpuClusterStats>>);

impl SharedStats {
    fn update(&self, f: impl FnOnce(&mut GpuClusterStats)) {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

/// Main world, `First`: the render world's latest figures into [`GpuClusterStats`].
pub(super) fn publish(shared: Res<SharedStats>, mut stats: ResMut<GpuClusterStats>) {
    let now = *shared.0.lock().unwrap_or_else(PoisonError::into_inner);
    if *stats != now {
        *stats = now;
    }
}

/// Extract: the main world's tint into the render world.
pub(super) fn extract_tint(
    main: Extract<Option<Res<GpuClusterTint>>>,
    mut tint: ResMut<GpuClusterTint>,
) {
    let on = main.as_ref().is_some_and(|t| t.on);
    if tint.on != on {
        tint.on = on;
    }
}

/// A readback buffer's state.
const FREE: u8 = 0;
const COPIED: u8 = 1;
const MAPPING: u8 = 2;
const MAPPED: u8 = 3;
const FAILED: u8 = 4;

/// Bytes read back: the cut's two counters and its indirect draw.
const READBACK_BYTES: u64 = 8 + 16;
/// Readback buffers in flight at most.
const SLOTS: usize = 3;

struct Slot {
    buffer: wgpu::Buffer,
    state: Arc<AtomicU8>,
    frame: u64,
    capacity: u32,
}

/// The render world's side of the figures: the readback buffers and what it
/// shares with the main world.
#[derive(Resource)]
pub(super) struct RenderStats {
    shared: SharedStats,
    slots: Vec<Slot>,
    frame: u64,
    warned_overflow: bool,
    /// Per model: resident clusters this frame (scratch).
    resident: Vec<u64>,
}

impl RenderStats {
    pub(super) fn new(device: &wgpu::Device, shared: SharedStats) -> Self {
        let slots = (0..SLOTS)
            .map(|_| Slot {
                buffer: device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("farsight cut counters readback"),
                    size: READBACK_BYTES,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                state: Arc::new(AtomicU8::new(FREE)),
                frame: 0,
                capacity: 0,
            })
            .collect();
        Self {
            shared,
            slots,
            frame: 0,
            warned_overflow: false,
            resident: Vec::new(),
        }
    }

    /// After the streamer's frame: the figures known on the CPU.
    pub(super) fn prepared(
        &mut self,
        up: &GpuUploader,
        instances: u32,
        count: impl Fn(u32) -> usize,
        visible_capacity: u32,
    ) {
        self.frame += 1;
        let n = up.model_count();
        self.resident.clear();
        self.resident.extend((0..n).map(|m| up.drawn_clusters(m)));
        // Per model, not per instance: the frame's cost stays with what changed.
        let tested = (0..n)
            .map(|m| self.resident[m as usize] * count(m) as u64)
            .sum();
        let settings = up.settings();
        let free = up.free_units();
        let row_bytes = std::mem::size_of::<GpuCluster>() as u64 + 4;
        let resident_bytes = (settings.vertices - free[0]) * VERTEX_BYTES
            + (settings.indices - free[1]) * 4
            + (settings.clusters - free[2]) * row_bytes;
        let u = up.stats();
        let frame = self.frame;
        self.shared.update(|s| {
            s.frame = frame;
            s.instances = instances;
            s.clusters_tested = tested;
            s.visible_capacity = visible_capacity;
            s.resident_clusters = u.resident_clusters;
            s.resident_bytes = resident_bytes;
            s.pool_bytes = settings.bytes();
            s.uploaded_bytes = u.last_frame_bytes;
            s.uploaded_total = u.total_bytes;
            s.placement_failures = u.placement_failures;
            s.last_placement_failure = u.last_placement_failure;
        });
    }

    /// After the cut is recorded into `encoder`: its counters copied into a free
    /// readback buffer (none when all are in flight).
    pub(super) fn copy_counters(&mut self, encoder: &mut wgpu::CommandEncoder, out: &CutOutputs) {
        let frame = self.frame;
        let Some(slot) = self
            .slots
            .iter_mut()
            .find(|s| s.state.load(Ordering::Acquire) == FREE)
        else {
            return;
        };
        encoder.copy_buffer_to_buffer(&out.counter, 0, &slot.buffer, 0, 8);
        encoder.copy_buffer_to_buffer(&out.draw, 0, &slot.buffer, 8, 16);
        slot.frame = frame;
        slot.capacity = out.capacity;
        slot.state.store(COPIED, Ordering::Release);
    }
}

/// Render world, `Cleanup` (after the frame's submission): reads the buffers
/// whose map completed, then maps the ones copied into this frame.
pub(super) fn read_counters(mut r: ResMut<RenderStats>) {
    let r = &mut *r;
    let mut latest: Option<(u64, [u32; 6], u32)> = None;
    for slot in &mut r.slots {
        match slot.state.load(Ordering::Acquire) {
            MAPPED => {
                let words: [u32; 6] = {
                    let bytes = slot.buffer.slice(..).get_mapped_range();
                    bytemuck::pod_read_unaligned(&bytes[..READBACK_BYTES as usize])
                };
                slot.buffer.unmap();
                if latest.is_none_or(|(f, ..)| slot.frame > f) {
                    latest = Some((slot.frame, words, slot.capacity));
                }
                slot.state.store(FREE, Ordering::Release);
            }
            FAILED => slot.state.store(FREE, Ordering::Release),
            COPIED => {
                slot.state.store(MAPPING, Ordering::Release);
                let state = slot.state.clone();
                slot.buffer
                    .slice(..)
                    .map_async(wgpu::MapMode::Read, move |res| {
                        state.store(if res.is_ok() { MAPPED } else { FAILED }, Ordering::Release);
                    });
            }
            _ => {}
        }
    }
    let Some((frame, words, capacity)) = latest else {
        return;
    };
    // counter[0]: visible found, counter[1]: past the capacity; then the draw's
    // vertex count, instance count, first vertex, first instance.
    let (overflow, drawn) = (words[1], words[3]);
    if overflow > 0 && !r.warned_overflow {
        r.warned_overflow = true;
        warn!(
            "farsight GPU path: {overflow} visible clusters did not fit in the visible list \
             of {capacity} (frame {frame}); they are not drawn (raise \
             FarsightGpuClustersPlugin::visible_capacity or the device's storage binding limit)"
        );
    }
    r.shared.update(|s| {
        if frame >= s.drawn_frame {
            s.drawn_frame = frame;
            s.clusters_drawn = drawn;
            s.visible_overflow = overflow;
        }
    });
}
