//! Meshing a recipe through the kernel: an element is its shape united with its union
//! members minus the union of its cutters (one subtraction), a part is its elements, a
//! merge group is the union of its instances' elements in building space, split into
//! batches by material and side.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use glam::{DAffine3, DVec3, Vec3};

use super::kernel::{Kernel, KernelError, KernelMesh};
use crate::mesh::{
    Aabb, ElementMesh, FaceSource, GroupBatch, MergedGroup, Mesh, MeshedBuilding, Operand,
    PartMeshes, PlacedCollider, Placement,
};
use crate::recipe::{Building, Element, Geometry, Instance, MergeGroup, Part, Shape, Side};

/// Twice the area (m², as the cross product's length) under which a kernel triangle
/// is dropped as degenerate. The kernel leaves the odd sliver (a union of 100 boxes
/// leaves one).
pub const MIN_DOUBLE_AREA: f64 = 1e-9;

/// The angle (degrees) between two faces of a curved shape above which their shared
/// vertices keep a hard edge: a cylinder's side meets its caps at 90 degrees and stays
/// sharp, while its sides (45 degrees apart at the fewest segments, eight) shade smooth.
pub const CREASE_DEGREES: f64 = 60.0;

/// Kernel output made into a drawable mesh: zero-area triangles dropped, vertices
/// split per face so each face is flat shaded, UVs planar in metres by the face's
/// dominant axis, every face's source kept. `cut(operand)` says whether an operand is
/// a cutter. Deterministic: output order follows the kernel's triangle order.
pub fn to_mesh(k: &KernelMesh, keep: impl Fn(usize) -> bool, cut: impl Fn(u32) -> bool) -> Mesh {
    to_mesh_shaded(k, keep, cut, |_| false)
}

/// [`to_mesh`], with the faces of every operand `smooth` names (a cylinder's, a
/// revolve's) shaded smooth: a vertex's normal is the mean of the unit normals of
/// the operand's faces around it that lie within [`CREASE_DEGREES`] of its own face.
/// Vertices stay split per face (each face keeps its planar UVs), so a smooth ring is
/// one normal per position on both sides of every seam.
pub fn to_mesh_shaded(
    k: &KernelMesh,
    keep: impl Fn(usize) -> bool,
    cut: impl Fn(u32) -> bool,
    smooth: impl Fn(u32) -> bool,
) -> Mesh {
    let tri_ok: Vec<bool> = (0..k.triangles.len())
        .map(|t| {
            let [a, b, c] = k.triangles[t].map(|i| DVec3::from(k.positions[i as usize]));
            keep(t) && (b - a).cross(c - a).length() > MIN_DOUBLE_AREA
        })
        .collect();
    // Face normals: area-weighted sums per (operand, face).
    let mut face_normals: BTreeMap<(u32, u32), DVec3> = BTreeMap::new();
    for (t, tri) in k.triangles.iter().enumerate() {
        let [a, b, c] = tri.map(|i| DVec3::from(k.positions[i as usize]));
        let area = (b - a).cross(c - a);
        if area.length() <= MIN_DOUBLE_AREA {
            continue;
        }
        *face_normals.entry((k.operands[t], k.faces[t])).or_default() += area;
    }
    for n in face_normals.values_mut() {
        *n = n.normalize_or_zero();
    }
    // Per smooth operand, the faces around each kernel vertex (from every triangle,
    // kept or not, so a batch split by material shades as the whole solid does).
    let mut around: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
    for (t, tri) in k.triangles.iter().enumerate() {
        let o = k.operands[t];
        if !smooth(o) || !face_normals.contains_key(&(o, k.faces[t])) {
            continue;
        }
        for &v in tri {
            let faces = around.entry((o, v)).or_default();
            if !faces.contains(&k.faces[t]) {
                faces.push(k.faces[t]);
            }
        }
    }
    let crease = CREASE_DEGREES.to_radians().cos();
    let mut mesh = Mesh::default();
    let mut vertex_of: BTreeMap<(u32, u32, u32), u32> = BTreeMap::new();
    for (t, tri) in k.triangles.iter().enumerate() {
        if !tri_ok[t] {
            continue;
        }
        let key = (k.operands[t], k.faces[t]);
        let n = face_normals[&key];
        for &v in tri {
            let next = mesh.positions.len() as u32;
            let index = *vertex_of.entry((key.0, key.1, v)).or_insert_with(|| {
                let p = k.positions[v as usize];
                let shade = match around.get(&(key.0, v)) {
                    Some(faces) => faces
                        .iter()
                        .map(|&f| face_normals[&(key.0, f)])
                        .filter(|m| m.dot(n) >= crease)
                        .sum::<DVec3>()
                        .normalize_or(n),
                    None => n,
                };
                let a = n.abs();
                let uv = if a.x >= a.y && a.x >= a.z {
                    [p[2] * n.x.signum(), p[1]]
                } else if a.y >= a.z {
                    [p[0], p[2] * n.y.signum()]
                } else {
                    [-p[0] * n.z.signum(), p[1]]
                };
                mesh.positions.push([p[0] as f32, p[1] as f32, p[2] as f32]);
                mesh.normals.push(shade.as_vec3().into());
                mesh.uvs.push([uv[0] as f32, uv[1] as f32]);
                next
            });
            mesh.indices.push(index);
        }
        mesh.sources.push(FaceSource {
            operand: key.0,
            cut: cut(key.0),
        });
    }
    mesh
}

/// Whether a geometry is curved: its faces shade smooth around the ring.
pub fn is_curved(g: &Geometry) -> bool {
    matches!(g, Geometry::Cylinder { .. } | Geometry::Revolve { .. })
}

/// The shapes of an element in operand order: its shape, union members, cutters.
pub fn element_shapes(e: &Element) -> impl Iterator<Item = &Shape> {
    std::iter::once(&e.shape).chain(&e.union).chain(&e.cutters)
}

/// The solid of one element moved by `place`, with its operands numbered from
/// `first_operand`: the union of its shape and members minus the union of its cutters.
pub fn element_solid<K: Kernel>(
    kernel: &K,
    e: &Element,
    place: &DAffine3,
    first_operand: u32,
) -> Result<K::Solid, KernelError> {
    let mut operand = first_operand;
    let mut solids = Vec::with_capacity(1 + e.union.len());
    for s in std::iter::once(&e.shape).chain(&e.union) {
        solids.push(kernel.solid(&s.geometry, &(*place * s.at.daffine()), operand)?);
        operand += 1;
    }
    let body = kernel.union(&solids)?;
    if e.cutters.is_empty() {
        return Ok(body);
    }
    let mut cutters = Vec::with_capacity(e.cutters.len());
    for s in &e.cutters {
        cutters.push(kernel.solid(&s.geometry, &(*place * s.at.daffine()), operand)?);
        operand += 1;
    }
    let cutters = kernel.union(&cutters)?;
    kernel.subtract(&body, &cutters)
}

/// Meshes one element in part space.
pub fn mesh_element<K: Kernel>(kernel: &K, e: &Element) -> Result<ElementMesh, KernelError> {
    let mesh = Arc::new(element_mesh(kernel, e)?);
    Ok(element_mesh_of(e, mesh))
}

fn element_mesh<K: Kernel>(kernel: &K, e: &Element) -> Result<Mesh, KernelError> {
    let solid = element_solid(kernel, e, &DAffine3::IDENTITY, 0)?;
    let first_cutter = 1 + e.union.len() as u32;
    let curved: Vec<bool> = element_shapes(e).map(|s| is_curved(&s.geometry)).collect();
    Ok(to_mesh_shaded(
        &kernel.mesh(&solid)?,
        |_| true,
        |o| o >= first_cutter,
        |o| curved.get(o as usize).copied().unwrap_or(false),
    ))
}

fn element_mesh_of(e: &Element, mesh: Arc<Mesh>) -> ElementMesh {
    ElementMesh {
        element: e.id.clone(),
        binding: e.binding.clone(),
        side: e.side,
        bounds: mesh.bounds(),
        mesh,
    }
}

/// Element meshes by what they are made of (shape, union members, cutters), shared
/// by every part, level and building meshed with the cache: a kit's parts repeat over
/// a whole city, and an element a simplification left alone repeats over levels. The
/// mesh of an element depends on nothing else (provenance numbers its own shapes), so
/// a hit is the mesh the kernel would have made, and the bytes do not depend on which
/// thread meshed it first.
#[derive(Debug, Default)]
pub struct MeshCache {
    meshes: Mutex<BTreeMap<Vec<u32>, Arc<Mesh>>>,
    hits: AtomicUsize,
    misses: AtomicUsize,
    groups: Mutex<BTreeMap<GroupKey, Arc<GroupMeshes>>>,
    group_hits: AtomicUsize,
    group_misses: AtomicUsize,
}

impl MeshCache {
    /// An empty cache.
    pub fn new() -> MeshCache {
        MeshCache::default()
    }

    /// Elements answered from the cache.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// Elements meshed through the kernel.
    pub fn misses(&self) -> usize {
        self.misses.load(Ordering::Relaxed)
    }

    /// The element's mesh, from the cache or meshed (and kept). Two threads asking for
    /// one new element at once may both mesh it; the first kept wins, and both are
    /// equal.
    pub fn element<K: Kernel>(&self, kernel: &K, e: &Element) -> Result<ElementMesh, KernelError> {
        let key = geometry_key(e);
        let found = self.lock().get(&key).cloned();
        if let Some(mesh) = found {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(element_mesh_of(e, mesh));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let mesh = Arc::new(element_mesh(kernel, e)?);
        let mesh = Arc::clone(self.lock().entry(key).or_insert(mesh));
        Ok(element_mesh_of(e, mesh))
    }

    /// Merge groups answered from the cache.
    pub fn group_hits(&self) -> usize {
        self.group_hits.load(Ordering::Relaxed)
    }

    /// Merge groups meshed through the kernel.
    pub fn group_misses(&self) -> usize {
        self.group_misses.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Vec<u32>, Arc<Mesh>>> {
        // A panic while holding the lock leaves a map of complete entries.
        self.meshes.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_groups(&self) -> std::sync::MutexGuard<'_, BTreeMap<GroupKey, Arc<GroupMeshes>>> {
        self.groups.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A group's meshes if the cache has them (counted as a hit or a miss).
    fn group(&self, key: &GroupKey) -> Option<Arc<GroupMeshes>> {
        let found = self.lock_groups().get(key).cloned();
        let counter = if found.is_some() {
            &self.group_hits
        } else {
            &self.group_misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps a group's meshes; the first kept wins (two threads meshing one new group
    /// at once make equal meshes).
    fn keep_group(&self, key: GroupKey, m: Arc<GroupMeshes>) -> Arc<GroupMeshes> {
        Arc::clone(self.lock_groups().entry(key).or_insert(m))
    }
}

/// The words an element's mesh is a function of: per shape (shape, members, cutters,
/// each group counted) its geometry's kind, numbers (as bits) and pose.
fn geometry_key(e: &Element) -> Vec<u32> {
    let mut key = vec![e.union.len() as u32, e.cutters.len() as u32];
    for s in element_shapes(e) {
        match &s.geometry {
            Geometry::Box { size } => {
                key.push(0);
                key.extend(size.map(f32::to_bits));
            }
            Geometry::ChamferedBox { size, chamfer } => {
                key.push(1);
                key.extend(size.map(f32::to_bits));
                key.push(chamfer.to_bits());
            }
            Geometry::Cylinder {
                radius,
                height,
                segments,
            } => {
                key.extend([2, radius.to_bits(), height.to_bits(), *segments]);
            }
            Geometry::Revolve { profile, segments } => {
                key.extend([3, *segments, profile.len() as u32]);
                key.extend(profile.iter().flatten().map(|v| v.to_bits()));
            }
            Geometry::Extrusion { polygon, height } => {
                key.extend([4, height.to_bits(), polygon.len() as u32]);
                key.extend(polygon.iter().flatten().map(|v| v.to_bits()));
            }
        }
        key.extend(s.at.words());
    }
    key
}

/// Meshes every element of a part (elements the kernel leaves empty are dropped).
pub fn mesh_part<K: Kernel>(kernel: &K, part: &Part) -> Result<PartMeshes, KernelError> {
    mesh_part_cached(kernel, part, &MeshCache::new())
}

/// [`mesh_part`], taking each element's mesh from `cache` when it has it.
pub fn mesh_part_cached<K: Kernel>(
    kernel: &K,
    part: &Part,
    cache: &MeshCache,
) -> Result<PartMeshes, KernelError> {
    let mut elements = Vec::with_capacity(part.elements.len());
    for e in &part.elements {
        let m = cache.element(kernel, e)?;
        if m.mesh.triangle_count() > 0 {
            elements.push(m);
        }
    }
    Ok(PartMeshes {
        part: part.id.clone(),
        storey: part.storey,
        elements,
    })
}

/// The material each slot of an instance's part wears.
pub fn materials(b: &Building, inst: &Instance) -> BTreeMap<String, String> {
    b.part(&inst.part)
        .into_iter()
        .flat_map(|p| &p.elements)
        .map(|e| (e.binding.clone(), b.material(inst, &e.binding).to_string()))
        .collect()
}

/// The union of a group's instances, optionally minus `holes` (building space, for
/// damage), split into batches by (material, side).
pub fn mesh_group<K: Kernel>(
    kernel: &K,
    b: &Building,
    g: &MergeGroup,
    holes: &[Shape],
) -> Result<MergedGroup, KernelError> {
    mesh_group_with(kernel, b, g, holes, None)
}

/// [`mesh_group`] through `cache`: a group whose members, poses, materials and sides
/// equal one meshed before (in this building, at another level, or in another
/// building of a city) takes that group's batches, which are the kernel's output for
/// it. Only the operands (which name instances) are the group's own.
pub fn mesh_group_cached<K: Kernel>(
    kernel: &K,
    b: &Building,
    g: &MergeGroup,
    cache: &MeshCache,
) -> Result<MergedGroup, KernelError> {
    mesh_group_with(kernel, b, g, &[], Some(cache))
}

fn mesh_group_with<K: Kernel>(
    kernel: &K,
    b: &Building,
    g: &MergeGroup,
    holes: &[Shape],
    cache: Option<&MeshCache>,
) -> Result<MergedGroup, KernelError> {
    let mut operands: Vec<Operand> = Vec::new();
    let mut cut_ops: Vec<bool> = Vec::new();
    let mut curved: Vec<bool> = Vec::new();
    let mut keys: Vec<(String, Side)> = Vec::new();
    let mut members: Vec<(&Instance, &Part)> = Vec::new();
    let mut storeys = Vec::new();
    // What the kernel's output depends on: every member's pose and elements (shapes
    // and their poses), in order, and the material and side of each operand.
    let mut key = GroupKey::default();
    let by_id: BTreeMap<&str, &Instance> = b
        .instances
        .iter()
        .map(|i| (i.id.as_str(), i))
        .rev()
        .collect();
    for id in &g.instances {
        let Some(&inst) = by_id.get(id.as_str()) else {
            continue;
        };
        let Some(part) = b.part(&inst.part) else {
            continue;
        };
        storeys.push(part.storey);
        members.push((inst, part));
        key.words.push(part.elements.len() as u32);
        key.words.extend(inst.pose.words());
        for e in &part.elements {
            let first_cutter = 1 + e.union.len();
            key.words.extend(geometry_key(e));
            key.words.push(e.side as u32);
            let material = b.material(inst, &e.binding).to_string();
            for (k, shape) in element_shapes(e).enumerate() {
                curved.push(is_curved(&shape.geometry));
                operands.push(Operand {
                    instance: inst.id.clone(),
                    element: e.id.clone(),
                    shape: k as u32,
                });
                cut_ops.push(k >= first_cutter);
                keys.push((material.clone(), e.side));
            }
            key.materials.push(material);
        }
    }
    let storey = match storeys.first() {
        Some(&s) if storeys.iter().all(|&t| t == s) => s,
        _ => None,
    };
    let cache = cache.filter(|_| holes.is_empty());
    let found = cache.and_then(|c| c.group(&key));
    let meshed = match found {
        Some(m) => m,
        None => {
            let mut solids = Vec::new();
            let mut first = 0u32;
            for (inst, part) in &members {
                let place = inst.pose.daffine();
                for e in &part.elements {
                    solids.push(element_solid(kernel, e, &place, first)?);
                    first += element_shapes(e).count() as u32;
                }
            }
            let m = Arc::new(group_batches(
                kernel,
                &solids,
                g,
                holes,
                &mut operands,
                cut_ops,
                curved,
                keys,
            )?);
            match cache {
                Some(c) => c.keep_group(key, m),
                None => m,
            }
        }
    };
    Ok(MergedGroup {
        id: g.id.clone(),
        storey,
        operands,
        batches: meshed.batches.clone(),
        pivot: meshed.bounds.center(),
        bounds: meshed.bounds,
    })
}

/// What a cached group's kernel output is made into: its batches and their bounds.
#[derive(Debug)]
struct GroupMeshes {
    batches: Vec<GroupBatch>,
    bounds: Aabb,
}

/// The key of a group's meshes in a [`MeshCache`].
#[derive(Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    words: Vec<u32>,
    materials: Vec<String>,
}

/// The union of the members' `solids`, minus `holes`, meshed and split into batches.
/// Damage holes are appended to `operands` as the group's last operands.
#[allow(clippy::too_many_arguments)]
fn group_batches<K: Kernel>(
    kernel: &K,
    solids: &[K::Solid],
    g: &MergeGroup,
    holes: &[Shape],
    operands: &mut Vec<Operand>,
    mut cut_ops: Vec<bool>,
    mut curved: Vec<bool>,
    mut keys: Vec<(String, Side)>,
) -> Result<GroupMeshes, KernelError> {
    let mut solid = kernel.union(solids)?;
    if !holes.is_empty() {
        let mut cutters = Vec::with_capacity(holes.len());
        for (k, s) in holes.iter().enumerate() {
            let operand = operands.len() as u32;
            operands.push(Operand {
                instance: g.id.clone(),
                element: "damage".to_string(),
                shape: k as u32,
            });
            cut_ops.push(true);
            curved.push(false);
            keys.push((String::new(), Side::Exterior));
            cutters.push(kernel.solid(&s.geometry, &s.at.daffine(), operand)?);
        }
        let cutters = kernel.union(&cutters)?;
        solid = kernel.subtract(&solid, &cutters)?;
    }
    let km = kernel.mesh(&solid)?;
    // A damage hole's walls wear the group's first material and side.
    let hole_key = keys
        .first()
        .cloned()
        .unwrap_or((String::new(), Side::Exterior));
    let key_of = |o: u32| -> (String, Side) {
        let k = &keys[o as usize];
        if k.0.is_empty() {
            hole_key.clone()
        } else {
            k.clone()
        }
    };
    let batch_keys: Vec<(String, Side)> = km.operands.iter().map(|&o| key_of(o)).collect();
    let mut distinct = batch_keys.clone();
    distinct.sort();
    distinct.dedup();
    let mut batches = Vec::with_capacity(distinct.len());
    let mut bounds = Aabb::EMPTY;
    for key in distinct {
        let mesh = to_mesh_shaded(
            &km,
            |t| batch_keys[t] == key,
            |o| cut_ops[o as usize],
            |o| curved[o as usize],
        );
        if mesh.triangle_count() == 0 {
            continue;
        }
        let mb = mesh.bounds();
        bounds = bounds.union(&mb);
        batches.push(GroupBatch {
            binding: key.0,
            side: key.1,
            mesh: Arc::new(mesh),
            bounds: mb,
        });
    }
    Ok(GroupMeshes { batches, bounds })
}

/// Level zero's collision hulls: every proxy of a part, per instance placing it.
pub fn place_colliders(b: &Building) -> Vec<PlacedCollider> {
    let mut out = Vec::new();
    for inst in &b.instances {
        let t = inst.pose.affine();
        for c in b.colliders.iter().filter(|c| c.part == inst.part) {
            let mut hull = [[0.0; 3]; 8];
            for (i, h) in hull.iter_mut().enumerate() {
                let corner = Vec3::new(
                    c.center[0] + if i & 1 == 0 { -0.5 } else { 0.5 } * c.size[0],
                    c.center[1] + if i & 2 == 0 { -0.5 } else { 0.5 } * c.size[1],
                    c.center[2] + if i & 4 == 0 { -0.5 } else { 0.5 } * c.size[2],
                );
                *h = t.transform_point3(corner).into();
            }
            out.push(PlacedCollider {
                instance: inst.id.clone(),
                hull,
            });
        }
    }
    out
}

/// Every instance as placed, with the group that draws it (the first that names it).
pub fn placements(b: &Building) -> Vec<Placement> {
    let mut group_of: BTreeMap<&str, &str> = BTreeMap::new();
    for g in &b.merge_groups {
        for i in &g.instances {
            group_of.entry(i.as_str()).or_insert(g.id.as_str());
        }
    }
    // Most instances wear one of a few palettes: each distinct one is one allocation.
    let mut palettes: Vec<Arc<BTreeMap<String, String>>> = Vec::new();
    b.instances
        .iter()
        .map(|inst| {
            let wears = materials(b, inst);
            let materials = match palettes.iter().find(|p| ***p == wears) {
                Some(p) => Arc::clone(p),
                None => {
                    palettes.push(Arc::new(wears));
                    Arc::clone(palettes.last().expect("just pushed"))
                }
            };
            Placement {
                instance: inst.id.clone(),
                part: inst.part.clone(),
                pose: inst.pose,
                group: group_of.get(inst.id.as_str()).map(|g| g.to_string()),
                materials,
            }
        })
        .collect()
}

/// Meshes a whole building as authored: parts, groups, colliders, rooms and portals.
/// A part placed only inside merge groups is still meshed (damage and tools read it).
pub fn mesh_building<K: Kernel>(kernel: &K, b: &Building) -> Result<MeshedBuilding, KernelError> {
    let mut parts = Vec::with_capacity(b.parts.len());
    for p in &b.parts {
        parts.push(mesh_part(kernel, p)?);
    }
    let mut groups = Vec::with_capacity(b.merge_groups.len());
    for g in &b.merge_groups {
        groups.push(mesh_group(kernel, b, g, &[])?);
    }
    Ok(MeshedBuilding {
        id: b.id.clone(),
        placements: placements(b),
        parts,
        groups,
        colliders: place_colliders(b),
        rooms: b.rooms.clone(),
        portals: b.portals.clone(),
    })
}

/// Damage (seed ADR 0005): cuts `holes` (building space) into the merge group `group`
/// of `level` (meshed from `recipe`) and replaces that group with its re-meshed
/// batches, keeping its pivot so its band does not move. The holes are the group's
/// last operands (instance: the group's id, element `damage`) and their walls are cut
/// faces. Returns whether the group exists. Holes accumulate by passing every hole so
/// far: the group is re-meshed from the recipe each time.
pub fn damage<K: Kernel>(
    kernel: &K,
    recipe: &Building,
    level: &mut MeshedBuilding,
    group: &str,
    holes: &[Shape],
) -> Result<bool, KernelError> {
    let Some(g) = recipe.merge_groups.iter().find(|g| g.id == group) else {
        return Ok(false);
    };
    let Some(slot) = level.groups.iter_mut().find(|m| m.id == group) else {
        return Ok(false);
    };
    let mut meshed = mesh_group(kernel, recipe, g, holes)?;
    meshed.pivot = slot.pivot;
    *slot = meshed;
    Ok(true)
}
