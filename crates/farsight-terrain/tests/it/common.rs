//! Worlds shared by the terrain integration tests.

use farsight_terrain::{Cell, Material, VoxelGrid};
use glam::Vec3;

/// Flat grass ground: solid from y = -100 to y = 50 over a 700-unit square.
pub fn flat_world() -> VoxelGrid {
    let mut g = VoxelGrid::new();
    g.set_box(
        Vec3::new(-300.0, -100.0, -300.0),
        Vec3::new(400.0, 50.0, 400.0),
        Cell::full(Material::GRASS),
    )
    .unwrap();
    g
}
