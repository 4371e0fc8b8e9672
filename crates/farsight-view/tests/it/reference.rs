//! The pass against a brute-force reference on random scenes, at several thread counts.

use farsight_geom::{Aabb, Frustum};
use farsight_view::{
    Camera, CameraStore, EntityLod, EntityLodLevel, MaterialHandle, MeshHandle, ObjectDesc,
    ObjectId, ObjectStore, Projection, RenderConfig, Transform, VisibilitySystem,
};
use glam::{Mat4, Quat, Vec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::common::frame_context;

fn random_scene(rng: &mut ChaCha8Rng, n: usize) -> ObjectStore {
    let mut s = ObjectStore::new();
    for k in 0..n {
        let c = Vec3::new(
            rng.random_range(-300.0..300.0),
            rng.random_range(-50.0..50.0),
            rng.random_range(-300.0..300.0),
        );
        let e = Vec3::new(
            rng.random_range(0.05..6.0),
            rng.random_range(0.05..6.0),
            rng.random_range(0.05..6.0),
        );
        let world = Mat4::from_scale_rotation_translation(
            Vec3::splat(rng.random_range(0.3..3.0)),
            Quat::from_rotation_y(rng.random_range(0.0..6.3)),
            c,
        );
        let mut d = ObjectDesc::new(
            world,
            Aabb::new(-e, e),
            MeshHandle(k as u32 % 7),
            MaterialHandle(1),
        );
        d.entity = 1000 + k as u64;
        d.casts_shadows = rng.random_bool(0.6);
        d.visible = rng.random_bool(0.95);
        match rng.random_range(0..40) {
            0 => d.world = Some(Mat4::from_translation(Vec3::new(f32::NAN, 0.0, 0.0))),
            1 => d.bounds = Aabb::new(Vec3::ZERO, Vec3::ZERO),
            2 => d.mesh = MeshHandle::NONE,
            3 => d.material = MaterialHandle::NONE,
            4 => {
                d.world = None;
                d.local = Some(Transform {
                    translation: c,
                    ..Default::default()
                });
            }
            5 => d.world = None,
            6 => d.bounds = Aabb::new(Vec3::ZERO, Vec3::splat(f32::INFINITY)),
            7 => d.world = Some(Mat4::from_scale(Vec3::splat(f32::INFINITY))),
            _ => {}
        }
        if rng.random_bool(0.3) {
            d.lod = Some(
                EntityLod::new(vec![
                    EntityLodLevel::new(MeshHandle(100), 30.0, "a"),
                    EntityLodLevel::new(MeshHandle(101), 90.0, "a"),
                    EntityLodLevel::new(MeshHandle(102), 250.0, "a"),
                ])
                .unwrap(),
            );
        }
        s.insert(d);
    }
    s
}

/// `None`: not drawn. `Some(None)`: drawn, visibility too close to a threshold to
/// judge. `Some(Some(v))`: drawn, and the reference is sure whether it is visible.
fn reference(
    s: &ObjectStore,
    id: ObjectId,
    frustum: &Frustum,
    cam: Vec3,
    p11: f32,
    ortho: bool,
    settings: &RenderConfig,
) -> Option<Option<bool>> {
    if !s.is_visible(id) || s.mesh(id) == MeshHandle::NONE || s.material(id) == MaterialHandle::NONE
    {
        return None;
    }
    let w = s.world(id).or_else(|| s.local(id).map(|t| t.matrix()))?;
    let b = s.bounds(id);
    if !b.valid() || !w.is_finite() {
        return None;
    }
    // Eight transformed corners and a refit: the slow way.
    let wb = Aabb::from_points(b.corners().map(|p| w.transform_point3(p)));
    if !wb.valid() {
        return None;
    }
    let eps = 1e-3 * (1.0 + wb.size().length());
    let corners = wb.corners();
    let mut sure = true;
    let mut inside = true;
    for i in 0..6 {
        let best = corners
            .iter()
            .map(|&c| frustum.plane_distance(i, c))
            .fold(f32::MIN, f32::max);
        if best < -eps {
            inside = false;
        } else if best < eps {
            sure = false;
        }
    }
    let d = cam.distance(wb.center());
    if settings.cull_max_distance > 0.0 {
        if (d - settings.cull_max_distance).abs() < 1e-2 {
            sure = false;
        }
        inside &= d <= settings.cull_max_distance;
    }
    // docs/design/visibility-pass.md#the-culls: radius * p11 / depth * viewport height (depth 1 when orthographic).
    let depth = if ortho { 1.0 } else { d };
    let px = wb.radius() * p11 / depth * settings.viewport_height;
    if (px - settings.cull_min_pixels).abs() < 1e-2 * (1.0 + px) {
        sure = false;
    }
    inside &= px >= settings.cull_min_pixels;
    Some(sure.then_some(inside))
}

#[test]
fn visible_and_scene_lists_match_brute_force_at_every_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut checked = 0usize;
    let mut invisible_checked = 0usize;
    for scene in 0..12 {
        let n = [0, 1, 5, 1000, 3000, 5000][scene % 6];
        let store = random_scene(&mut rng, n);
        let mut cams = CameraStore::new();
        let eye = Vec3::new(
            rng.random_range(-50.0..50.0),
            10.0,
            rng.random_range(-50.0..50.0),
        );
        let target = Vec3::new(
            rng.random_range(-200.0..200.0),
            0.0,
            rng.random_range(-200.0..200.0),
        );
        let ortho = scene % 4 == 3;
        let projection = if ortho {
            Projection::Orthographic {
                half_height: 80.0,
                aspect: 1.5,
                near: 0.1,
                far: 800.0,
            }
        } else {
            Projection::Perspective {
                fov_y: rng.random_range(0.5..1.8),
                aspect: 1.6,
                near: 0.1,
                far: 800.0,
            }
        };
        let cam_id = cams.insert(Camera::looking_at(projection, eye, target));
        let settings = RenderConfig {
            cull_min_pixels: [0.0, 4.0, 40.0][scene % 3],
            cull_max_distance: [0.0, 250.0][scene % 2],
            viewport_height: 1080.0,
            ..Default::default()
        };
        let mut results = Vec::new();
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut sys = VisibilitySystem::new();
            let ctx = frame_context(1, &cams, &settings);
            let mut store = store.clone();
            pool.install(|| {
                sys.update(&mut store, &ctx);
            });
            let o = &sys.visibility().objects;
            let draws: Vec<_> = o.scene.iter().map(|&i| o.draws[i as usize]).collect();
            results.push((
                o.visible.clone(),
                o.scene.clone(),
                o.caster_count,
                sys.stats(),
                draws,
            ));
        }
        assert!(
            results.windows(2).all(|w| w[0] == w[1]),
            "thread counts disagree"
        );
        let (visible, scene_list, casters, stats, _) = results.pop().unwrap();

        let cam = cams.get(cam_id).unwrap();
        let cam_world = cam.world.unwrap();
        let proj = cam.projection.matrix();
        let frustum = Frustum::from_view_projection(&(proj * cam_world.inverse()));
        let p11 = farsight_geom::p11(&proj);
        let mut drawn = 0;
        for k in 0..n as u32 {
            let id = ObjectId(k);
            let in_scene = scene_list.contains(&k);
            match reference(
                &store,
                id,
                &frustum,
                cam_world.w_axis.truncate(),
                p11,
                ortho,
                &settings,
            ) {
                None => assert!(!in_scene, "scene {scene}: object {k} should not draw"),
                Some(sure) => {
                    assert!(
                        in_scene,
                        "scene {scene}: valid object {k} missing from the scene list"
                    );
                    drawn += 1;
                    if let Some(want) = sure {
                        let got = visible.binary_search(&k).is_ok();
                        assert_eq!(
                            got, want,
                            "scene {scene} object {k}: visible {got}, reference {want}"
                        );
                        checked += 1;
                        invisible_checked += !want as usize;
                    }
                }
            }
        }
        assert_eq!(stats.drawn as usize, drawn);
        assert_eq!(stats.visible as usize, visible.len());
        // Ordering: visible in storage order; casters first, each part in storage order.
        assert!(visible.windows(2).all(|w| w[0] < w[1]));
        let (c, rest) = scene_list.split_at(casters as usize);
        assert!(c.windows(2).all(|w| w[0] < w[1]) && rest.windows(2).all(|w| w[0] < w[1]));
        assert!(c.iter().all(|&i| store.casts_shadows(ObjectId(i))));
        assert!(rest.iter().all(|&i| !store.casts_shadows(ObjectId(i))));
        assert!(visible.iter().all(|i| scene_list.contains(i)));
    }
    assert!(checked > 5000, "too few sure decisions checked: {checked}");
    assert!(
        invisible_checked > 1000,
        "too few culled objects checked: {invisible_checked}"
    );
}

/// A store that keeps world boxes (`ObjectStore::keep_world_boxes`) decides bit for
/// bit as one that transforms every box each frame, through random edits of world
/// and local transforms and bounds (bad ones included), removals and reinsertions,
/// and with the column turned off and on again; also in decisions-only mode.
#[test]
fn kept_world_boxes_decide_bit_for_bit_as_boxes_made_each_frame() {
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    for scene in 0..3 {
        let mut plain = random_scene(&mut rng, 3000);
        let mut kept = plain.clone();
        kept.keep_world_boxes(true);
        let mut decisions = kept.clone();
        let mut cams = CameraStore::new();
        cams.insert(Camera::looking_at(
            Projection::Perspective {
                fov_y: 1.0,
                aspect: 1.6,
                near: 0.1,
                far: 800.0,
            },
            Vec3::new(0.0, 10.0, 0.0),
            Vec3::new(100.0, 0.0, [50.0, -80.0, 10.0][scene]),
        ));
        let settings = RenderConfig {
            cull_min_pixels: 4.0,
            cull_max_distance: 250.0,
            viewport_height: 1080.0,
            lod: farsight_lod::LodConfig {
                update_frame_interval: 1,
                ..Default::default()
            },
        };
        let (mut sp, mut sk, mut sd) = (
            VisibilitySystem::new(),
            VisibilitySystem::new(),
            VisibilitySystem::new(),
        );
        sd.set_decisions_only(true);
        for frame in 1..=20u64 {
            for _ in 0..150 {
                let o = ObjectId(rng.random_range(0..plain.len() as u32));
                let t = Vec3::new(
                    rng.random_range(-300.0..300.0),
                    rng.random_range(-50.0..50.0),
                    rng.random_range(-300.0..300.0),
                );
                let kind = rng.random_range(0..9);
                let e = Vec3::splat(rng.random_range(0.05..6.0));
                for s in [&mut plain, &mut kept, &mut decisions] {
                    if !s.is_alive(o) {
                        continue;
                    }
                    match kind {
                        0 | 1 => s.set_world(o, Mat4::from_rotation_translation(Quat::IDENTITY, t)),
                        2 => s.set_world(o, Mat4::from_translation(Vec3::new(f32::NAN, 0.0, 0.0))),
                        3 => s.set_bounds(o, Aabb::new(-e, e)),
                        4 => s.set_bounds(o, Aabb::new(Vec3::ZERO, Vec3::ZERO)),
                        5 => s.set_local(
                            o,
                            Transform {
                                translation: t,
                                ..Default::default()
                            },
                        ),
                        6 => s.clear_world(o),
                        7 => s.clear_local(o),
                        _ => {
                            s.remove(o);
                            let d = ObjectDesc::new(
                                Mat4::from_translation(t),
                                Aabb::new(-e, e),
                                MeshHandle(3),
                                MaterialHandle(1),
                            );
                            assert_eq!(s.insert(d), o, "the freed slot is reused");
                        }
                    }
                }
            }
            if frame == 10 {
                let with = kept.heap_bytes();
                kept.keep_world_boxes(false);
                assert!(
                    with - kept.heap_bytes() >= 32 * kept.len(),
                    "the column is freed"
                );
                kept.keep_world_boxes(true);
            }
            let ctx = frame_context(frame, &cams, &settings);
            sp.update(&mut plain, &ctx);
            sk.update(&mut kept, &ctx);
            sd.update(&mut decisions, &ctx);
            let (p, k, d) = (
                &sp.visibility().objects,
                &sk.visibility().objects,
                &sd.visibility().objects,
            );
            assert!(!p.visible.is_empty() && p.visible.len() < p.scene.len());
            assert_eq!(p.visible, k.visible, "scene {scene} frame {frame}");
            assert_eq!(p.scene, k.scene);
            assert_eq!(p.caster_count, k.caster_count);
            assert_eq!(p.draws, k.draws);
            assert_eq!(p.bounds, k.bounds);
            assert_eq!(p.lod_level, k.lod_level);
            assert_eq!(sp.stats(), sk.stats());
            assert!(sp.stats().invalid > 0, "bad data is in the scene");
            assert_eq!(sp.lod_events(), sk.lod_events());
            assert_eq!(p.visible, d.visible);
            assert_eq!(p.scene, d.scene);
            assert_eq!(sp.stats(), sd.stats());
            assert_eq!(sp.lod_events(), sd.lod_events());
        }
    }
}
