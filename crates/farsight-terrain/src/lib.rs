//! farsight-terrain owns voxel terrain: the sparse copy-on-write cell grid with its
//! generation/revision change tracking and edits, Surface Nets meshing with
//! materials and skirts, the render LOD and residency policy, background meshing on
//! worker threads with serial-checked publication and the editor's picking copy, the
//! collision cache (flat-patch-reduced triangle meshes indexed by a uniform grid, with
//! ray and sphere queries), water sheets, and saving a grid in the farsight
//! container. It must not know about GPUs, windows, entities or streaming regions: a
//! renderer uploads the meshes it publishes, a physics engine takes the colliders
//! (`ChunkShape::to_trimesh`, feature `parry`, hands parry3d its shape). LOD rules come from
//! `farsight-lod`.
//!
//! ```
//! use glam::{IVec3, Vec3};
//! use farsight_terrain::{
//!     Cell, CellSource, ChunkMesher, CollisionCache, Material, VoxelGrid, CELL_SIZE,
//! };
//!
//! // A slab of rock 16 units thick whose top face is at y = 8.
//! let mut grid = VoxelGrid::new();
//! let rock = Cell::full(Material::ROCK);
//! let edit = grid.set_box(Vec3::new(0.0, -8.0, 0.0), Vec3::new(64.0, 8.0, 64.0), rock).unwrap();
//! assert_eq!(edit.revision, Some(grid.revision()));
//! assert_eq!(grid.cell(IVec3::new(2, 1, 2)), rock); // the cell centred at y = 6
//! assert!(grid.cell(IVec3::new(2, 2, 2)).is_empty()); // the one at y = 10
//!
//! // The render mesh of chunk (0, 0, 0) at full detail.
//! let mesh = ChunkMesher::new().mesh(&grid, IVec3::ZERO, 0);
//! assert!(mesh.triangle_count() > 0);
//!
//! // Collision: a ray cast straight down lands on the top face.
//! let mut collision = CollisionCache::new(0);
//! collision.update(&grid);
//! let hit = collision.cast_ray(Vec3::new(20.0, 50.0, 20.0), Vec3::NEG_Y, 100.0).unwrap();
//! assert!((hit.point.y - 8.0).abs() < 0.1 * CELL_SIZE);
//! assert!(hit.normal.y > 0.99);
//! ```
#![warn(missing_docs)]

mod cell;
mod changes;
mod chunk;
mod collider;
mod collision;
mod edit;
mod field;
mod flat;
mod generate;
mod grid;
mod io;
mod mesh;
#[cfg(feature = "rapier")]
mod rapier;
mod surface_nets;
mod view;
mod view_query;
mod water;
mod workers;

pub use cell::{
    cell_at, chunk_bounds, chunk_of_cell, chunk_origin, local_index, Cell, CellBox, ChunkSet,
    Material, CELL_SIZE, CHUNK_CELLS, CHUNK_SIZE, CHUNK_VOLUME,
};
pub use changes::{
    affected_chunks, collision_affected, removal_affected, Changes, ChunkChange, FullRefresh,
    COLLISION_REACH,
};
pub use chunk::{ChunkCells, ChunkEntry, EditHistory, EDIT_HISTORY};
pub use collider::{ChunkShape, ShapeBytes, ShapeHit};
pub use collision::{
    CacheUpdate, ChunkCollider, CollisionCache, CollisionMesher, RayHit, PARALLEL_REBUILD_THRESHOLD,
};
pub use edit::{EditError, EditReport, CELL_COORD_LIMIT, EDIT_CELL_LIMIT};
pub use field::{CoarseBlocks, LEVELS};
pub use flat::CollisionMesh;
pub use generate::{generate, generate_chunk, TerrainGeneratorConfig};
pub use grid::{CellSource, GridSnapshot, VoxelGrid, REMOVAL_HISTORY};
pub use io::{
    load_grid, load_grid_with, read_grid, save_grid, write_grid, ChunkRef, TerrainFileError,
    TerrainManifest, CHUNK_COORD_LIMIT, CHUNK_TAG, TERRAIN_FORMAT, TERRAIN_KIND,
};
pub use mesh::{skirt_depth, ChunkMesh, ChunkMesher, TerrainVertex};
#[cfg(feature = "rapier")]
pub use rapier::{RapierTerrain, SolverSync, GRASS_FRICTION, GRASS_RESTITUTION};
pub use view::{chunk_distance, TerrainView, TerrainViewConfig, ViewStats};
pub use view_query::{Clock, PickHit};
pub use water::{mesh_water, WaterMesh, WaterVertex};

// Internals the tests, benches and examples reach into (the mesher's sample field and
// Surface Nets pass, the chunk hasher, the meshing workers behind `TerrainView`, the
// reference chunks the collider bench measures): public for them, not API.
#[doc(hidden)]
pub use cell::{ChunkBuildHasher, ChunkHasher, ChunkMap};
#[doc(hidden)]
pub use changes::{read_box, read_reach};
#[doc(hidden)]
pub use field::{gather, samples_per_axis, surface_impossible, SampleField, INSIDE, PAD};
#[doc(hidden)]
pub use generate::{reference_chunks, value_noise};
#[doc(hidden)]
pub use surface_nets::SurfaceNets;
#[doc(hidden)]
pub use workers::{MeshRequest, MeshResult, MeshWorkers};
