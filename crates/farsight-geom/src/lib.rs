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
//!
//! ```
//! use farsight_geom::glam::{Mat4, Vec3};
//! use farsight_geom::{Aabb, Bvh, Frustum, Sphere};
//!
//! // Three one-metre regions along +x, at 0, 10 and 100 metres.
//! let boxes: Vec<Aabb> = [0.0, 10.0, 100.0]
//!     .iter()
//!     .map(|&x| Aabb::from_center_extent(Vec3::new(x, 0.0, 0.0), Vec3::splat(0.5)))
//!     .collect();
//! let bvh = Bvh::build(&boxes).unwrap();
//!
//! // The regions within 20 metres of the origin: reported by their index in `boxes`.
//! let mut near = Vec::new();
//! bvh.query_sphere(&Sphere::new(Vec3::ZERO, 20.0), &mut near);
//! near.sort();
//! assert_eq!(near, [0, 1]);
//!
//! // A camera at x = -5 looking down +x with a 50-metre far plane sees the same two.
//! let view = Mat4::look_at_rh(Vec3::new(-5.0, 0.0, 0.0), Vec3::ZERO, Vec3::Y);
//! let proj = Mat4::perspective_rh(1.0, 1.0, 0.1, 50.0);
//! let frustum = Frustum::from_view_projection(&(proj * view));
//! let mut seen = Vec::new();
//! bvh.query_frustum(&frustum, &mut seen);
//! seen.sort();
//! assert_eq!(seen, [0, 1]);
//! ```
#![warn(missing_docs)]

mod aabb;
mod bvh;
mod frustum;
mod projection;
mod sphere;

pub use aabb::{transform_aabb, transform_center_extent, Aabb, CenterExtent, BOUNDS_EPSILON_SQ};
// The scalar reference the SIMD box transform is tested against: not API.
#[doc(hidden)]
pub use aabb::transform_aabb_scalar;
pub use bvh::{
    Bvh, BvhBuildError, BvhBuilder, BvhNode, BvhValidationError, BVH_LEAF_SIZE, BVH_STACK_SIZE,
};
// Brute-force references the BVH's tests and benches compare against: not API.
#[doc(hidden)]
pub use bvh::{linear_query_aabb, linear_query_frustum, linear_query_sphere};
pub use frustum::{frustum_intersects_aabb, Frustum};
pub use projection::{is_orthographic, p11, projected_pixel_size, REFERENCE_FOV_Y};
pub use sphere::{sphere_intersects_aabb, Sphere};

pub use glam;
