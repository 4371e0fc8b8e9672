//! Levels of detail from the recipe: simplification rules, the ladder, bake's reuse.
#![cfg(feature = "bake")]

use std::sync::atomic::Ordering;

use crate::common::*;
use farsight_building::bake::*;
use farsight_building::*;

fn policy(min_feature: f32, segment_scale: f32, drop_interior: bool) -> LodPolicy {
    LodPolicy {
        min_feature,
        segment_scale,
        drop_interior,
        until: None,
        cell: None,
    }
}

#[test]
fn element_rules() {
    let p = policy(0.35, 0.5, true);
    let b = sample();
    let wall = &b.parts[0].elements[0];
    let s = wall.simplified(&p).unwrap();
    // The 20 cm sill goes (middle extent 0.2); the 1.8 x 1.6 openings stay.
    assert!(s.union.is_empty());
    assert_eq!(s.cutters.len(), 3);
    // The 5 cm x 40 cm fin goes (middle extent 0.4 survives 0.35, not 1.5).
    let fin = &b.parts[0].elements[1];
    assert!(fin.simplified(&p).is_some());
    assert!(fin.simplified(&policy(1.5, 0.25, true)).is_none());
    // Interior goes; the far lamp stays with its segments coarsened (16 -> 8).
    let interior = b.parts[2].simplified(&p).unwrap();
    assert_eq!(interior.elements.len(), 1);
    assert_eq!(interior.elements[0].id, "lamp");
    assert_eq!(interior.elements[0].shape.geometry.segments(), Some(8));
    let far = interior.elements[0]
        .simplified(&policy(100.0, 0.25, true))
        .unwrap();
    assert_eq!(far.shape, interior.elements[0].shape);
    // Segments: 32 at half is 16, never under eight.
    let shaft = &b.parts[1].elements[0].shape.geometry;
    assert_eq!(shaft.simplified(&p).segments(), Some(16));
    assert_eq!(
        shaft.simplified(&policy(0.0, 0.1, false)).segments(),
        Some(8)
    );
    // Cutters are judged by the middle extent of the opening: a vent of 20 cm goes.
    let mut vented = wall.clone();
    vented.cutters.push(boxed([0.2, 0.2, 0.6], [0.0, 2.8, 0.0]));
    assert_eq!(vented.simplified(&p).unwrap().cutters.len(), 3);
    assert_eq!(
        vented
            .simplified(&policy(0.0, 1.0, false))
            .unwrap()
            .cutters
            .len(),
        4
    );
}

#[test]
fn building_rules() {
    let mut b = sample();
    b.instances[4]
        .overrides
        .insert("plaster".into(), "tile".into());
    b.instances[4]
        .overrides
        .insert("glow".into(), "neon".into());
    validate(&b).unwrap();
    let s = b.simplified(&policy(1.5, 0.25, true));
    validate(&s).unwrap();
    // The column (80 cm) vanishes with its instance; the crown's attachment is cleared.
    assert!(s.part("column").is_none());
    assert!(s.instances.iter().all(|i| i.id != "c0"));
    assert!(s.instances.iter().all(|i| i.attachment.is_none()));
    let i0 = s.instances.iter().find(|i| i.id == "i0").unwrap();
    assert_eq!(i0.overrides.keys().collect::<Vec<_>>(), ["glow"]);
    assert_eq!(i0.pose, b.instances[4].pose);
    // Under identity only attachments change (bake takes the authored recipe then).
    let same = b.simplified(&policy(0.0, 1.0, false));
    assert_eq!(
        (&same.parts, &same.merge_groups, same.instances.len()),
        (&b.parts, &b.merge_groups, b.instances.len())
    );
}

#[test]
fn bake_reuses_unchanged_parts_and_groups() {
    let b = sample();
    let kernel = Counting::default();
    let (baked, stats) = bake_with_stats(&b, &LodPolicy::ladder(), &kernel).unwrap();
    assert_eq!(baked.level_count(), 3);
    // Level 0 meshes every part and group.
    assert_eq!(stats.parts_meshed[0], 5);
    assert_eq!(stats.groups_meshed[0], 1);
    // Level 1: the wall (sill gone), the column (16 segments) and the interior
    // (partition gone, lamp coarsened) change; slab and crown do not, so neither does
    // the floors group.
    assert_eq!((stats.parts_meshed[1], stats.parts_reused[1]), (3, 2));
    assert_eq!((stats.groups_meshed[1], stats.groups_reused[1]), (0, 1));
    // Level 2: the fin goes (the wall changes), the column vanishes, the lamp's 8
    // segments stay 8, slab, crown unchanged.
    assert_eq!((stats.parts_meshed[2], stats.parts_reused[2]), (1, 3));
    // Kernel calls: each distinct element once. At level 1 the wall part changed but
    // its fin did not, so the fin's mesh is level zero's (the element cache), and only
    // the wall element, the column and the lamp are meshed.
    let meshes = kernel.meshes.load(Ordering::SeqCst);
    let elements_meshed = (5 + 2) /* level 0: wall x2, column, interior x2, slab, crown */
        + 1 /* floors */ + (1 + 1 + 1) /* level 1 */ + 1 /* level 2: wall */;
    assert_eq!(meshes, elements_meshed);
    let fin = |n: usize| {
        let wall = baked.level(n).unwrap().part("wall").unwrap();
        std::sync::Arc::clone(
            &wall
                .elements
                .iter()
                .find(|e| e.element == "fin")
                .unwrap()
                .mesh,
        )
    };
    assert!(std::sync::Arc::ptr_eq(&fin(0), &fin(1)));
    // Reused meshes are the same allocation.
    let l1 = baked.level(1).unwrap();
    let l2 = baked.level(2).unwrap();
    assert!(std::sync::Arc::ptr_eq(
        &l1.part("crown").unwrap().elements[0].mesh,
        &l2.part("crown").unwrap().elements[0].mesh
    ));
    // Collision and portals are level zero's at every level.
    for n in 0..3 {
        assert_eq!(baked.level(n).unwrap().colliders().len(), 3);
        assert_eq!(baked.level(n).unwrap().portals(), b.portals.as_slice());
    }
    // Far levels draw fewer triangles.
    let drawn: Vec<usize> = baked.levels.iter().map(|l| l.drawn_triangles()).collect();
    assert!(drawn[0] > drawn[1] && drawn[1] > drawn[2], "{drawn:?}");
}

#[test]
fn bake_refuses_a_bad_cell_before_meshing() {
    let b = sample();
    let kernel = Counting::default();
    let mut ladder = LodPolicy::ladder();
    ladder[1].cell = Some(LodCell::Side(f32::NAN));
    let err = bake(&b, &ladder, &kernel).unwrap_err();
    assert!(
        matches!(
            err,
            BakeError::Policy(PolicyError::BadCell { level: 1, .. })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("levels[1].cell"));
    assert_eq!(kernel.calls(), 0);
    let mut bad = sample();
    bad.instances[0].part = "nope".into();
    assert!(matches!(
        bake(&bad, &LodPolicy::ladder(), &kernel),
        Err(BakeError::Recipe(_))
    ));
    assert_eq!(kernel.calls(), 0);
}

/// The cell a wall 3 km out falls in at a side of a micrometre is past an `i32`:
/// refused at `levels[n].cell` before the kernel is called, not clamped into the edge
/// cell. A side that keeps every index in range still bakes.
#[test]
fn bake_refuses_a_cell_whose_index_would_leave_its_range() {
    let mut b = sample();
    let mut far = b.instances[0].clone();
    far.id = "far".into();
    far.pose.translation = [3000.0, 0.0, 0.0];
    b.instances.push(far);
    let kernel = Counting::default();
    let mut ladder = LodPolicy::ladder();
    ladder[2].cell = Some(LodCell::Side(1e-6));
    LodPolicy::check(&ladder).unwrap();
    let err = bake(&b, &ladder, &kernel).unwrap_err();
    assert!(
        matches!(
            err,
            BakeError::Policy(PolicyError::CellIndexOutOfRange { level: 2, .. })
        ),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("levels[2].cell"), "{err}");
    assert_eq!(kernel.calls(), 0);
    // The box the recipe reaches holds every triangle of every level.
    ladder[2].cell = Some(LodCell::Side(1e-3));
    let baked = bake(&b, &ladder, &kernel).unwrap();
    let reach = b.reach();
    for level in &baked.levels {
        for p in level.pieces() {
            let placed = p.placed_bounds;
            for k in 0..3 {
                assert!(placed.min[k] >= reach.min[k] - 1e-3, "{placed:?} {reach:?}");
                assert!(placed.max[k] <= reach.max[k] + 1e-3, "{placed:?} {reach:?}");
            }
        }
    }
    // Every cell id holds its true index: none is clamped to the edge of the range.
    for g in &baked.levels[2].groups {
        assert!(!g.id.contains("2147483647"), "{}", g.id);
    }
    let far_cell = baked.levels[2].groups.iter().any(|g| {
        let i =
            g.id.strip_prefix("cell:0.001m:")
                .and_then(|r| r.split(',').next());
        i.and_then(|i| i.parse::<i64>().ok())
            .is_some_and(|i| (2_990_000..3_010_000).contains(&i))
    });
    assert!(
        far_cell,
        "{:?}",
        baked.levels[2]
            .groups
            .iter()
            .map(|g| &g.id)
            .collect::<Vec<_>>()
    );
}

#[test]
fn far_levels_of_both_kits_coarsen() {
    for name in ["corporate", "dark-city"] {
        let kit = Kit::from_ron(match name {
            "corporate" => farsight_building::kit::CORPORATE,
            _ => farsight_building::kit::DARK_CITY,
        })
        .unwrap();
        let city = metropolis(&kit, 2, 1);
        let mut ladder = LodPolicy::ladder();
        let (mut placed, mut joined) = (vec![0usize; 3], vec![0usize; 3]);
        let mut pieces = vec![0usize; 3];
        for b in &city {
            let baked = bake(b, &ladder, &ManifoldKernel).unwrap();
            for (n, l) in baked.levels.iter().enumerate() {
                placed[n] += l.drawn_triangles();
                // Every level is a closed solid per piece.
                for e in l.parts.iter().flat_map(|p| &p.elements) {
                    closed_solid(&e.mesh.positions, &e.mesh.indices)
                        .unwrap_or_else(|err| panic!("{name} {} {}: {err}", b.id, e.element));
                }
            }
        }
        ladder[1].cell = Some(LodCell::Side(20.0));
        ladder[2].cell = Some(LodCell::Whole);
        for b in &city {
            let baked = bake(b, &ladder, &ManifoldKernel).unwrap();
            for (n, l) in baked.levels.iter().enumerate() {
                joined[n] += l.drawn_triangles();
                pieces[n] += l.pieces().count();
            }
        }
        println!("{name}: drawn {placed:?}, concatenated pieces {pieces:?}");
        assert!(
            placed[0] > placed[1] && placed[1] > placed[2],
            "{name}: {placed:?}"
        );
        assert_eq!(placed, joined, "{name}: concatenation loses no triangle");
        assert!(
            pieces[0] > pieces[1] && pieces[1] > pieces[2],
            "{name}: {pieces:?}"
        );
    }
}

#[test]
fn both_kits_place_colliders_rooms_and_portals() {
    for name in ["corporate", "dark-city"] {
        let kit = Kit::builtin(name).unwrap();
        let b = kit.building(1, 2, 7);
        farsight_building::validate(&b).unwrap();
        let storeys = b.rooms.len();
        assert!(storeys >= kit.storeys[0] as usize, "{name}");
        // The door to the street and a stair between each pair of storeys.
        assert_eq!(b.portals.len(), storeys, "{name}");
        assert!(b.portals.iter().any(|p| p.id == "door" && p.to.is_none()));
        let baked = bake(&b, &LodPolicy::ladder(), &ManifoldKernel).unwrap();
        let facades = b
            .instances
            .iter()
            .filter(|i| kit.facades.contains(&i.part))
            .count();
        for n in 0..baked.level_count() {
            let l = baked.level(n).unwrap();
            assert!(l.colliders().len() > facades, "{name} level {n}");
            assert_eq!(l.portals().len(), storeys);
            assert_eq!(l.rooms().len(), storeys);
        }
        // A wall bay's hull stands where the bay is: inside the footprint's box.
        let first = baked.level(0).unwrap();
        let room = &b.rooms[0];
        for c in first.colliders() {
            for p in &c.hull {
                assert!(
                    p[0] >= room.min[0] - 1.0 && p[0] <= room.max[0] + 1.0,
                    "{p:?}"
                );
            }
        }
    }
}
