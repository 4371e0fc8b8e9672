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
    cell_at, chunk_bounds, chunk_of_cell, chunk_origin, local_index, Cell, CellBox,
    ChunkBuildHasher, ChunkHasher, ChunkMap, ChunkSet, Material, CELL_SIZE, CHUNK_CELLS,
    CHUNK_SIZE, CHUNK_VOLUME,
};
pub use changes::{
    affected_chunks, collision_affected, read_box, read_reach, removal_affected, Changes,
    ChunkChange, FullRefresh, COLLISION_REACH,
};
pub use chunk::{ChunkCells, ChunkEntry, EditHistory, EDIT_HISTORY};
pub use collider::{ChunkShape, ShapeBytes, ShapeHit};
pub use collision::{
    CacheUpdate, ChunkCollider, CollisionCache, CollisionMesher, RayHit, PARALLEL_REBUILD_THRESHOLD,
};
pub use edit::{EditError, EditReport, CELL_COORD_LIMIT, EDIT_CELL_LIMIT};
pub use field::{gather, samples_per_axis, surface_impossible, SampleField, INSIDE, LEVELS, PAD};
pub use flat::CollisionMesh;
pub use generate::{generate, generate_chunk, reference_chunks, value_noise, TerrainParams};
pub use grid::{CellSource, GridSnapshot, VoxelGrid, REMOVAL_HISTORY};
pub use io::{
    load_grid, load_grid_with, read_grid, save_grid, write_grid, ChunkRef, TerrainFileError,
    TerrainManifest, CHUNK_TAG, TERRAIN_FORMAT, TERRAIN_KIND,
};
pub use mesh::{skirt_depth, ChunkMesh, ChunkMesher, TerrainVertex};
#[cfg(feature = "rapier")]
pub use rapier::{RapierTerrain, SolverSync, GRASS_FRICTION, GRASS_RESTITUTION};
pub use surface_nets::SurfaceNets;
pub use view::{chunk_distance, TerrainView, ViewSettings, ViewStats};
pub use view_query::{Clock, PickHit};
pub use water::{mesh_water, WaterMesh, WaterVertex};
pub use workers::{MeshRequest, MeshResult, MeshWorkers};
