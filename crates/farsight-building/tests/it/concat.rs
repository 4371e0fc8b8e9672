//! Concatenated levels: nothing lost, provenance renumbered, ids, order, reuse.
#![cfg(feature = "bake")]

use std::collections::BTreeSet;

use crate::common::*;
use farsight_building::bake::*;
use farsight_building::*;

type Tri = (String, Side, [[u32; 3]; 3], Operand, bool);

/// Every triangle a level draws, in building space, with what it came from.
fn triangles(level: &MeshedBuilding) -> Vec<Tri> {
    let mut out = Vec::new();
    for p in level.pieces() {
        let group = match p.kind {
            PieceKind::Batch { group, .. } => level.groups.iter().find(|g| g.id == group),
            _ => None,
        };
        for (t, s) in p.mesh.indices.chunks_exact(3).zip(&p.mesh.sources) {
            let pos = [t[0], t[1], t[2]].map(|i| {
                let q = p
                    .transform
                    .transform_point3(p.mesh.positions[i as usize].into());
                <[f32; 3]>::from(q).map(f32::to_bits)
            });
            let op = match (p.kind, group) {
                (
                    PieceKind::Element {
                        instance, element, ..
                    },
                    _,
                ) => Operand {
                    instance: instance.into(),
                    element: element.into(),
                    shape: s.operand,
                },
                (_, Some(g)) => g.operands[s.operand as usize].clone(),
                _ => unreachable!(),
            };
            out.push((p.material.to_string(), p.side, pos, op, s.cut));
        }
    }
    out.sort();
    out
}

#[test]
fn concatenation_loses_no_triangle_and_renumbers_provenance() {
    for b in [sample(), row(12)] {
        let placed = mesh_building(&ManifoldKernel, &b).unwrap();
        for cell in [LodCell::Side(10.0), LodCell::Side(35.0), LodCell::Whole] {
            let joined = placed.concatenated(cell, &BTreeSet::new());
            assert!(joined.parts.is_empty());
            assert_eq!(triangles(&joined), triangles(&placed), "{cell:?}");
            assert_eq!(joined.drawn_triangles(), placed.drawn_triangles());
            // Ordered by cell, batches by binding and side.
            for g in &joined.groups {
                let keys: Vec<_> = g.batches.iter().map(|b| (&b.binding, b.side)).collect();
                assert!(keys.windows(2).all(|w| w[0] < w[1]));
                assert!(g.storey.is_none());
                assert_eq!(g.pivot, g.bounds.center());
            }
            if cell == LodCell::Whole {
                assert_eq!(joined.groups.len(), 1);
                assert_eq!(joined.groups[0].id, "cell:whole");
            }
        }
        let joined = placed.concatenated(LodCell::Side(35.0), &BTreeSet::new());
        assert!(joined.groups.iter().all(|g| g.id.starts_with("cell:35m:")));
        assert!(joined.pieces().count() < placed.pieces().count());
    }
}

#[test]
fn a_piece_is_never_split_and_belongs_to_its_centre_cell() {
    let b = row(12);
    let placed = mesh_building(&ManifoldKernel, &b).unwrap();
    let joined = placed.concatenated(LodCell::Side(35.0), &BTreeSet::new());
    for p in placed.pieces() {
        let c = p.placed_bounds.center();
        let (i, j) = farsight_lod::cell_of(c[0], c[2], 35.0);
        let id = format!("cell:35m:{i},{j}");
        let g = joined.groups.iter().find(|g| g.id == id).unwrap();
        for e in placed.placed_elements(&p) {
            assert!(g
                .operands
                .iter()
                .any(|o| (o.instance.clone(), o.element.clone()) == e));
            // In no other cell.
            for other in joined.groups.iter().filter(|o| o.id != id) {
                assert!(!other
                    .operands
                    .iter()
                    .any(|o| (o.instance.clone(), o.element.clone()) == e));
            }
        }
    }
}

#[test]
fn cell_ids_are_lengthened_on_collision() {
    let taken: BTreeSet<String> = [
        "cell:whole".to_string(),
        "cell:whole+".to_string(),
        "cell:35m:0,0".to_string(),
    ]
    .into_iter()
    .collect();
    assert_eq!(cell_id(LodCell::Whole, (0, 0), &taken), "cell:whole++");
    assert_eq!(
        cell_id(LodCell::Side(35.0), (0, 0), &taken),
        "cell:35m:0,0+"
    );
    assert_eq!(
        cell_id(LodCell::Side(17.5), (-1, 2), &taken),
        "cell:17.5m:-1,2"
    );
    let mut b = row(4);
    b.merge_groups[0].id = "cell:whole".into();
    let mut ladder = LodPolicy::ladder();
    ladder[2].cell = Some(LodCell::Whole);
    let baked = bake(&b, &ladder, &ManifoldKernel).unwrap();
    assert_eq!(baked.level(2).unwrap().groups[0].id, "cell:whole+");
}

#[test]
fn reuse_survives_concatenation_and_far_levels_have_fewer_pieces() {
    let b = row(12);
    let mut ladder = LodPolicy::ladder();
    let (_, plain) = bake_with_stats(&b, &ladder, &Counting::default()).unwrap();
    ladder[1].cell = Some(LodCell::Side(35.0));
    ladder[2].cell = Some(LodCell::Side(35.0));
    let kernel = Counting::default();
    let (baked, stats) = bake_with_stats(&b, &ladder, &kernel).unwrap();
    assert_eq!(stats, plain);
    let pieces: Vec<usize> = baked.levels.iter().map(|l| l.pieces().count()).collect();
    let tris: Vec<usize> = baked.levels.iter().map(|l| l.drawn_triangles()).collect();
    assert!(
        pieces[0] > pieces[1] && tris[0] > tris[1] && tris[1] > tris[2],
        "{pieces:?} {tris:?}"
    );
    // Two levels joined at one side share each cell's pivot.
    for g in &baked.level(2).unwrap().groups {
        if let Some(g1) = baked.level(1).unwrap().groups.iter().find(|o| o.id == g.id) {
            assert_eq!(g1.pivot, g.pivot);
        }
    }
    // In a concatenated level unique triangles equal drawn triangles.
    assert_eq!(baked.level(1).unwrap().unique_triangles(), tris[1]);
}
