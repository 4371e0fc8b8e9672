//! The bake-time half (feature `bake`): the CSG kernel, meshing, simplification and
//! `bake`. A game that only draws baked files does not enable it and links no kernel.

mod kernel;
mod ladder;
mod meshing;
mod simplify;

pub use kernel::{Kernel, KernelError, KernelMesh, ManifoldKernel, ManifoldSolid};
pub use ladder::{bake, bake_cached, bake_with_stats, BakeError, BakeStats};
pub use meshing::{
    damage, element_solid, is_curved, mesh_building, mesh_element, mesh_group, mesh_group_cached,
    mesh_part, mesh_part_cached, to_mesh, to_mesh_shaded, MeshCache, CREASE_DEGREES,
    MIN_DOUBLE_AREA,
};
pub use simplify::{simplified_building, simplified_element, simplified_geometry, simplified_part};

use crate::policy::LodPolicy;
use crate::recipe::{Building, Element, Geometry, Part};

impl Geometry {
    /// The geometry under `policy` (segments coarsened).
    pub fn simplified(&self, policy: &LodPolicy) -> Geometry {
        simplified_geometry(self, policy)
    }
}

impl Element {
    /// The element under `policy`, or `None` if it goes.
    pub fn simplified(&self, policy: &LodPolicy) -> Option<Element> {
        simplified_element(self, policy)
    }
}

impl Part {
    /// The part under `policy`, or `None` if nothing of it survives.
    pub fn simplified(&self, policy: &LodPolicy) -> Option<Part> {
        simplified_part(self, policy)
    }
}

impl Building {
    /// The building under `policy`.
    pub fn simplified(&self, policy: &LodPolicy) -> Building {
        simplified_building(self, policy)
    }
}
