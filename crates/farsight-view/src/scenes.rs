//! Synthetic scenes for the demo, the tests and the benchmarks: the city block
//! (docs/design/entity-lod.md#the-test-city),
//! scaled to any object count, generated deterministically from a seed.

use farsight_geom::Aabb;
use glam::{Mat4, Quat, Vec3};

use crate::camera::{Camera, Projection};
use crate::lod::{EntityLod, EntityLodLevel, Residency};
use crate::objects::{MaterialHandle, MeshHandle, ObjectDesc, ObjectStore};

/// SplitMix64: a tiny deterministic generator so scenes need no RNG dependency.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
}

/// Layout of a generated city: a street along +X with rows of buildings on both sides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CityLayout {
    /// Buildings placed.
    pub buildings: usize,
    /// Rows of buildings on each side of the street.
    pub rows_per_side: usize,
    /// Buildings per row along the street (the last column may be partial).
    pub columns: usize,
    /// Spacing of buildings along the street.
    pub spacing: f32,
    /// Spacing of rows away from the street.
    pub row_spacing: f32,
    /// Half the street's width.
    pub street_half_width: f32,
    /// Distinct building designs (each with its own three meshes and url).
    pub designs: u32,
}

impl CityLayout {
    /// The test city's block for 500 buildings (docs/design/entity-lod.md#the-test-city); more buildings add rows and columns.
    pub fn for_buildings(buildings: usize) -> Self {
        let scale = ((buildings.max(1) as f64 / 500.0).sqrt().ceil() as usize).max(1);
        let rows_per_side = 5 * scale;
        let columns = buildings.div_ceil(2 * rows_per_side);
        Self {
            buildings,
            rows_per_side,
            columns,
            spacing: 8.0,
            row_spacing: 14.0,
            street_half_width: 8.0,
            designs: 16,
        }
    }

    /// Length of the street from the first to the last column.
    pub fn length(&self) -> f32 {
        self.columns as f32 * self.spacing
    }

    /// Where building `k` stands (footprint centre on the ground).
    pub fn position(&self, k: usize) -> Vec3 {
        let column = k / (2 * self.rows_per_side);
        let r = k % (2 * self.rows_per_side);
        let side = if r % 2 == 0 { 1.0 } else { -1.0 };
        let row = (r / 2) as f32;
        Vec3::new(
            column as f32 * self.spacing,
            0.0,
            side * (self.street_half_width + 4.0 + row * self.row_spacing),
        )
    }
}

/// Mesh handle of design `d`, level `l`: `d * 3 + l`.
pub fn building_mesh(design: u32, level: u32) -> MeshHandle {
    MeshHandle(design * 3 + level)
}

/// The test city's building LOD: 50 / 100 / 200 m (docs/design/entity-lod.md#the-test-city).
pub fn building_lod(design: u32) -> EntityLod {
    let url: std::sync::Arc<str> = format!("city/building_{design:02}").into();
    EntityLod::new(
        (0..3)
            .map(|l| EntityLodLevel {
                residency: Residency::Resident,
                ..EntityLodLevel::new(
                    building_mesh(design, l),
                    [50.0, 100.0, 200.0][l as usize],
                    url.clone(),
                )
            })
            .collect(),
    )
    .expect("the city's levels are ordered")
}

/// Fills `store` with `buildings` objects: visible, shadow-casting buildings with the
/// three-level LOD, every eighth object a small street lamp without LOD that casts
/// no shadow (so the scene list has casters and non-casters). Returns the layout.
///
/// Each design's LOD component is built once and cloned, so every building of a
/// design shares its levels, urls and asset ids.
pub fn city_block(store: &mut ObjectStore, buildings: usize, seed: u64) -> CityLayout {
    let layout = CityLayout::for_buildings(buildings);
    let designs: Vec<EntityLod> = (0..layout.designs).map(building_lod).collect();
    store.reserve(buildings, buildings - buildings / 8);
    let mut rng = SplitMix(seed);
    for k in 0..buildings {
        let design = (rng.next_u64() % layout.designs as u64) as u32;
        let height = rng.range(8.0, 40.0);
        let footprint = rng.range(4.0, 6.5);
        let bounds = Aabb::new(
            Vec3::new(-footprint * 0.5, 0.0, -footprint * 0.5),
            Vec3::new(footprint * 0.5, height, footprint * 0.5),
        );
        let world = Mat4::from_rotation_translation(
            Quat::from_rotation_y(rng.range(-0.2, 0.2)),
            layout.position(k),
        );
        let mut d = ObjectDesc::new(
            world,
            bounds,
            building_mesh(design, 0),
            MaterialHandle(design),
        );
        d.lod = Some(designs[design as usize].clone());
        d.entity = k as u64;
        let is_lamp = k % 8 == 7;
        if is_lamp {
            // A lamp instead: small, no LOD, casts no shadow.
            d.lod = None;
            d.mesh = MeshHandle(10_000);
            d.material = MaterialHandle(10_000);
            d.casts_shadows = false;
            d.bounds = Aabb::new(Vec3::new(-0.2, 0.0, -0.2), Vec3::new(0.2, 5.0, 0.2));
        }
        store.insert(d);
    }
    layout
}

/// The benchmarks' view of a city: eye height 1.7, a third of the way along the
/// street, looking down it (+x), 57 degrees vertical field of view at 16:9.
pub fn street_camera(layout: &CityLayout) -> Camera {
    let eye = Vec3::new(layout.length() * 0.3, 1.7, 0.0);
    Camera::looking_at(
        Projection::Perspective {
            fov_y: 1.0,
            aspect: 16.0 / 9.0,
            near: 0.1,
            far: 5000.0,
        },
        eye,
        eye + Vec3::X,
    )
}
