//! Baked buildings (docs/design/baked-buildings.md) in Bevy: an asset loader for the full and the cooked
//! building files, and a component that spawns a building's pieces with the draw
//! bands farsight-building computes, as Bevy `VisibilityRange`s.
//!
//! Cut faces (the walls of openings) are marked per face from the file's face
//! sources, for element pieces and group batches alike: a mesh with any cut face
//! carries [`ATTRIBUTE_CUT`] (8 bytes a vertex, `1.0` on the vertices of cut faces),
//! and the pieces that draw it wear their material's cut variant
//! ([`BuildingPalette::get_or_make_cut`]), which multiplies the base colour of cut
//! faces by the kit's cut shade. Meshes without cut faces carry nothing more.
//!
//! Pieces wear their kit's materials ([`BuildingPalette::add_kit`]): one
//! `StandardMaterial` per material name, with the kit's colour, roughness,
//! metalness and glow, shared by every building and level that wears it. Level
//! tints are a debug view ([`BuildingLevelTint`], off by default).

use std::collections::BTreeMap;
use std::sync::Arc;

use bevy::asset::io::Reader;
use bevy::asset::{AssetLoader, LoadContext, RenderAssetUsages};
use bevy::camera::primitives::Aabb;
use bevy::camera::visibility::{NoAutoAabb, VisibilityRange};
use bevy::image::ImageSampler;
use bevy::mesh::{Indices, MeshVertexAttribute, PrimitiveTopology, UvChannel};
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
use farsight_building::{
    bands, to_mesh_data, uv_gradient_tangents, BakedBuilding, FileError, Kit, KitMaterial,
    PieceBand, PlacedCollider, Portal, Room, DEFAULT_CROSSFADE, DEFAULT_CUT_SHADE,
    DEFAULT_ROUGHNESS,
};

/// The per-vertex cut flag of a building mesh with cut faces: `[1.0, 0.0]` on every
/// vertex of a cut face, `[0.0, 0.0]` elsewhere (a vertex a cut and an uncut face
/// shared is split in two). It is Bevy's second UV channel, so Bevy's own vertex,
/// prepass and shadow shaders carry it, and a material reads it as `uv_b`: the cut
/// variant of a palette material looks its shade up there.
pub const ATTRIBUTE_CUT: MeshVertexAttribute = Mesh::ATTRIBUTE_UV_1;

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
    /// The building's rooms.
    pub rooms: Vec<Room>,
    /// The portals between its rooms.
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
    /// Whether its mesh has cut faces (and so [`ATTRIBUTE_CUT`]): it wears its
    /// material's cut variant.
    pub cut: bool,
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
            .field("cut", &self.cut)
            .finish()
    }
}

/// Why a building file was refused by [`BuildingLoader`].
#[derive(Debug, thiserror::Error)]
pub enum BuildingLoadError {
    /// The file could not be read.
    #[error("could not read the building file: {0}")]
    Io(#[from] std::io::Error),
    /// The file was refused by its reader.
    #[error("not a usable building file: {0}")]
    File(#[from] FileError),
    /// The file is a sound farsight file of another kind (a cluster model, a LOD
    /// chain, ...): what was found, in words.
    #[error("{found}, not a building file")]
    WrongKind {
        /// What the file is ([`crate::describe_kind`]).
        found: String,
    },
    /// A piece's recorded box is not finite or inverted.
    #[error("level {level}, piece {piece}: the recorded box {min:?}..{max:?} is not a box")]
    Bounds {
        /// The level.
        level: usize,
        /// The piece within the level.
        piece: usize,
        /// The recorded box's low corner.
        min: [f32; 3],
        /// The recorded box's high corner.
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
        let baked = match BakedBuilding::read(&bytes) {
            Ok(b) => b,
            Err(e) => {
                // A sound farsight file of another kind: say which rather than how its
                // bytes failed to parse as a building's structure. A damaged file (or
                // none) keeps the reader's own error, which says what is wrong.
                let found = crate::describe_kind(&bytes);
                if found == "a building file" || found.starts_with("not a farsight file") {
                    return Err(e.into());
                }
                return Err(BuildingLoadError::WrongKind { found });
            }
        };
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
                cut: has_cut_faces(p.mesh),
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

/// Whether a mesh has a cut face it can mark: one face source per triangle, one of
/// them cut.
fn has_cut_faces(m: &farsight_building::Mesh) -> bool {
    m.sources.len() == m.indices.len() / 3 && m.has_cut_faces()
}

/// A building mesh as a Bevy mesh (positions shifted by `offset`), with positions,
/// normals, UVs and tangents (the file's, or generated from the UVs when a full file
/// has none), kept in the render world only. A mesh with cut faces also carries
/// [`ATTRIBUTE_CUT`], exactly on the vertices of its cut faces: a vertex that a cut
/// and an uncut face share is split, the cut face taking the copy.
pub fn to_bevy_mesh(m: &farsight_building::Mesh, offset: [f32; 3]) -> Mesh {
    let o = Vec3::from(offset);
    let mut positions: Vec<[f32; 3]> = m
        .positions
        .iter()
        .map(|p| (Vec3::from(*p) + o).to_array())
        .collect();
    let mut tangents = if m.tangents.len() == m.positions.len() {
        m.tangents.clone()
    } else {
        uv_gradient_tangents(&to_mesh_data(m))
    };
    let mut normals = m.normals.clone();
    let mut uvs = m.uvs.clone();
    let mut indices = m.indices.clone();
    let mut cut_flags = None;
    if has_cut_faces(m) {
        const UNCUT: u8 = 1;
        const CUT: u8 = 2;
        // What kinds of face use each vertex.
        let mut used = vec![0u8; positions.len()];
        for (t, s) in m.indices.chunks_exact(3).zip(&m.sources) {
            for &i in t {
                if let Some(u) = used.get_mut(i as usize) {
                    *u |= if s.cut { CUT } else { UNCUT };
                }
            }
        }
        let mut flags: Vec<[f32; 2]> = used
            .iter()
            .map(|&u| [if u == CUT { 1.0 } else { 0.0 }, 0.0])
            .collect();
        // The copy a cut face uses of a vertex uncut faces use too.
        let mut copy: Vec<u32> = vec![u32::MAX; positions.len()];
        for (t, s) in indices.chunks_exact_mut(3).zip(&m.sources) {
            if !s.cut {
                continue;
            }
            for i in t {
                let v = *i as usize;
                if used.get(v) != Some(&(CUT | UNCUT)) {
                    continue;
                }
                if copy[v] == u32::MAX {
                    copy[v] = positions.len() as u32;
                    positions.push(positions[v]);
                    normals.push(normals[v]);
                    uvs.push(uvs[v]);
                    tangents.push(tangents[v]);
                    flags.push([1.0, 0.0]);
                }
                *i = copy[v];
            }
        }
        cut_flags = Some(flags);
    }
    let mut mesh = Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::RENDER_WORLD,
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, normals)
    .with_inserted_attribute(Mesh::ATTRIBUTE_UV_0, uvs)
    .with_inserted_attribute(Mesh::ATTRIBUTE_TANGENT, tangents);
    if let Some(flags) = cut_flags {
        mesh.insert_attribute(ATTRIBUTE_CUT, flags);
    }
    mesh.with_inserted_indices(Indices::U32(indices))
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
    /// Whether its mesh has cut faces: it wears the cut variant of its material
    /// ([`BuildingPalette::material_of`]).
    pub cut: bool,
}

/// Level zero's collision hulls of a spawned building, in building space, one per
/// proxy per instance (collision is level zero's at every distance).
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct BuildingColliders(pub Vec<PlacedCollider>);

/// The rooms and portals of a spawned building.
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct BuildingSpaces {
    /// The building's rooms.
    pub rooms: Vec<Room>,
    /// The portals between its rooms.
    pub portals: Vec<Portal>,
}

/// The pieces of a building entity have been spawned from this asset.
#[derive(Component, Clone, Debug)]
pub struct BuildingSpawned(pub AssetId<BuildingAsset>);

/// The materials building pieces wear: one shared `StandardMaterial` per material
/// name (the palette entry a piece's binding names), shared by every building and
/// level that wears it. [`BuildingPalette::add_kit`] makes them from a kit's
/// material descriptions; a name no kit described gets a colour made from the name
/// the first time it is seen. Insert your own handles before the building spawns to
/// choose them.
///
/// A piece with cut faces wears the name's cut variant: the same material, its base
/// colour multiplied on cut faces by `cut_shade` (set it from the kit's
/// `Kit::cut_shade`), through a two-texel base colour texture read on the second UV
/// channel, where [`ATTRIBUTE_CUT`] is.
#[derive(Resource, Clone, Debug)]
pub struct BuildingPalette {
    /// One `StandardMaterial` per material name the pieces use.
    pub materials: BTreeMap<String, Handle<StandardMaterial>>,
    /// The cut variant of each name, made from `materials` the first time a piece
    /// with cut faces wears it; insert your own to choose them.
    pub cut_materials: BTreeMap<String, Handle<StandardMaterial>>,
    /// The linear RGB factor cut faces' base colour is multiplied by.
    pub cut_shade: [f32; 3],
    /// The texture of the cut variants (made once, from `cut_shade`).
    pub cut_texture: Option<Handle<Image>>,
}

impl Default for BuildingPalette {
    fn default() -> Self {
        BuildingPalette {
            materials: BTreeMap::new(),
            cut_materials: BTreeMap::new(),
            cut_shade: DEFAULT_CUT_SHADE,
            cut_texture: None,
        }
    }
}

impl BuildingPalette {
    /// Takes a kit's looks: the material of every name the kit describes gets the
    /// kit's colour, roughness, metalness and glow (made, or changed in place with its
    /// cut variant, so pieces already spawned change too), and cut faces take the
    /// kit's cut shade. Several kits can be added; a name two kits describe, and the
    /// cut shade, are the last one's.
    pub fn add_kit(
        &mut self,
        kit: &Kit,
        materials: &mut Assets<StandardMaterial>,
        images: &mut Assets<Image>,
    ) {
        for (name, look) in &kit.materials {
            let made = kit_material(look);
            let Some(h) = self
                .materials
                .get(name)
                .filter(|h| materials.contains(*h))
                .cloned()
            else {
                self.materials.insert(name.clone(), materials.add(made));
                continue;
            };
            for h in std::iter::once(&h).chain(self.cut_materials.get(name)) {
                if let Some(mut m) = materials.get_mut(h) {
                    take_look(&mut m, &made);
                }
            }
        }
        if self.cut_shade != kit.cut_shade {
            self.cut_shade = kit.cut_shade;
            if let Some(mut image) = self.cut_texture.as_ref().and_then(|h| images.get_mut(h)) {
                *image = cut_texture(kit.cut_shade);
            }
        }
    }

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
            perceptual_roughness: DEFAULT_ROUGHNESS,
            ..default()
        });
        self.materials.insert(name.to_string(), h.clone());
        h
    }

    /// The cut variant of `name`, made (and kept) the first time it is asked for: a
    /// copy of [`BuildingPalette::get_or_make`]'s material whose base colour is
    /// multiplied by a texture read at [`ATTRIBUTE_CUT`]: white where it is `0.0`,
    /// `cut_shade` where it is `1.0`. A material that has a base colour texture of
    /// its own, or moves its UVs, is its own cut variant (cut faces then draw as the
    /// rest).
    pub fn get_or_make_cut(
        &mut self,
        name: &str,
        materials: &mut Assets<StandardMaterial>,
        images: &mut Assets<Image>,
    ) -> Handle<StandardMaterial> {
        if let Some(h) = self.cut_materials.get(name) {
            return h.clone();
        }
        let base = self.get_or_make(name, materials);
        let variant = match materials.get(&base) {
            Some(m) if m.base_color_texture.is_none() && m.uv_transform == default() => {
                let texture = self
                    .cut_texture
                    .get_or_insert_with(|| images.add(cut_texture(self.cut_shade)))
                    .clone();
                let mut m = m.clone();
                m.base_color_texture = Some(texture);
                m.base_color_channel = UvChannel::Uv1;
                materials.add(m)
            }
            _ => base,
        };
        self.cut_materials.insert(name.to_string(), variant.clone());
        variant
    }

    /// The material a spawned piece wears: its name's cut variant if its mesh has cut
    /// faces and the variant was made, else the name's material.
    pub fn material_of(&self, piece: &BuildingPiece) -> Option<Handle<StandardMaterial>> {
        let cut = piece
            .cut
            .then(|| self.cut_materials.get(&piece.material))
            .flatten();
        cut.or_else(|| self.materials.get(&piece.material)).cloned()
    }
}

/// A kit material description as a `StandardMaterial`: its sRGB colour as the base
/// colour, its roughness as the perceptual roughness, its metalness, and its glow
/// as an emissive colour (the base colour, linear, times the glow).
pub fn kit_material(look: &KitMaterial) -> StandardMaterial {
    let [r, g, b] = look.colour;
    let base_color = Color::srgb(r, g, b);
    let lin = LinearRgba::from(base_color);
    StandardMaterial {
        base_color,
        perceptual_roughness: look.roughness,
        metallic: look.metallic,
        emissive: LinearRgba::rgb(
            lin.red * look.emissive,
            lin.green * look.emissive,
            lin.blue * look.emissive,
        ),
        ..default()
    }
}

/// Copies what a kit says of a material (colour, roughness, metalness, glow) into
/// `m`, keeping the rest (a cut variant's texture and UV channel).
fn take_look(m: &mut StandardMaterial, look: &StandardMaterial) {
    m.base_color = look.base_color;
    m.perceptual_roughness = look.perceptual_roughness;
    m.metallic = look.metallic;
    m.emissive = look.emissive;
}

/// Two texels, linear: white (uncut, read at u = 0) and the cut shade (u = 1). The
/// flag is constant over a face and the sampler clamps to the edge, so a face reads
/// one texel whole under either filter.
pub fn cut_texture(shade: [f32; 3]) -> Image {
    let byte = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
    let [r, g, b] = shade.map(byte);
    let mut image = Image::new(
        Extent3d {
            width: 2,
            height: 1,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        vec![255, 255, 255, 255, r, g, b, 255],
        TextureFormat::Rgba8Unorm,
        RenderAssetUsages::RENDER_WORLD,
    );
    image.sampler = ImageSampler::nearest();
    image
}

/// A stable, muted colour for a material name (FNV-1a of the name).
fn colour_of(name: &str) -> Color {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    let hue = (h % 360) as f32;
    Color::hsl(hue, 0.25, 0.55)
}

/// The default colours of [`BuildingLevelTint`], level 0 to 2: green, yellow, red.
pub const LEVEL_TINTS: [Color; 3] = [
    Color::srgb(0.1, 0.85, 0.1),
    Color::srgb(0.9, 0.85, 0.05),
    Color::srgb(0.9, 0.08, 0.05),
];

/// A debug view of building levels: while `on`, every building piece wears the
/// tint of the first level it draws (`colours[level]`, the last colour for deeper
/// levels) instead of its material; turned off, pieces wear their palette's
/// materials again. Off by default.
#[derive(Resource, Clone, Debug)]
pub struct BuildingLevelTint {
    /// Whether pieces wear their level's tint.
    pub on: bool,
    /// The tint of each level; at least one.
    pub colours: Vec<Color>,
    /// One rough material per colour, made when the tint is first shown, and again
    /// when `colours` changes.
    materials: Vec<(Color, Handle<StandardMaterial>)>,
}

impl Default for BuildingLevelTint {
    fn default() -> Self {
        BuildingLevelTint {
            on: false,
            colours: LEVEL_TINTS.to_vec(),
            materials: Vec::new(),
        }
    }
}

impl BuildingLevelTint {
    /// The tint in [`LEVEL_TINTS`], on or off.
    pub fn new(on: bool) -> Self {
        BuildingLevelTint { on, ..default() }
    }

    /// The tint of a piece whose first level is `level` (made if need be), while the
    /// tint is on; `None` while it is off or no colour is given.
    pub fn material_for(
        &mut self,
        level: usize,
        materials: &mut Assets<StandardMaterial>,
    ) -> Option<Handle<StandardMaterial>> {
        if !self.on || self.colours.is_empty() {
            return None;
        }
        let stale = self.materials.len() != self.colours.len()
            || self
                .materials
                .iter()
                .zip(&self.colours)
                .any(|(m, c)| m.0 != *c);
        if stale {
            self.materials = self
                .colours
                .iter()
                .map(|&c| {
                    let m = materials.add(StandardMaterial {
                        base_color: c,
                        perceptual_roughness: 0.9,
                        ..default()
                    });
                    (c, m)
                })
                .collect();
        }
        let i = level.min(self.materials.len() - 1);
        Some(self.materials[i].1.clone())
    }
}

type Unspawned<'a> = (Entity, &'a FarsightBuilding, Option<&'a BuildingSpawned>);

/// Spawns the pieces of every building whose asset is loaded and not spawned yet (or
/// whose handle changed: the old pieces go first).
fn spawn_buildings(
    mut commands: Commands,
    buildings: Query<Unspawned>,
    assets: Res<Assets<BuildingAsset>>,
    mut palette: ResMut<BuildingPalette>,
    mut tint: ResMut<BuildingLevelTint>,
    mut materials: Option<ResMut<Assets<StandardMaterial>>>,
    mut images: Option<ResMut<Assets<Image>>>,
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
        let mut by_name: BTreeMap<(&str, bool), Option<Handle<StandardMaterial>>> = BTreeMap::new();
        for spec in &asset.pieces {
            // The palette's material is made even under the tint, for when it goes off.
            let own = by_name
                .entry((spec.material.as_str(), spec.cut))
                .or_insert_with(|| {
                    let m = materials.as_deref_mut()?;
                    Some(match (spec.cut, images.as_deref_mut()) {
                        (true, Some(images)) => palette.get_or_make_cut(&spec.material, m, images),
                        _ => palette.get_or_make(&spec.material, m),
                    })
                })
                .clone();
            // Making the tint materials is no change of the setting.
            let tinted = materials.as_deref_mut().and_then(|m| {
                tint.bypass_change_detection()
                    .material_for(*spec.levels.start(), m)
            });
            let material = tinted.or(own);
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
                    cut: spec.cut,
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

/// A change of [`BuildingLevelTint`] dresses every spawned piece again: its level's
/// tint, or its palette material.
fn retint_buildings(
    mut tint: ResMut<BuildingLevelTint>,
    palette: Res<BuildingPalette>,
    mut materials: Option<ResMut<Assets<StandardMaterial>>>,
    mut pieces: Query<(&BuildingPiece, &mut MeshMaterial3d<StandardMaterial>)>,
) {
    if !tint.is_changed() {
        return;
    }
    let Some(materials) = materials.as_deref_mut() else {
        return;
    };
    // Read through the bypass: making the tint materials is no change of the setting.
    let tint = tint.bypass_change_detection();
    for (piece, mut worn) in &mut pieces {
        let want = tint
            .material_for(piece.level, materials)
            .or_else(|| palette.material_of(piece));
        if let Some(want) = want {
            if worn.0 != want {
                worn.0 = want;
            }
        }
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
            .init_resource::<BuildingLevelTint>()
            .add_systems(Update, (retint_buildings, spawn_buildings).chain());
    }
}
