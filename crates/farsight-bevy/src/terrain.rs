//! Voxel terrain (docs/design/voxel-terrain.md) in Bevy: a [`FarsightTerrain`] component over
//! farsight-terrain's `VoxelGrid`, `TerrainView` and its background mesh workers.
//! Every chunk mesh the view publishes becomes, or replaces, one Bevy mesh entity
//! under the terrain; the view's serials mean a stale result is never published, so
//! never shown. Edits arrive as [`TerrainEdit`] messages; colliders are kept for a
//! physics plugin ([`FarsightTerrain::colliders`]).

use std::sync::{Arc, Mutex};

use bevy::asset::RenderAssetUsages;
use bevy::asset::{embedded_asset, Assets, Handle};
use bevy::math::{IVec3, Vec4};
use bevy::mesh::{Indices, Mesh, Mesh3d, PrimitiveTopology, VertexAttributeValues};
use bevy::pbr::{
    ExtendedMaterial, MaterialExtension, MaterialPlugin, MeshMaterial3d, StandardMaterial,
};
use bevy::platform::collections::HashMap;
use bevy::prelude::*;
use bevy::render::render_resource::AsBindGroup;
use bevy::shader::ShaderRef;
use farsight_terrain::{
    CacheUpdate, Cell, ChunkCollider, ChunkMesh, CollisionCache, EditError, EditReport,
    Material as VoxelMaterial, TerrainView, TerrainViewConfig, ViewStats, VoxelGrid, WaterMesh,
};

use crate::FarsightSet;

/// The terrain's material: Bevy's `StandardMaterial` lit as usual, its base colour
/// the four voxel materials of each vertex blended by their weights in
/// `terrain.wgsl`.
pub type TerrainMaterial = ExtendedMaterial<StandardMaterial, TerrainPalette>;

/// Colours of the voxel materials, by material id (air, water, grass, rock, dirt,
/// sand, snow, mud).
#[derive(Asset, AsBindGroup, Reflect, Debug, Clone)]
pub struct TerrainPalette {
    /// The colour of each voxel material (linear RGBA).
    #[uniform(100)]
    pub colors: [Vec4; 8],
}

impl Default for TerrainPalette {
    fn default() -> Self {
        let c = |r: f32, g: f32, b: f32| Vec4::new(r, g, b, 1.0);
        Self {
            colors: [
                c(1.0, 0.0, 1.0),
                c(0.1, 0.3, 0.6),
                c(0.22, 0.5, 0.12),
                c(0.42, 0.42, 0.44),
                c(0.4, 0.26, 0.12),
                c(0.85, 0.78, 0.5),
                c(0.95, 0.95, 0.98),
                c(0.3, 0.22, 0.14),
            ],
        }
    }
}

impl MaterialExtension for TerrainPalette {
    fn fragment_shader() -> ShaderRef {
        "embedded://farsight_bevy/terrain.wgsl".into()
    }
}

/// How a terrain vertex carries its materials to the shader: the four material ids
/// in the two UV channels (`UV_0 = (m0, m1)`, `UV_1 = (m2, m3)`, constant across a
/// triangle, as docs/design/voxel-terrain.md sorts one set per quad) and their weights in `COLOR`. Bevy's
/// own vertex shader, prepass and shadow passes then carry them unchanged.
pub fn chunk_mesh_to_bevy(m: &ChunkMesh) -> Mesh {
    let n = m.vertices.len();
    let mut pos = Vec::with_capacity(n);
    let mut nor = Vec::with_capacity(n);
    let mut uv0 = Vec::with_capacity(n);
    let mut uv1 = Vec::with_capacity(n);
    let mut w = Vec::with_capacity(n);
    for v in &m.vertices {
        pos.push(v.position);
        nor.push(v.normal);
        let id = v.materials.map(f32::from);
        uv0.push([id[0], id[1]]);
        uv1.push([id[2], id[3]]);
        w.push(v.weights.map(|x| x as f32 / 255.0));
    }
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::RENDER_WORLD,
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, pos)
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, nor)
    .with_inserted_attribute(Mesh::ATTRIBUTE_UV_0, uv0)
    .with_inserted_attribute(Mesh::ATTRIBUTE_UV_1, uv1)
    .with_inserted_attribute(Mesh::ATTRIBUTE_COLOR, w)
    .with_inserted_indices(Indices::U32(m.indices.clone()))
}

/// A water sheet; positions stay on the main world so the waves can move them.
fn water_mesh_to_bevy(m: &WaterMesh, time: f32, wave: &WaterWaves) -> Mesh {
    let mut mesh = Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::RENDER_WORLD | RenderAssetUsages::MAIN_WORLD,
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, waved(m, time, wave))
    .with_inserted_attribute(
        Mesh::ATTRIBUTE_NORMAL,
        vec![[0.0f32, 1.0, 0.0]; m.vertices.len()],
    )
    .with_inserted_indices(Indices::U32(m.indices.clone()));
    mesh.compute_smooth_normals();
    mesh
}

/// Positions displaced by the waves, each scaled by the vertex's fade (0 on the
/// shore, so the sheet's outline stays where the solid surface cuts it).
fn waved(m: &WaterMesh, t: f32, w: &WaterWaves) -> Vec<[f32; 3]> {
    m.vertices
        .iter()
        .map(|v| {
            let [x, y, z] = v.position;
            let phase = x * w.wavenumber + z * w.wavenumber * 0.7 + t * w.speed;
            [x, y + w.amplitude * v.fade * phase.sin(), z]
        })
        .collect()
}

/// The water's wave shape.
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub struct WaterWaves {
    /// Wave height, world units.
    pub amplitude: f32,
    /// Radians per world unit.
    pub wavenumber: f32,
    /// Radians per second.
    pub speed: f32,
}

impl Default for WaterWaves {
    fn default() -> Self {
        Self {
            amplitude: 0.6,
            wavenumber: 0.08,
            speed: 1.6,
        }
    }
}

/// An edit of a terrain, sent as a message; applied before the frame's meshing. A
/// refused edit (bad numbers, too large) changes nothing and is reported in
/// [`TerrainEdited`].
#[derive(Message, Clone, Copy, Debug, PartialEq)]
pub struct TerrainEdit {
    /// The terrain entity edited.
    pub terrain: Entity,
    /// What the edit does.
    pub op: TerrainOp,
}

/// What an edit does, in the terrain's own coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TerrainOp {
    /// Add solid `material` in a sphere, or carve it with `Material::AIR`.
    Sphere {
        /// The sphere's centre.
        center: Vec3,
        /// The sphere's radius.
        radius: f32,
        /// The material added (`Material::AIR` carves).
        material: VoxelMaterial,
    },
    /// Set every cell of a box.
    SetBox {
        /// The box's low corner.
        min: Vec3,
        /// The box's high corner.
        max: Vec3,
        /// What every cell becomes.
        cell: Cell,
    },
    /// Repaint the solid cells of a box.
    Paint {
        /// The box's low corner.
        min: Vec3,
        /// The box's high corner.
        max: Vec3,
        /// The material painted.
        material: VoxelMaterial,
    },
}

/// The outcome of one [`TerrainEdit`].
#[derive(Message, Clone, Debug, PartialEq)]
pub struct TerrainEdited {
    /// The terrain entity edited.
    pub terrain: Entity,
    /// What the edit changed, or why it was refused.
    pub result: Result<EditReport, EditError>,
}

/// A published chunk on screen.
#[derive(Debug)]
struct Shown {
    entity: Entity,
    mesh: Arc<ChunkMesh>,
    water: Option<(Entity, Arc<WaterMesh>, Handle<Mesh>)>,
}

/// A chunk mesh entity of a terrain.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerrainChunk {
    /// Its terrain entity.
    pub terrain: Entity,
    /// The chunk's coordinates.
    pub chunk: IVec3,
    /// The chunk's level of detail.
    pub level: u8,
}

/// A water sheet entity of a terrain.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerrainWater {
    /// Its terrain entity.
    pub terrain: Entity,
    /// The chunk's coordinates.
    pub chunk: IVec3,
}

/// A voxel terrain: put it on an entity (its transform places the terrain). The
/// camera the view meshes for is the first active 3D camera.
#[derive(Component)]
#[require(Transform, Visibility)]
pub struct FarsightTerrain {
    grid: VoxelGrid,
    // The workers' channels are `Send`, not `Sync`; only the terrain system locks it.
    view: Mutex<TerrainView>,
    collision: CollisionCache,
    shown: HashMap<IVec3, Shown>,
    stats: ViewStats,
    /// Published state changed outside `update` (a settle): sync the entities.
    resync: bool,
}

impl FarsightTerrain {
    /// A terrain over `grid`, meshed by `threads` background workers.
    pub fn new(grid: VoxelGrid, settings: TerrainViewConfig, threads: usize) -> Self {
        Self {
            grid,
            view: Mutex::new(TerrainView::new(settings, threads)),
            collision: CollisionCache::new(1),
            shown: HashMap::default(),
            stats: ViewStats::default(),
            resync: true,
        }
    }

    /// The terrain's voxels.
    pub fn grid(&self) -> &VoxelGrid {
        &self.grid
    }

    /// The view's counters of the last frame.
    pub fn stats(&self) -> ViewStats {
        self.stats
    }

    /// Chunks with a mesh entity.
    pub fn shown_chunks(&self) -> impl Iterator<Item = (IVec3, Entity)> + '_ {
        self.shown.iter().map(|(c, s)| (*c, s.entity))
    }

    /// The published mesh of `chunk` (what its entity draws).
    pub fn chunk_mesh(&self, chunk: IVec3) -> Option<&Arc<ChunkMesh>> {
        self.shown.get(&chunk).map(|s| &s.mesh)
    }

    /// Brings the colliders up to date with the grid (changed chunks and their
    /// neighbours rebuild; unchanged ones keep their `Arc`, so a physics plugin swaps
    /// only what changed by comparing pointers) and returns what changed.
    pub fn update_colliders(&mut self) -> CacheUpdate {
        self.collision.update(&self.grid)
    }

    /// The colliders, one per non-empty chunk surface, full detail, no skirts.
    pub fn colliders(&self) -> impl Iterator<Item = &Arc<ChunkCollider>> {
        self.collision.colliders()
    }

    /// The terrain's collision meshes.
    pub fn collision(&self) -> &CollisionCache {
        &self.collision
    }

    /// Waits (up to `timeout`) until every wanted chunk is published; for loading
    /// screens and tests. The entities follow on the next frame.
    pub fn settle(&mut self, camera: Vec3, timeout: std::time::Duration) -> bool {
        self.resync = true;
        let view = self.view.get_mut().unwrap_or_else(|e| e.into_inner());
        view.settle(&self.grid, camera, timeout)
    }
}

/// What the terrain's entities are drawn with.
#[derive(Resource, Clone, Debug, Default)]
pub struct TerrainMaterials {
    /// The material of the terrain's chunks.
    pub terrain: Option<Handle<TerrainMaterial>>,
    /// The material of its water sheets.
    pub water: Option<Handle<StandardMaterial>>,
}

fn apply_edits(
    mut edits: MessageReader<TerrainEdit>,
    mut out: MessageWriter<TerrainEdited>,
    mut terrains: Query<&mut FarsightTerrain>,
) {
    for e in edits.read() {
        let Ok(mut t) = terrains.get_mut(e.terrain) else {
            continue;
        };
        let g = &mut t.grid;
        let result = match e.op {
            TerrainOp::Sphere {
                center,
                radius,
                material,
            } => g.set_sphere(center, radius, material),
            TerrainOp::SetBox { min, max, cell } => g.set_box(min, max, cell),
            TerrainOp::Paint { min, max, material } => g.paint_box(min, max, material),
        };
        out.write(TerrainEdited {
            terrain: e.terrain,
            result,
        });
    }
}

#[allow(clippy::type_complexity)]
fn update_terrain(
    mut commands: Commands,
    time: Res<Time>,
    waves: Res<WaterWaves>,
    materials: Res<TerrainMaterials>,
    mut meshes: ResMut<Assets<Mesh>>,
    cameras: Query<(&Camera, &GlobalTransform), With<Camera3d>>,
    mut terrains: Query<(Entity, &mut FarsightTerrain, &GlobalTransform)>,
    mut handles: Query<&mut Mesh3d>,
) {
    let camera = cameras
        .iter()
        .find(|(c, _)| c.is_active)
        .map(|(_, t)| t.translation());
    for (te, mut terrain, gt) in &mut terrains {
        let t = &mut *terrain;
        let local_cam = camera.map_or(Vec3::ZERO, |c| gt.affine().inverse().transform_point3(c));
        let view = t.view.get_mut().unwrap_or_else(|e| e.into_inner());
        t.stats = view.update(&t.grid, local_cam);
        let s = t.stats;
        let changed = s.published > 0 || s.discarded > 0 || s.full_refresh || s.stale_dropped > 0;
        if !changed && !std::mem::take(&mut t.resync) {
            continue;
        }
        t.resync = false;
        // Entities follow the view's published state: new or replaced meshes are
        // uploaded, chunks the view dropped lose their entity.
        let mut keep: Vec<IVec3> = Vec::new();
        for (chunk, level, mesh) in view.published() {
            let Some(mesh) = mesh.filter(|m| !m.is_empty()) else {
                continue;
            };
            keep.push(chunk);
            let water = view.water(chunk).filter(|w| !w.is_empty()).cloned();
            match t.shown.get_mut(&chunk) {
                Some(sh) if Arc::ptr_eq(&sh.mesh, mesh) => {}
                Some(sh) => {
                    let h = meshes.add(chunk_mesh_to_bevy(mesh));
                    if let Ok(mut m) = handles.get_mut(sh.entity) {
                        m.0 = h;
                    }
                    commands.entity(sh.entity).insert(TerrainChunk {
                        terrain: te,
                        chunk,
                        level,
                    });
                    sh.mesh = mesh.clone();
                }
                None => {
                    let h = meshes.add(chunk_mesh_to_bevy(mesh));
                    let mut e = commands.spawn((
                        Mesh3d(h),
                        TerrainChunk {
                            terrain: te,
                            chunk,
                            level,
                        },
                        Transform::IDENTITY,
                        ChildOf(te),
                    ));
                    if let Some(m) = &materials.terrain {
                        e.insert(MeshMaterial3d(m.clone()));
                    }
                    let entity = e.id();
                    t.shown.insert(
                        chunk,
                        Shown {
                            entity,
                            mesh: mesh.clone(),
                            water: None,
                        },
                    );
                }
            }
            let sh = t.shown.get_mut(&chunk).expect("inserted above");
            let sheet = WaterSheet {
                terrain: te,
                chunk,
                material: materials.water.as_ref(),
                seconds: time.elapsed_secs(),
                waves: &waves,
            };
            sheet.show(&mut commands, &mut meshes, &mut sh.water, water);
        }
        keep.sort_unstable_by_key(|c| c.to_array());
        t.shown.retain(|c, sh| {
            let alive = keep
                .binary_search_by_key(&c.to_array(), |k| k.to_array())
                .is_ok();
            if !alive {
                commands.entity(sh.entity).despawn();
                if let Some((e, _, _)) = sh.water.take() {
                    commands.entity(e).despawn();
                }
            }
            alive
        });
    }
}

/// One chunk's water sheet as the terrain view publishes it.
struct WaterSheet<'a> {
    terrain: Entity,
    chunk: IVec3,
    material: Option<&'a Handle<StandardMaterial>>,
    seconds: f32,
    waves: &'a WaterWaves,
}

impl WaterSheet<'_> {
    /// Makes `slot` (the chunk's shown sheet) follow `water`: a new sheet is
    /// spawned in place of a replaced one, a dropped one is despawned.
    fn show(
        &self,
        commands: &mut Commands,
        meshes: &mut Assets<Mesh>,
        slot: &mut Option<(Entity, Arc<WaterMesh>, Handle<Mesh>)>,
        water: Option<Arc<WaterMesh>>,
    ) {
        match (slot.as_ref(), water) {
            (Some((_, old, _)), Some(w)) if Arc::ptr_eq(old, &w) => {}
            (_, Some(w)) => {
                let h = meshes.add(water_mesh_to_bevy(&w, self.seconds, self.waves));
                if let Some((e, _, _)) = slot.take() {
                    commands.entity(e).despawn();
                }
                let mut e = commands.spawn((
                    Mesh3d(h.clone()),
                    TerrainWater {
                        terrain: self.terrain,
                        chunk: self.chunk,
                    },
                    Transform::IDENTITY,
                    ChildOf(self.terrain),
                ));
                if let Some(m) = self.material {
                    e.insert(MeshMaterial3d(m.clone()));
                }
                *slot = Some((e.id(), w, h));
            }
            (_, None) => {
                if let Some((e, _, _)) = slot.take() {
                    commands.entity(e).despawn();
                }
            }
        }
    }
}

/// Moves every water sheet's vertices by the waves, scaled by their shore fade.
fn animate_water(
    time: Res<Time>,
    waves: Res<WaterWaves>,
    terrains: Query<&FarsightTerrain>,
    mut meshes: ResMut<Assets<Mesh>>,
) {
    let t = time.elapsed_secs();
    for terrain in &terrains {
        for sh in terrain.shown.values() {
            let Some((_, w, h)) = &sh.water else { continue };
            let Some(mut mesh) = meshes.get_mut(h) else {
                continue;
            };
            if let Some(VertexAttributeValues::Float32x3(p)) =
                mesh.attribute_mut(Mesh::ATTRIBUTE_POSITION)
            {
                *p = waved(w, t, &waves);
            }
        }
    }
}

/// Voxel terrain. Added by [`crate::FarsightPlugin`].
#[derive(Default)]
pub struct FarsightTerrainPlugin;

impl Plugin for FarsightTerrainPlugin {
    fn build(&self, app: &mut App) {
        app.add_message::<TerrainEdit>()
            .add_message::<TerrainEdited>()
            .init_resource::<WaterWaves>()
            .init_resource::<TerrainMaterials>()
            .add_systems(
                PostUpdate,
                (apply_edits, update_terrain, animate_water)
                    .chain()
                    .in_set(FarsightSet::Terrain),
            )
            .configure_sets(
                PostUpdate,
                FarsightSet::Terrain
                    .after(bevy::transform::TransformSystems::Propagate)
                    .before(FarsightSet::Mirror),
            );
        // Drawing needs the renderer; headless apps mesh and spawn all the same.
        if app.is_plugin_added::<bevy::render::RenderPlugin>() {
            embedded_asset!(app, "terrain.wgsl");
            app.add_plugins(MaterialPlugin::<TerrainMaterial>::default());
            let world = app.world_mut();
            let terrain = world
                .resource_mut::<Assets<TerrainMaterial>>()
                .add(TerrainMaterial {
                    base: StandardMaterial {
                        perceptual_roughness: 0.95,
                        ..default()
                    },
                    extension: TerrainPalette::default(),
                });
            let water = world
                .resource_mut::<Assets<StandardMaterial>>()
                .add(StandardMaterial {
                    base_color: Color::srgba(0.12, 0.35, 0.65, 0.75),
                    alpha_mode: AlphaMode::Blend,
                    perceptual_roughness: 0.1,
                    ..default()
                });
            world.insert_resource(TerrainMaterials {
                terrain: Some(terrain),
                water: Some(water),
            });
        }
    }
}
