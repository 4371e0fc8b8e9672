//! farsight-building owns seed 004's procedural buildings: the recipe (parts placed by
//! instances, elements with union members and cutters, merge groups, colliders, rooms
//! and portals), levels of detail as simpler recipes, the baked and cooked building
//! files, concatenated far levels and the draw bands a renderer gives each piece.
//!
//! Two halves. The run-time half, always built, is what a game links: the recipe types
//! and their validation, [`MeshedBuilding`] and its pieces, [`BakedBuilding`] and its
//! readers, [`MeshedBuilding::concatenated`] and [`bands`]. It links no CSG kernel.
//! The bake-time half, behind the `bake` feature, adds the [`bake::Kernel`] trait with
//! its manifold-rust implementation, meshing, simplification and [`bake::bake`].
//!
//! This crate must not know about a renderer or an engine: a band is measured the way
//! Bevy's `VisibilityRange` measures, but in plain numbers.

pub mod baked;
pub mod bands;
pub mod concat;
pub mod file;
pub mod kit;
pub mod mesh;
pub mod policy;
pub mod recipe;
mod sources;
pub mod tangents;
pub mod validate;

#[cfg(feature = "bake")]
pub mod bake;

pub use baked::BakedBuilding;
pub use bands::{bands, bands_of, dither_coverage, DrawBand, PieceBand, DEFAULT_CROSSFADE};
pub use concat::cell_id;
pub use file::{to_mesh_data, FileError, RecordCache};
pub use kit::{
    block_origin, metropolis, Kit, KitError, KitMaterial, DEFAULT_CUT_SHADE, DEFAULT_ROUGHNESS,
};
pub use mesh::{
    Aabb, ElementMesh, FaceSource, GroupBatch, MergedGroup, Mesh, MeshedBuilding, Operand,
    PartMeshes, Piece, PieceKind, PlacedCollider, Placement,
};
pub use policy::{LodCell, LodPolicy, PolicyError};
pub use recipe::{
    Attachment, Building, ColliderProxy, Element, Geometry, Instance, MergeGroup, Part, Portal,
    Pose, Room, Shape, Side,
};
pub use tangents::uv_gradient_tangents;
pub use validate::{validate, validate_geometry, RecipeError, Rule};
