//! Read access to a [`TerrainView`]: published meshes and levels, counters, the
//! editor's picking query, and the [`Clock`] publication measures its budget with.

use std::sync::Arc;
use std::time::{Duration, Instant};

use glam::{IVec3, Vec3};

use crate::mesh::ChunkMesh;
use crate::view::{chunk_distance, TerrainView};
use crate::water::WaterMesh;

/// The time source publication measures its budget with: time since any fixed
/// point. The default reads [`Instant`]; tests inject a deterministic one.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Duration + Send + Sync>);

impl Clock {
    /// A clock reading `f`, which must never go backwards.
    pub fn new(f: impl Fn() -> Duration + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Wall time since this clock was made.
    pub fn wall() -> Self {
        let start = Instant::now();
        Self::new(move || start.elapsed())
    }

    /// The time now, from the clock's own origin.
    pub fn now(&self) -> Duration {
        (self.0)()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// A pick against the displayed terrain surface.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PickHit {
    /// The chunk whose mesh was hit.
    pub chunk: IVec3,
    /// Level of the mesh that was hit.
    pub level: u8,
    /// Ray parameter in units of the ray direction.
    pub distance: f32,
    /// The hit point, world space.
    pub point: Vec3,
    /// Unit normal of the hit triangle, out of the solid.
    pub normal: Vec3,
}

impl TerrainView {
    /// Finished results waiting for publication (their serials still current).
    pub fn ready_count(&self) -> usize {
        self.ready.len()
    }

    /// Chunks with a request not yet published.
    pub fn pending_count(&self) -> usize {
        self.chunks.values().filter(|s| s.pending.is_some()).count()
    }

    /// The highest revision all of whose edits are visible.
    pub fn visible_revision(&self) -> u64 {
        self.groups.keys().next().map_or(self.revision, |g| g - 1)
    }

    /// Published render meshes within draw distance.
    pub fn visible(&self) -> impl Iterator<Item = &Arc<ChunkMesh>> + '_ {
        let (cam, d) = (self.camera, self.settings.draw_distance);
        self.chunks
            .iter()
            .filter(move |(c, _)| chunk_distance(cam, **c) <= d)
            .filter_map(|(_, s)| s.mesh.as_ref())
    }

    /// The published mesh of `chunk`, if any.
    pub fn mesh(&self, chunk: IVec3) -> Option<&Arc<ChunkMesh>> {
        self.chunks.get(&chunk).and_then(|s| s.mesh.as_ref())
    }

    /// The nearest hit of `origin + t * dir` (`t` in `[0, max_distance]`) on the
    /// displayed surface within draw distance, skirts excluded. `None` unless
    /// `settings.picking` was on when the meshes were published.
    pub fn pick(&self, origin: Vec3, dir: Vec3, max_distance: f32) -> Option<PickHit> {
        let (cam, d) = (self.camera, self.settings.draw_distance);
        let mut best: Option<PickHit> = None;
        for (c, s) in &self.chunks {
            let (Some(shape), Some(level)) = (&s.pick, s.level) else {
                continue;
            };
            if chunk_distance(cam, *c) > d {
                continue;
            }
            let limit = best.map_or(max_distance, |b| b.distance);
            if let Some(h) = shape.cast_ray(origin, dir, limit) {
                if best.is_none_or(|b| h.t < b.distance) {
                    best = Some(PickHit {
                        chunk: *c,
                        level,
                        distance: h.t,
                        point: origin + dir * h.t,
                        normal: h.normal,
                    });
                }
            }
        }
        best
    }

    /// Bytes held by picking copies (zero in a game).
    pub fn pick_bytes(&self) -> usize {
        self.chunks
            .values()
            .filter_map(|s| s.pick.as_ref())
            .map(|p| p.heap_bytes())
            .sum()
    }

    /// The published water mesh of `chunk`, if it has water.
    pub fn water(&self, chunk: IVec3) -> Option<&Arc<WaterMesh>> {
        self.chunks.get(&chunk).and_then(|s| s.water.as_ref())
    }

    /// Level of the published result of `chunk` (empty results keep theirs).
    pub fn level(&self, chunk: IVec3) -> Option<u8> {
        self.chunks.get(&chunk).and_then(|s| s.level)
    }

    /// Every chunk with published state: (chunk, level, mesh).
    pub fn published(&self) -> impl Iterator<Item = (IVec3, u8, Option<&Arc<ChunkMesh>>)> + '_ {
        self.chunks
            .iter()
            .filter_map(|(c, s)| s.level.map(|l| (*c, l, s.mesh.as_ref())))
    }

    /// Bytes held by published render and water meshes.
    pub fn mesh_bytes(&self) -> usize {
        self.chunks
            .values()
            .map(|s| {
                s.mesh.as_ref().map_or(0, |m| m.heap_bytes())
                    + s.water
                        .as_ref()
                        .map_or(0, |w| w.vertices.capacity() * 16 + w.indices.capacity() * 4)
            })
            .sum()
    }

    /// Meshing worker threads.
    pub fn worker_threads(&self) -> usize {
        self.workers.thread_count()
    }
}
