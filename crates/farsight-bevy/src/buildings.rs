//! Baked buildings (seed 004) in Bevy: an asset loader for the full and the cooked
//! building files, and a component that spawns a building's pieces with the draw
//! bands farsight-building computes, as Bevy `VisibilityRange`s.

use std::collections::BTreeMap;
use std::sync::Arc;

use bevy::asset::io::Reader;
use bevy::asset::{AssetLoader, LoadContext, RenderAssetUsages};
use bevy::camera::primitives::Aabb;
use bevy::camera::visibility::{NoAutoAabb, VisibilityRange};
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use farsight_building::{
    bands, to_mesh_data, uv_gradient_tangents, BakedBuilding, FileError, PieceBand, PlacedCollider,
    Portal, Room, DEFAULT_CROSSFADE,
};

/// A building file loaded: the meshes are labelled sub-assets (`mesh{k}`), and every
/// entity a spawn makes is planned here, so the loaded asset holds no triangles of its
/// own (a cooked file's meshes live in the render world only).
#[derive(Asset, TypePath, Debug, Clone)]
pub struct BuildingAsset {
    /// The building's id.
    pub id: String,
    /// Whether the file was cooked (version 2) rather than full (version 1).
    pub cooked: bool,
    /// The number of levels.
    pub levels: usize,
    /// One entry per entity to spawn, in level order then piece order.
    pub pieces: Vec<BuildingPieceSpec>,
    /// Level zero's collision hulls, one per proxy per instance.
    pub colliders: Vec<PlacedCollider>,
    pub rooms: Vec<Room>,
    pub portals: Vec<Portal>,
}

impl BuildingAsset {
    /// The entities a spawn makes whose band covers level `n` (first to last level).
    pub fn pieces_at(&self, n: usize) -> impl Iterator<Item = &BuildingPieceSpec> {
        self.pieces.iter().filter(move |p| p.levels.contains(&n))
    }
}

/// One entity of a building: a piece drawn over one level, or over several when the
/// coarser levels left it unchanged.
#[derive(Clone)]
pub struct BuildingPieceSpec {
    /// The levels it draws (one entity whose band spans them all).
    pub levels: std::ops::RangeInclusive<usize>,
    /// The index of the piece in its first level's `MeshedBuilding::pieces`.
    pub piece: usize,
    /// Shared by every placement of one part's element at one level (they batch).
    pub mesh: Handle<Mesh>,
    /// The material the piece wears (the placement's palette entry for its binding).
    pub material: String,
    /// Building space; its translation is the origin the band is measured to.
    pub transform: Transform,
    /// The box the file recorded, in the entity's space (not recomputed).
    pub aabb: Aabb,
    /// The band it draws in, measured to its origin (`use_aabb: false`).
    pub range: VisibilityRange,
}

// Bevy's `VisibilityRange` is not `Debug`: its margins are printed field by field.
impl std::fmt::Debug for BuildingPieceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildingPieceSpec")
            .field("levels", &self.levels)
            .field("piece", &self.piece)
            .field("mesh", &self.mesh)
            .field("material", &self.material)
            .field("transform", &self.transform)
            .field("aabb", &self.aabb)
            .field("start_margin", &self.range.start_margin)
            .field("end_margin", &self.range.end_margin)
            .field("use_aabb", &self.range.use_aabb)
            .finish()
    }
}

/// Why a building file was refused by [`BuildingLoader`].
#[derive(Debug, thiserror::Error)]
pub enum BuildingLoadError {
    #[error("could not read the building file: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a usable building file: {0}")]
    File(#[from] FileError),
    /// A piece's recorded box is not finite or inverted.
    #[error("level {level}, piece {piece}: the recorded box {min:?}..{max:?} is not a box")]
    Bounds {
        level: usize,
        piece: usize,
        min: [f32; 3],
        max: [f32; 3],
    },
}

/// Loads `*.farsight` building files, full or cooked, chosen by the version word.
#[derive(Default, TypePath)]
pub struct BuildingLoader;

impl AssetLoader for BuildingLoader {
    type Asset = BuildingAsset;
    type Settings = ();
    type Error = BuildingLoadError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        _settings: &(),
        load_context: &mut LoadContext<'_>,
    ) -> Result<BuildingAsset, BuildingLoadError> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await?;
        let baked = BakedBuilding::read(&bytes)?;
        drop(bytes);
        plan(&baked, |k, mesh| {
            load_context.add_labeled_asset(format!("mesh{k}"), mesh)
        })
    }

    fn extensions(&self) -> &[&str] {
        &["farsight"]
    }
}

/// Plans a building's entities from a baked building, making each distinct mesh once
/// through `add` (its index and the Bevy mesh).
pub fn plan(
    baked: &BakedBuilding,
    mut add: impl FnMut(usize, Mesh) -> Handle<Mesh>,
) -> Result<BuildingAsset, BuildingLoadError> {
    let bands = bands(baked, DEFAULT_CROSSFADE);
    // (mesh pointer, offset bits) -> handle: one Bevy mesh per mesh drawn about one
    // point, so every placement of a part shares it.
    let mut made: BTreeMap<(usize, [u32; 3]), Handle<Mesh>> = BTreeMap::new();
    // (level, piece) -> index into `pieces`, to extend a band that continues.
    let mut entity_of: Vec<Vec<Option<usize>>> = Vec::with_capacity(baked.levels.len());
    let mut pieces: Vec<BuildingPieceSpec> = Vec::new();
    for (n, level) in baked.levels.iter().enumerate() {
        let mut row = Vec::new();
        for (i, p) in level.pieces().enumerate() {
            let band = match &bands[n][i] {
                PieceBand::Continues { previous } => {
                    let k = entity_of[n - 1][*previous];
                    if let Some(k) = k {
                        pieces[k].levels = *pieces[k].levels.start()..=n;
                    }
                    row.push(k);
                    continue;
                }
                PieceBand::Draw(b) => b,
            };
            let (min, max) = (Vec3::from(p.bounds.min), Vec3::from(p.bounds.max));
            if !(min.is_finite() && max.is_finite() && min.cmple(max).all()) {
                return Err(BuildingLoadError::Bounds {
                    level: n,
                    piece: i,
                    min: p.bounds.min,
                    max: p.bounds.max,
                });
            }
            // The entity stands at the piece's origin (Bevy measures the band to the
            // entity's translation) with the piece's rotation; the mesh is shifted by
            // what is left (zero for a placed element, minus the pivot for a batch).
            let linear = p.transform.matrix3;
            let origin = Vec3::from(p.origin);
            let offset = linear.inverse() * (Vec3::from(p.transform.translation) - origin);
            let key = (
                Arc::as_ptr(p.mesh) as usize,
                offset.to_array().map(f32::to_bits),
            );
            let mesh = match made.get(&key) {
                Some(h) => h.clone(),
                None => {
                    let h = add(made.len(), to_bevy_mesh(p.mesh, offset.into()));
                    made.insert(key, h.clone());
                    h
                }
            };
            let transform = Transform::from_matrix(Mat4::from(bevy::math::Affine3A {
                matrix3: linear,
                translation: origin.into(),
            }));
            row.push(Some(pieces.len()));
            pieces.push(BuildingPieceSpec {
                levels: n..=n,
                piece: i,
                mesh,
                material: p.material.to_string(),
                transform,
                aabb: Aabb::from_min_max(min + offset, max + offset),
                range: VisibilityRange {
                    start_margin: band.start_margin.clone(),
                    end_margin: band.end_margin.clone(),
                    use_aabb: false,
                },
            });
        }
        entity_of.push(row);
    }
    let level0 = baked.level(0);
    Ok(BuildingAsset {
        id: baked.id().to_string(),
        cooked: baked.recipe.is_none(),
        levels: baked.level_count(),
        pieces,
        colliders: level0.map(|l| l.colliders().to_vec()).unwrap_or_default(),
        rooms: level0.map(|l| l.rooms().to_vec()).unwrap_or_default(),
        portals: level0.map(|l| l.portals().to_vec()).unwrap_or_default(),
    })
}

/// A building mesh as a Bevy mesh (positions shifted by `offset`), with positions,
/// normals, UVs and tangents (the file's, or generated from the UVs when a full file
/// has none), kept in the render world only.
pub fn to_bevy_mesh(m: &farsight_building::Mesh, offset: [f32; 3]) -> Mesh {
    let o = Vec3::from(offset);
    let positions: Vec<[f32; 3]> = m
        .positions
        .iter()
        .map(|p| (Vec3::from(*p) + o).to_array())
        .collect();
    let tangents = if m.tangents.len() == m.positions.len() {
        m.tangents.clone()
    } else {
        uv_gradient_tangents(&to_mesh_data(m))
    };
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::RENDER_WORLD,
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, m.normals.clone())
    .with_inserted_attribute(Mesh::ATTRIBUTE_UV_0, m.uvs.clone())
    .with_inserted_attribute(Mesh::ATTRIBUTE_TANGENT, tangents)
    .with_inserted_indices(Indices::U32(m.indices.clone()))
}

/// Put on an entity (with a `Transform`) to draw a building there: once the asset is
/// loaded, one child entity per piece per band ([`BuildingPiece`]) is spawned, and the
/// entity gets [`BuildingColliders`] and [`BuildingSpaces`]. Despawning the entity
/// despawns its pieces.
#[derive(Component, Clone, Debug)]
#[require(Transform, Visibility)]
pub struct FarsightBuilding(pub Handle<BuildingAsset>);

/// A spawned piece of a building.
#[derive(Component, Clone, Debug, PartialEq, Eq)]
pub struct BuildingPiece {
    /// The building entity.
    pub building: Entity,
    /// The first level it draws (what a level tint shows).
    pub level: usize,
    /// The last level it draws.
    pub last_level: usize,
    /// Its index in its first level's pieces.
    pub piece: usize,
    /// The material it wears.
    pub material: String,
}

/// Level zero's collision hulls of a spawned building, in building space, one per
/// proxy per instance (collision is level zero's at every distance).
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct BuildingColliders(pub Vec<PlacedCollider>);

/// The rooms and portals of a spawned building.
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct BuildingSpaces {
    pub rooms: Vec<Room>,
    pub portals: Vec<Portal>,
}

/// The pieces of a building entity have been spawned from this asset.
#[derive(Component, Clone, Debug)]
pub struct BuildingSpawned(pub AssetId<BuildingAsset>);

/// The materials building pieces wear: one shared `StandardMaterial` per material
/// name. A name not in it gets a colour made from the name the first time it is
/// seen; insert your own handles before the building spawns to choose them.
#[derive(Resource, Clone, Debug, Default)]
pub struct BuildingPalette {
    pub materials: BTreeMap<String, Handle<StandardMaterial>>,
}

impl BuildingPalette {
    /// The material for `name`, made (and kept) the first time it is asked for.
    pub fn get_or_make(
        &mut self,
        name: &str,
        materials: &mut Assets<StandardMaterial>,
    ) -> Handle<StandardMaterial> {
        if let Some(h) = self.materials.get(name) {
            return h.clone();
        }
        let h = materials.add(StandardMaterial {
            base_color: colour_of(name),
            perceptual_roughness: 0.8,
            ..default()
        });
        self.materials.insert(name.to_string(), h.clone());
        h
    }
}

/// A stable, muted colour for a material name (FNV-1a of the name).
fn colour_of(name: &str) -> Color {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    let hue = (h % 360) as f32;
    Color::hsl(hue, 0.25, 0.55)
}

type Unspawned<'a> = (Entity, &'a FarsightBuilding, Option<&'a BuildingSpawned>);

/// Spawns the pieces of every building whose asset is loaded and not spawned yet (or
/// whose handle changed: the old pieces go first).
fn spawn_buildings(
    mut commands: Commands,
    buildings: Query<Unspawned>,
    assets: Res<Assets<BuildingAsset>>,
    mut palette: ResMut<BuildingPalette>,
    mut materials: Option<ResMut<Assets<StandardMaterial>>>,
    pieces: Query<(Entity, &BuildingPiece)>,
) {
    for (e, b, spawned) in &buildings {
        if spawned.is_some_and(|s| s.0 == b.0.id()) {
            continue;
        }
        let Some(asset) = assets.get(&b.0) else {
            continue;
        };
        if spawned.is_some() {
            for (p, piece) in &pieces {
                if piece.building == e {
                    commands.entity(p).despawn();
                }
            }
        }
        let mut by_name: BTreeMap<&str, Option<Handle<StandardMaterial>>> = BTreeMap::new();
        for spec in &asset.pieces {
            let material = by_name
                .entry(spec.material.as_str())
                .or_insert_with(|| {
                    materials
                        .as_deref_mut()
                        .map(|m| palette.get_or_make(&spec.material, m))
                })
                .clone();
            let mut child = commands.spawn((
                Mesh3d(spec.mesh.clone()),
                spec.transform,
                spec.aabb,
                NoAutoAabb,
                spec.range.clone(),
                BuildingPiece {
                    building: e,
                    level: *spec.levels.start(),
                    last_level: *spec.levels.end(),
                    piece: spec.piece,
                    material: spec.material.clone(),
                },
                ChildOf(e),
            ));
            if let Some(m) = material {
                child.insert(MeshMaterial3d(m));
            }
        }
        commands.entity(e).insert((
            BuildingSpawned(b.0.id()),
            BuildingColliders(asset.colliders.clone()),
            BuildingSpaces {
                rooms: asset.rooms.clone(),
                portals: asset.portals.clone(),
            },
        ));
    }
}

/// Baked buildings: the loader, the palette and the spawn. Added by
/// [`crate::FarsightPlugin`].
#[derive(Default)]
pub struct FarsightBuildingsPlugin;

impl Plugin for FarsightBuildingsPlugin {
    fn build(&self, app: &mut App) {
        app.init_asset::<BuildingAsset>()
            .init_asset_loader::<BuildingLoader>()
            .init_resource::<BuildingPalette>()
            .add_systems(Update, spawn_buildings);
    }
}
