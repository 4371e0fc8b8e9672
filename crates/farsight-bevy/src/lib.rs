//! farsight in Bevy 0.19: one plugin group that draws what farsight decides.
//!
//! The crate is a thin shell: it converts and mirrors, and every rule stays in the
//! library crates (`farsight-view` culls and chooses levels, `farsight-lod` holds the
//! rules), where it is tested without an engine.
//!
//! [`prelude`] holds what an app needs; the library crates the API names are
//! re-exported whole ([`farsight_stream`], [`farsight_view`], ...), so an app's
//! manifest needs only `bevy` and this crate.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use farsight_bevy::prelude::*;
//!
//! fn main() {
//!     App::new()
//!         .add_plugins((DefaultPlugins, FarsightPlugin))
//!         .add_systems(Startup, setup)
//!         .run();
//! }
//!
//! fn setup(
//!     mut commands: Commands,
//!     mut meshes: ResMut<Assets<Mesh>>,
//!     mut materials: ResMut<Assets<StandardMaterial>>,
//! ) {
//!     let near = meshes.add(Sphere::new(1.0).mesh().ico(5).unwrap());
//!     let far = meshes.add(Sphere::new(1.0).mesh().ico(1).unwrap());
//!     commands.spawn((
//!         Mesh3d(near.clone()),
//!         MeshMaterial3d(materials.add(StandardMaterial::default())),
//!         // The ico-5 sphere to 40 m, the ico-1 sphere beyond.
//!         FarsightLod::from_ranges([(near, 40.0), (far, 200.0)]).unwrap(),
//!     ));
//!     commands.spawn((Camera3d::default(), Transform::from_xyz(0.0, 2.0, 10.0)));
//! }
//! ```
//!
//! # Entity LOD and culling
//!
//! Every entity with a `Mesh3d` and a `GlobalTransform` is mirrored into
//! farsight-view's `ObjectStore` through change detection (`Added`,
//! `Changed<GlobalTransform>`, `RemovedComponents`): nothing walks every entity each
//! frame except the pass itself. Once a frame, in [`FarsightSet::Pass`], the pass runs
//! for the active 3D camera with Bevy's projection, the camera's viewport height and,
//! on a camera with [`FarsightStereo`], both eyes. Its result is applied in
//! [`FarsightSet::Apply`]: the chosen level goes into `Mesh3d`, a
//! [`FarsightLodChanged`] message is sent, and after Bevy's own frustum cull
//! ([`FarsightSet::Restrict`]) the entities farsight culls by distance or screen size
//! leave the camera's visible list.
//!
//! A level is resident while its mesh asset is loaded, so a streamed mesh that has
//! not arrived is replaced by the nearest loaded coarser level (then a finer one):
//! never a hole. A cooked LOD chain file loads as a [`LodChainAsset`]
//! ([`LodChainLoader`]); spawn a [`FarsightLodChain`] with its handle and the entity
//! gets the chain's [`FarsightLod`] once it has loaded.
//!
//! # Several cameras
//!
//! Levels are chosen once a frame, for one view, and every camera draws them: a
//! split screen, a minimap or a portal camera sees the levels of the deciding
//! camera. Mark that camera with [`FarsightLodCamera`]; it also decides farsight's
//! distance and size culls (other cameras keep Bevy's frustum cull alone). Without
//! a mark, entity LOD keeps the active 3D camera it looked through last while it
//! stays active (else the first active one spawned), and cluster models take the
//! active 3D camera of lowest `order`.
//!
//! For entity LOD one level for every view is the rule, chosen over a level per view:
//! Bevy gives an entity one `Mesh3d` for all views, so a level per view would take one
//! entity per level, each with a `VisibilityRange` that Bevy tests per view (as the
//! baked buildings below do). That gives up what the pass adds: the resident
//! fallback, selection by screen size, the per-entity bias. Cluster models will
//! choose per view with the GPU cut, which draws each view's own cut.
//!
//! # Baked buildings
//!
//! [`BuildingLoader`] loads the building files of farsight-building (`*.farsight`):
//! the full file (version 1) and the cooked file (version 2), chosen by the version
//! word. Its meshes become Bevy meshes in the loader, on the IO pool (positions,
//! normals, UVs and tangents; the file's tangents, or ones made from the UVs), kept in
//! the render world only, and every entity a spawn makes is planned there
//! ([`BuildingAsset::pieces`]): a bad file is a [`BuildingLoadError`] naming what was
//! found, and nothing is spawned. Spawn a [`FarsightBuilding`] with a `Transform`:
//! each piece of each level becomes one child entity ([`BuildingPiece`]) with the
//! `VisibilityRange` farsight-building's `bands` gives it (measured to its origin,
//! `use_aabb` off, as the seed says), the `Aabb` the file recorded, and the shared
//! material of its name from [`BuildingPalette`] (a piece with cut faces wears the
//! name's cut variant, which shades them by the kit's cut shade). Give the palette
//! the kit ([`BuildingPalette::add_kit`]) and pieces wear the kit's colours,
//! roughness and metalness; [`BuildingLevelTint`] is a debug view that tints them by
//! level instead (off by default). A piece a coarser level left
//! unchanged is one entity whose band spans both levels; every placement of a part at a
//! level shares one `Handle<Mesh>`, so they batch. The building entity gets
//! [`BuildingColliders`] (level zero's hulls) and [`BuildingSpaces`] (rooms and
//! portals); despawning it despawns its pieces. Pieces are not mirrored into the
//! entity LOD store: their bands are their LOD, and Bevy culls them.
//!
//! # Regions
//!
//! Insert a [`FarsightRegions`] resource (a scene index written by farsight-stream) and
//! give the player, or the camera, a [`FarsightStreamingSource`]: region files are read
//! on farsight-stream's loader threads, never on the frame's; their entities are
//! spawned hidden when a region becomes resident ([`RegionEntity`] names the region
//! and the record, [`RegionModels`] maps a record's model to a mesh and material),
//! shown when it is active, and despawned when it unloads.
//!
//! # Cluster models
//!
//! Spawn a [`FarsightClusterModel`] (a cooked cluster file, `farsight cook mesh
//! --clusters`, by path or as a [`ClusterModelAsset`] loaded through the asset
//! server) with a `Transform` and a material: [`FarsightClusters`] opens the file's
//! head and reads its coarsest level at once (the asset loader does both on Bevy's IO
//! pool), so an instance draws from its first frame; one farsight-stream
//! `ClusterStreamer` reads the finer levels on worker threads (each level checked
//! and decoded there) under the scheduler's upload and memory budgets. A file of
//! another kind given to the cluster or chain loader is refused with
//! [`FarsightAssetError::WrongKind`], naming what it is ([`describe_kind`]). Each frame the instance's fit, keep and
//! wanted come from farsight-cluster's `model_levels` for the active camera, and its
//! cut from `ClusterDag::cut` over the resident levels only (the finest resident
//! level stands in for the finer ones, so the cut is complete: never a hole). When
//! the cut changes, the instance's one `Mesh` is rewritten in place: the
//! cut clusters' triangles and the vertices they use ([`ClusterCut`] says what is
//! drawn). A level that fails its check is retried, then the coarser level stays.
//!
//! # Terrain
//!
//! Spawn a [`FarsightTerrain`] over a farsight-terrain `VoxelGrid`: its view meshes
//! chunks on background workers at the level distance asks for, and every chunk mesh
//! it publishes becomes, or replaces, the mesh of one child entity ([`TerrainChunk`]);
//! serials make sure a stale result is never published, so never shown. The four
//! material ids and weights of each vertex reach [`TerrainMaterial`]'s shader, which
//! blends the four [`TerrainPalette`] colours by weight; water sheets are their own
//! entities ([`TerrainWater`]) whose waves fade to nothing at the shore. Edit with
//! [`TerrainEdit`] messages (results in [`TerrainEdited`]); a physics plugin takes
//! [`FarsightTerrain::colliders`].
//!
//! # Shadows
//!
//! The level is chosen for every entity, visible or not, and written into the one
//! `Mesh3d` Bevy's shadow passes draw too: a shadow always has the level the camera
//! sees. Bevy 0.19's shadow pass ignores the crossfade dither of `VisibilityRange`
//! (both levels cast full shadows while they fade), so this plugin never crossfades:
//! a level swap is instant (farsight's `enable_fade_transitions` is left off), and
//! exactly one level casts. An entity the camera culls by distance or size still
//! casts, as the scene list of docs/design/visibility-pass.md says, because shadow views keep their own lists.
//!
//! Building pieces are the exception: they crossfade, because their levels are bands
//! (docs/design/baked-buildings.md, "Draw bands"). Over a crossfade margin (a tenth of the boundary distance) both levels
//! of a piece cast their full shadow; they are two versions of the same solid at the
//! same place, so the shadow is their union, at most the finer level's small features
//! a few metres longer.

#![warn(missing_docs)]

mod assets;
mod buildings;
mod clusters;
pub mod gpu;
// The README's Rust code compiles as this crate's doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
mod readme {}
mod lod;
mod materials;
mod regions;
mod terrain;

use bevy::app::{PluginGroup, PluginGroupBuilder};
use bevy::ecs::schedule::SystemSet;

pub use assets::{
    describe_kind, ClusterModelAsset, ClusterModelLoader, FarsightAssetError, FarsightLodChain,
    LodChainAsset, LodChainLevel, LodChainLoader, LodChainPart,
};
pub use buildings::{
    cut_texture, kit_material, plan, to_bevy_mesh, BuildingAsset, BuildingColliders,
    BuildingLevelTint, BuildingLoadError, BuildingLoader, BuildingPalette, BuildingPiece,
    BuildingPieceSpec, BuildingSpaces, BuildingSpawned, FarsightBuilding, FarsightBuildingsPlugin,
    ATTRIBUTE_CUT, LEVEL_TINTS,
};
pub use clusters::{
    ClusterCut, ClusterCutPart, FarsightClusterConfig, FarsightClusterModel, FarsightClusters,
    FarsightClustersPlugin,
};
pub use lod::{
    FarsightConfig, FarsightLod, FarsightLodCamera, FarsightLodChainParts, FarsightLodChanged,
    FarsightLodLevel, FarsightLodPlugin, FarsightStereo, FarsightWorld,
};
pub use materials::{affine, standard_material, MaterialAssets, PendingImages};
pub use regions::{
    FarsightRegions, FarsightRegionsPlugin, FarsightStreamingSource, QueueSink, RegionEntity,
    RegionModels,
};
pub use terrain::{
    chunk_mesh_to_bevy, FarsightTerrain, FarsightTerrainPlugin, TerrainChunk, TerrainEdit,
    TerrainEdited, TerrainMaterial, TerrainMaterials, TerrainOp, TerrainPalette, TerrainWater,
    WaterWaves,
};

// The library crates the plugins' public API names, whole, so an app reaches every
// type a field or a signature mentions without adding them to its manifest; the types
// an app uses most are also named here and in the prelude.
pub use farsight_building;
pub use farsight_cluster;
pub use farsight_format;
pub use farsight_lod;
pub use farsight_stream;
pub use farsight_terrain;
pub use farsight_view;

pub use farsight_building::{BakedBuilding, PlacedCollider, Portal, Room};
pub use farsight_cluster::ModelLevels;
pub use farsight_lod::LodConfig;
pub use farsight_stream::cluster::{CookedModel, CookedModelError, FrameStats, SchedulerConfig};
pub use farsight_stream::region::{EntityRecord, RegionState, RegionWorld, SceneError};
pub use farsight_terrain::{
    CacheUpdate, Cell, ChunkCollider, ChunkMesh, CollisionCache, EditError, EditReport,
    Material as VoxelMaterial, TerrainViewConfig, ViewStats, VoxelGrid,
};
pub use farsight_view::{LodComponentError, ObjectId, PassStats};

/// What an app needs to draw with farsight: the plugins, the components it spawns,
/// the resources and messages it reads, and the errors its setup can meet.
/// `use farsight_bevy::prelude::*;` beside Bevy's own prelude.
pub mod prelude {
    pub use crate::gpu::{FarsightGpuClustersPlugin, GpuClusterStats, GpuClusterTint};
    pub use crate::{
        BuildingAsset, BuildingLevelTint, BuildingLoadError, BuildingPalette, ClusterCut,
        ClusterModelAsset, CookedModelError, FarsightAssetError, FarsightBuilding,
        FarsightClusterConfig, FarsightClusterModel, FarsightClusters, FarsightConfig, FarsightLod,
        FarsightLodCamera, FarsightLodChain, FarsightLodChanged, FarsightLodLevel, FarsightPlugin,
        FarsightRegions, FarsightSet, FarsightStereo, FarsightStreamingSource, FarsightTerrain,
        FarsightWorld, LodChainAsset, LodComponentError, LodConfig, SchedulerConfig, TerrainEdit,
        TerrainEdited, TerrainOp, TerrainPalette, TerrainViewConfig, VoxelGrid,
    };
}

/// The system sets of the plugins, in `PostUpdate`, in this order; order your own
/// systems against them (`.before(FarsightSet::Apply)`).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FarsightSet {
    /// Region files streamed in and out around the streaming sources (entities
    /// spawned, shown, hidden, despawned), before the mirror sees them.
    Regions,
    /// Terrain edits applied, the terrain view updated, published chunk meshes
    /// uploaded into entities, water waves moved.
    Terrain,
    /// Cluster models: their levels streamed, each instance's cut chosen and its
    /// mesh rewritten where the cut changed.
    Clusters,
    /// Changed entities and cameras into farsight's stores (after transform
    /// propagation and visibility propagation).
    Mirror,
    /// The visibility pass with LOD inside.
    Pass,
    /// Levels into `Mesh3d`, messages (before Bevy computes bounds).
    Apply,
    /// farsight's culls applied to the camera's visible list (after Bevy's check).
    Restrict,
}

impl FarsightSet {
    /// Every set, in schedule order: what "farsight's systems" means to a test or a
    /// bench that checks nothing else runs inside its window.
    pub const ALL: [FarsightSet; 7] = [
        FarsightSet::Regions,
        FarsightSet::Terrain,
        FarsightSet::Clusters,
        FarsightSet::Mirror,
        FarsightSet::Pass,
        FarsightSet::Apply,
        FarsightSet::Restrict,
    ];
}

/// Every farsight plugin.
#[derive(Default)]
pub struct FarsightPlugin;

impl PluginGroup for FarsightPlugin {
    fn build(self) -> PluginGroupBuilder {
        PluginGroupBuilder::start::<Self>()
            .add(FarsightLodPlugin)
            .add(FarsightRegionsPlugin)
            .add(FarsightTerrainPlugin)
            .add(FarsightBuildingsPlugin)
            .add(FarsightClustersPlugin)
    }
}
