//! Concatenated levels (docs/design/baked-buildings.md#concatenated-levels): every piece of a level
//! copied into building space and joined per XZ cell, binding and side. No kernel, no
//! weld: every output triangle is one input triangle.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use glam::{Affine3A, Vec3};

use crate::mesh::{
    Aabb, FaceSource, GroupBatch, MergedGroup, Mesh, MeshedBuilding, Operand, Piece, PieceKind,
};
use crate::policy::{LodCell, LodPolicy};
use crate::recipe::{Building, Side};

/// The id of a cell: `cell:{side}m:{i},{j}` or `cell:whole`, lengthened with `+`
/// while it equals one of `taken` (declared merge group ids and the building's).
pub fn cell_id(cell: LodCell, ij: (i32, i32), taken: &BTreeSet<String>) -> String {
    let mut id = match cell {
        LodCell::Side(side) => format!("cell:{side}m:{},{}", ij.0, ij.1),
        LodCell::Whole => "cell:whole".to_string(),
    };
    while taken.contains(&id) {
        id.push('+');
    }
    id
}

impl MeshedBuilding {
    /// The level with every piece joined per cell, binding and side (see the module
    /// docs). `taken` holds ids a cell id must not equal. The result has no parts and
    /// one group per occupied cell, ordered by cell; its batches are ordered by
    /// binding and side; pieces are appended in [`MeshedBuilding::pieces`] order. Each
    /// group is pivoted about the centre of its bounds.
    pub fn concatenated(&self, cell: LodCell, taken: &BTreeSet<String>) -> MeshedBuilding {
        let mut cells: BTreeMap<(i32, i32), CellAcc> = BTreeMap::new();
        for piece in self.pieces() {
            let c = piece.placed_bounds.center();
            let ij = match cell {
                LodCell::Side(side) => farsight_lod::cell_of(c[0], c[2], side),
                LodCell::Whole => (0, 0),
            };
            let group = match piece.kind {
                PieceKind::Batch { group, .. } => self.groups.iter().find(|g| g.id == group),
                PieceKind::Element { .. } => None,
            };
            cells.entry(ij).or_default().add(&piece, group);
        }
        let groups = cells
            .into_iter()
            .map(|(ij, acc)| acc.into_group(cell_id(cell, ij, taken)))
            .collect();
        MeshedBuilding {
            id: self.id.clone(),
            placements: self.placements.clone(),
            parts: Vec::new(),
            groups,
            colliders: self.colliders.clone(),
            rooms: self.rooms.clone(),
            portals: self.portals.clone(),
        }
    }
}

/// One cell of a concatenated level as its pieces are appended: the operands its
/// faces name (each once, in first-named order) and one mesh per binding and side.
#[derive(Default)]
struct CellAcc {
    operands: Vec<Operand>,
    index: BTreeMap<Operand, u32>,
    batches: BTreeMap<(String, Side), Mesh>,
}

impl CellAcc {
    /// Appends `piece` (a batch of `group`, or an element) to its binding and side's
    /// mesh, in building space, its face sources renumbered into this cell's operands.
    fn add(&mut self, piece: &Piece<'_>, group: Option<&MergedGroup>) {
        let out = self
            .batches
            .entry((piece.material.to_string(), piece.side))
            .or_default();
        let m = &piece.mesh;
        append_placed(out, m, piece.transform);
        for s in &m.sources {
            let op = match (piece.kind, group) {
                (
                    PieceKind::Element {
                        instance, element, ..
                    },
                    _,
                ) => Operand {
                    instance: instance.to_string(),
                    element: element.to_string(),
                    shape: s.operand,
                },
                (_, Some(g)) => g.operands[s.operand as usize].clone(),
                (_, None) => unreachable!("a batch piece names a group of its level"),
            };
            let next = self.operands.len() as u32;
            let operands = &mut self.operands;
            let operand = *self.index.entry(op.clone()).or_insert_with(|| {
                operands.push(op);
                next
            });
            out.sources.push(FaceSource {
                operand,
                cut: s.cut,
            });
        }
    }

    /// The cell as a merge group named `id`, pivoted about the centre of its bounds.
    fn into_group(self, id: String) -> MergedGroup {
        let mut bounds = Aabb::EMPTY;
        let batches: Vec<GroupBatch> = self
            .batches
            .into_iter()
            .map(|((binding, side), mesh)| {
                let b = mesh.bounds();
                bounds = bounds.union(&b);
                GroupBatch {
                    binding,
                    side,
                    bounds: b,
                    mesh: Arc::new(mesh),
                }
            })
            .collect();
        MergedGroup {
            id,
            storey: None,
            operands: self.operands,
            batches,
            pivot: bounds.center(),
            bounds,
        }
    }
}

/// Appends `m`'s vertices (moved by `t`, normals and tangents turned and
/// renormalised) and its triangles to `out`; face sources are the caller's.
fn append_placed(out: &mut Mesh, m: &Mesh, t: Affine3A) {
    let base = out.positions.len() as u32;
    out.positions.extend(
        m.positions
            .iter()
            .map(|&p| <[f32; 3]>::from(t.transform_point3(p.into()))),
    );
    out.normals.extend(
        m.normals
            .iter()
            .map(|&n| <[f32; 3]>::from(t.transform_vector3(Vec3::from(n)).normalize_or_zero())),
    );
    out.uvs.extend_from_slice(&m.uvs);
    if m.tangents.len() == m.positions.len() && !m.tangents.is_empty() {
        out.tangents.extend(m.tangents.iter().map(|tg| {
            let v = t
                .transform_vector3(Vec3::new(tg[0], tg[1], tg[2]))
                .normalize_or_zero();
            [v.x, v.y, v.z, tg[3]]
        }));
    }
    out.indices.extend(m.indices.iter().map(|i| i + base));
}

/// Joins every level whose policy has a cell, after all levels were meshed as placed
/// pieces. A cell is pivoted about its centre at the first level it appears in, and a
/// batch equal to the previous level's batch of the same cell shares its mesh.
pub fn concatenate_levels(
    building: &Building,
    ladder: &[LodPolicy],
    levels: Vec<MeshedBuilding>,
) -> Vec<MeshedBuilding> {
    let mut taken: BTreeSet<String> = building.merge_groups.iter().map(|g| g.id.clone()).collect();
    taken.insert(building.id.clone());
    let mut pivots: BTreeMap<String, [f32; 3]> = BTreeMap::new();
    for level in &levels {
        for g in &level.groups {
            pivots.entry(g.id.clone()).or_insert(g.pivot);
        }
    }
    let mut out: Vec<MeshedBuilding> = Vec::with_capacity(levels.len());
    for (policy, level) in ladder.iter().zip(levels) {
        let Some(cell) = policy.cell else {
            out.push(level);
            continue;
        };
        let mut joined = level.concatenated(cell, &taken);
        for g in &mut joined.groups {
            g.pivot = *pivots.entry(g.id.clone()).or_insert(g.pivot);
            if let Some(prev) = out
                .last()
                .and_then(|p| p.groups.iter().find(|o| o.id == g.id))
            {
                for b in &mut g.batches {
                    if let Some(pb) = prev.batches.iter().find(|pb| {
                        pb.binding == b.binding && pb.side == b.side && pb.mesh == b.mesh
                    }) {
                        b.mesh = Arc::clone(&pb.mesh);
                    }
                }
            }
        }
        out.push(joined);
    }
    out
}
