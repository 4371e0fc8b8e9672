//! Flat object storage: one column per property, indexed by a stable `u32`.

use farsight_geom::{transform_center_extent, Aabb, CenterExtent};
use glam::{Mat4, Quat, Vec3};

use crate::lod::EntityLod;
use crate::skin::Skin;

/// Index of an object in its store; stable for the object's lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub u32);

/// "No handle": an object whose mesh or material is this is skipped by the pass.
pub const INVALID_HANDLE: u32 = u32::MAX;

/// The renderer's id for a mesh: opaque here, passed through to [`ObjectDraw`](crate::ObjectDraw).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MeshHandle(pub u32);

/// The renderer's id for a material: opaque here, passed through to the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MaterialHandle(pub u32);

impl MeshHandle {
    /// No mesh ([`INVALID_HANDLE`]): the object is not drawn.
    pub const NONE: MeshHandle = MeshHandle(INVALID_HANDLE);
}

impl MaterialHandle {
    /// No material ([`INVALID_HANDLE`]): the object is not drawn.
    pub const NONE: MaterialHandle = MaterialHandle(INVALID_HANDLE);
}

/// A local transform; the world matrix is built from it when the object has no
/// world transform of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Position, applied last.
    pub translation: Vec3,
    /// Orientation, applied after the scale.
    pub rotation: Quat,
    /// Per-axis scale, applied first.
    pub scale: Vec3,
}

impl Default for Transform {
    fn default() -> Self {
        Self {
            translation: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            scale: Vec3::ONE,
        }
    }
}

impl Transform {
    /// The affine matrix: scale, then rotation, then translation.
    #[inline]
    pub fn matrix(&self) -> Mat4 {
        Mat4::from_scale_rotation_translation(self.scale, self.rotation, self.translation)
    }
}

pub(crate) mod flags {
    pub const VISIBLE: u8 = 1;
    pub const CASTS_SHADOWS: u8 = 2;
    pub const HAS_WORLD: u8 = 4;
    pub const HAS_LOCAL: u8 = 8;
    pub const ALIVE: u8 = 16;
    /// The world matrix holds a NaN or an infinity (checked when it is written, so the
    /// per-frame pass tests a bit instead of sixteen floats).
    pub const WORLD_BAD: u8 = 32;
    /// The local transform holds a NaN or an infinity.
    pub const LOCAL_BAD: u8 = 64;
    /// The stored local bounds fail [`farsight_geom::Aabb::valid`].
    pub const BOUNDS_BAD: u8 = 128;

    #[inline]
    pub fn bit(bad: bool, flag: u8) -> u8 {
        if bad {
            flag
        } else {
            0
        }
    }
}

impl Transform {
    /// Every component finite.
    #[inline]
    pub fn is_finite(&self) -> bool {
        self.translation.is_finite() && self.rotation.is_finite() && self.scale.is_finite()
    }
}

/// Everything needed to create an object.
#[derive(Clone, Debug)]
pub struct ObjectDesc {
    /// The world matrix (local to world); when `None` it is built from `local`.
    pub world: Option<Mat4>,
    /// The local transform, used only when `world` is `None`.
    pub local: Option<Transform>,
    /// The mesh's box in its own space; the pass carries it to world space.
    pub bounds: Aabb,
    /// The mesh to draw ([`MeshHandle::NONE`] skips the object).
    pub mesh: MeshHandle,
    /// The material to draw with ([`MaterialHandle::NONE`] skips the object).
    pub material: MaterialHandle,
    /// False hides the object from every list (it keeps its LOD state).
    pub visible: bool,
    /// True puts the object among the shadow casters of the scene list.
    pub casts_shadows: bool,
    /// Levels of detail; `None` draws `mesh` at every distance.
    pub lod: Option<EntityLod>,
    /// Skinning bounds; `None` for a rigid mesh.
    pub skin: Option<Skin>,
    /// The caller's own id for the object (an ECS entity), echoed in the output.
    pub entity: u64,
}

impl ObjectDesc {
    /// A visible, shadow-casting static mesh at `world`.
    pub fn new(world: Mat4, bounds: Aabb, mesh: MeshHandle, material: MaterialHandle) -> Self {
        Self {
            world: Some(world),
            local: None,
            bounds,
            mesh,
            material,
            visible: true,
            casts_shadows: true,
            lod: None,
            skin: None,
            entity: 0,
        }
    }
}

/// The kept world box of an object whose world box fails `CenterExtent::valid`.
pub(crate) const INVALID_BOX: CenterExtent = CenterExtent {
    center: glam::Vec3A::ZERO,
    extent: glam::Vec3A::NEG_ONE,
};

/// Per-object fields read by every frame's pass, packed so they stream together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ObjectHot {
    pub(crate) flags: u8,
    pub(crate) mesh: MeshHandle,
    pub(crate) material: MaterialHandle,
    /// Index into `lods`, or `INVALID_HANDLE`.
    pub(crate) lod_slot: u32,
    /// Index into `skins`, or `INVALID_HANDLE`.
    pub(crate) skin_slot: u32,
}

/// Flat columns of every object. Slots freed by [`ObjectStore::remove`] are reused.
#[derive(Clone, Default)]
pub struct ObjectStore {
    /// The small per-object fields every frame reads, packed into one stream.
    pub(crate) hot: Vec<ObjectHot>,
    pub(crate) world: Vec<Mat4>,
    pub(crate) local: Vec<Transform>,
    pub(crate) bounds: Vec<Aabb>,
    /// With [`ObjectStore::keep_world_boxes`] on (empty otherwise): each object's
    /// world box (its local box through its world or local transform, as the pass
    /// makes it), remade by every write of a transform or bounds, so the pass reads
    /// 32 bytes instead of a 64-byte matrix and a 24-byte box and skips Arvo's
    /// transform for every object that did not move. Undefined for objects with no
    /// transform or bad data (the pass skips them by their flags).
    pub(crate) world_box: Vec<CenterExtent>,
    keep_world_boxes: bool,
    pub(crate) entity: Vec<u64>,
    pub(crate) lods: Vec<EntityLod>,
    pub(crate) lod_owner: Vec<u32>,
    pub(crate) skins: Vec<Skin>,
    free: Vec<u32>,
    free_lods: Vec<u32>,
    free_skins: Vec<u32>,
    /// Bumped when slots are reused or removed, so views know indices changed meaning.
    pub(crate) epoch: u64,
}

impl ObjectStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with room for `n` objects in its always-present columns.
    pub fn with_capacity(n: usize) -> Self {
        let mut s = Self::default();
        s.hot.reserve(n);
        s.world.reserve(n);
        s.bounds.reserve(n);
        s.entity.reserve(n);
        s
    }

    /// Room for `objects` more objects of which `with_lod` carry an LOD component,
    /// so filling a store of known size never doubles a column past what it needs.
    pub fn reserve(&mut self, objects: usize, with_lod: usize) {
        let new_objects = objects.saturating_sub(self.free.len());
        self.hot.reserve_exact(new_objects);
        self.world.reserve_exact(new_objects);
        if !self.local.is_empty() {
            self.local.reserve_exact(new_objects);
        }
        self.bounds.reserve_exact(new_objects);
        if self.keep_world_boxes {
            self.world_box.reserve_exact(new_objects);
        }
        self.entity.reserve_exact(new_objects);
        let new_lods = with_lod.saturating_sub(self.free_lods.len());
        self.lods.reserve_exact(new_lods);
        self.lod_owner.reserve_exact(new_lods);
    }

    /// Bytes the store's columns hold on the heap (capacity, not length), with each
    /// LOD component's shared authored part counted once however many objects share
    /// it. Skins are not counted.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        let mut shared: Vec<(*const crate::lod::LodShared, usize)> = self
            .lods
            .iter()
            .map(|l| (std::sync::Arc::as_ptr(&l.cold.shared), 0))
            .collect();
        shared.sort_unstable_by_key(|&(p, _)| p);
        shared.dedup_by_key(|&mut (p, _)| p);
        for l in &self.lods {
            let p = std::sync::Arc::as_ptr(&l.cold.shared);
            if let Ok(i) = shared.binary_search_by_key(&p, |&(q, _)| q) {
                shared[i].1 = l.cold.shared.heap_bytes();
            }
        }
        self.hot.capacity() * size_of::<ObjectHot>()
            + self.world.capacity() * size_of::<Mat4>()
            + self.local.capacity() * size_of::<Transform>()
            + self.bounds.capacity() * size_of::<Aabb>()
            + self.world_box.capacity() * size_of::<CenterExtent>()
            + self.entity.capacity() * size_of::<u64>()
            + self.lods.capacity() * size_of::<EntityLod>()
            + self.lod_owner.capacity() * size_of::<u32>()
            + (self.free.capacity() + self.free_lods.capacity() + self.free_skins.capacity())
                * size_of::<u32>()
            + shared.iter().map(|&(_, b)| b).sum::<usize>()
    }

    /// Number of slots (live or free): the length of every column.
    #[inline]
    pub fn len(&self) -> usize {
        self.hot.len()
    }

    /// True when the store has no slots (no object was ever inserted).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.hot.is_empty()
    }

    /// A counter bumped whenever a slot is removed or reused: a view that caches
    /// per-index data must drop it when this changes.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Adds an object, in the most recently freed slot if any (which bumps
    /// [`ObjectStore::epoch`]), else in a new slot at the end. Bad numbers (NaN
    /// matrices, invalid bounds) are stored and flagged: the pass skips the object.
    pub fn insert(&mut self, d: ObjectDesc) -> ObjectId {
        let mut f = flags::ALIVE;
        if d.visible {
            f |= flags::VISIBLE;
        }
        if d.casts_shadows {
            f |= flags::CASTS_SHADOWS;
        }
        if d.world.is_some() {
            f |= flags::HAS_WORLD;
        }
        if d.local.is_some() {
            f |= flags::HAS_LOCAL;
        }
        let lod_slot = match d.lod {
            Some(l) => self.put_lod(l),
            None => INVALID_HANDLE,
        };
        let skin_slot = match d.skin {
            Some(s) => self.put_skin(s),
            None => INVALID_HANDLE,
        };
        let world = d.world.unwrap_or(Mat4::IDENTITY);
        let local = d.local.unwrap_or_default();
        f |= flags::bit(!world.is_finite(), flags::WORLD_BAD)
            | flags::bit(!local.is_finite(), flags::LOCAL_BAD)
            | flags::bit(!d.bounds.valid(), flags::BOUNDS_BAD);
        let hot = ObjectHot {
            flags: f,
            mesh: d.mesh,
            material: d.material,
            lod_slot,
            skin_slot,
        };
        let id = match self.free.pop() {
            Some(i) => {
                let u = i as usize;
                self.hot[u] = hot;
                self.world[u] = world;
                if d.local.is_some() || !self.local.is_empty() {
                    self.local_column()[u] = local;
                }
                self.bounds[u] = d.bounds;
                self.entity[u] = d.entity;
                self.epoch += 1;
                self.refresh_box(u);
                i
            }
            None => {
                self.hot.push(hot);
                self.world.push(world);
                if d.local.is_some() || !self.local.is_empty() {
                    let u = self.hot.len() - 1;
                    self.local_column()[u] = local;
                }
                self.bounds.push(d.bounds);
                if self.keep_world_boxes {
                    self.world_box.push(CenterExtent::from_aabb(&Aabb::EMPTY));
                }
                self.entity.push(d.entity);
                let u = self.hot.len() - 1;
                self.refresh_box(u);
                u as u32
            }
        };
        if lod_slot != INVALID_HANDLE {
            self.lod_owner[lod_slot as usize] = id;
        }
        ObjectId(id)
    }

    /// Keeps every object's world box in the store (32 bytes per object), remade
    /// when a transform or bounds is written, so the per-frame pass reads it instead
    /// of the world matrix and local box and skips the box transform for objects that
    /// did not move; the pass decides bit for bit as without it. For a caller whose
    /// objects mostly stand still and whose frame time matters more than 32 bytes
    /// per object (the Bevy plugin, beside Bevy's own hundreds per entity). Off by
    /// default; turning it off frees the column.
    pub fn keep_world_boxes(&mut self, on: bool) {
        self.keep_world_boxes = on;
        if on {
            self.world_box
                .resize(self.hot.len(), CenterExtent::from_aabb(&Aabb::EMPTY));
            for u in 0..self.hot.len() {
                self.refresh_box(u);
            }
        } else {
            self.world_box = Vec::new();
        }
    }

    /// Whether the store keeps world boxes ([`ObjectStore::keep_world_boxes`]).
    pub fn keeps_world_boxes(&self) -> bool {
        self.keep_world_boxes
    }

    /// Remakes slot `u`'s world box, when kept, from its transform (the world matrix
    /// first, as the pass takes it) and its local bounds.
    fn refresh_box(&mut self, u: usize) {
        if !self.keep_world_boxes {
            return;
        }
        let f = self.hot[u].flags;
        let m = if f & flags::HAS_WORLD != 0 {
            self.world[u]
        } else if f & flags::HAS_LOCAL != 0 {
            self.local[u].matrix()
        } else {
            return;
        };
        let wb = transform_center_extent(&m, &self.bounds[u]);
        // An invalid box is kept as one with a negative extent, so the pass checks one
        // lane instead of `CenterExtent::valid` (a valid box's extent is never negative).
        self.world_box[u] = if wb.valid() { wb } else { INVALID_BOX };
    }

    /// The local-transform column, created (every slot the default transform) the
    /// first time an object has one: a store of world-placed objects never pays its
    /// 40 bytes per object. Readers index it only under `HAS_LOCAL`.
    fn local_column(&mut self) -> &mut Vec<Transform> {
        if self.local.len() < self.hot.len() {
            self.local.resize(self.hot.len(), Transform::default());
        }
        &mut self.local
    }

    fn put_skin(&mut self, s: Skin) -> u32 {
        match self.free_skins.pop() {
            Some(i) => {
                self.skins[i as usize] = s;
                i
            }
            None => {
                self.skins.push(s);
                (self.skins.len() - 1) as u32
            }
        }
    }

    fn put_lod(&mut self, l: EntityLod) -> u32 {
        match self.free_lods.pop() {
            Some(i) => {
                self.lods[i as usize] = l;
                i
            }
            None => {
                self.lods.push(l);
                self.lod_owner.push(INVALID_HANDLE);
                (self.lods.len() - 1) as u32
            }
        }
    }

    /// Frees the slot; its index may be handed to a later insert.
    pub fn remove(&mut self, id: ObjectId) {
        let u = id.0 as usize;
        if u >= self.len() || self.hot[u].flags & flags::ALIVE == 0 {
            return;
        }
        self.hot[u].flags = 0;
        if self.hot[u].lod_slot != INVALID_HANDLE {
            self.free_lods.push(self.hot[u].lod_slot);
            self.lod_owner[self.hot[u].lod_slot as usize] = INVALID_HANDLE;
            self.hot[u].lod_slot = INVALID_HANDLE;
        }
        if self.hot[u].skin_slot != INVALID_HANDLE {
            self.free_skins.push(self.hot[u].skin_slot);
            self.hot[u].skin_slot = INVALID_HANDLE;
        }
        self.free.push(id.0);
        self.epoch += 1;
    }

    /// True when `id` names a slot that holds an object (not removed).
    #[inline]
    pub fn is_alive(&self, id: ObjectId) -> bool {
        self.hot
            .get(id.0 as usize)
            .is_some_and(|h| h.flags & flags::ALIVE != 0)
    }

    /// Sets the world matrix (local to world), which takes precedence over the
    /// local transform. Panics when `id` is beyond the store.
    pub fn set_world(&mut self, id: ObjectId, m: Mat4) {
        let u = id.0 as usize;
        self.world[u] = m;
        let f = &mut self.hot[u].flags;
        *f = (*f & !flags::WORLD_BAD)
            | flags::HAS_WORLD
            | flags::bit(!m.is_finite(), flags::WORLD_BAD);
        self.refresh_box(u);
    }

    /// Sets the local transform, used while the object has no world matrix.
    pub fn set_local(&mut self, id: ObjectId, t: Transform) {
        let u = id.0 as usize;
        self.local_column()[u] = t;
        let f = &mut self.hot[u].flags;
        *f = (*f & !flags::LOCAL_BAD)
            | flags::HAS_LOCAL
            | flags::bit(!t.is_finite(), flags::LOCAL_BAD);
        self.refresh_box(u);
    }

    /// Drops the world transform so the local one is used (or none: then skipped).
    pub fn clear_world(&mut self, id: ObjectId) {
        self.hot[id.0 as usize].flags &= !flags::HAS_WORLD;
        self.refresh_box(id.0 as usize);
    }

    /// Drops the local transform; with no world matrix either, the pass skips it.
    pub fn clear_local(&mut self, id: ObjectId) {
        self.hot[id.0 as usize].flags &= !flags::HAS_LOCAL;
    }

    /// Sets the mesh's box in its own space; an invalid box makes the pass skip it.
    pub fn set_bounds(&mut self, id: ObjectId, b: Aabb) {
        let u = id.0 as usize;
        self.bounds[u] = b;
        let f = &mut self.hot[u].flags;
        *f = (*f & !flags::BOUNDS_BAD) | flags::bit(!b.valid(), flags::BOUNDS_BAD);
        self.refresh_box(u);
    }

    /// Sets the mesh drawn when the object has no LOD component.
    pub fn set_mesh(&mut self, id: ObjectId, m: MeshHandle) {
        self.hot[id.0 as usize].mesh = m;
    }

    /// Sets the material the object is drawn with.
    pub fn set_material(&mut self, id: ObjectId, m: MaterialHandle) {
        self.hot[id.0 as usize].material = m;
    }

    /// Shows or hides the object; a hidden object is in no output list.
    pub fn set_visible(&mut self, id: ObjectId, v: bool) {
        let f = &mut self.hot[id.0 as usize].flags;
        if v {
            *f |= flags::VISIBLE
        } else {
            *f &= !flags::VISIBLE
        }
    }

    /// Whether the object goes among the shadow casters of the scene list.
    pub fn set_casts_shadows(&mut self, id: ObjectId, v: bool) {
        let f = &mut self.hot[id.0 as usize].flags;
        if v {
            *f |= flags::CASTS_SHADOWS
        } else {
            *f &= !flags::CASTS_SHADOWS
        }
    }

    /// The world matrix, if the object has one (not one built from its local transform).
    pub fn world(&self, id: ObjectId) -> Option<Mat4> {
        let u = id.0 as usize;
        (self.hot[u].flags & flags::HAS_WORLD != 0).then(|| self.world[u])
    }

    /// The local transform, if the object has one.
    pub fn local(&self, id: ObjectId) -> Option<Transform> {
        let u = id.0 as usize;
        (self.hot[u].flags & flags::HAS_LOCAL != 0).then(|| self.local[u])
    }

    /// The object's own mesh (an LOD component's levels name their own).
    pub fn mesh(&self, id: ObjectId) -> MeshHandle {
        self.hot[id.0 as usize].mesh
    }

    /// The object's material.
    pub fn material(&self, id: ObjectId) -> MaterialHandle {
        self.hot[id.0 as usize].material
    }

    /// The flag [`ObjectStore::set_visible`] set (not whether the last pass drew it).
    pub fn is_visible(&self, id: ObjectId) -> bool {
        self.hot[id.0 as usize].flags & flags::VISIBLE != 0
    }

    /// The flag [`ObjectStore::set_casts_shadows`] set.
    pub fn casts_shadows(&self, id: ObjectId) -> bool {
        self.hot[id.0 as usize].flags & flags::CASTS_SHADOWS != 0
    }

    /// The mesh's box in its own space, as last set.
    pub fn bounds(&self, id: ObjectId) -> Aabb {
        self.bounds[id.0 as usize]
    }

    /// The LOD component, if the object has one.
    pub fn lod(&self, id: ObjectId) -> Option<&EntityLod> {
        let s = self.hot[id.0 as usize].lod_slot;
        (s != INVALID_HANDLE).then(|| &self.lods[s as usize])
    }

    /// Mutable LOD component, e.g. for a streamer to flip a level's residency.
    pub fn lod_mut(&mut self, id: ObjectId) -> Option<&mut EntityLod> {
        let s = self.hot[id.0 as usize].lod_slot;
        (s != INVALID_HANDLE).then(|| &mut self.lods[s as usize])
    }

    /// Every live LOD component with its object, in slot order.
    pub fn lods_mut(&mut self) -> impl Iterator<Item = (ObjectId, &mut EntityLod)> {
        self.lods
            .iter_mut()
            .zip(&self.lod_owner)
            .filter(|(_, &o)| o != INVALID_HANDLE)
            .map(|(l, &o)| (ObjectId(o), l))
    }

    /// The skinning bounds to change (e.g. each animated frame), if the object has them.
    pub fn skin_mut(&mut self, id: ObjectId) -> Option<&mut Skin> {
        let s = self.hot[id.0 as usize].skin_slot;
        (s != INVALID_HANDLE).then(|| &mut self.skins[s as usize])
    }

    /// Gives the object skinning bounds, replaces them, or (with `None`) removes them.
    pub fn set_skin(&mut self, id: ObjectId, skin: Option<Skin>) {
        let u = id.0 as usize;
        let cur = self.hot[u].skin_slot;
        match (cur != INVALID_HANDLE, skin) {
            (true, Some(s)) => self.skins[cur as usize] = s,
            (true, None) => {
                self.free_skins.push(cur);
                self.hot[u].skin_slot = INVALID_HANDLE;
            }
            (false, Some(s)) => {
                self.hot[u].skin_slot = self.put_skin(s);
            }
            (false, None) => {}
        }
    }
}
