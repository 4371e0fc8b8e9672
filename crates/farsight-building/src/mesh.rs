//! A meshed building: what the mesher made of a recipe at one level of detail, and
//! what every consumer reads, whether freshly meshed or read from a baked file.

use std::collections::BTreeMap;
use std::sync::Arc;

use glam::{Affine3A, Vec3};

use crate::recipe::{Portal, Pose, Room, Side};

/// An axis-aligned box.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Aabb {
    /// Lowest corner, metres.
    pub min: [f32; 3],
    /// Highest corner, metres (below `min` on some axis for an empty box).
    pub max: [f32; 3],
}

impl Aabb {
    /// The empty box (min above max): the identity of [`Aabb::union`].
    pub const EMPTY: Aabb = Aabb {
        min: [f32::INFINITY; 3],
        max: [f32::NEG_INFINITY; 3],
    };

    /// The box around `points` ([`Aabb::EMPTY`] for none).
    pub fn of_points<'a>(points: impl IntoIterator<Item = &'a [f32; 3]>) -> Aabb {
        let mut b = Aabb::EMPTY;
        for p in points {
            b.grow(*p);
        }
        b
    }

    /// Grows the box to hold `p`.
    pub fn grow(&mut self, p: [f32; 3]) {
        for ((lo, hi), v) in self.min.iter_mut().zip(&mut self.max).zip(p) {
            *lo = lo.min(v);
            *hi = hi.max(v);
        }
    }

    /// The box around both.
    pub fn union(&self, o: &Aabb) -> Aabb {
        let mut b = *self;
        b.grow(o.min);
        b.grow(o.max);
        b
    }

    /// Whether the box holds nothing.
    pub fn is_empty(&self) -> bool {
        (0..3).any(|k| self.min[k] > self.max[k])
    }

    /// The centre.
    pub fn center(&self) -> [f32; 3] {
        [
            (self.min[0] + self.max[0]) * 0.5,
            (self.min[1] + self.max[1]) * 0.5,
            (self.min[2] + self.max[2]) * 0.5,
        ]
    }

    /// The box around this box's corners moved by `t`.
    pub fn transformed(&self, t: &Affine3A) -> Aabb {
        if self.is_empty() {
            return *self;
        }
        let mut b = Aabb::EMPTY;
        for i in 0..8 {
            let c = Vec3::new(
                if i & 1 == 0 { self.min[0] } else { self.max[0] },
                if i & 2 == 0 { self.min[1] } else { self.max[1] },
                if i & 4 == 0 { self.min[2] } else { self.max[2] },
            );
            b.grow(t.transform_point3(c).into());
        }
        b
    }
}

/// Where one triangle came from: an operand of its piece (for an element piece, a
/// shape of the element: 0 its shape, then its union members, then its cutters; for a
/// group batch or cell, an index into the group's [`Operand`]s) and whether it is a
/// cut face (the wall of an opening, made by a cutter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FaceSource {
    /// Which operand made the triangle (see the type's description).
    pub operand: u32,
    /// True for a cut face: the wall of an opening.
    pub cut: bool,
}

impl FaceSource {
    /// The word stored per triangle in files: `operand << 1 | cut`.
    pub fn to_word(self) -> u32 {
        (self.operand << 1) | self.cut as u32
    }

    /// The inverse of [`FaceSource::to_word`].
    pub fn from_word(w: u32) -> FaceSource {
        FaceSource {
            operand: w >> 1,
            cut: w & 1 == 1,
        }
    }
}

/// A triangle mesh. Normals are per vertex, UVs are metres (planar per face), winding
/// is counter-clockwise seen from outside. `tangents` is empty unless a cooked file's
/// generator made them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Vertex positions, metres.
    pub positions: Vec<[f32; 3]>,
    /// Unit normal per vertex.
    pub normals: Vec<[f32; 3]>,
    /// Texture coordinates per vertex, in metres.
    pub uvs: Vec<[f32; 2]>,
    /// Tangent per vertex (xyz unit, w the handedness sign), or empty.
    pub tangents: Vec<[f32; 4]>,
    /// Triangles, three vertex indices each.
    pub indices: Vec<u32>,
    /// One per triangle.
    pub sources: Vec<FaceSource>,
}

impl Mesh {
    /// Triangles in the index list.
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    /// The box around the vertices.
    pub fn bounds(&self) -> Aabb {
        Aabb::of_points(&self.positions)
    }

    /// Whether any triangle is a cut face.
    pub fn has_cut_faces(&self) -> bool {
        self.sources.iter().any(|s| s.cut)
    }
}

/// A placed element of the recipe: the instance that places it and the element of
/// that instance's part, plus which shape of the element (0 its shape, then union
/// members, then cutters).
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Operand {
    /// The id of the placing instance.
    pub instance: String,
    /// The element's id within that instance's part.
    pub element: String,
    /// 0 the element's shape, then its union members, then its cutters.
    pub shape: u32,
}

/// The mesh of one element of a part, in part space.
#[derive(Clone, Debug, PartialEq)]
pub struct ElementMesh {
    /// The element's id within its part.
    pub element: String,
    /// The material slot.
    pub binding: String,
    /// The element's side of the envelope.
    pub side: Side,
    /// The triangles, in part space.
    pub mesh: Arc<Mesh>,
    /// The mesh's box, recorded (a cooked mesh has no CPU copy to measure).
    pub bounds: Aabb,
}

/// The meshes of one part at one level (absent when nothing of the part survives).
#[derive(Clone, Debug, PartialEq)]
pub struct PartMeshes {
    /// The part's id.
    pub part: String,
    /// The part's storey, as in the recipe.
    pub storey: Option<u32>,
    /// The elements that survive at this level, in recipe order.
    pub elements: Vec<ElementMesh>,
}

/// Building-space triangles of one material and side within a group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupBatch {
    /// The material the batch wears (slots resolved per instance).
    pub binding: String,
    /// The side of the envelope its triangles are on.
    pub side: Side,
    /// The triangles, in building space.
    pub mesh: Arc<Mesh>,
    /// The mesh's box, building space.
    pub bounds: Aabb,
}

/// A merge group's union (meshed through the kernel), or a concatenated level's cell.
/// Its meshes are in building space and drawn about `pivot`.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedGroup {
    /// The merge group's id (or the cell's, for a concatenated level).
    pub id: String,
    /// The storey its instances share, if they all share one.
    pub storey: Option<u32>,
    /// What each face's [`FaceSource::operand`] names.
    pub operands: Vec<Operand>,
    /// One batch per material and side.
    pub batches: Vec<GroupBatch>,
    /// The box around every batch, building space.
    pub bounds: Aabb,
    /// The origin the group is drawn about: the centre of its bounds at the first
    /// level it appears in.
    pub pivot: [f32; 3],
}

/// An instance as placed at a level.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// The instance's id.
    pub instance: String,
    /// The id of the part it places.
    pub part: String,
    /// Its pose in building space.
    pub pose: Pose,
    /// The merge group that draws this instance, if any (then it has no pieces of its
    /// own).
    pub group: Option<String>,
    /// The material each slot of its part wears (one allocation shared by the
    /// placements that wear one palette).
    pub materials: Arc<BTreeMap<String, String>>,
}

/// A collision hull of one proxy placed by one instance: the box's eight corners in
/// building space.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedCollider {
    /// The id of the instance that places the proxy's part.
    pub instance: String,
    /// The corners, building space (bit `i` of the index picks the high side on
    /// axis `i` of the proxy box before the pose).
    pub hull: [[f32; 3]; 8],
}

/// A building meshed at one level of detail.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeshedBuilding {
    /// The building's id.
    pub id: String,
    /// Every instance, in recipe order.
    pub placements: Vec<Placement>,
    /// Per part that has meshes at this level, in recipe order.
    pub parts: Vec<PartMeshes>,
    /// The merge groups (or cells) that have triangles at this level.
    pub groups: Vec<MergedGroup>,
    /// Level zero's at every level.
    pub colliders: Vec<PlacedCollider>,
    /// The recipe's rooms.
    pub rooms: Vec<Room>,
    /// The recipe's portals.
    pub portals: Vec<Portal>,
}

/// What a piece is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceKind<'a> {
    /// An element of a part placed by an instance.
    Element {
        /// The placing instance's id.
        instance: &'a str,
        /// The part's id.
        part: &'a str,
        /// The element's id within the part.
        element: &'a str,
    },
    /// A batch of a merge group or a concatenated cell.
    Batch {
        /// The group's (or cell's) id.
        group: &'a str,
        /// The batch's index in the group's batches.
        batch: usize,
    },
}

/// One thing to draw: a mesh, where it goes and the origin its band is measured to.
#[derive(Clone, Debug)]
pub struct Piece<'a> {
    /// What the piece is.
    pub kind: PieceKind<'a>,
    /// Its triangles, in mesh space.
    pub mesh: &'a Arc<Mesh>,
    /// Mesh space to building space: the instance's pose, or identity for a batch
    /// (whose mesh is in building space).
    pub transform: Affine3A,
    /// The mesh's recorded box, in mesh space.
    pub bounds: Aabb,
    /// The box in building space.
    pub placed_bounds: Aabb,
    /// The point a renderer draws the piece about and measures its band to: the
    /// instance's translation, or the group's pivot.
    pub origin: [f32; 3],
    /// The material slot (element) or the material (batch).
    pub binding: &'a str,
    /// The material it wears.
    pub material: &'a str,
    /// Its side of the envelope.
    pub side: Side,
    /// Its storey, if its part (or group) has one.
    pub storey: Option<u32>,
    /// Whether any face is a cut face.
    pub is_cut: bool,
}

impl MeshedBuilding {
    /// The part meshes of `part`, if it has any at this level.
    pub fn part(&self, part: &str) -> Option<&PartMeshes> {
        self.parts.iter().find(|p| p.part == part)
    }

    /// Every piece to draw, in a fixed order: ungrouped placements in recipe order and
    /// their part's elements in order, then groups and their batches in order. A
    /// placement whose part has no meshes at this level yields nothing.
    pub fn pieces(&self) -> impl Iterator<Item = Piece<'_>> + '_ {
        let placed = self
            .placements
            .iter()
            .filter(|p| p.group.is_none())
            .filter_map(|p| self.part(&p.part).map(|m| (p, m)))
            .flat_map(|(p, m)| {
                let t = p.pose.affine();
                m.elements.iter().map(move |e| Piece {
                    kind: PieceKind::Element {
                        instance: &p.instance,
                        part: &p.part,
                        element: &e.element,
                    },
                    mesh: &e.mesh,
                    transform: t,
                    bounds: e.bounds,
                    placed_bounds: e.bounds.transformed(&t),
                    origin: p.pose.translation,
                    binding: &e.binding,
                    material: p
                        .materials
                        .get(&e.binding)
                        .map(String::as_str)
                        .unwrap_or(&e.binding),
                    side: e.side,
                    storey: m.storey,
                    is_cut: e.mesh.has_cut_faces(),
                })
            });
        let grouped = self.groups.iter().flat_map(|g| {
            g.batches.iter().enumerate().map(move |(i, b)| Piece {
                kind: PieceKind::Batch {
                    group: &g.id,
                    batch: i,
                },
                mesh: &b.mesh,
                transform: Affine3A::IDENTITY,
                bounds: b.bounds,
                placed_bounds: b.bounds,
                origin: g.pivot,
                binding: &b.binding,
                material: &b.binding,
                side: b.side,
                storey: g.storey,
                is_cut: b.mesh.has_cut_faces(),
            })
        });
        placed.chain(grouped)
    }

    /// Level zero's collision hulls, one per proxy per instance.
    pub fn colliders(&self) -> &[PlacedCollider] {
        &self.colliders
    }

    /// The recipe's portals.
    pub fn portals(&self) -> &[Portal] {
        &self.portals
    }

    /// The recipe's rooms.
    pub fn rooms(&self) -> &[Room] {
        &self.rooms
    }

    /// Triangles drawn, every placement counted.
    pub fn drawn_triangles(&self) -> usize {
        self.pieces().map(|p| p.mesh.triangle_count()).sum()
    }

    /// Unique triangles: each part's meshes once, each batch once.
    pub fn unique_triangles(&self) -> usize {
        let parts: usize = self
            .parts
            .iter()
            .flat_map(|p| &p.elements)
            .map(|e| e.mesh.triangle_count())
            .sum();
        let groups: usize = self
            .groups
            .iter()
            .flat_map(|g| &g.batches)
            .map(|b| b.mesh.triangle_count())
            .sum();
        parts + groups
    }

    /// The placed elements a piece draws, as (instance, element) pairs, sorted.
    pub fn placed_elements(&self, piece: &Piece<'_>) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = match piece.kind {
            PieceKind::Element {
                instance, element, ..
            } => vec![(instance.to_string(), element.to_string())],
            PieceKind::Batch { group, .. } => {
                let g = self
                    .groups
                    .iter()
                    .find(|g| g.id == group)
                    .expect("piece of this building");
                // A mesh without per-face provenance (made by hand: both files keep
                // it) may draw any of the group's operands, so it answers all of them.
                let mut ops: Vec<u32> = if piece.mesh.sources.is_empty() {
                    (0..g.operands.len() as u32).collect()
                } else {
                    piece.mesh.sources.iter().map(|s| s.operand).collect()
                };
                ops.sort_unstable();
                ops.dedup();
                ops.into_iter()
                    .filter_map(|o| g.operands.get(o as usize))
                    .map(|o| (o.instance.clone(), o.element.clone()))
                    .collect()
            }
        };
        out.sort();
        out.dedup();
        out
    }
}
