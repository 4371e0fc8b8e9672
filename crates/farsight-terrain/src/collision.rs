//! The collision cache: one [`ChunkShape`] per non-empty chunk, built from the
//! full-detail extraction with flat-patch reduction and merged vertices, rebuilt
//! only where the grid changed, with ray and sphere queries. No skirts ever reach it.

use std::sync::Arc;

use glam::{IVec3, Vec3};
use rayon::prelude::*;

use crate::cell::{chunk_bounds, ChunkMap, ChunkSet};
use crate::changes::{collision_affected, removal_affected, Changes};
use crate::collider::{ChunkShape, ShapeBytes};
use crate::field::surface_impossible;
use crate::flat::{reduce_flat, CollisionMesh, FlatScratch};
use crate::grid::{CellSource, VoxelGrid};
use crate::mesh::ChunkMesher;

/// Bytes of one known-empty chunk's set slot.
const EMPTY_SLOT: usize = std::mem::size_of::<IVec3>() + 1;

/// Affected chunks above which a rebuild runs on the rayon pool (docs/design/voxel-terrain.md#collision).
pub const PARALLEL_REBUILD_THRESHOLD: usize = 8;

/// One chunk's collider. Shared by `Arc`: an unchanged chunk keeps its identity
/// across updates, so a physics engine can compare pointers and swap only changes.
#[derive(Debug)]
pub struct ChunkCollider {
    /// The chunk's coordinate (in chunks).
    pub chunk: IVec3,
    /// The reduced surface with its query tree, in world coordinates.
    pub shape: ChunkShape,
    /// Triangles in `shape` (never 0: a chunk without surface has no collider).
    pub triangles: usize,
}

/// Builds collision meshes; keep one per thread.
#[derive(Debug, Default)]
pub struct CollisionMesher {
    mesher: ChunkMesher,
    mesh: CollisionMesh,
    scratch: FlatScratch,
}

impl CollisionMesher {
    /// A mesher with empty scratch buffers; they grow to the largest chunk seen.
    pub fn new() -> Self {
        Self::default()
    }

    /// The reduced full-detail collision mesh of `chunk` (empty when no surface).
    pub fn build(&mut self, src: &impl CellSource, chunk: IVec3) -> &CollisionMesh {
        self.mesh.vertices.clear();
        self.mesh.indices.clear();
        if self.mesher.extract_surface(src, chunk, 0, false) {
            reduce_flat(
                &self.mesher.surface,
                self.mesher.field.dim(),
                &mut self.scratch,
                &mut self.mesh,
            );
        }
        &self.mesh
    }

    /// The unreduced full-detail triangle count (for comparison).
    pub fn unreduced_triangles(&mut self, src: &impl CellSource, chunk: IVec3) -> usize {
        self.mesher.extract_surface(src, chunk, 0, false);
        self.mesher.surface.indices.len() / 3
    }

    /// The collider of `chunk` (mesh plus its query grid), `None` when it has no
    /// surface.
    pub fn build_collider(&mut self, src: &impl CellSource, chunk: IVec3) -> Option<ChunkCollider> {
        let mesh = self.build(src, chunk);
        if mesh.is_empty() {
            return None;
        }
        let shape = ChunkShape::new(mesh.vertices.clone(), mesh.indices.clone());
        Some(ChunkCollider {
            chunk,
            triangles: shape.triangle_count(),
            shape,
        })
    }
}

/// What one [`CollisionCache::update`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUpdate {
    /// True when the grid could give no delta, so every collider was rebuilt.
    pub full_refresh: bool,
    /// Chunks whose collider was built or rebuilt.
    pub rebuilt: usize,
    /// Colliders dropped (every old one on a full refresh).
    pub removed: usize,
    /// True when the rebuild ran on the rayon pool (more than
    /// [`PARALLEL_REBUILD_THRESHOLD`] chunks).
    pub parallel: bool,
}

/// A ray hit against the terrain colliders.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayHit {
    /// The chunk whose collider was hit.
    pub chunk: IVec3,
    /// The ray parameter of the hit, in units of the ray's direction.
    pub distance: f32,
    /// The hit point, world space.
    pub point: Vec3,
    /// Unit normal of the hit triangle, pointing out of the solid.
    pub normal: Vec3,
}

/// Collision for one terrain: keyed by terrain id, grid generation and revision.
///
/// Two ways to use it. [`update`](Self::update) keeps a collider for every chunk of
/// the grid. A ranged cache (a world too large for all its colliders at once) holds
/// only the chunks its owner asks for: [`build`](Self::build) adds chunks (a chunk
/// without surface is held as known empty), [`evict`](Self::evict) drops one, and
/// [`refresh`](Self::refresh) rebuilds the held chunks an edit reached, adding none,
/// so a held collider is never stale.
#[derive(Debug)]
pub struct CollisionCache {
    terrain: u64,
    generation: u64,
    revision: u64,
    colliders: ChunkMap<Arc<ChunkCollider>>,
    /// Held chunks with no surface (ranged use only).
    empty: ChunkSet,
}

impl CollisionCache {
    /// An empty cache for terrain instance `terrain` (any id the caller uses).
    pub fn new(terrain: u64) -> Self {
        Self {
            terrain,
            generation: 0,
            revision: 0,
            colliders: ChunkMap::default(),
            empty: ChunkSet::default(),
        }
    }

    /// The terrain id the cache was made for.
    pub fn terrain(&self) -> u64 {
        self.terrain
    }

    /// The (generation, revision) the cache is current for.
    pub fn version(&self) -> (u64, u64) {
        (self.generation, self.revision)
    }

    /// Colliders held (chunks with surface).
    pub fn len(&self) -> usize {
        self.colliders.len()
    }

    /// True when no collider is held.
    pub fn is_empty(&self) -> bool {
        self.colliders.is_empty()
    }

    /// Bytes held by the colliders: their shapes' heap bytes, every collider's
    /// shared allocation (`Arc` counts and header) and the map's slots.
    pub fn heap_bytes(&self) -> usize {
        let shared = 2 * std::mem::size_of::<usize>() + std::mem::size_of::<ChunkCollider>();
        let slot = std::mem::size_of::<(IVec3, Arc<ChunkCollider>)>() + 1;
        self.heap_breakdown().total()
            + self.colliders.len() * shared
            + self.colliders.capacity() * slot
            + self.empty.capacity() * EMPTY_SLOT
    }

    /// Bytes one held chunk costs (its shape, its shared allocation and its map
    /// slot; a known-empty chunk its set slot), 0 when not held.
    pub fn bytes_of(&self, chunk: IVec3) -> usize {
        match self.colliders.get(&chunk) {
            Some(c) => {
                c.shape.heap_breakdown().total()
                    + 2 * std::mem::size_of::<usize>()
                    + std::mem::size_of::<ChunkCollider>()
                    + std::mem::size_of::<(IVec3, Arc<ChunkCollider>)>()
                    + 1
            }
            None if self.empty.contains(&chunk) => EMPTY_SLOT,
            None => 0,
        }
    }

    /// Whether `chunk` is held: its collider, or known to have no surface.
    pub fn holds(&self, chunk: IVec3) -> bool {
        self.colliders.contains_key(&chunk) || self.empty.contains(&chunk)
    }

    /// Every held chunk, colliders and known-empty ones.
    pub fn held(&self) -> impl Iterator<Item = IVec3> + '_ {
        self.colliders.keys().chain(self.empty.iter()).copied()
    }

    /// Drops `chunk` (ranged use); returns the heap bytes freed (its shape and
    /// shared allocation: the map slot stays as capacity for the next chunk).
    pub fn evict(&mut self, chunk: IVec3) -> usize {
        self.empty.remove(&chunk);
        self.colliders.remove(&chunk).map_or(0, |c| {
            c.shape.heap_breakdown().total()
                + 2 * std::mem::size_of::<usize>()
                + std::mem::size_of::<ChunkCollider>()
        })
    }

    /// Brings the held chunks up to date with `grid` (ranged use): rebuilds those an
    /// edit reached, drops everything on a full refresh, adds nothing. Synchronous;
    /// more than 8 chunks build in parallel.
    pub fn refresh(&mut self, grid: &VoxelGrid) -> CacheUpdate {
        let mut report = CacheUpdate::default();
        let Some(dirty) = self.dirty(grid, &mut report) else {
            return report;
        };
        let mut list: Vec<IVec3> = dirty.into_iter().filter(|c| self.holds(*c)).collect();
        list.sort_unstable_by_key(|c| (c.z, c.y, c.x));
        self.rebuild(grid, &list, true, &mut report);
        self.generation = grid.generation();
        self.revision = grid.revision();
        report
    }

    /// Builds the colliders of `chunks` from `grid` (ranged use), holding a chunk
    /// without surface as known empty; held chunks an edit reached are refreshed
    /// first. Synchronous; more than 8 chunks build in parallel.
    pub fn build(&mut self, grid: &VoxelGrid, chunks: &[IVec3]) -> CacheUpdate {
        let mut report = self.refresh(grid);
        self.rebuild(grid, chunks, true, &mut report);
        report
    }

    /// Heap bytes of the colliders' shapes, by part (headers not included).
    pub fn heap_breakdown(&self) -> ShapeBytes {
        let mut b = ShapeBytes::default();
        for c in self.colliders.values() {
            b += c.shape.heap_breakdown();
        }
        b
    }

    /// The collider of `chunk`, if it has one.
    pub fn collider(&self, chunk: IVec3) -> Option<&Arc<ChunkCollider>> {
        self.colliders.get(&chunk)
    }

    /// Every collider held, in no particular order.
    pub fn colliders(&self) -> impl Iterator<Item = &Arc<ChunkCollider>> {
        self.colliders.values()
    }

    /// Bring the cache up to date with `grid`: rebuild changed chunks and the
    /// neighbours whose collision mesh reads an edited cell (one cell past each face,
    /// [`crate::COLLISION_REACH`]); everything on a full refresh. Synchronous; more than 8 chunks build in parallel.
    pub fn update(&mut self, grid: &VoxelGrid) -> CacheUpdate {
        let mut report = CacheUpdate::default();
        let Some(dirty) = self.dirty(grid, &mut report) else {
            return report;
        };
        let mut list: Vec<IVec3> = dirty.into_iter().collect();
        list.sort_unstable_by_key(|c| (c.z, c.y, c.x));
        self.rebuild(grid, &list, false, &mut report);
        self.generation = grid.generation();
        self.revision = grid.revision();
        report
    }

    /// The chunks an edit since the cache's version reached (`None`: current). A
    /// full refresh drops every held chunk and names every chunk a surface may own.
    fn dirty(&mut self, grid: &VoxelGrid, report: &mut CacheUpdate) -> Option<ChunkSet> {
        if grid.generation() == self.generation && grid.revision() == self.revision {
            return None;
        }
        let mut dirty = ChunkSet::default();
        match grid.changes_since(self.generation, self.revision) {
            Changes::Full(_) => {
                report.full_refresh = true;
                report.removed = self.colliders.len();
                self.colliders.clear();
                self.empty.clear();
                for c in grid.chunk_coords() {
                    removal_affected(c, &mut dirty);
                }
            }
            Changes::Delta { changed, removed } => {
                for ch in &changed {
                    collision_affected(ch.global_bounds(), &mut dirty);
                }
                for r in removed {
                    removal_affected(r, &mut dirty);
                }
            }
        }
        Some(dirty)
    }

    /// Builds `list` from `grid` into the cache (`track_empty`: hold the chunks
    /// without surface as known empty).
    fn rebuild(
        &mut self,
        grid: &VoxelGrid,
        list: &[IVec3],
        track_empty: bool,
        report: &mut CacheUpdate,
    ) {
        if list.is_empty() {
            return;
        }
        let build = |m: &mut CollisionMesher, c: IVec3| {
            if surface_impossible(grid, c, 0) {
                (c, None)
            } else {
                (c, m.build_collider(grid, c))
            }
        };
        let built: Vec<(IVec3, Option<ChunkCollider>)> = if list.len() > PARALLEL_REBUILD_THRESHOLD
        {
            report.parallel = true;
            list.par_iter()
                .map_init(CollisionMesher::new, |m, &c| build(m, c))
                .collect()
        } else {
            let mut m = CollisionMesher::new();
            list.iter().map(|&c| build(&mut m, c)).collect()
        };
        for (c, col) in built {
            match col {
                Some(col) => {
                    self.empty.remove(&c);
                    self.colliders.insert(c, Arc::new(col));
                    report.rebuilt += 1;
                }
                None => {
                    if track_empty {
                        self.empty.insert(c);
                    }
                    if self.colliders.remove(&c).is_some() && !report.full_refresh {
                        report.removed += 1;
                    }
                }
            }
        }
    }

    /// The nearest hit of the ray `origin + t * dir`, `t` in `[0, max_distance]`
    /// (`dir` need not be unit length; `distance` is in units of `dir`). Either face
    /// of a triangle counts; `normal` points out of the solid.
    pub fn cast_ray(&self, origin: Vec3, dir: Vec3, max_distance: f32) -> Option<RayHit> {
        let mut best: Option<RayHit> = None;
        for col in self.colliders.values() {
            let limit = best.map_or(max_distance, |b| b.distance);
            if !ray_hits_box(origin, dir, limit, col.shape.bounds()) {
                continue;
            }
            if let Some(hit) = col.shape.cast_ray(origin, dir, limit) {
                if best.is_none_or(|b| hit.t < b.distance) {
                    best = Some(RayHit {
                        chunk: col.chunk,
                        distance: hit.t,
                        point: origin + dir * hit.t,
                        normal: hit.normal,
                    });
                }
            }
        }
        best
    }

    /// The nearest terrain surface point within `radius` of `center`, if any.
    pub fn sphere_contact(&self, center: Vec3, radius: f32) -> Option<(IVec3, Vec3, f32)> {
        let mut best: Option<(IVec3, Vec3, f32)> = None;
        for col in self.colliders.values() {
            let r = best.map_or(radius, |b| b.2);
            if chunk_bounds(col.chunk)
                .padded(Vec3::splat(8.0))
                .distance_squared(center)
                > r * r
            {
                continue;
            }
            if let Some((p, d)) = col.shape.closest_within(center, r) {
                if best.is_none_or(|b| d < b.2) {
                    best = Some((col.chunk, p, d));
                }
            }
        }
        best
    }
}

fn ray_hits_box(o: Vec3, d: Vec3, max_t: f32, b: farsight_geom::Aabb) -> bool {
    let inv = d.recip();
    let t0 = (b.min - o) * inv;
    let t1 = (b.max - o) * inv;
    let near = t0.min(t1).max_element().max(0.0);
    let far = t0.max(t1).min_element().min(max_t);
    near <= far || !near.is_finite() || !far.is_finite()
}
