//! Entity LOD (docs/design/entity-lod.md) through the visibility pass.

use farsight_geom::Aabb;
use farsight_lod::LodError;
use farsight_view::{
    Camera, CameraStore, EntityLod, EntityLodLevel, FrameContext, LodChanged, LodComponentError,
    MaterialHandle, MeshHandle, ObjectDesc, ObjectId, ObjectStore, Projection, RenderConfig,
    Residency, Transform, VisibilitySystem,
};
use glam::{Mat4, Vec3};

use crate::common::frame_context;

fn persp(fov_deg: f32) -> Projection {
    Projection::Perspective {
        fov_y: fov_deg.to_radians(),
        aspect: 1.5,
        near: 0.1,
        far: 5000.0,
    }
}

fn building() -> EntityLod {
    EntityLod::new(vec![
        EntityLodLevel::new(MeshHandle(10), 50.0, "city/tower"),
        EntityLodLevel::new(MeshHandle(11), 100.0, "city/tower"),
        EntityLodLevel::new(MeshHandle(12), 200.0, "city/tower"),
    ])
    .unwrap()
}

/// One building at the origin (1 m box centred on it) seen from `(0, 0, z)`.
struct Rig {
    store: ObjectStore,
    cams: CameraStore,
    sys: VisibilitySystem,
    settings: RenderConfig,
    frame: u64,
    id: ObjectId,
}

impl Rig {
    fn new(lod: EntityLod) -> Self {
        let mut store = ObjectStore::new();
        let mut d = ObjectDesc::new(
            Mat4::IDENTITY,
            Aabb::new(Vec3::splat(-0.5), Vec3::splat(0.5)),
            MeshHandle(10),
            MaterialHandle(0),
        );
        d.lod = Some(lod);
        let id = store.insert(d);
        let mut cams = CameraStore::new();
        cams.insert(Camera::looking_at(
            persp(60.0),
            Vec3::new(0.0, 0.0, 300.0),
            Vec3::ZERO,
        ));
        let settings = RenderConfig {
            lod: farsight_lod::LodConfig {
                update_frame_interval: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        Self {
            store,
            cams,
            sys: VisibilitySystem::new(),
            settings,
            frame: 0,
            id,
        }
    }

    fn at(&mut self, z: f32) -> (u8, Vec<LodChanged>) {
        let c = first_camera(&mut self.cams);
        c.world = Some(Mat4::look_at_rh(Vec3::new(0.0, 0.0, z), Vec3::ZERO, Vec3::Y).inverse());
        self.frame += 1;
        let ctx = frame_context(self.frame, &self.cams, &self.settings);
        self.sys.update(&mut self.store, &ctx);
        let o = &self.sys.visibility().objects;
        let level = o.lod_level[self.id.0 as usize];
        if level != u8::MAX {
            assert_eq!(
                o.draws[self.id.0 as usize].mesh,
                MeshHandle(10 + level as u32)
            );
        }
        (level, self.sys.lod_events().to_vec())
    }
}

#[test]
fn the_50_100_200_walk_with_hysteresis_and_events() {
    let mut r = Rig::new(building());
    let walk: &[(f32, u8)] = &[
        (300.0, 2),
        (201.0, 2),
        (150.0, 2),
        (99.0, 2), // inside 100, but not inside 100 - 5
        (95.0, 1),
        (60.0, 1),
        (46.0, 1), // not inside 50 - 5
        (45.0, 0),
        (10.0, 0),
        (50.5, 1), // receding: immediate
        (100.5, 2),
        (30.0, 0), // jump straight in
    ];
    let mut switches = 0;
    let mut last = None;
    for &(z, want) in walk {
        let (level, events) = r.at(z);
        assert_eq!(level, want, "camera at {z}");
        if last != Some(level) {
            assert_eq!(
                events,
                vec![LodChanged {
                    object: r.id,
                    from: last,
                    to: level
                }]
            );
            switches += 1;
        } else {
            assert!(events.is_empty(), "no event without a change at {z}");
        }
        last = Some(level);
        let lod = r.store.lod(r.id).unwrap();
        assert_eq!(lod.current(), Some(level));
        assert_eq!(lod.active_mesh_asset_id(), format!("city/tower_LOD{level}"));
    }
    assert_eq!(switches, 6);
}

#[test]
fn resident_fallback_prefers_coarser_and_recovers() {
    let mut lod = building();
    lod.set_residency(0, Residency::Loading);
    let mut r = Rig::new(lod);
    let (level, _) = r.at(20.0);
    assert_eq!(level, 1, "LOD0 is loading: LOD1 stands in");
    let l = r.store.lod(r.id).unwrap();
    assert!(l.using_fallback());
    assert_eq!(l.desired(), 0);
    assert_eq!(r.sys.stats().lod_fallbacks, 1);
    // LOD1 gone too: coarser LOD2 before anything finer.
    r.store
        .lod_mut(r.id)
        .unwrap()
        .set_residency(1, Residency::NotResident);
    assert_eq!(r.at(20.0).0, 2);
    // LOD0 arrives: switch to it, fallback cleared.
    r.store
        .lod_mut(r.id)
        .unwrap()
        .set_residency(0, Residency::Resident);
    let (level, events) = r.at(20.0);
    assert_eq!(level, 0);
    assert_eq!(
        events,
        vec![LodChanged {
            object: r.id,
            from: Some(2),
            to: 0
        }]
    );
    assert!(!r.store.lod(r.id).unwrap().using_fallback());
    // Nothing resident at all, never drawn before: not drawn, counted.
    let mut none = building();
    for i in 0..3 {
        none.set_residency(i, Residency::NotResident);
    }
    let mut r = Rig::new(none);
    r.at(20.0);
    assert!(r.sys.visibility().objects.scene.is_empty());
    assert_eq!(r.sys.stats().nothing_resident, 1);
}

#[test]
fn throttle_runs_the_full_pass_every_fourth_frame_or_on_a_jump() {
    let mut r = Rig::new(building());
    r.settings.lod.update_frame_interval = 4;
    assert_eq!(r.at(150.0).0, 2); // first call: full pass
    assert!(r.sys.stats().lod_pass);
    // Creep in by 0.4 per frame (under the 0.5 displacement): no pass until frame 4.
    r.at(150.0 - 0.4);
    assert!(!r.sys.stats().lod_pass);
    r.at(150.0 - 0.8); // 0.8 from the last full pass: forced
    assert!(r.sys.stats().lod_pass);
    // A jump to 20 m forces a pass at once.
    let (level, _) = r.at(20.0);
    assert!(r.sys.stats().lod_pass);
    assert_eq!(level, 0);
    // Standing still: passes only on every fourth frame, and the level holds.
    let passes: Vec<bool> = (0..8)
        .map(|_| {
            r.at(20.0);
            r.sys.stats().lod_pass
        })
        .collect();
    assert_eq!(
        passes,
        [false, false, false, true, false, false, false, true]
    );
}

#[test]
fn screen_size_selection_follows_field_of_view_and_stereo() {
    let lod = EntityLod::new(vec![
        EntityLodLevel::new(MeshHandle(10), 50.0, "s"),
        EntityLodLevel {
            screen_percentage: Some(0.5),
            ..EntityLodLevel::new(MeshHandle(11), 100.0, "s")
        },
        EntityLodLevel {
            screen_percentage: Some(0.1),
            ..EntityLodLevel::new(MeshHandle(12), 200.0, "s")
        },
    ])
    .unwrap()
    .by_screen_size(Some(2.0));
    let mut r = Rig::new(lod);
    let reach60 = 1.0 / 30f32.to_radians().tan();
    // Level 0 ends at 2 * reach / 0.5, level 1 at 2 * reach / 0.1.
    let s0 = 2.0 * reach60 / 0.5;
    let s1 = 2.0 * reach60 / 0.1;
    assert_eq!(r.at(s0 - 0.2).0, 0);
    assert_eq!(r.at(s0 + 0.2).0, 1);
    assert_eq!(r.at(s1 + 0.2).0, 2);
    // Zoom to 20 degrees: the same distance now draws finer.
    first_camera(&mut r.cams).projection = persp(20.0);
    assert_eq!(r.at(s1 + 0.2).0, 1);
    // Stereo: the larger reach of the two eyes (the 20-degree one) decides; eyes at
    // identity (not rendered yet) fall back to the stored distances.
    first_camera(&mut r.cams).projection = persp(60.0);
    let e20 = persp(20.0).matrix();
    let e90 = persp(90.0).matrix();
    let stereo = |r: &mut Rig, eyes: [Mat4; 2], z: f32| {
        let c = first_camera(&mut r.cams);
        c.world = Some(Mat4::look_at_rh(Vec3::new(0.0, 0.0, z), Vec3::ZERO, Vec3::Y).inverse());
        r.frame += 1;
        let ctx = FrameContext {
            frame: r.frame,
            host_view: None,
            cameras: &r.cams,
            world_epoch: 0,
            settings: &r.settings,
            stereo_eyes: Some(eyes),
        };
        r.sys.update(&mut r.store, &ctx);
        r.sys.visibility().objects.lod_level[0]
    };
    assert_eq!(stereo(&mut r, [e90, e20], s1 + 0.2), 1);
    assert_eq!(
        stereo(&mut r, [Mat4::IDENTITY, Mat4::IDENTITY], 60.0),
        1,
        "stored 100 applies"
    );
    assert_eq!(stereo(&mut r, [Mat4::IDENTITY, Mat4::IDENTITY], 150.0), 2);
}

#[test]
fn fades_run_when_enabled_and_not_by_default() {
    let mut r = Rig::new(building());
    r.at(150.0);
    r.at(20.0);
    assert!(
        r.sys.visibility().objects.fades.is_empty(),
        "fades are off by default"
    );
    r.settings.lod.enable_fade_transitions = true;
    r.settings.lod.fade_frames = 4;
    r.at(150.0);
    let fades = r.sys.visibility().objects.fades.clone();
    assert_eq!(fades.len(), 1);
    assert_eq!(fades[0].previous_mesh, MeshHandle(10));
    assert_eq!(fades[0].progress, 0.0);
    let lod = r.store.lod(r.id).unwrap();
    assert_eq!((lod.previous(), lod.current()), (Some(0), Some(2)));
    let progress: Vec<f32> = (0..5)
        .map(|_| {
            r.at(150.0);
            r.sys
                .visibility()
                .objects
                .fades
                .first()
                .map_or(1.0, |f| f.progress)
        })
        .collect();
    assert_eq!(progress, [0.25, 0.5, 0.75, 1.0, 1.0]);
    assert!(!r.store.lod(r.id).unwrap().in_transition());
}

#[test]
fn bad_levels_are_refused_with_typed_errors() {
    assert_eq!(
        EntityLod::new(vec![]),
        Err(LodComponentError::Levels(LodError::NoLevels))
    );
    let e = EntityLod::new(vec![
        EntityLodLevel::new(MeshHandle(0), 100.0, "x"),
        EntityLodLevel::new(MeshHandle(1), 50.0, "x"),
    ]);
    assert_eq!(
        e,
        Err(LodComponentError::Levels(LodError::NotOrdered {
            index: 1,
            previous: 100.0,
            found: 50.0
        }))
    );
    assert!(e.unwrap_err().to_string().contains("near to far"));
}

#[test]
fn non_finite_objects_are_skipped_counted_and_do_not_disturb_neighbours() {
    let build = |poison: bool| {
        let mut store = ObjectStore::new();
        for k in 0..2000 {
            let mut w = Mat4::from_translation(Vec3::new(
                (k % 50) as f32 * 4.0,
                0.0,
                -((k / 50) as f32) * 4.0,
            ));
            let mut b = Aabb::new(Vec3::splat(-1.0), Vec3::splat(1.0));
            if poison && k % 7 == 3 {
                match k % 3 {
                    0 => w.w_axis.x = f32::NAN,
                    1 => w.x_axis.y = f32::INFINITY,
                    _ => b.max.y = f32::NAN,
                }
            }
            let mut d = ObjectDesc::new(w, b, MeshHandle(1), MaterialHandle(1));
            d.lod = Some(building());
            store.insert(d);
        }
        store
    };
    let mut cams = CameraStore::new();
    cams.insert(Camera::looking_at(
        persp(60.0),
        Vec3::new(100.0, 10.0, 30.0),
        Vec3::new(100.0, 0.0, -100.0),
    ));
    let settings = RenderConfig {
        cull_min_pixels: 2.0,
        ..Default::default()
    };
    let run = |mut store: ObjectStore| {
        let mut sys = VisibilitySystem::new();
        let ctx = frame_context(1, &cams, &settings);
        sys.update(&mut store, &ctx);
        let o = &sys.visibility().objects;
        (
            o.visible.clone(),
            o.scene.clone(),
            o.lod_level.clone(),
            o.bounds.clone(),
            sys.stats(),
        )
    };
    let (cv, cs, cl, cb, clean) = run(build(false));
    let (pv, ps, pl, pb, poisoned) = run(build(true));
    let bad = |i: &u32| *i % 7 == 3;
    assert_eq!(clean.invalid, 0);
    assert_eq!(
        poisoned.invalid as usize,
        (0..2000).filter(|i| i % 7 == 3).count()
    );
    let keep = |v: &[u32]| v.iter().copied().filter(|i| !bad(i)).collect::<Vec<_>>();
    assert_eq!(
        keep(&cv),
        pv,
        "the visible list is the clean one minus the poisoned objects"
    );
    assert_eq!(keep(&cs), ps);
    assert!(!cv.is_empty());
    for i in ps {
        let i = i as usize;
        assert_eq!((cl[i], cb[i]), (pl[i], pb[i]));
    }
}

#[test]
fn a_transform_or_bounds_set_bad_later_is_skipped_and_set_good_again_is_drawn() {
    let mut store = ObjectStore::new();
    let b = Aabb::new(Vec3::splat(-1.0), Vec3::splat(1.0));
    let world = Mat4::from_translation(Vec3::new(0.0, 0.0, -20.0));
    let id = store.insert(ObjectDesc::new(world, b, MeshHandle(1), MaterialHandle(1)));
    let mut cams = CameraStore::new();
    cams.insert(Camera::looking_at(persp(60.0), Vec3::ZERO, Vec3::NEG_Z));
    let settings = RenderConfig::default();
    let mut sys = VisibilitySystem::new();
    let mut frame = 0;
    let mut run = |store: &mut ObjectStore| {
        frame += 1;
        let ctx = frame_context(frame, &cams, &settings);
        sys.update(store, &ctx);
        (
            sys.visibility().objects.visible.clone(),
            sys.stats().invalid,
        )
    };
    assert_eq!(run(&mut store), (vec![0], 0));
    let mut nan = world;
    nan.z_axis.x = f32::NAN;
    store.set_world(id, nan);
    assert_eq!(run(&mut store), (vec![], 1), "a NaN world matrix");
    store.set_world(id, world);
    assert_eq!(run(&mut store), (vec![0], 0), "repaired");
    store.set_bounds(
        id,
        Aabb::new(Vec3::ZERO, Vec3::new(1.0, f32::INFINITY, 1.0)),
    );
    assert_eq!(run(&mut store), (vec![], 1), "infinite bounds");
    store.set_bounds(id, b);
    assert_eq!(run(&mut store), (vec![0], 0));
    // Without a world matrix the local transform is used, and checked the same way.
    store.clear_world(id);
    let mut t = Transform {
        translation: Vec3::new(0.0, 0.0, -20.0),
        ..Default::default()
    };
    store.set_local(id, t);
    assert_eq!(run(&mut store), (vec![0], 0));
    t.scale.y = f32::NAN;
    store.set_local(id, t);
    assert_eq!(run(&mut store), (vec![], 1), "a NaN local scale");
    // A NaN in a world matrix that is no longer used does not matter...
    store.set_world(id, nan);
    store.clear_world(id);
    t.scale.y = 1.0;
    store.set_local(id, t);
    assert_eq!(run(&mut store), (vec![0], 0));
    // ...and overflow of finite inputs is caught on the world box.
    store.set_bounds(id, Aabb::new(Vec3::ONE, Vec3::splat(3.0)));
    store.set_local(
        id,
        Transform {
            scale: Vec3::splat(f32::MAX),
            ..t
        },
    );
    assert_eq!(run(&mut store), (vec![], 1), "an overflowing scale");
}

fn first_camera(cams: &mut CameraStore) -> &mut Camera {
    let id = cams.ids().next().expect("a camera");
    cams.get_mut(id).unwrap()
}

/// The scene-root camera (docs/design/entity-lod.md#the-camera-every-rule-measures-from): the camera used for entity LOD distances and for the throttle's
/// displacement goes through the scene-root transform, as tile streaming's does.
#[test]
fn entity_lod_measures_the_camera_in_scene_root_space() {
    let mut r = Rig::new(building());
    assert_eq!(r.at(10.0).0, 0, "identity root: 10 m draws LOD0");
    // The scene root moved 150 m towards the camera's side of the world: in root space
    // the camera is now 160 m away from the building.
    r.sys
        .set_scene_root(Mat4::from_translation(Vec3::new(0.0, 0.0, -150.0)));
    assert_eq!(r.at(10.0).0, 2, "root-space distance 160 draws LOD2");
    r.sys.set_scene_root(Mat4::IDENTITY);
    assert_eq!(r.at(10.0).0, 0);

    // The throttle: interval 4, and a root that follows the camera (XR head motion)
    // leaves the root-space camera still, so no early pass.
    r.settings.lod.update_frame_interval = 4;
    r.at(50.0);
    assert!(r.sys.stats().lod_pass, "a 40 m jump runs the pass");
    for k in 1..=3 {
        let z = 50.0 + 2.0 * k as f32;
        r.sys
            .set_scene_root(Mat4::from_translation(Vec3::new(0.0, 0.0, z - 50.0)));
        r.at(z);
        assert!(
            !r.sys.stats().lod_pass,
            "frame {k}: the camera is still in root space"
        );
    }
}

/// Two stores of the test city's block (5,000 buildings) flown along the street for 90
/// frames on a pool of two threads; `frame` runs both systems on each frame and
/// compares. Returns the LOD switches `b` reported, after checking both stores end
/// on the same levels.
fn fly_two_systems(
    a: &mut VisibilitySystem,
    b: &mut VisibilitySystem,
    mut frame: impl FnMut(u64, &VisibilitySystem, &VisibilitySystem, &ObjectStore) + Send,
) -> usize {
    use farsight_view::scenes::city_block;
    let mut a_store = ObjectStore::new();
    let layout = city_block(&mut a_store, 5_000, 9);
    let mut b_store = ObjectStore::new();
    city_block(&mut b_store, 5_000, 9);
    let mut cams = CameraStore::new();
    let cam = cams.insert(Camera::looking_at(persp(60.0), Vec3::ZERO, Vec3::X));
    let settings = RenderConfig {
        cull_min_pixels: 2.0,
        cull_max_distance: 600.0,
        ..Default::default()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let frames = 90u64;
    let mut switches = 0;
    pool.install(|| {
        for f in 0..frames {
            let t = f as f32 / frames as f32;
            let eye = Vec3::new(layout.length() * t, 1.7, 0.0);
            cams.get_mut(cam).unwrap().world =
                Some(Mat4::look_at_rh(eye, eye + Vec3::X, Vec3::Y).inverse());
            let ctx = frame_context(f, &cams, &settings);
            a.update(&mut a_store, &ctx);
            b.update(&mut b_store, &ctx);
            let (va, vb) = (&a.visibility().objects, &b.visibility().objects);
            assert_eq!(va.visible, vb.visible, "frame {f}");
            assert_eq!(va.scene, vb.scene, "frame {f}");
            assert_eq!(va.caster_count, vb.caster_count, "frame {f}");
            assert_eq!(a.stats(), b.stats(), "frame {f}");
            assert_eq!(a.lod_events(), b.lod_events(), "frame {f}");
            frame(f, a, b, &a_store);
            switches += b.lod_events().len();
        }
    });
    for i in 0..a_store.len() as u32 {
        let (la, lb) = (a_store.lod(ObjectId(i)), b_store.lod(ObjectId(i)));
        assert_eq!(la.and_then(|l| l.current()), lb.and_then(|l| l.current()));
    }
    assert!(
        switches > 100,
        "the flight must switch levels, got {switches}"
    );
    switches
}

/// Decisions only (the Bevy plugin's mode) decides exactly what the full pass does:
/// the same visible and scene lists, stats, LOD events and levels every frame of a
/// flight along a city street, on two threads, with the per-object columns empty.
#[test]
fn decisions_only_decides_what_the_full_pass_does() {
    let mut full = VisibilitySystem::new();
    let mut lean = VisibilitySystem::new();
    lean.set_decisions_only(true);
    let mut seen = 0;
    fly_two_systems(&mut full, &mut lean, |_, full, lean, store| {
        let (a, b) = (&full.visibility().objects, &lean.visibility().objects);
        assert!(b.models.is_empty() && b.draws.is_empty() && b.lod_level.is_empty());
        assert_eq!(a.models.len(), store.len());
        seen += b.visible.len();
    });
    assert!(seen > 1000, "the flight must see buildings, saw {seen}");
}

/// On the calling thread (`set_serial_below`) the pass decides bit for bit what it
/// decides on a pool of two threads, with the draw columns and without: the same
/// lists, stats, events, columns and levels every frame of a flight along a street.
#[test]
fn the_serial_pass_decides_what_the_parallel_pass_does() {
    for decisions_only in [false, true] {
        let mut par = VisibilitySystem::new();
        let mut ser = VisibilitySystem::new();
        par.set_decisions_only(decisions_only);
        ser.set_decisions_only(decisions_only);
        // Serial below more objects than the store holds; the other never.
        ser.set_serial_below(1 << 20);
        fly_two_systems(&mut par, &mut ser, |f, par, ser, _| {
            let (a, b) = (&par.visibility().objects, &ser.visibility().objects);
            assert_eq!(a.models, b.models, "frame {f}");
            assert_eq!(a.bounds, b.bounds, "frame {f}");
            assert_eq!(a.entities, b.entities, "frame {f}");
            assert_eq!(a.lod_level, b.lod_level, "frame {f}");
        });
    }
}
