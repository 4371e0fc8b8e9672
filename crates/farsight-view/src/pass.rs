//! The per-frame pass: view, parallel cull with LOD inside, gather, LOD apply.

use farsight_geom::{transform_center_extent, Aabb, CenterExtent, Frustum};
use farsight_lod::{resolve_resident, LodConfig, LodSelector, LodThrottle, Reach};
use glam::{Mat4, Vec3A};
use rayon::prelude::*;

use crate::camera::{CameraStore, HostView, ResolvedView, ViewResolver};
use crate::lod::{EntityLod, LodChanged};
use crate::objects::{flags, ObjectId, ObjectStore, INVALID_HANDLE};
use crate::output::{FadeDraw, ObjectDraw, Visibility};
use crate::skin::Skin;

/// Objects per parallel work item: large enough to amortise scheduling, small enough
/// to balance two to sixteen workers at 10k objects.
const CHUNK: usize = 1024;

/// The culling and LOD settings: the engine's one copy, read live each frame through
/// [`FrameContext::settings`]; the system keeps none of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderConfig {
    /// Objects whose bounding sphere projects smaller than this many pixels are
    /// culled; 0 disables.
    pub cull_min_pixels: f32,
    /// Objects whose box centre is further than this are culled; `<= 0` disables.
    pub cull_max_distance: f32,
    /// Viewport height in pixels, for the screen-size cull.
    pub viewport_height: f32,
    /// Bias, hysteresis, full-pass throttle and fades of the entity LOD.
    pub lod: LodConfig,
}

impl Default for RenderConfig {
    fn default() -> Self {
        Self {
            cull_min_pixels: 0.0,
            cull_max_distance: 0.0,
            viewport_height: 1080.0,
            lod: LodConfig::default(),
        }
    }
}

/// Everything a frame hands the pass.
#[derive(Clone, Copy)]
pub struct FrameContext<'a> {
    /// Monotonic frame number: poses stamped with another frame are ignored.
    pub frame: u64,
    /// A host's view, offered on the frames it has one.
    pub host_view: Option<&'a HostView>,
    /// The scene cameras the view is resolved from when no host view is offered.
    pub cameras: &'a CameraStore,
    /// Changes when the world is replaced: the held camera is looked up again.
    pub world_epoch: u64,
    /// The live culling and LOD settings.
    pub settings: &'a RenderConfig,
    /// Stereo: the two eyes' projections from the frame rendered last.
    pub stereo_eyes: Option<[Mat4; 2]>,
}

/// Counters of the last update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    /// Slots in the store.
    pub objects: u32,
    /// Objects drawn by some pass (valid, visible flag set, something resident).
    pub drawn: u32,
    /// Objects in the camera's visible list (passed every cull).
    pub visible: u32,
    /// Shadow casters at the head of the scene list.
    pub casters: u32,
    /// Objects skipped for bad data: no mesh or material, no transform, non-finite
    /// transform, degenerate or non-finite bounds.
    pub invalid: u32,
    /// Objects with an LOD component and no level resident yet.
    pub nothing_resident: u32,
    /// Whether the throttled full LOD pass ran this frame.
    pub lod_pass: bool,
    /// Objects whose drawn level changed (the number of LOD events).
    pub lod_switches: u32,
    /// Objects drawing a fallback level because the desired one is not resident.
    pub lod_fallbacks: u32,
}

const DRAWN: u8 = 1;
const CASTS: u8 = 2;
const VISIBLE: u8 = 4;

/// An LOD result of the cull that differs from the component's state, applied
/// serially afterwards.
#[derive(Clone, Copy, Debug, Default)]
struct LodOut {
    object: u32,
    desired: u8,
    level: u8,
    fallback: bool,
}

/// Per-chunk lists, filled in parallel and concatenated in chunk order.
#[derive(Default)]
struct ChunkLists {
    visible: Vec<u32>,
    casters: Vec<u32>,
    others: Vec<u32>,
    lod_changed: Vec<LodOut>,
    invalid: u32,
    nothing_resident: u32,
    fallbacks: u32,
}

impl ChunkLists {
    fn clear(&mut self) {
        self.visible.clear();
        self.casters.clear();
        self.others.clear();
        self.lod_changed.clear();
        self.invalid = 0;
        self.nothing_resident = 0;
        self.fallbacks = 0;
    }
}

/// The per-frame view parameters, pre-squared for the sqrt-free tests.
struct Cull {
    frustum: Frustum,
    camera: Vec3A,
    /// The camera in scene-root space, for LOD distances.
    lod_camera: Vec3A,
    root_moved: bool,
    max_distance_sq: f32,
    /// `p11 * viewport_height`, squared.
    size_k_sq: f32,
    min_pixels_sq: f32,
    orthographic: bool,
    selector: LodSelector,
    lod_pass: bool,
    frame: u64,
    /// The store keeps world boxes ([`ObjectStore::keep_world_boxes`]).
    kept_boxes: bool,
}

/// The read-only inputs of one chunk.
struct Inputs<'a> {
    store: &'a ObjectStore,
}

/// The visibility system: owns the result and every buffer, reused across frames.
#[derive(Default)]
pub struct VisibilitySystem {
    resolver: ViewResolver,
    throttle: LodThrottle,
    /// The scene root's local-to-world transform (identity by default).
    scene_root: Mat4,
    vis: Visibility,
    chunks: Vec<ChunkLists>,
    events: Vec<LodChanged>,
    fading: Vec<u32>,
    stats: PassStats,
    /// Skip the per-object columns (see [`VisibilitySystem::set_decisions_only`]).
    decisions_only: bool,
    /// Below this many objects the chunks run on the calling thread (see
    /// [`VisibilitySystem::set_serial_below`]).
    serial_below: usize,
}

impl VisibilitySystem {
    /// A system with empty buffers, no camera held and an identity scene root.
    pub fn new() -> Self {
        Self::default()
    }

    /// The result of the last [`VisibilitySystem::update`].
    pub fn visibility(&self) -> &Visibility {
        &self.vis
    }

    /// Decisions only: the pass still culls, chooses and applies levels, and fills
    /// the visible and scene lists, the stats and the LOD events, bit for bit as
    /// otherwise, but leaves the per-object columns of [`RenderObjects`] (models,
    /// bounds, draws, skin, entities, levels) empty. For a caller that draws through
    /// its own engine (the Bevy plugin) and reads only the decisions: the columns are
    /// most of the pass's memory writes. Off by default.
    ///
    /// [`RenderObjects`]: crate::RenderObjects
    pub fn set_decisions_only(&mut self, on: bool) {
        self.decisions_only = on;
    }

    /// Runs the pass's chunks on the calling thread, in storage order, when the store
    /// holds fewer than `objects` objects; at or above it they run on the current rayon
    /// pool. The result is bit for bit the same either way. For a caller whose own
    /// scheduler keeps the cores busy (an engine's task pool), where handing a few
    /// milliseconds of work to rayon's workers costs more than it saves. 0 (the
    /// default): always on the pool.
    pub fn set_serial_below(&mut self, objects: usize) {
        self.serial_below = objects;
    }

    /// The counters of the last update.
    pub fn stats(&self) -> PassStats {
        self.stats
    }

    /// LOD changes of the last update, in object order.
    pub fn lod_events(&self) -> &[LodChanged] {
        &self.events
    }

    /// The view resolver, to ask which camera is held.
    pub fn resolver(&self) -> &ViewResolver {
        &self.resolver
    }

    /// The scene root's local-to-world transform (docs/design/entity-lod.md#the-camera-every-rule-measures-from), kept until changed.
    /// Entity LOD distances and the throttle's displacement measure the camera in root
    /// space ([`farsight_lod::effective_camera_position`]), as tile streaming does; the
    /// culls keep the world-space view.
    pub fn set_scene_root(&mut self, scene_root: Mat4) {
        self.scene_root = scene_root;
    }

    /// The scene root's local-to-world transform last set (identity by default).
    pub fn scene_root(&self) -> Mat4 {
        self.scene_root
    }

    /// Runs the frame. Uses the current rayon pool: wrap the call in
    /// `pool.install(..)` to choose the thread count. The result is identical
    /// whatever the thread count.
    pub fn update(&mut self, store: &mut ObjectStore, ctx: &FrameContext<'_>) -> &Visibility {
        let n = store.len();
        self.begin_frame(n);
        let Some(view) = self
            .resolver
            .resolve(ctx.host_view, ctx.cameras, ctx.world_epoch)
        else {
            self.vis.has_camera = false;
            self.vis.camera = None;
            return &self.vis;
        };
        self.take_view(&view);
        let cull = self.cull_for(&view, store, ctx);
        let nchunks = n.div_ceil(CHUNK);
        if self.chunks.len() < nchunks {
            self.chunks.resize_with(nchunks, ChunkLists::default);
        }
        self.cull_chunks(store, &cull, n, nchunks);
        self.gather(nchunks);
        let lod = &ctx.settings.lod;
        self.apply_lod_changes(store, nchunks, lod.enable_fade_transitions);
        self.advance_fades(store, lod);
        &self.vis
    }

    /// Clears the last frame's events, stats and lists (keeping their capacity).
    #[inline]
    fn begin_frame(&mut self, n: usize) {
        self.events.clear();
        self.stats = PassStats {
            objects: n as u32,
            ..Default::default()
        };
        let o = &mut self.vis.objects;
        o.visible.clear();
        o.scene.clear();
        o.fades.clear();
        o.caster_count = 0;
    }

    /// Records the resolved view in the output.
    #[inline]
    fn take_view(&mut self, view: &ResolvedView) {
        self.vis.has_camera = true;
        self.vis.camera = view.camera;
        self.vis.view = view.view;
        self.vis.projection = view.projection;
        self.vis.camera_position = view.position;
        self.vis.focus_distance = view.focus_distance;
        self.vis.dof_amount = view.dof_amount;
        self.vis.dof_max_blur = view.dof_max_blur;
    }

    /// The frame's cull inputs: the frustum, the distance and screen-size limits,
    /// and the LOD selector, with whether the throttle lets LOD run this frame.
    #[inline]
    fn cull_for(
        &mut self,
        view: &ResolvedView,
        store: &ObjectStore,
        ctx: &FrameContext<'_>,
    ) -> Cull {
        let settings = ctx.settings;
        let lod = &settings.lod;
        let lod_camera = farsight_lod::effective_camera_position(view.position, &self.scene_root);
        let lod_pass = self.throttle.should_run(
            lod_camera,
            lod.update_frame_interval,
            lod.min_camera_displacement,
        );
        self.stats.lod_pass = lod_pass;
        let reach = match ctx.stereo_eyes {
            Some([a, b]) => Reach::stereo(&a, &b),
            None => Reach::from_projection(&view.projection),
        };
        let p11 = farsight_geom::p11(&view.projection);
        let size_k = p11 * settings.viewport_height;
        Cull {
            frustum: Frustum::from_view_projection(&(view.projection * view.view)),
            camera: view.position.into(),
            lod_camera: lod_camera.into(),
            root_moved: lod_camera != view.position,
            max_distance_sq: if settings.cull_max_distance > 0.0 {
                settings.cull_max_distance * settings.cull_max_distance
            } else {
                f32::INFINITY
            },
            size_k_sq: size_k * size_k,
            min_pixels_sq: settings.cull_min_pixels.max(0.0).powi(2),
            orthographic: farsight_geom::is_orthographic(&view.projection),
            selector: LodSelector::new(&view.projection, reach, lod),
            lod_pass,
            frame: ctx.frame,
            kept_boxes: store.keeps_world_boxes(),
        }
    }

    /// Culls every chunk, on this thread below the serial threshold and on the
    /// rayon pool above it; in decisions-only mode no column is written.
    #[inline]
    fn cull_chunks(&mut self, store: &ObjectStore, cull: &Cull, n: usize, nchunks: usize) {
        let o = &mut self.vis.objects;
        let serial = n < self.serial_below;
        let inputs = Inputs { store };
        if self.decisions_only {
            o.models.clear();
            o.bounds.clear();
            o.draws.clear();
            o.skin_first.clear();
            o.entities.clear();
            o.lod_level.clear();
            let run = |(ci, lists): (usize, &mut ChunkLists)| {
                let len = CHUNK.min(n - ci * CHUNK);
                cull_chunk(&inputs, cull, ci * CHUNK, len, &mut Discard, lists);
            };
            if serial {
                self.chunks[..nchunks].iter_mut().enumerate().for_each(run);
            } else {
                self.chunks[..nchunks]
                    .par_iter_mut()
                    .enumerate()
                    .for_each(run);
            }
            return;
        }
        // Resize, never reallocate in steady state.
        o.models.resize(n, Mat4::IDENTITY);
        o.bounds.resize(n, Aabb::EMPTY);
        o.draws.resize(n, ObjectDraw::default());
        o.skin_first.resize(n, 0);
        o.entities.resize(n, 0);
        o.lod_level.resize(n, u8::MAX);
        if serial {
            for (ci, lists) in self.chunks[..nchunks].iter_mut().enumerate() {
                let r = ci * CHUNK..(ci * CHUNK + CHUNK).min(n);
                let mut columns = Columns {
                    models: &mut o.models[r.clone()],
                    bounds: &mut o.bounds[r.clone()],
                    draws: &mut o.draws[r.clone()],
                    skin_first: &mut o.skin_first[r.clone()],
                    entities: &mut o.entities[r.clone()],
                    lod_level: &mut o.lod_level[r.clone()],
                };
                cull_chunk(&inputs, cull, r.start, r.len(), &mut columns, lists);
            }
            return;
        }
        (
            o.models.par_chunks_mut(CHUNK),
            o.bounds.par_chunks_mut(CHUNK),
            o.draws.par_chunks_mut(CHUNK),
            o.skin_first.par_chunks_mut(CHUNK),
            o.entities.par_chunks_mut(CHUNK),
            o.lod_level.par_chunks_mut(CHUNK),
            self.chunks[..nchunks].par_iter_mut(),
        )
            .into_par_iter()
            .enumerate()
            .for_each(
                |(ci, (models, bounds, draws, skin_first, entities, lod_level, lists))| {
                    let len = models.len();
                    let mut columns = Columns {
                        models,
                        bounds,
                        draws,
                        skin_first,
                        entities,
                        lod_level,
                    };
                    cull_chunk(&inputs, cull, ci * CHUNK, len, &mut columns, lists);
                },
            );
    }

    /// Serial gather, in storage order: the visible list, then the scene list with
    /// every chunk's casters before any chunk's non-casters; the chunks' counts
    /// summed into the stats.
    #[inline]
    fn gather(&mut self, nchunks: usize) {
        let o = &mut self.vis.objects;
        let chunks = &self.chunks[..nchunks];
        for c in chunks {
            o.visible.extend_from_slice(&c.visible);
            o.scene.extend_from_slice(&c.casters);
            self.stats.invalid += c.invalid;
            self.stats.nothing_resident += c.nothing_resident;
            self.stats.lod_fallbacks += c.fallbacks;
        }
        o.caster_count = o.scene.len() as u32;
        for c in chunks {
            o.scene.extend_from_slice(&c.others);
        }
        self.stats.visible = o.visible.len() as u32;
        self.stats.casters = o.caster_count;
        self.stats.drawn = o.scene.len() as u32;
    }

    /// Applies LOD changes: only objects whose resolved level, desired level or
    /// fallback flag moved reach here (the no-change fast path). A switch is an
    /// event; one that starts a fade adds the object to the fading list.
    #[inline]
    fn apply_lod_changes(&mut self, store: &mut ObjectStore, nchunks: usize, fade: bool) {
        for c in &self.chunks[..nchunks] {
            for r in &c.lod_changed {
                let i = r.object;
                let slot = store.hot[i as usize].lod_slot as usize;
                let comp = &mut store.lods[slot];
                let was_fading = comp.in_transition();
                if let Some(ev) = comp.apply(ObjectId(i), r.desired, r.level, r.fallback, fade) {
                    self.events.push(ev);
                    if comp.in_transition() && !was_fading {
                        self.fading.push(i);
                    }
                }
            }
        }
        self.stats.lod_switches = self.events.len() as u32;
    }

    /// Advances fades, drawing each unfinished one; a finished or removed fade
    /// leaves the list. The fades are listed in object order.
    #[inline]
    fn advance_fades(&mut self, store: &mut ObjectStore, lod: &LodConfig) {
        let fade = lod.enable_fade_transitions;
        let o = &mut self.vis.objects;
        let step = 1.0 / lod.fade_frames.max(1) as f32;
        let mut k = 0;
        while k < self.fading.len() {
            let i = self.fading[k] as usize;
            let slot = store.hot.get(i).map_or(INVALID_HANDLE, |h| h.lod_slot);
            let done = if slot == INVALID_HANDLE || !fade {
                if slot != INVALID_HANDLE {
                    store.lods[slot as usize].cold.transition_progress = 1.0;
                }
                true
            } else {
                let comp = &mut store.lods[slot as usize];
                let prev_mesh = comp.cold.previous.map(|p| comp.meshes()[p as usize]);
                let cold = &mut comp.cold;
                if let Some(previous_mesh) = prev_mesh.filter(|_| cold.transition_progress < 1.0) {
                    o.fades.push(FadeDraw {
                        object: i as u32,
                        previous_mesh,
                        progress: cold.transition_progress,
                    });
                }
                cold.transition_progress = (cold.transition_progress + step).min(1.0);
                cold.transition_progress >= 1.0
            };
            if done {
                self.fading.swap_remove(k);
            } else {
                k += 1;
            }
        }
        // swap_remove scrambles order; keep fades in object order for determinism.
        o.fades.sort_unstable_by_key(|f| f.object);
    }
}

/// Where a chunk's per-object outputs go.
trait Outputs {
    /// Whether the per-object columns are written at all (not in decisions-only mode:
    /// then neither the world matrix nor the entity column is read).
    const COLUMNS: bool;
    fn at(&mut self, k: usize) -> Out<'_>;
}

/// One chunk of the per-object columns.
struct Columns<'a> {
    models: &'a mut [Mat4],
    bounds: &'a mut [Aabb],
    draws: &'a mut [ObjectDraw],
    skin_first: &'a mut [u32],
    entities: &'a mut [u64],
    lod_level: &'a mut [u8],
}

impl Outputs for Columns<'_> {
    const COLUMNS: bool = true;

    #[inline(always)]
    fn at(&mut self, k: usize) -> Out<'_> {
        Out {
            model: &mut self.models[k],
            bounds: &mut self.bounds[k],
            draw: &mut self.draws[k],
            skin_first: &mut self.skin_first[k],
            entity: &mut self.entities[k],
            lod_level: &mut self.lod_level[k],
        }
    }
}

/// Decisions only: no columns.
struct Discard;

impl Outputs for Discard {
    const COLUMNS: bool = false;

    #[inline(always)]
    fn at(&mut self, _k: usize) -> Out<'_> {
        unreachable!("decisions only: no column is written")
    }
}

/// Culls the `len` objects of one chunk from `base`, into `out` and `lists`.
#[inline(always)]
fn cull_chunk<O: Outputs>(
    inputs: &Inputs<'_>,
    cull: &Cull,
    base: usize,
    len: usize,
    out: &mut O,
    lists: &mut ChunkLists,
) {
    lists.clear();
    for k in 0..len {
        let i = base + k;
        let state = cull_one(inputs, cull, i, out, k, lists);
        if state & DRAWN != 0 {
            if state & CASTS != 0 {
                lists.casters.push(i as u32);
            } else {
                lists.others.push(i as u32);
            }
            if state & VISIBLE != 0 {
                lists.visible.push(i as u32);
            }
        }
    }
}

/// The output slots of one object.
struct Out<'a> {
    model: &'a mut Mat4,
    bounds: &'a mut Aabb,
    draw: &'a mut ObjectDraw,
    skin_first: &'a mut u32,
    entity: &'a mut u64,
    lod_level: &'a mut u8,
}

/// Largest axis scale of an affine matrix.
#[inline]
fn max_scale(m: &Mat4) -> f32 {
    m.x_axis
        .truncate()
        .length_squared()
        .max(m.y_axis.truncate().length_squared())
        .max(m.z_axis.truncate().length_squared())
        .sqrt()
}

/// One object: validity, columns, LOD, culls. Returns the state bits.
#[inline(always)]
fn cull_one<O: Outputs>(
    inp: &Inputs<'_>,
    c: &Cull,
    i: usize,
    out: &mut O,
    k: usize,
    lists: &mut ChunkLists,
) -> u8 {
    let s = inp.store;
    let h = s.hot[i];
    let f = h.flags;
    // Cheapest rejection first: dead slots and hidden objects are not invalid.
    if f & (flags::ALIVE | flags::VISIBLE) != (flags::ALIVE | flags::VISIBLE) {
        return 0;
    }
    let (mesh, material) = (h.mesh, h.material);
    if mesh.0 == INVALID_HANDLE || material.0 == INVALID_HANDLE {
        lists.invalid += 1;
        return 0;
    }
    // Transform and bounds were checked when written (the `*_BAD` flags); only a
    // pose made this frame and the world box itself are checked here. The matrix is
    // read only where it is needed: a pose, a screen-size level, the columns.
    let has_world = f & flags::HAS_WORLD != 0;
    let bad = if has_world {
        flags::WORLD_BAD
    } else if f & flags::HAS_LOCAL != 0 {
        flags::LOCAL_BAD
    } else {
        lists.invalid += 1;
        return 0;
    };
    let world = || {
        if has_world {
            s.world[i]
        } else {
            s.local[i].matrix()
        }
    };
    let skin_slot = h.skin_slot;
    let skin: Option<&Skin> = (skin_slot != INVALID_HANDLE).then(|| &s.skins[skin_slot as usize]);
    // By reference into the column in the common case: a copy through the stack
    // costs a failed store-to-load forward when the vector transform reloads it.
    // A pose made this frame replaces the stored bounds, so its own box decides: a
    // bad posed box makes the object invalid even when the stored bounds are fine.
    let posed;
    let (local, bad, pose_bad, is_posed): (&Aabb, u8, bool, bool) =
        match skin.and_then(|k| k.pose.filter(|p| p.frame == c.frame).map(|p| (k, p))) {
            Some((k, pose)) => {
                posed = pose.bounds(k.skin_radius);
                (&posed, bad, !pose.valid() || !posed.valid(), true)
            }
            None => (&s.bounds[i], bad | flags::BOUNDS_BAD, false, false),
        };
    if f & bad != 0 || pose_bad {
        lists.invalid += 1;
        return 0;
    }
    let Some(wb) = world_box(s, c, i, local, is_posed, &world) else {
        lists.invalid += 1;
        return 0;
    };
    let d2 = c.camera.distance_squared(wb.center);

    // LOD for every valid object, so every pass draws the same level.
    let (mut drawn_mesh, lod_slot) = (mesh, h.lod_slot);
    if O::COLUMNS {
        *out.at(k).lod_level = u8::MAX;
    }
    if lod_slot != INVALID_HANDLE {
        let comp: &EntityLod = &s.lods[lod_slot as usize];
        let Some(level) = lod_level(c, comp, i, d2, &wb, local, &world, lists) else {
            lists.nothing_resident += 1;
            return 0;
        };
        if O::COLUMNS {
            *out.at(k).lod_level = level;
            drawn_mesh = comp.meshes()[level as usize];
        }
    }

    // The columns are written for every valid object: the scene-wide list reaches
    // off-screen occluders and captures.
    if O::COLUMNS {
        let draw = ObjectDraw {
            mesh: drawn_mesh,
            material,
            skin_count: skin.map_or(0, |k| k.bone_count),
        };
        write_columns(out.at(k), world(), &wb, draw, skin, s.entity[i]);
    }
    let casts = if f & flags::CASTS_SHADOWS != 0 {
        CASTS
    } else {
        0
    };
    let visible = if on_screen(c, &wb, d2) { VISIBLE } else { 0 };
    DRAWN | casts | visible
}

/// Writes a valid object's columns: its world matrix and box, what it draws, its
/// first bone and its entity.
#[inline(always)]
fn write_columns(
    out: Out<'_>,
    world: Mat4,
    wb: &CenterExtent,
    draw: ObjectDraw,
    skin: Option<&Skin>,
    entity: u64,
) {
    *out.model = world;
    *out.bounds = wb.to_aabb();
    *out.draw = draw;
    *out.skin_first = skin.map_or(0, |k| k.bone_first);
    *out.entity = entity;
}

/// Object `i`'s world box, or `None` when it is invalid: the kept world box unless a
/// pose made this frame replaces the local box (the same transform of the same
/// inputs, so the same bits). Finite inputs can still overflow (a huge scale): the
/// world box is checked too.
#[inline(always)]
fn world_box(
    s: &ObjectStore,
    c: &Cull,
    i: usize,
    local: &Aabb,
    is_posed: bool,
    world: &impl Fn() -> Mat4,
) -> Option<CenterExtent> {
    let (wb, valid) = if is_posed || !c.kept_boxes {
        let wb = transform_center_extent(&world(), local);
        (wb, wb.valid())
    } else {
        // Checked when kept: an invalid box is kept with a negative extent.
        let wb = s.world_box[i];
        (wb, wb.extent.x >= 0.0)
    };
    valid.then_some(wb)
}

/// The level object `i` draws through its LOD component, or `None` when no level is
/// resident. The level is chosen afresh on a LOD pass (or when none is current), by
/// screen size or by stored distance ranges; a change of level, desired level or
/// fallback is listed for the serial apply.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lod_level(
    c: &Cull,
    comp: &EntityLod,
    i: usize,
    d2: f32,
    wb: &CenterExtent,
    local: &Aabb,
    world: &impl Fn() -> Mat4,
    lists: &mut ChunkLists,
) -> Option<u8> {
    let (desired, level, fallback) = if c.lod_pass || comp.current.is_none() {
        let current = comp.current.map(usize::from);
        let d2 = if c.root_moved {
            c.lod_camera.distance_squared(wb.center)
        } else {
            d2
        };
        let desired = if comp.screen_size {
            let rules = &comp.cold.shared.rules;
            let world_radius =
                rules.screen_size_radius.unwrap_or_else(|| local.radius()) * max_scale(&world());
            c.selector.select(rules, d2.sqrt(), world_radius, current)
        } else {
            c.selector
                .select_stored_sq(&comp.ranges()[..comp.len()], d2, current)
        };
        let r = resolve_resident(desired, comp.len(), current, |l| comp.is_resident(l));
        (desired as u8, r.level.map(|l| l as u8), r.using_fallback)
    } else {
        (comp.desired, comp.current, comp.using_fallback)
    };
    let level = level?;
    if Some(level) != comp.current || desired != comp.desired || fallback != comp.using_fallback {
        lists.lod_changed.push(LodOut {
            object: i as u32,
            desired,
            level,
            fallback,
        });
    }
    lists.fallbacks += fallback as u32;
    Some(level)
}

/// Whether a drawn object is visible: in the frustum, within the distance limit, and
/// not under the least screen size.
#[inline(always)]
fn on_screen(c: &Cull, wb: &CenterExtent, d2: f32) -> bool {
    if !c.frustum.intersects_center_extent(wb) || d2 > c.max_distance_sq {
        return false;
    }
    // Screen size: (r * p11 / d * H)^2 < min^2, rearranged to avoid sqrt and division.
    let r2k = wb.extent.length_squared() * c.size_k_sq;
    let too_small = if c.orthographic {
        r2k < c.min_pixels_sq
    } else {
        r2k < c.min_pixels_sq * d2
    };
    !too_small
}
