//! Meshing with the kernel: closed solids, provenance, cut faces, pieces, damage.
#![cfg(feature = "bake")]

use crate::common::*;
use farsight_building::bake::*;
use farsight_building::*;

fn check_closed(level: &MeshedBuilding) {
    for e in level.parts.iter().flat_map(|p| &p.elements) {
        closed_solid(&e.mesh.positions, &e.mesh.indices)
            .unwrap_or_else(|err| panic!("element {}: {err}", e.element));
    }
    for g in &level.groups {
        // A group's batches together are its closed union.
        let mut pos = Vec::new();
        let mut idx = Vec::new();
        for b in &g.batches {
            let base = pos.len() as u32;
            pos.extend_from_slice(&b.mesh.positions);
            idx.extend(b.mesh.indices.iter().map(|i| i + base));
        }
        closed_solid(&pos, &idx).unwrap_or_else(|err| panic!("group {}: {err}", g.id));
    }
}

#[test]
fn wall_with_windows_is_a_closed_solid_with_cut_faces() {
    let part = wall_part("bay", 20);
    let m = mesh_part(&ManifoldKernel, &part).unwrap();
    let wall = &m.elements[0];
    let vol = closed_solid(&wall.mesh.positions, &wall.mesh.indices).unwrap();
    // 6 x 3 x 0.3 minus 20 openings of 0.18 x 1.6 x 0.3, plus the sill.
    let expect = 6.0 * 3.0 * 0.3 - 20.0 * (0.3 * 0.6) * 1.6 * 0.3 + 6.0 * 0.1 * 0.2;
    assert!((vol - expect).abs() < 1e-3, "{vol} vs {expect}");
    let cut = wall.mesh.sources.iter().filter(|s| s.cut).count();
    // Each opening has four walls (two triangles each) at least.
    assert!(cut >= 20 * 8, "{cut} cut triangles");
    // Operands: 0 the wall, 1 the sill, 2.. the cutters; every cut face names a cutter.
    assert!(wall.mesh.sources.iter().all(|s| s.cut == (s.operand >= 2)));
    assert!(wall.mesh.sources.iter().any(|s| s.operand == 1));
    assert!(wall.mesh.sources.iter().all(|s| s.operand < 22));
    assert_eq!(wall.mesh.sources.len(), wall.mesh.triangle_count());
    assert_eq!(wall.mesh.normals.len(), wall.mesh.positions.len());
}

#[test]
fn every_primitive_is_closed() {
    let b = sample();
    let level = mesh_building(&ManifoldKernel, &b).unwrap();
    check_closed(&level);
    let shaft = &level.part("column").unwrap().elements[0];
    // 32 segments: 32 side quads and two fans.
    assert_eq!(shaft.mesh.triangle_count(), 32 * 2 + 2 * 30);
    let b0 = shaft.bounds;
    assert!(
        (b0.max[1] - 6.0).abs() < 1e-5 && b0.min[1].abs() < 1e-5,
        "{b0:?}"
    );
}

#[test]
fn union_of_a_hundred_boxes_leaves_no_zero_area_triangle() {
    let k = ManifoldKernel;
    let solids: Vec<_> = (0..100)
        .map(|i| {
            let g = Geometry::Box {
                size: [1.0, 1.0, 1.0],
            };
            let t = glam::DAffine3::from_translation(glam::DVec3::new(
                i as f64 * 0.5,
                (i % 3) as f64 * 0.25,
                0.0,
            ));
            k.solid(&g, &t, i).unwrap()
        })
        .collect();
    let u = k.union(&solids).unwrap();
    let km = k.mesh(&u).unwrap();
    let mesh = to_mesh(&km, |_| true, |_| false);
    for t in mesh.indices.chunks_exact(3) {
        let p = [t[0], t[1], t[2]].map(|i| glam::Vec3::from(mesh.positions[i as usize]).as_dvec3());
        assert!((p[1] - p[0]).cross(p[2] - p[0]).length() > MIN_DOUBLE_AREA);
    }
    closed_solid(&mesh.positions, &mesh.indices).unwrap();
    let degenerate = km
        .triangles
        .iter()
        .filter(|t| {
            let p = t.map(|i| glam::DVec3::from(km.positions[i as usize]));
            (p[1] - p[0]).cross(p[2] - p[0]).length() <= MIN_DOUBLE_AREA
        })
        .count();
    assert_eq!(mesh.triangle_count(), km.triangles.len() - degenerate);
}

#[test]
fn pieces_are_per_part_and_per_group() {
    let b = sample();
    let level = mesh_building(&ManifoldKernel, &b).unwrap();
    let pieces: Vec<_> = level.pieces().collect();
    // 3 walls x 2 elements, a column, interior x 2, a crown; the two slabs are the group.
    let elements = pieces
        .iter()
        .filter(|p| matches!(p.kind, PieceKind::Element { .. }))
        .count();
    assert_eq!(elements, 3 * 2 + 1 + 2 + 1);
    let batches: Vec<_> = pieces
        .iter()
        .filter(|p| matches!(p.kind, PieceKind::Batch { .. }))
        .collect();
    assert_eq!(batches.len(), 1, "both slabs wear concrete");
    assert_eq!(batches[0].origin, level.groups[0].bounds.center());
    // Overrides and palette resolve per instance.
    let w1 = pieces
        .iter()
        .find(|p| {
            matches!(
                p.kind,
                PieceKind::Element {
                    instance: "w1",
                    element: "wall",
                    ..
                }
            )
        })
        .unwrap();
    assert_eq!(w1.material, "brick");
    let w0 = pieces
        .iter()
        .find(|p| {
            matches!(
                p.kind,
                PieceKind::Element {
                    instance: "w0",
                    element: "wall",
                    ..
                }
            )
        })
        .unwrap();
    assert_eq!(w0.material, "glass");
    assert!(w0.is_cut);
    // Placed bounds: w1 is turned 90 degrees, so it runs along Z at x = 3.
    assert!((w1.placed_bounds.max[2] - w1.placed_bounds.min[2] - 6.0).abs() < 1e-4);
    assert_eq!(level.colliders().len(), 3);
    assert_eq!(level.portals().len(), 1);
    // Group operands name instance and element.
    let g = &level.groups[0];
    let names: Vec<_> = g
        .operands
        .iter()
        .map(|o| (o.instance.as_str(), o.element.as_str()))
        .collect();
    assert_eq!(names, [("s0", "slab"), ("s1", "slab")]);
    assert!(g.batches[0].mesh.sources.iter().any(|s| s.operand == 1));
}

#[test]
fn damage_cuts_a_hole_into_a_placed_group() {
    let mut b = sample();
    b.merge_groups.push(MergeGroup {
        id: "front".into(),
        instances: vec!["w0".into(), "c0".into()],
    });
    validate(&b).unwrap();
    let mut level = mesh_building(&ManifoldKernel, &b).unwrap();
    let before = level.groups[1].clone();
    // A half-metre hole through the front wall (at z = 3, between two windows).
    let hole = boxed([0.5, 0.5, 2.0], [-1.0, 1.5, 3.0]);
    assert!(damage(&ManifoldKernel, &b, &mut level, "front", &[hole]).unwrap());
    let after = &level.groups[1];
    assert_eq!(after.pivot, before.pivot, "the band does not move");
    let tris = |g: &MergedGroup| {
        g.batches
            .iter()
            .map(|b| b.mesh.triangle_count())
            .sum::<usize>()
    };
    assert!(tris(after) > tris(&before));
    let hole_op = after
        .operands
        .iter()
        .position(|o| o.element == "damage")
        .unwrap() as u32;
    let hole_faces = after
        .batches
        .iter()
        .flat_map(|b| &b.mesh.sources)
        .filter(|s| s.operand == hole_op)
        .count();
    assert!(hole_faces >= 8, "{hole_faces}");
    assert!(after
        .batches
        .iter()
        .flat_map(|b| &b.mesh.sources)
        .filter(|s| s.operand == hole_op)
        .all(|s| s.cut));
    check_closed(&level);
    assert!(!damage(&ManifoldKernel, &b, &mut level, "nope", &[]).unwrap());
}

#[test]
fn meshing_is_deterministic() {
    let b = sample();
    let a = mesh_building(&ManifoldKernel, &b).unwrap();
    for _ in 0..3 {
        assert_eq!(a, mesh_building(&ManifoldKernel, &b).unwrap());
    }
}

#[test]
fn cylinders_shade_smooth_around_the_ring_and_boxes_flat() {
    let cyl = element(
        "shaft",
        shape(
            Geometry::Cylinder {
                radius: 0.5,
                height: 2.0,
                segments: 16,
            },
            [0.0, 1.0, 0.0],
        ),
        "stone",
    );
    let m = mesh_element(&ManifoldKernel, &cyl).unwrap().mesh;
    let (mut sides, mut caps) = (0, 0);
    for (p, n) in m.positions.iter().zip(&m.normals) {
        let n = glam::Vec3::from(*n);
        assert!((n.length() - 1.0).abs() < 1e-5, "{n}");
        if n.y.abs() > 0.999 {
            // A cap vertex: the cap's own normal, split from the sides at the rim.
            caps += 1;
            assert!(n.x.abs() < 1e-6 && n.z.abs() < 1e-6, "{n}");
        } else {
            // A side vertex: radial, through its own position (smooth, not the flat
            // normal of one side face, which is radial only at the face's middle).
            sides += 1;
            assert!(n.y.abs() < 1e-6, "{n}");
            let radial = glam::Vec3::new(p[0], 0.0, p[2]).normalize();
            assert!(n.dot(radial) > 0.9999, "{n} at {p:?}");
        }
    }
    assert!(
        sides >= 32 && caps >= 32,
        "{sides} side and {caps} cap vertices"
    );
    // Both vertices of one position on a side seam carry one normal.
    let mut by_pos: std::collections::BTreeMap<[u32; 3], Vec<[u32; 3]>> = Default::default();
    for (p, n) in m.positions.iter().zip(&m.normals) {
        if n[1].abs() < 0.5 {
            by_pos
                .entry(p.map(f32::to_bits))
                .or_default()
                .push(n.map(f32::to_bits));
        }
    }
    assert!(by_pos.values().any(|ns| ns.len() > 1));
    assert!(by_pos.values().all(|ns| ns.iter().all(|n| n == &ns[0])));
    // A box stays flat: every normal is an axis.
    let b = element("b", boxed([1.0, 2.0, 3.0], [0.0, 0.0, 0.0]), "stone");
    let m = mesh_element(&ManifoldKernel, &b).unwrap().mesh;
    for n in &m.normals {
        assert_eq!(n.iter().filter(|v| v.abs() == 1.0).count(), 1, "{n:?}");
    }
    // A revolve is smooth about its axis too, and stays a closed solid.
    let lamp = &sample().parts[2].elements[1];
    let m = mesh_element(&ManifoldKernel, lamp).unwrap().mesh;
    closed_solid(&m.positions, &m.indices).unwrap();
    let tilted = m
        .normals
        .iter()
        .filter(|n| n[1].abs() < 0.999 && n[1].abs() > 1e-3)
        .count();
    assert!(tilted > 0);
}
