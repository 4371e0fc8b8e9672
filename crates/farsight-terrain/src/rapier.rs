//! The terrain in a real rigid-body solver (docs/design/voxel-terrain.md#collision): every chunk collider of a
//! [`CollisionCache`] becomes a rapier3d collider on one fixed body, with grass
//! physical properties. [`RapierTerrain::sync`] compares the cache's shared shape
//! identities (`Arc` pointers) with the ones it installed and replaces only the
//! shapes of chunks that changed. Feature `rapier`.
//!
//! rapier speaks its own glam (through parry's `glamx`); positions cross here as
//! plain arrays. The solver shape is parry's `TriMesh` with duplicate vertices merged
//! and internal edges fixed ([`ChunkShape::to_trimesh`](crate::ChunkShape::to_trimesh)).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use glam::IVec3;
use rapier3d::prelude::{
    ColliderBuilder, ColliderHandle, PhysicsWorld, RigidBodyBuilder, RigidBodyHandle, SharedShape,
};

use crate::collision::{ChunkCollider, CollisionCache};

/// Friction of the terrain's solver colliders: the seed's grass. The seed names the
/// material, not its numbers; these are those of the engine the seed describes
/// (Grass: friction 0.4, elasticity 0.1).
pub const GRASS_FRICTION: f32 = 0.4;
/// Restitution of the terrain's solver colliders (see [`GRASS_FRICTION`]).
pub const GRASS_RESTITUTION: f32 = 0.1;

/// What one [`RapierTerrain::sync`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SolverSync {
    /// Chunks that got a collider for the first time.
    pub added: usize,
    /// Chunks whose shape was replaced (their cache entry changed identity).
    pub replaced: usize,
    /// Chunks whose collider left (no surface any more).
    pub removed: usize,
    /// Chunks left untouched (same shared shape).
    pub kept: usize,
}

/// The terrain's fixed body in a [`PhysicsWorld`] and its chunk colliders.
#[derive(Debug)]
pub struct RapierTerrain {
    body: RigidBodyHandle,
    installed: HashMap<IVec3, (Arc<ChunkCollider>, ColliderHandle)>,
}

impl RapierTerrain {
    /// Adds the fixed terrain body to `world`.
    pub fn new(world: &mut PhysicsWorld) -> Self {
        let body = world.insert_body(RigidBodyBuilder::fixed());
        Self {
            body,
            installed: HashMap::new(),
        }
    }

    /// The fixed body every chunk collider hangs on.
    pub fn body(&self) -> RigidBodyHandle {
        self.body
    }

    /// The solver collider of `chunk`, if it has one.
    pub fn collider(&self, chunk: IVec3) -> Option<ColliderHandle> {
        self.installed.get(&chunk).map(|e| e.1)
    }

    /// Brings the solver's colliders to `cache` (call after `cache.update`): a chunk
    /// whose shared collider is the one installed is kept, a new identity gets its
    /// shape replaced in place, a chunk that left the cache loses its collider. A
    /// mesh parry refuses (degenerate) leaves that chunk without a solver collider.
    pub fn sync(&mut self, world: &mut PhysicsWorld, cache: &CollisionCache) -> SolverSync {
        let mut s = SolverSync::default();
        let mut live = HashSet::with_capacity(self.installed.len());
        for c in cache.colliders() {
            live.insert(c.chunk);
            if let Some((old, _)) = self.installed.get(&c.chunk) {
                if Arc::ptr_eq(old, c) {
                    s.kept += 1;
                    continue;
                }
            }
            let Some(mesh) = c.shape.to_trimesh() else {
                log::warn!(
                    "terrain chunk {}: parry refused its collision mesh",
                    c.chunk
                );
                if let Some((_, h)) = self.installed.remove(&c.chunk) {
                    world.remove_collider(h);
                    s.removed += 1;
                }
                continue;
            };
            let shape = SharedShape::new(mesh);
            match self.installed.get_mut(&c.chunk) {
                Some(entry) => {
                    if let Some(col) = world.colliders.get_mut(entry.1) {
                        col.set_shape(shape);
                    }
                    entry.0 = c.clone();
                    s.replaced += 1;
                }
                None => {
                    let collider = ColliderBuilder::new(shape)
                        .friction(GRASS_FRICTION)
                        .restitution(GRASS_RESTITUTION);
                    let h = world.insert_collider(collider, Some(self.body));
                    self.installed.insert(c.chunk, (c.clone(), h));
                    s.added += 1;
                }
            }
        }
        let gone: Vec<IVec3> = self
            .installed
            .keys()
            .filter(|k| !live.contains(*k))
            .copied()
            .collect();
        for k in gone {
            if let Some((_, h)) = self.installed.remove(&k) {
                world.remove_collider(h);
                s.removed += 1;
            }
        }
        s
    }
}
