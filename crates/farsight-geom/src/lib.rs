//! Plain geometry for farsight: axis-aligned boxes, spheres, view frusta, the
//! projection helpers every LOD and cull rule is written against, and the region BVH.
//!
//! This is the leaf of the workspace: it depends on glam and nothing else. It knows
//! nothing about meshes, entities, files, threads or LOD policy; those live in the
//! crates above it (`farsight-lod` owns every selection rule, `farsight-view` the
//! per-frame pass). Everything here is a pure function of its arguments, cheap
//! enough to call per object per frame; only building a BVH allocates (its queries
//! do not).
//!
//! Conventions: right-handed, column vectors (`glam`), clip-space depth in `[0, 1]`
//! (glam's `perspective_rh` / `orthographic_rh`, wgpu, Vulkan, D3D). An OpenGL-style
//! `[-1, 1]` projection must be remapped to `[0, 1]` depth before
//! `Frustum::from_view_projection`: read as `[0, 1]`, its near plane would sit half way
//! into the view volume.

mod aabb;
mod bvh;
mod frustum;
mod projection;
mod sphere;

pub use aabb::{
    transform_aabb, transform_aabb_scalar, transform_center_extent, Aabb, CenterExtent,
    BOUNDS_EPSILON_SQ,
};
pub use bvh::{
    linear_query_aabb, linear_query_frustum, linear_query_sphere, Bvh, BvhBuildError, BvhBuilder,
    BvhNode, BvhValidationError, BVH_LEAF_SIZE, BVH_STACK_SIZE,
};
pub use frustum::{frustum_intersects_aabb, Frustum};
pub use projection::{is_orthographic, p11, projected_pixel_size, REFERENCE_FOV_Y};
pub use sphere::{sphere_intersects_aabb, Sphere};

pub use glam;
