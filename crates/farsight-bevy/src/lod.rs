//! Entity LOD and culling (seeds 000 and 002) in Bevy: a thin shell over
//! `farsight-view`. Bevy entities with a `Mesh3d` and a `GlobalTransform` are mirrored
//! into an [`ObjectStore`] through change detection, one [`VisibilitySystem::update`]
//! runs per frame for the active 3D camera, and its result is written back: `Mesh3d`
//! swapped to the chosen level, distance- and size-culled entities taken out of the
//! camera's visible list, [`FarsightLodChanged`] messages.

use std::any::TypeId;

use bevy::asset::{AssetEvent, AssetId, Assets, Handle};
use bevy::camera::primitives::{Aabb as BevyAabb, MeshAabb};
use bevy::camera::visibility::{
    InheritedVisibility, NoAutoAabb, VisibilitySystems, VisibleEntities,
};
use bevy::camera::{Camera, Camera3d, Projection};
use bevy::ecs::entity::EntityHashMap;
use bevy::light::NotShadowCaster;
use bevy::math::Mat4;
use bevy::mesh::{Mesh, Mesh3d};
use bevy::platform::collections::HashMap;
use bevy::prelude::*;
use bevy::transform::TransformSystems;
use farsight_geom::Aabb;
use farsight_view::{
    CameraId, CameraStore, EntityLod, EntityLodLevel, FrameContext, HostView, LodComponentError,
    MaterialHandle, MeshHandle, ObjectDesc, ObjectId, ObjectStore, PassStats, RenderConfig,
    Residency, Visibility as FarsightVisibility, VisibilitySystem,
};

use crate::assets::{FarsightLodChain, LodChainAsset, LodChainLoader};
use crate::{BuildingPiece, FarsightSet};

/// One level of a [`FarsightLod`]: the mesh drawn and where it stops.
#[derive(Clone, Debug, PartialEq)]
pub struct FarsightLodLevel {
    /// The mesh this level draws.
    pub mesh: Handle<Mesh>,
    /// Furthest distance this level draws at, for a 60-degree vertical field of view
    /// and bias 1 (a narrower field of view holds each level further out).
    pub max_distance: f32,
    /// Share of the viewport height at which this level takes over from the previous
    /// one, for a component that selects by screen size.
    pub screen_percentage: Option<f32>,
}

impl FarsightLodLevel {
    /// A level drawing `mesh` out to `max_distance`.
    pub fn new(mesh: Handle<Mesh>, max_distance: f32) -> Self {
        Self {
            mesh,
            max_distance,
            screen_percentage: None,
        }
    }
}

/// The LOD component: levels of `Handle<Mesh>`, near to far, selected by distance or
/// by screen size, with a per-entity bias. The plugin writes the chosen level into
/// the entity's `Mesh3d`; a level is used only while its mesh asset is loaded (the
/// nearest loaded coarser level stands in, then a finer one), so streamed meshes
/// never leave a hole.
///
/// Past the last level the last level keeps drawing: making an entity vanish is the
/// distance cull's job ([`FarsightConfig::cull_max_distance`]).
///
/// The plugin keeps the entity's `Aabb` itself: the box of the level it draws,
/// computed once per mesh asset and written with the swap (and when the drawn mesh
/// asset changes), so Bevy's frustum cull reads the drawn level's box and a swap
/// costs no bounds pass. The component requires `NoAutoAabb` (Bevy then leaves the
/// box alone) and `Aabb`; removing the component removes `NoAutoAabb` again (also if
/// you had added it yourself), and Bevy keeps the box from then on.
#[derive(Component, Clone, Debug)]
#[require(NoAutoAabb, BevyAabb)]
pub struct FarsightLod {
    levels: Vec<FarsightLodLevel>,
    /// The validated library component, cloned into the store when mirrored.
    proto: EntityLod,
}

impl FarsightLod {
    /// Refuses an empty list, levels not ordered near to far, bad distances or
    /// screen percentages, and more than [`EntityLod::MAX_LEVELS`] levels.
    pub fn new(levels: Vec<FarsightLodLevel>) -> Result<Self, LodComponentError> {
        let proto = EntityLod::new(
            levels
                .iter()
                .enumerate()
                .map(|(i, l)| EntityLodLevel {
                    screen_percentage: l.screen_percentage,
                    // Residency follows the mesh assets; set when mirrored.
                    residency: Residency::Unknown,
                    ..EntityLodLevel::new(MeshHandle(i as u32), l.max_distance, "")
                })
                .collect(),
        )?;
        Ok(Self { levels, proto })
    }

    /// Levels from `(mesh, max_distance)` pairs.
    pub fn from_ranges(
        levels: impl IntoIterator<Item = (Handle<Mesh>, f32)>,
    ) -> Result<Self, LodComponentError> {
        Self::new(
            levels
                .into_iter()
                .map(|(m, d)| FarsightLodLevel::new(m, d))
                .collect(),
        )
    }

    /// The levels of a loaded LOD chain, each to the distance the cook chose for
    /// it ([`FarsightLodChain`] does this by itself once its handle has loaded).
    pub fn from_chain(chain: &LodChainAsset) -> Result<Self, LodComponentError> {
        Self::from_ranges(
            chain
                .levels
                .iter()
                .map(|l| (l.mesh.clone(), l.max_distance)),
        )
    }

    /// Select by screen size (each level ends where the entity covers the next one's
    /// `screen_percentage` of the viewport height), optionally with the radius used
    /// instead of the bounding sphere's.
    pub fn by_screen_size(mut self, radius_override: Option<f32>) -> Self {
        self.proto = self.proto.by_screen_size(radius_override);
        self
    }

    /// Per-entity quality bias: every range scales by it.
    pub fn with_bias(mut self, bias: f32) -> Result<Self, LodComponentError> {
        self.proto = self.proto.with_bias(bias)?;
        Ok(self)
    }

    /// The levels, finest first.
    pub fn levels(&self) -> &[FarsightLodLevel] {
        &self.levels
    }
}

/// Marks the camera whose view chooses the levels (entity LOD and cluster models)
/// and farsight's distance and size culls. Levels are chosen once a frame, for one
/// view, and every camera draws them: a split screen, a minimap or a portal camera
/// sees the levels this camera chose. Without a marked active camera, entity LOD
/// keeps the active 3D camera it looked through last while it stays active (else
/// the first active one spawned), and cluster models take the active 3D camera of
/// lowest `order`. Among several marked active cameras, the lowest `order` wins.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FarsightLodCamera;

/// The marked active camera of lowest order, if any.
pub(crate) fn marked_camera<'a>(
    cameras: impl Iterator<Item = (Entity, &'a Camera, bool)>,
) -> Option<Entity> {
    cameras
        .filter(|(_, c, marked)| *marked && c.is_active)
        .min_by_key(|(_, c, _)| c.order)
        .map(|(e, ..)| e)
}

/// Two eyes' projections from the frame rendered last, on a stereo camera: screen
/// sizes then use the larger eye's reach.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct FarsightStereo(pub [Mat4; 2]);

/// The culling and LOD settings, read every frame (a live edit needs no push).
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub struct FarsightConfig {
    /// Entities whose bounding sphere projects smaller than this many pixels are not
    /// drawn by the camera; 0 disables.
    pub cull_min_pixels: f32,
    /// Entities further than this are not drawn by the camera; `<= 0` disables.
    pub cull_max_distance: f32,
    /// Viewport height for screen sizes; `None` takes the camera's physical viewport.
    pub viewport_height: Option<f32>,
    /// The level selection rules (farsight-lod's settings).
    pub lod: farsight_lod::LodConfig,
    /// With fewer entities than this, farsight's pass runs on its system's own thread;
    /// with more, on rayon's pool. Bevy's executor keeps the cores busy, so handing a
    /// few milliseconds of culling to rayon's workers costs more than it saves (the
    /// plugin bench: issue 12). Decisions are the same either way.
    pub serial_below: usize,
}

impl Default for FarsightConfig {
    fn default() -> Self {
        let r = RenderConfig::default();
        Self {
            cull_min_pixels: r.cull_min_pixels,
            cull_max_distance: r.cull_max_distance,
            viewport_height: None,
            lod: r.lod,
            serial_below: 250_000,
        }
    }
}

/// A drawn level changed on `entity` (docs/design/entity-lod.md, "Applying a level").
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FarsightLodChanged {
    /// The entity whose level changed.
    pub entity: Entity,
    /// The level it drew before (`None`: none yet).
    pub from: Option<u8>,
    /// The level it draws now.
    pub to: u8,
}

/// "Not a level": the entity's own `Mesh3d` (an entity without [`FarsightLod`]).
const OWN_MESH: u8 = u8::MAX;

/// An entity index with no object.
const NO_OBJECT: u32 = u32::MAX;

/// The mirror: farsight's stores and pass, and the maps between them and Bevy.
#[derive(Resource)]
pub struct FarsightWorld {
    store: ObjectStore,
    cameras: CameraStore,
    system: VisibilitySystem,
    frame: u64,
    /// Entity index -> object slot (`NO_OBJECT` if none); the slot's entity is
    /// compared to tell a reused index (a later generation) from the mirrored one.
    objects: Vec<u32>,
    /// Mirrored entities.
    mirrored: usize,
    /// Per object slot: its entity and the meshes whose residency it follows.
    slots: Vec<Slot>,
    /// Mesh asset -> (object, level) using it.
    users: HashMap<AssetId<Mesh>, Vec<(ObjectId, u8)>>,
    /// Local box of each loaded mesh, computed once per load: farsight's and Bevy's
    /// (the latter exactly what Bevy's `calculate_bounds` would write).
    bounds: HashMap<AssetId<Mesh>, (Aabb, BevyAabb)>,
    /// Objects whose drawn mesh asset changed since the last `apply` (its `Aabb` is
    /// remade there even when the level stays).
    stale_aabb: Vec<ObjectId>,
    camera_ids: EntityHashMap<CameraId>,
    camera_entities: Vec<Option<Entity>>,
    /// Camera entities seen this frame (reused).
    seen: Vec<Entity>,
    /// Per object slot: in the camera's visible list this frame.
    visible: Vec<bool>,
}

impl Default for FarsightWorld {
    fn default() -> Self {
        // Bevy draws: the pass decides (lists, levels, events) and writes no draw
        // columns, which are most of its memory traffic.
        let mut system = VisibilitySystem::new();
        system.set_decisions_only(true);
        // Most entities stand still: their world boxes are kept in the store (32
        // bytes each, beside Bevy's hundreds), so the pass skips the box transform.
        let mut store = ObjectStore::default();
        store.keep_world_boxes(true);
        Self {
            store,
            cameras: CameraStore::default(),
            system,
            frame: 0,
            objects: Vec::new(),
            mirrored: 0,
            slots: Vec::new(),
            users: HashMap::default(),
            bounds: HashMap::default(),
            stale_aabb: Vec::new(),
            camera_ids: EntityHashMap::default(),
            camera_entities: Vec::new(),
            seen: Vec::new(),
            visible: Vec::new(),
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Slot {
    entity: Option<Entity>,
    meshes: Vec<(AssetId<Mesh>, u8)>,
}

impl FarsightWorld {
    /// The object mirroring `entity`, if it is mirrored.
    pub fn object(&self, entity: Entity) -> Option<ObjectId> {
        let o = *self.objects.get(entity.index_u32() as usize)?;
        (o != NO_OBJECT && self.slots[o as usize].entity == Some(entity)).then_some(ObjectId(o))
    }

    /// Mirrored entities.
    pub fn len(&self) -> usize {
        self.mirrored
    }

    /// True when no entity is mirrored.
    pub fn is_empty(&self) -> bool {
        self.mirrored == 0
    }

    /// The entity an object mirrors.
    pub fn entity(&self, object: ObjectId) -> Option<Entity> {
        self.slots.get(object.0 as usize).and_then(|s| s.entity)
    }

    /// The mirrored objects, as the pass reads them.
    pub fn store(&self) -> &ObjectStore {
        &self.store
    }

    /// The last frame's result: the visible and scene lists; the per-object draw
    /// columns stay empty (Bevy draws, the pass only decides).
    pub fn visibility(&self) -> &FarsightVisibility {
        self.system.visibility()
    }

    /// The last frame's pass counters.
    pub fn stats(&self) -> PassStats {
        self.system.stats()
    }

    /// The level `entity` draws, `None` without an LOD component or before any of
    /// its levels is loaded.
    pub fn lod_level(&self, entity: Entity) -> Option<u8> {
        self.store.lod(self.object(entity)?)?.current()
    }

    /// Whether the camera draws `entity` this frame (frustum, distance, size,
    /// residency, the user's `Visibility`).
    pub fn is_visible(&self, entity: Entity) -> bool {
        self.object(entity)
            .is_some_and(|o| self.visible.get(o.0 as usize).copied().unwrap_or(false))
    }

    /// The camera entity the last pass looked through.
    pub fn camera(&self) -> Option<Entity> {
        let id = self.system.visibility().camera?;
        self.camera_entities
            .get(id.slot() as usize)
            .copied()
            .flatten()
    }

    /// The local box of a loaded mesh, farsight's and Bevy's, computed once per load.
    fn mesh_bounds(
        &mut self,
        meshes: &Assets<Mesh>,
        id: AssetId<Mesh>,
    ) -> Option<(Aabb, BevyAabb)> {
        if let Some(b) = self.bounds.get(&id) {
            return Some(*b);
        }
        let a = meshes.get(id)?.compute_aabb()?;
        let b = Aabb::new(
            (a.center - a.half_extents).into(),
            (a.center + a.half_extents).into(),
        );
        self.bounds.insert(id, (b, a));
        Some((b, a))
    }

    /// The local box of an object: its own mesh's, or the finest loaded level's.
    /// Every loaded level's box is computed here, so `apply` finds each level's.
    fn object_bounds(&mut self, meshes: &Assets<Mesh>, o: ObjectId) -> Aabb {
        let mut ids = std::mem::take(&mut self.slots[o.0 as usize].meshes);
        ids.sort_by_key(|&(_, l)| l);
        let mut finest = None;
        for &(id, _) in &ids {
            let b = self.mesh_bounds(meshes, id);
            finest = finest.or(b.map(|(b, _)| b));
        }
        self.slots[o.0 as usize].meshes = ids;
        finest.unwrap_or(Aabb::EMPTY)
    }

    fn insert(
        &mut self,
        meshes: &Assets<Mesh>,
        entity: Entity,
        mesh: &Mesh3d,
        world: Mat4,
        lod: Option<&FarsightLod>,
        visible: bool,
        casts_shadows: bool,
    ) {
        self.remove(entity);
        let mut d = ObjectDesc::new(world, Aabb::EMPTY, MeshHandle(0), MaterialHandle(0));
        d.visible = visible;
        d.casts_shadows = casts_shadows;
        d.entity = entity.to_bits();
        let mut used = Vec::new();
        match lod {
            Some(l) => {
                let mut comp = l.proto.clone();
                for (i, level) in l.levels.iter().enumerate() {
                    let resident = meshes.contains(&level.mesh);
                    comp.set_residency(i, residency(resident));
                    used.push((level.mesh.id(), i as u8));
                }
                d.lod = Some(comp);
            }
            None => used.push((mesh.id(), OWN_MESH)),
        }
        let o = self.store.insert(d);
        let k = o.0 as usize;
        if self.slots.len() <= k {
            self.slots.resize_with(k + 1, Slot::default);
        }
        for &(id, level) in &used {
            self.users.entry(id).or_default().push((o, level));
        }
        self.slots[k] = Slot {
            entity: Some(entity),
            meshes: used,
        };
        let b = self.object_bounds(meshes, o);
        self.store.set_bounds(o, b);
        let i = entity.index_u32() as usize;
        if self.objects.len() <= i {
            self.objects.resize(i + 1, NO_OBJECT);
        }
        self.objects[i] = o.0;
        self.mirrored += 1;
    }

    fn remove(&mut self, entity: Entity) {
        let Some(o) = self.object(entity) else {
            return;
        };
        self.objects[entity.index_u32() as usize] = NO_OBJECT;
        self.mirrored -= 1;
        let slot = std::mem::take(&mut self.slots[o.0 as usize]);
        for (id, _) in slot.meshes {
            if let Some(u) = self.users.get_mut(&id) {
                u.retain(|&(obj, _)| obj != o);
                if u.is_empty() {
                    self.users.remove(&id);
                }
            }
        }
        self.store.remove(o);
    }

    /// A mesh asset appeared, changed or went away: residency and boxes of its users.
    fn mesh_changed(&mut self, meshes: &Assets<Mesh>, id: AssetId<Mesh>) {
        self.bounds.remove(&id);
        let Some(users) = self.users.get(&id) else {
            return;
        };
        let resident = meshes.contains(id);
        let users = users.clone();
        for (o, level) in users {
            if level != OWN_MESH {
                if let Some(l) = self.store.lod_mut(o) {
                    l.set_residency(level as usize, residency(resident));
                    if l.current() == Some(level) {
                        self.stale_aabb.push(o);
                    }
                }
            }
            let b = self.object_bounds(meshes, o);
            self.store.set_bounds(o, b);
        }
    }

    /// Mirrors the 3D cameras; returns the stereo eyes and viewport height of the
    /// camera the resolver will hold.
    fn sync_cameras<'a>(
        &mut self,
        cameras: impl Iterator<
            Item = (
                Entity,
                &'a Camera,
                &'a GlobalTransform,
                &'a Projection,
                Option<&'a FarsightStereo>,
            ),
        >,
    ) {
        self.seen.clear();
        for (e, cam, gt, proj, _) in cameras {
            self.seen.push(e);
            let Some(projection) = convert_projection(proj) else {
                continue;
            };
            let mut c = farsight_view::Camera::new(projection, gt.to_matrix());
            c.active = cam.is_active;
            match self.camera_ids.get(&e) {
                Some(&id) => {
                    if let Some(slot) = self.cameras.get_mut(id) {
                        *slot = c;
                    }
                }
                None => {
                    let id = self.cameras.insert(c);
                    self.camera_ids.insert(e, id);
                    let k = id.slot() as usize;
                    if self.camera_entities.len() <= k {
                        self.camera_entities.resize(k + 1, None);
                    }
                    self.camera_entities[k] = Some(e);
                }
            }
        }
        let seen = &self.seen;
        let cameras = &mut self.cameras;
        let entities = &mut self.camera_entities;
        self.camera_ids.retain(|e, id| {
            let keep = seen.contains(e);
            if !keep {
                cameras.remove(*id);
                entities[id.slot() as usize] = None;
            }
            keep
        });
    }
}

fn residency(resident: bool) -> Residency {
    if resident {
        Residency::Resident
    } else {
        Residency::NotResident
    }
}

/// Bevy's projection as farsight's (right-handed, depth in `[0, 1]`; the frustum is
/// the same six planes Bevy's own cull uses). A custom projection is not mirrored.
fn convert_projection(p: &Projection) -> Option<farsight_view::Projection> {
    match p {
        Projection::Perspective(p) => Some(farsight_view::Projection::Perspective {
            fov_y: p.fov,
            aspect: p.aspect_ratio,
            near: p.near,
            far: p.far,
        }),
        Projection::Orthographic(o) => Some(farsight_view::Projection::Orthographic {
            half_height: o.area.height() * 0.5,
            aspect: o.area.width() / o.area.height().max(f32::MIN_POSITIVE),
            near: o.near,
            far: o.far,
        }),
        Projection::Custom(_) => None,
    }
}

type NewObject = (
    Entity,
    &'static Mesh3d,
    &'static GlobalTransform,
    Option<&'static FarsightLod>,
    Option<&'static InheritedVisibility>,
    Has<NotShadowCaster>,
);

type NewObjectItem<'a> = (
    Entity,
    &'a Mesh3d,
    &'a GlobalTransform,
    Option<&'a FarsightLod>,
    Option<&'a InheritedVisibility>,
    bool,
);

/// What one scan of the changed entities reads.
type Changes = (
    Entity,
    Ref<'static, Mesh3d>,
    Ref<'static, GlobalTransform>,
    Option<Ref<'static, FarsightLod>>,
    Option<Ref<'static, InheritedVisibility>>,
    Option<Ref<'static, NotShadowCaster>>,
);

/// Mirrors what changed since the last frame: removals, additions (and entities whose
/// LOD component was added, replaced or removed), moves, visibility, mesh swaps by
/// the user, and mesh assets that loaded or went away. One scan of the entities whose
/// mesh, transform, LOD component, shadow flag or visibility changed: Bevy's change
/// ticks, read once per entity, no other walk of unchanged entities.
#[allow(clippy::type_complexity)]
fn mirror(
    mut commands: Commands,
    mut fw: ResMut<FarsightWorld>,
    meshes: Res<Assets<Mesh>>,
    mut mesh_events: MessageReader<AssetEvent<Mesh>>,
    mut removed_mesh: RemovedComponents<Mesh3d>,
    mut removed_transform: RemovedComponents<GlobalTransform>,
    mut removed_lod: RemovedComponents<FarsightLod>,
    all: Query<NewObject, Without<BuildingPiece>>,
    changed: Query<
        Changes,
        (
            Or<(
                Changed<Mesh3d>,
                Changed<GlobalTransform>,
                Changed<FarsightLod>,
                Changed<NotShadowCaster>,
                Changed<InheritedVisibility>,
            )>,
            Without<BuildingPiece>,
        ),
    >,
    mut removed_caster: RemovedComponents<NotShadowCaster>,
) {
    let fw = &mut *fw;
    for e in removed_mesh.read().chain(removed_transform.read()) {
        fw.remove(e);
    }
    let insert = |fw: &mut FarsightWorld, (e, m, gt, lod, vis, no_shadow): NewObjectItem| {
        let visible = vis.is_none_or(|v| v.get());
        fw.insert(&meshes, e, m, gt.to_matrix(), lod, visible, !no_shadow);
    };
    for e in removed_lod.read() {
        if let Ok(item) = all.get(e) {
            // Bevy keeps the box again (the drawn level's, which stays in `Mesh3d`).
            commands.entity(e).try_remove::<NoAutoAabb>();
            insert(fw, item);
        }
    }
    for e in removed_caster.read() {
        if let Ok(item) = all.get(e) {
            insert(fw, item);
        }
    }
    for (e, mesh, gt, lod, vis, no_shadow) in &changed {
        let new = mesh.is_added()
            || gt.is_added()
            || lod.as_ref().is_some_and(|l| l.is_changed())
            || no_shadow.as_ref().is_some_and(|n| n.is_changed());
        let Some(o) = fw.object(e).filter(|_| !new) else {
            // New, or its LOD component or shadow flag changed: mirrored afresh.
            let lod = lod.as_deref();
            let vis = vis.as_deref();
            insert(fw, (e, &mesh, &gt, lod, vis, no_shadow.is_some()));
            continue;
        };
        if gt.is_changed() {
            fw.store.set_world(o, gt.to_matrix());
        }
        if let Some(v) = vis.as_ref().filter(|v| v.is_changed()) {
            fw.store.set_visible(o, v.get());
        }
        // A mesh the user swapped on an entity without LOD (with LOD, the plugin
        // writes `Mesh3d` itself).
        if lod.is_none() && mesh.is_changed() {
            let old = fw.slots[o.0 as usize].meshes.first().map(|&(id, _)| id);
            if old != Some(mesh.id()) {
                let vis = vis.as_deref();
                insert(fw, (e, &mesh, &gt, None, vis, no_shadow.is_some()));
            }
        }
    }
    for ev in mesh_events.read() {
        match *ev {
            AssetEvent::Added { id }
            | AssetEvent::Modified { id }
            | AssetEvent::Removed { id }
            | AssetEvent::LoadedWithDependencies { id } => fw.mesh_changed(&meshes, id),
            AssetEvent::Unused { .. } => {}
        }
    }
}

/// Runs farsight's pass for one camera: the marked [`FarsightLodCamera`], else the
/// active 3D camera the resolver holds.
#[allow(clippy::type_complexity)]
fn pass(
    mut fw: ResMut<FarsightWorld>,
    settings: Res<FarsightConfig>,
    cameras: Query<
        (
            Entity,
            &Camera,
            &GlobalTransform,
            &Projection,
            Option<&FarsightStereo>,
        ),
        With<Camera3d>,
    >,
    marked: Query<(Entity, &Camera, Has<FarsightLodCamera>), With<Camera3d>>,
) {
    let fw = &mut *fw;
    fw.sync_cameras(cameras.iter());
    // A marked camera is looked through as the host's view; otherwise the camera the
    // resolver will hold: the held one if still usable, else the lowest active slot.
    // Its viewport and stereo eyes feed this frame.
    let marked_id = marked_camera(marked.iter())
        .and_then(|e| fw.camera_ids.get(&e).copied())
        .filter(|id| fw.cameras.get(*id).is_some_and(|c| c.active));
    let host = marked_id.map(HostView::Through);
    let held = marked_id
        .or_else(|| {
            fw.system
                .resolver()
                .held()
                .filter(|id| fw.cameras.get(*id).is_some_and(|c| c.active))
        })
        .or_else(|| {
            fw.cameras
                .ids()
                .find(|id| fw.cameras.get(*id).is_some_and(|c| c.active))
        });
    let bevy_cam = held
        .and_then(|id| fw.camera_entities[id.slot() as usize])
        .and_then(|e| cameras.get(e).ok());
    let viewport_height = settings
        .viewport_height
        .or_else(|| bevy_cam.and_then(|(_, c, ..)| c.physical_viewport_size().map(|s| s.y as f32)))
        .unwrap_or(RenderConfig::default().viewport_height);
    let rs = RenderConfig {
        cull_min_pixels: settings.cull_min_pixels,
        cull_max_distance: settings.cull_max_distance,
        viewport_height,
        lod: settings.lod,
    };
    fw.frame += 1;
    let ctx = FrameContext {
        frame: fw.frame,
        host_view: host.as_ref(),
        cameras: &fw.cameras,
        world_epoch: 0,
        settings: &rs,
        stereo_eyes: bevy_cam.and_then(|(.., s)| s.map(|s| s.0)),
    };
    fw.system.set_serial_below(settings.serial_below);
    fw.system.update(&mut fw.store, &ctx);
    let n = fw.store.len();
    fw.visible.clear();
    fw.visible.resize(n, false);
    for &i in &fw.system.visibility().objects.visible {
        fw.visible[i as usize] = true;
    }
}

/// Writes the chosen levels into `Mesh3d` and their boxes into `Aabb`, and sends
/// [`FarsightLodChanged`].
fn apply(
    mut fw: ResMut<FarsightWorld>,
    meshes: Res<Assets<Mesh>>,
    mut q: Query<(&mut Mesh3d, &FarsightLod, Option<&mut BevyAabb>), With<NoAutoAabb>>,
    mut out: MessageWriter<FarsightLodChanged>,
) {
    let fw = &mut *fw;
    // The box of the level an entity draws, into its `Aabb` (written only when it
    // differs, so Bevy's change detection sees only real changes).
    let keep_box = |fw: &mut FarsightWorld, aabb: Option<Mut<BevyAabb>>, id| {
        if let (Some(mut aabb), Some((_, b))) = (aabb, fw.mesh_bounds(&meshes, id)) {
            if *aabb != b {
                *aabb = b;
            }
        }
    };
    for k in 0..fw.system.lod_events().len() {
        let ev = fw.system.lod_events()[k];
        let Some(entity) = fw.entity(ev.object) else {
            continue;
        };
        let Ok((mut mesh, lod, aabb)) = q.get_mut(entity) else {
            continue;
        };
        let h = &lod.levels[ev.to as usize].mesh;
        if mesh.0 != *h {
            mesh.0 = h.clone();
        }
        keep_box(fw, aabb, h.id());
        out.write(FarsightLodChanged {
            entity,
            from: ev.from,
            to: ev.to,
        });
    }
    // A drawn level's mesh asset changed in place: its box again.
    for k in 0..fw.stale_aabb.len() {
        let o = fw.stale_aabb[k];
        let (Some(entity), Some(level)) = (fw.entity(o), fw.store.lod(o).and_then(|l| l.current()))
        else {
            continue;
        };
        let Ok((_, lod, aabb)) = q.get_mut(entity) else {
            continue;
        };
        keep_box(fw, aabb, lod.levels[level as usize].mesh.id());
    }
    fw.stale_aabb.clear();
    // Entities whose level did not change but whose Mesh3d a user overwrote keep
    // the user's mesh until the next change: the component is the user's to edit.
}

/// Takes the entities farsight culled (distance, size, nothing resident) out of the
/// camera's visible list after Bevy's frustum cull filled it. Shadow views keep their
/// own lists: a caster the camera does not draw still casts (the scene list of docs/design/visibility-pass.md).
fn restrict_visible(fw: Res<FarsightWorld>, mut views: Query<&mut VisibleEntities>) {
    let Some(cam) = fw.camera() else { return };
    let Ok(mut ve) = views.get_mut(cam) else {
        return;
    };
    let list = ve.get_mut(TypeId::of::<Mesh3d>());
    list.retain(|&e| match fw.object(e) {
        Some(o) => fw.visible.get(o.0 as usize).copied().unwrap_or(false),
        None => true,
    });
}

/// The child entities drawing a [`FarsightLodChain`]'s materials, one per
/// [`LodChainPart`](crate::LodChainPart) (added by the plugin to a chain of
/// several materials that the user gave no material of their own).
#[derive(Component, Clone, Debug, Default, PartialEq)]
pub struct FarsightLodChainParts(pub Vec<Entity>);

/// What [`attach_chains`] looks at on a chain entity.
type ChainQuery<'a> = (
    Entity,
    &'a FarsightLodChain,
    Has<Mesh3d>,
    Has<MeshMaterial3d<StandardMaterial>>,
    Option<&'a FarsightLodChainParts>,
);

/// A [`ChainQuery`] row.
type ChainEntity<'a> = (
    Entity,
    &'a FarsightLodChain,
    bool,
    bool,
    Option<&'a FarsightLodChainParts>,
);

/// Gives each [`FarsightLodChain`] entity its chain's look once the chain has
/// loaded (and again when it is reloaded):
///
/// - an entity with a `StandardMaterial` of the user's gets the [`FarsightLod`] of
///   the chain's merged levels and keeps its material;
/// - otherwise a chain of one material gets those levels and the file's material;
/// - a chain of several gets one child per material, each with the
///   [`FarsightLod`] of that material's levels and the file's material
///   ([`FarsightLodChainParts`] lists them).
///
/// A `Mesh3d` of the finest level is added where the entity has none. Only new or
/// changed chain entities are looked at, and all of them only in a frame a chain
/// loaded.
///
/// Only a `StandardMaterial` counts as the user's own: give a chain entity of
/// several file materials another kind of material and it is split all the same.
fn attach_chains(
    mut commands: Commands,
    chains: Res<Assets<LodChainAsset>>,
    mut events: MessageReader<AssetEvent<LodChainAsset>>,
    changed: Query<ChainQuery<'_>, Changed<FarsightLodChain>>,
    all: Query<ChainQuery<'_>>,
) {
    let mut attach = |(e, chain, has_mesh, has_material, old_parts): ChainEntity<'_>| {
        let Some(asset) = chains.get(&chain.0) else {
            return;
        };
        if let Some(old) = old_parts {
            for &child in &old.0 {
                commands.entity(child).despawn();
            }
            commands.entity(e).remove::<FarsightLodChainParts>();
        }
        let lod = |levels: &[crate::LodChainLevel]| {
            FarsightLod::from_ranges(levels.iter().map(|l| (l.mesh.clone(), l.max_distance)))
        };
        let file_materials = asset.parts.iter().filter(|p| p.material.is_some()).count();
        if has_material || file_materials == 0 || asset.parts.len() == 1 {
            match lod(&asset.levels) {
                Ok(lod) => {
                    let mut ec = commands.entity(e);
                    if !has_mesh {
                        ec.insert(Mesh3d(lod.levels[0].mesh.clone()));
                    }
                    let material = asset.parts.first().and_then(|p| p.material.clone());
                    if let (false, Some(m)) = (has_material, material) {
                        ec.insert(MeshMaterial3d(m));
                    }
                    ec.insert(lod);
                }
                Err(err) => error!("LOD chain {:?} not drawn: {err}", asset.name),
            }
            return;
        }
        let mut children = Vec::with_capacity(asset.parts.len());
        for part in &asset.parts {
            match lod(&part.levels) {
                Ok(lod) => {
                    let mut child = commands.spawn((Mesh3d(lod.levels[0].mesh.clone()), lod));
                    if let Some(m) = &part.material {
                        child.insert(MeshMaterial3d(m.clone()));
                    }
                    children.push(child.id());
                }
                Err(err) => error!(
                    "LOD chain {:?}, material {:?} not drawn: {err}",
                    asset.name, part.material_name
                ),
            }
        }
        commands
            .entity(e)
            .remove::<(FarsightLod, Mesh3d)>()
            .add_children(&children)
            .insert(FarsightLodChainParts(children));
    };
    changed.iter().for_each(&mut attach);
    for ev in events.read() {
        // `Added`, not `LoadedWithDependencies`: the chain's meshes are part of its
        // own load, and its textures (dependencies) bind whenever they arrive, or
        // never where one fails (a missing file, no image loader in the app).
        if let AssetEvent::Added { id } | AssetEvent::Modified { id } = *ev {
            all.iter()
                .filter(|(_, c, ..)| c.0.id() == id)
                .for_each(&mut attach);
        }
    }
}

/// Entity LOD and culling. Added by [`crate::FarsightPlugin`].
#[derive(Default)]
pub struct FarsightLodPlugin;

impl Plugin for FarsightLodPlugin {
    fn build(&self, app: &mut App) {
        app.init_asset::<LodChainAsset>()
            .register_asset_loader(LodChainLoader)
            .init_resource::<FarsightWorld>()
            .init_resource::<FarsightConfig>()
            .add_message::<FarsightLodChanged>()
            .configure_sets(
                PostUpdate,
                (FarsightSet::Mirror, FarsightSet::Pass, FarsightSet::Apply)
                    .chain()
                    .after(TransformSystems::Propagate)
                    .after(VisibilitySystems::VisibilityPropagate)
                    .before(VisibilitySystems::CalculateBounds),
            )
            .configure_sets(
                PostUpdate,
                FarsightSet::Restrict
                    .after(FarsightSet::Apply)
                    .after(VisibilitySystems::CheckVisibility)
                    .before(VisibilitySystems::MarkNewlyHiddenEntitiesInvisible),
            )
            .add_systems(
                PostUpdate,
                (
                    attach_chains.before(FarsightSet::Mirror),
                    mirror.in_set(FarsightSet::Mirror),
                    pass.in_set(FarsightSet::Pass),
                    apply.in_set(FarsightSet::Apply),
                    restrict_visible.in_set(FarsightSet::Restrict),
                ),
            );
    }
}
