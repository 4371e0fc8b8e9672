//! farsight-building owns the procedural buildings of
//! docs/design/baked-buildings.md: the recipe (parts placed by
//! instances, elements with union members and cutters, merge groups, colliders, rooms
//! and portals), levels of detail as simpler recipes, the baked and cooked building
//! files, concatenated far levels and the draw bands a renderer gives each piece.
//!
//! Two halves. The run-time half, always built, is what a game links: the recipe types
//! and their validation, [`MeshedBuilding`] and its pieces, [`BakedBuilding`] and its
//! readers, [`MeshedBuilding::concatenated`] and [`bands()`]. It links no CSG kernel.
//! The bake-time half, behind the `bake` feature, adds the `bake::Kernel` trait with
//! its manifold-rust implementation, meshing, simplification and `bake::bake` (named
//! without links: this documentation is also built without the feature).
//!
//! This crate must not know about a renderer or an engine: a band is measured the way
//! Bevy's `VisibilityRange` measures, but in plain numbers.
//!
//! ```
//! use farsight_building::{bands::dither_coverage, Building, DrawBand, LodPolicy, Rule};
//!
//! // A 3 m kiosk with a door cut into its +Z wall, placed once and turned a quarter.
//! let recipe = r#"Building(
//!     id: "kiosk",
//!     parts: [Part(id: "hut", elements: [Element(
//!         id: "walls",
//!         shape: Shape(geometry: Box(size: (3.0, 2.5, 3.0))),
//!         cutters: [Shape(geometry: Box(size: (1.0, 2.0, 0.6)), at: Pose(translation: (0.0, -0.25, 1.5)))],
//!         binding: "wall",
//!     )])],
//!     instances: [Instance(id: "a", part: "hut", pose: Pose(translation: (0.0, 1.25, 0.0), yaw: 90.0))],
//! )"#;
//! let kiosk = Building::from_ron(recipe).unwrap();
//! assert_eq!(kiosk.instances[0].part, "hut");
//! // Everything the recipe can mesh to lies within its reach: 3 m across, 2.5 m tall.
//! let reach = kiosk.reach();
//! assert!((reach.max[1] - reach.min[1] - 2.5).abs() < 1e-4);
//!
//! // A recipe that names a missing part is refused, saying where and why.
//! let broken = recipe.replace(r#"part: "hut", pose"#, r#"part: "shed", pose"#);
//! let err = Building::from_ron(&broken).unwrap_err();
//! assert!(matches!(err, farsight_building::RecipeError::Invalid { rule: Rule::UnknownPart { .. }, .. }));
//!
//! // The default ladder checks, and a band fades a piece out between 60 and 66 m.
//! LodPolicy::check(&LodPolicy::ladder()).unwrap();
//! let band = DrawBand { start_margin: 0.0..0.0, end_margin: 60.0..66.0 };
//! assert_eq!(dither_coverage(&band, 30.0), u16::MAX); // fully drawn
//! assert_eq!(dither_coverage(&band, 70.0), 0); // gone
//! ```
#![warn(missing_docs)]

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
