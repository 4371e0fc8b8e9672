//! The BVH against linear scans on random worlds, with the validator after every build.

use glam::{Mat4, Vec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{
    linear_query_aabb, linear_query_frustum, linear_query_sphere, Aabb, Bvh, BvhBuildError,
    BvhBuilder, Frustum, Sphere, BVH_LEAF_SIZE,
};

#[derive(Clone, Copy, Debug)]
enum World {
    Uniform,
    Coincident,
    ZeroSize,
    Grid,
    Mixed,
}

fn world(rng: &mut ChaCha8Rng, kind: World, n: usize) -> Vec<Aabb> {
    let v = |rng: &mut ChaCha8Rng, s: f32| {
        Vec3::new(
            rng.random_range(-s..s),
            rng.random_range(-s..s),
            rng.random_range(-s..s),
        )
    };
    (0..n)
        .map(|i| match kind {
            World::Uniform => {
                let c = v(rng, 500.0);
                let e = v(rng, 20.0).abs();
                Aabb::from_center_extent(c, e)
            }
            World::Coincident => {
                // Centred on the origin so `(min + max) / 2` is exactly zero for every box.
                Aabb::from_center_extent(Vec3::ZERO, v(rng, 10.0).abs())
            }
            World::ZeroSize => {
                let p = v(rng, 100.0).round();
                Aabb::new(p, p)
            }
            World::Grid => {
                let x = (i % 32) as f32 * 16.0;
                let z = (i / 32) as f32 * 16.0;
                Aabb::new(Vec3::new(x, 0.0, z), Vec3::new(x + 16.0, 30.0, z + 16.0))
            }
            World::Mixed => match rng.random_range(0..3) {
                0 => Aabb::from_center_extent(Vec3::splat(7.0), Vec3::ZERO),
                1 => Aabb::from_center_extent(v(rng, 50.0), v(rng, 60.0).abs()),
                _ => Aabb::from_center_extent(Vec3::splat(7.0), v(rng, 5.0).abs()),
            },
        })
        .collect()
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

fn random_frustum(rng: &mut ChaCha8Rng) -> Frustum {
    let eye = Vec3::new(
        rng.random_range(-600.0..600.0),
        rng.random_range(-100.0..100.0),
        rng.random_range(-600.0..600.0),
    );
    let dir = Vec3::new(
        rng.random_range(-1.0..1.0),
        rng.random_range(-0.3..0.3),
        rng.random_range(-1.0..1.0),
    )
    .normalize_or(Vec3::X);
    let view = Mat4::look_at_rh(eye, eye + dir, Vec3::Y);
    let proj = Mat4::perspective_rh(rng.random_range(0.4..2.0), 1.6, 0.5, 800.0);
    Frustum::from_view_projection(&(proj * view))
}

#[test]
fn queries_equal_linear_scans_on_random_worlds() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut builder = BvhBuilder::default();
    let mut bvh = Bvh::default();
    let (mut fast, mut slow) = (Vec::new(), Vec::new());
    for kind in [
        World::Uniform,
        World::Coincident,
        World::ZeroSize,
        World::Grid,
        World::Mixed,
    ] {
        for n in [0usize, 1, 2, 3, 4, 5, 9, 17, 100, 1000, 3000] {
            let boxes = world(&mut rng, kind, n);
            builder.rebuild(&mut bvh, &boxes).unwrap();
            bvh.validate()
                .unwrap_or_else(|e| panic!("{kind:?} n={n}: {e}"));
            assert_eq!(bvh.len(), n);
            for q in 0..40 {
                let c = Vec3::new(
                    rng.random_range(-600.0..600.0),
                    rng.random_range(-100.0..100.0),
                    rng.random_range(-600.0..600.0),
                );
                // Include radius 0 and queries centred on the coincident point.
                let c = if q % 7 == 0 { Vec3::splat(7.0) } else { c };
                let r = if q % 5 == 0 {
                    0.0
                } else {
                    rng.random_range(0.0..300.0)
                };
                let s = Sphere::new(c, r);
                fast.clear();
                slow.clear();
                bvh.query_sphere(&s, &mut fast);
                linear_query_sphere(&boxes, &s, &mut slow);
                assert_eq!(sorted(fast.clone()), slow, "{kind:?} n={n} sphere {s:?}");
                fast.clear();
                bvh.for_each_in_sphere(&s, |id| fast.push(id));
                assert_eq!(sorted(fast.clone()), slow, "{kind:?} n={n} for_each {s:?}");

                let qb = Aabb::from_center_extent(c, Vec3::splat(r));
                fast.clear();
                slow.clear();
                bvh.query_aabb(&qb, &mut fast);
                linear_query_aabb(&boxes, &qb, &mut slow);
                assert_eq!(sorted(fast.clone()), slow, "{kind:?} n={n} box {qb:?}");

                let f = random_frustum(&mut rng);
                fast.clear();
                slow.clear();
                bvh.query_frustum(&f, &mut fast);
                linear_query_frustum(&boxes, &f, &mut slow);
                assert_eq!(sorted(fast.clone()), slow, "{kind:?} n={n} frustum");
            }
        }
    }
}

#[test]
fn depth_stays_logarithmic_and_coincident_centres_make_one_leaf() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let boxes = world(&mut rng, World::Uniform, 20_000);
    let bvh = Bvh::build(&boxes).unwrap();
    bvh.validate().unwrap();
    // Median split: ceil(log2(20000 / leaf size)) + 1 levels.
    let levels = (20_000f64 / BVH_LEAF_SIZE as f64).log2().ceil() as usize + 1;
    assert!(bvh.depth() <= levels, "depth {} > {levels}", bvh.depth());
    let same = world(&mut rng, World::Coincident, 50);
    let bvh = Bvh::build(&same).unwrap();
    bvh.validate().unwrap();
    assert_eq!(bvh.nodes().len(), 1, "coincident centres cannot be split");
    assert_eq!(bvh.nodes()[0].count(), 50);
}

#[test]
fn empty_world_has_no_nodes_and_no_hits() {
    let bvh = Bvh::build(&[]).unwrap();
    bvh.validate().unwrap();
    let mut out = Vec::new();
    bvh.query_sphere(&Sphere::new(Vec3::ZERO, 1e9), &mut out);
    assert!(out.is_empty());
    assert_eq!(bvh.depth(), 0);
}

#[test]
fn invalid_boxes_are_typed_errors() {
    let good = Aabb::new(Vec3::ZERO, Vec3::ONE);
    for bad in [
        Aabb::EMPTY,
        Aabb::new(Vec3::ZERO, Vec3::new(f32::NAN, 1.0, 1.0)),
        Aabb::new(Vec3::ONE, Vec3::ZERO),
        Aabb::new(Vec3::ZERO, Vec3::splat(f32::INFINITY)),
    ] {
        let err = Bvh::build(&[good, good, bad]).unwrap_err();
        assert!(
            matches!(err, BvhBuildError::InvalidBox { index: 2, .. }),
            "{err}"
        );
    }
}

#[test]
fn validator_catches_broken_trees() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let boxes = world(&mut rng, World::Uniform, 100);
    let good = Bvh::build(&boxes).unwrap();
    good.validate().unwrap();

    let mut shrunk = good.clone();
    let n = shrunk.nodes[1];
    shrunk.nodes[1].set_bounds(n.min(), n.max() - 1000.0);
    assert!(
        shrunk.validate().is_err(),
        "a child sticking out of its box"
    );

    let mut twice = good.clone();
    let last = twice.leaf_ids.len() - 1;
    twice.leaf_ids[last] = twice.leaf_ids[0];
    assert!(twice.validate().is_err(), "a region reached twice");

    let mut range = good.clone();
    let leaf = range.nodes.iter().position(|n| n.is_leaf()).unwrap();
    let count = range.nodes[leaf].count();
    range.nodes[leaf].set_count(count + 1);
    assert!(
        range.validate().is_err(),
        "a leaf whose run overlaps its neighbour's"
    );

    let mut cycle = good.clone();
    cycle.nodes[0].set_first(0);
    assert!(cycle.validate().is_err(), "a child pointing at its parent");

    // The sphere walk finds node h's children at 2h + 1 without reading `first`.
    let mut moved = good.clone();
    moved.nodes[0].set_first(3);
    assert!(moved.validate().is_err(), "children outside heap order");

    // A tree whose left child is a leaf and whose right child is split again (34
    // regions with leaves of 16: runs of 16 and 18) leaves the two slots below that
    // leaf unused.
    let mut stray = (2..=boxes.len())
        .map(|n| Bvh::build(&boxes[..n]).unwrap())
        .find(|t| t.nodes.iter().any(|n| n.is_unused()))
        .expect("some size leaves a slot unused");
    stray.validate().unwrap();
    let unused = stray.nodes.iter().position(|n| n.is_unused()).unwrap();
    stray.nodes[unused] = stray.nodes[0];
    assert!(stray.validate().is_err(), "a node nothing reaches");
}

#[test]
fn rebuild_reuses_buffers() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let boxes = world(&mut rng, World::Uniform, 5000);
    let mut builder = BvhBuilder::default();
    let mut bvh = Bvh::default();
    builder.rebuild(&mut bvh, &boxes).unwrap();
    let caps = (bvh.nodes.capacity(), bvh.leaf_ids.capacity());
    let first = bvh.nodes.clone();
    builder.rebuild(&mut bvh, &boxes).unwrap();
    bvh.validate().unwrap();
    assert_eq!((bvh.nodes.capacity(), bvh.leaf_ids.capacity()), caps);
    assert_eq!(bvh.nodes, first, "same input, same tree");
}
