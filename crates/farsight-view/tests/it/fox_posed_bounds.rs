//! Posed bounds on a real skinned asset: the Fox of the glTF samples, posed at random
//! through the whole pass, never leaves the world box the cull keeps.

use std::path::PathBuf;

use farsight_geom::Aabb;
use farsight_view::{
    Camera, CameraStore, MaterialHandle, MeshHandle, ObjectDesc, ObjectStore, PoseSlice,
    Projection, RenderConfig, Skin, VisibilitySystem,
};
use glam::{EulerRot, Mat4, Quat, Vec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::common::frame_context;

fn fox_path() -> PathBuf {
    farsight_testkit::mesh("Fox.glb")
}

#[test]
fn fox_posed_bounds_contain_every_posed_vertex_through_the_pass() {
    let skinned = farsight_mesh::load_skinned_meshes(&fox_path()).expect("Fox.glb loads");
    let fox = skinned.first().expect("the Fox has a skinned mesh");
    let positions: Vec<Vec3> = fox.positions.iter().map(|&p| Vec3::from(p)).collect();
    let radius = Skin::compute_radius(
        &positions,
        &fox.joints,
        &fox.weights,
        &fox.inverse_bind_matrices,
    );
    // The importer's own radius (distance to the joint's bind position) agrees for a
    // rigid bind, which the Fox has.
    assert!(
        (radius - fox.skin_radius).abs() <= 1e-3 * radius,
        "{radius} vs {}",
        fox.skin_radius
    );

    let mut store = ObjectStore::new();
    let bind = Aabb::from_points(positions.iter().copied());
    let world = Mat4::from_scale_rotation_translation(
        Vec3::splat(0.02),
        Quat::from_rotation_y(0.7),
        Vec3::new(3.0, 0.0, -5.0),
    );
    let mut d = ObjectDesc::new(world, bind, MeshHandle(1), MaterialHandle(1));
    d.skin = Some(Skin {
        bone_first: 0,
        bone_count: fox.joint_nodes.len() as u32,
        skin_radius: radius,
        pose: None,
    });
    let id = store.insert(d);
    let cams = one_camera(Vec3::new(3.0, 1.0, 2.0), Vec3::new(3.0, 0.0, -5.0));
    let settings = RenderConfig::default();
    let mut sys = VisibilitySystem::new();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let joints = fox.joint_nodes.len();
    let mut escaped_bind_box = 0;
    for frame in 1..=60u64 {
        // Any pose: every joint gets its own rotation, translation and scale.
        let bones: Vec<Mat4> = (0..joints)
            .map(|_| {
                Mat4::from_scale_rotation_translation(
                    Vec3::splat(rng.random_range(0.6..1.6)),
                    Quat::from_euler(
                        EulerRot::XYZ,
                        rng.random_range(-3.1..3.1),
                        rng.random_range(-3.1..3.1),
                        rng.random_range(-3.1..3.1),
                    ),
                    Vec3::new(
                        rng.random_range(-60.0..60.0),
                        rng.random_range(0.0..120.0),
                        rng.random_range(-60.0..60.0),
                    ),
                )
            })
            .collect();
        store.skin_mut(id).unwrap().pose = Some(PoseSlice::from_bones(&bones, frame));
        let ctx = frame_context(frame, &cams, &settings);
        sys.update(&mut store, &ctx);
        let out = &sys.visibility().objects;
        assert_eq!(out.scene, vec![0], "the posed fox draws");
        let wb = out.bounds[0];
        let tol = Vec3::splat(1e-4 * (1.0 + wb.size().length()));
        let bind_world = farsight_geom::transform_aabb(&world, &bind);
        for ((p, j), w) in positions.iter().zip(&fox.joints).zip(&fox.weights) {
            let sum: f32 = w.iter().sum();
            let mut v = Vec3::ZERO;
            for k in 0..4 {
                if w[k] > 0.0 {
                    let jk = j[k] as usize;
                    v += (bones[jk] * fox.inverse_bind_matrices[jk]).transform_point3(*p)
                        * (w[k] / sum);
                }
            }
            let v = world.transform_point3(v);
            assert!(
                wb.padded(tol).contains_point(v),
                "frame {frame}: posed vertex {v:?} outside {wb:?}"
            );
            escaped_bind_box += !bind_world.contains_point(v) as usize;
        }
    }
    assert!(
        escaped_bind_box > 0,
        "the poses must leave the bind box, or the test proves nothing"
    );
}

/// An inverted posed box (`origin_min.x > origin_max.x`) makes the object invalid for
/// that frame even though its stored bounds are fine; the next good pose draws again.
#[test]
fn an_invalid_posed_box_makes_the_object_invalid_for_that_frame() {
    let mut store = ObjectStore::new();
    let bind = Aabb::new(Vec3::splat(-1.0), Vec3::splat(1.0));
    let mut d = ObjectDesc::new(Mat4::IDENTITY, bind, MeshHandle(1), MaterialHandle(1));
    d.skin = Some(Skin {
        bone_first: 0,
        bone_count: 1,
        skin_radius: 0.5,
        pose: None,
    });
    let id = store.insert(d);
    let cams = one_camera(Vec3::new(0.0, 0.0, 10.0), Vec3::ZERO);
    let settings = RenderConfig::default();
    let mut sys = VisibilitySystem::new();
    let poses = [
        // Inverted on x by less than the pad: padding would hide it.
        (
            Vec3::new(0.2, -1.0, -1.0),
            Vec3::new(0.0, 1.0, 1.0),
            1.0,
            false,
        ),
        // Good.
        (Vec3::splat(-1.0), Vec3::splat(1.0), 1.0, true),
        // A NaN bone scale.
        (Vec3::splat(-1.0), Vec3::splat(1.0), f32::NAN, false),
        // Inverted far beyond the pad.
        (
            Vec3::new(5.0, -1.0, -1.0),
            Vec3::new(-5.0, 1.0, 1.0),
            1.0,
            false,
        ),
    ];
    for (k, &(lo, hi, scale, ok)) in poses.iter().enumerate() {
        let frame = k as u64 + 1;
        store.skin_mut(id).unwrap().pose = Some(PoseSlice {
            origin_min: lo,
            origin_max: hi,
            max_bone_scale: scale,
            frame,
        });
        let ctx = frame_context(frame, &cams, &settings);
        sys.update(&mut store, &ctx);
        let drawn = !sys.visibility().objects.scene.is_empty();
        assert_eq!(drawn, ok, "pose {k}: drawn {drawn}");
        assert_eq!(sys.stats().invalid, (!ok) as u32, "pose {k}");
    }
}

fn one_camera(eye: Vec3, target: Vec3) -> CameraStore {
    let mut cams = CameraStore::new();
    cams.insert(Camera::looking_at(
        Projection::Perspective {
            fov_y: 1.0,
            aspect: 1.0,
            near: 0.01,
            far: 100.0,
        },
        eye,
        target,
    ));
    cams
}
