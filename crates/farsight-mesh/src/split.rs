//! One material per cluster
//! (docs/design/region-streaming-and-cluster-lod.md#what-farsights-build-adds-to-the-loop):
//! the mesh is split into one part per material and each part gets its own `clod_build`
//! DAG, so no cluster can mix materials. The parts are built in parallel (rayon) and merged
//! into one [`RawDag`] in material order, so the result does not depend on the thread
//! count.
//!
//! Where two materials meet, their vertices share positions. Each part's DAG would
//! simplify its side of that seam on its own and the two sides would walk apart
//! (a crack, exactly like an unwelded texture seam). So every vertex whose position
//! another material also uses is locked in its part's build: seams never move, and
//! the cook's crack checks (which weld by position over the whole mesh) hold.

use meshopt::SimplifyVertex;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::dag::{
    attributes, build_dag_with, clod_build_raw, Attributes, BuiltDag, ClusterConfig, RawDag,
};
use crate::mesh::{Mesh, SubMesh, Vertex};
use crate::repair::{position_remap, position_remap_by};

/// Vertices copied by one task of the split.
const COPY_CHUNK: usize = 1 << 14;
/// Below this many vertices a split runs on the calling thread: its pieces take
/// microseconds, less than handing one to another thread and waiting for it to
/// finish (measured 0.1 ms of bunny's cook before its only part could start).
const PARALLEL_SPLIT_MIN: usize = 1 << 15;

/// The triangles of one material.
#[derive(Clone, Debug, PartialEq)]
pub struct MaterialPart {
    /// Material name (the manifest's `materials` entry).
    pub name: String,
    /// The part's vertices are `MaterialSplit::vertices[vertex_base..][..vertex_count]`.
    pub vertex_base: u32,
    /// Number of the part's vertices.
    pub vertex_count: u32,
    /// Triangles, indexing the part's own vertices.
    pub indices: Vec<u32>,
    /// Per part vertex: another material uses the same position (a seam to lock).
    pub seam: Vec<bool>,
}

/// A mesh split per material, vertices of each part contiguous.
#[derive(Clone, Debug, PartialEq)]
pub struct MaterialSplit {
    /// Every vertex, each part's contiguous, parts in material order.
    pub vertices: Vec<Vertex>,
    /// The parts, one per material.
    pub parts: Vec<MaterialPart>,
    /// First vertex at the same position, over all of `vertices` (meshoptimizer's
    /// position remap): the welding every crack check uses.
    pub remap: Vec<u32>,
}

impl MaterialSplit {
    /// Groups the sub-meshes by material, in order of first appearance (so the
    /// material ids are deterministic), and finds the seams between materials.
    pub fn new(mesh: &Mesh) -> Self {
        let mut split = Self::new_unwelded(mesh);
        if split.remap.is_empty() {
            split.remap = split.weld();
        }
        split
    }

    /// The position remap of [`Self::vertices`] (what [`Self::remap`] holds); a
    /// padding vertex past the parts (see [`build_parts`]) is left out.
    pub(crate) fn weld(&self) -> Vec<u32> {
        let n = self
            .parts
            .last()
            .map_or(0, |p| p.vertex_base + p.vertex_count) as usize;
        position_remap_by(&self.vertices[..n], |v| v.position)
    }

    /// [`Self::new`], but with one material (no seams to find) `remap` is left
    /// empty, for [`Self::weld`] to fill off the serial path.
    pub(crate) fn new_unwelded(mesh: &Mesh) -> Self {
        let ms = Materials::of(mesh);
        let parallel = ms.at as usize >= PARALLEL_SPLIT_MIN;
        let ((vertices, indices), (remap, seams)) = if parallel {
            // The vertex and index copies, and the welding that finds the seams
            // (from the sub-meshes' positions), side by side.
            rayon::join(|| ms.copy_parallel(), || ms.weld_positions())
        } else {
            // Copied straight in (no zeroing pass), room kept for the padding
            // vertex; the seams welded from the copy (no list of positions).
            // The parts' indices are made below, where the parts are.
            let mut vertices = Vec::with_capacity(ms.at as usize + 1);
            for s in ms.in_order() {
                vertices.extend_from_slice(&s.vertices);
            }
            let (remap, seams) = if ms.count < 2 {
                (Vec::new(), Vec::new())
            } else {
                let remap = position_remap_by(&vertices, |v| v.position);
                let seams = ms.seams(&remap);
                (remap, seams)
            };
            ((vertices, Vec::new()), (remap, seams))
        };
        let mut seams = seams.into_iter();
        let mut indices = indices.into_iter();
        let parts = ms
            .ranges
            .iter()
            .enumerate()
            .map(|(m, &(base, count))| MaterialPart {
                name: ms.name(m).to_owned(),
                vertex_base: base,
                vertex_count: count,
                indices: indices.next().unwrap_or_else(|| ms.part_indices(m)),
                seam: seams.next().unwrap_or_else(|| vec![false; count as usize]),
            })
            .collect();
        Self {
            vertices,
            parts,
            remap,
        }
    }

    /// The vertices of part `p`.
    pub fn part_vertices(&self, p: &MaterialPart) -> &[Vertex] {
        &self.vertices[p.vertex_base as usize..(p.vertex_base + p.vertex_count) as usize]
    }

    /// Every triangle, indexing [`Self::vertices`] (LOD0 of the whole mesh).
    pub fn global_indices(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.parts.iter().map(|p| p.indices.len()).sum());
        for p in &self.parts {
            out.extend(p.indices.iter().map(|&i| i + p.vertex_base));
        }
        out
    }

    /// Triangles over every part.
    pub fn triangle_count(&self) -> usize {
        self.parts.iter().map(|p| p.indices.len() / 3).sum()
    }

    /// meshoptimizer's seam locks of a part (`None` when it has no seam).
    pub fn part_locks(p: &MaterialPart) -> Option<Vec<SimplifyVertex>> {
        p.seam.iter().any(|&s| s).then(|| {
            p.seam
                .iter()
                .map(|&s| {
                    if s {
                        SimplifyVertex::Lock
                    } else {
                        SimplifyVertex::None
                    }
                })
                .collect()
        })
    }

    /// The benchmark's peer: one plain `clod_build` per part, with the same seam
    /// locks, attributes and configuration, parts in parallel as the cook runs them.
    /// `inputs` is [`Self::raw_inputs`] (prepared outside the timing).
    pub fn raw_builds(&self, config: &ClusterConfig, inputs: &[RawInput]) -> Vec<RawDag> {
        self.parts
            .par_iter()
            .zip(inputs)
            .map(|(p, i)| {
                clod_build_raw(
                    config,
                    self.part_vertices(p),
                    &p.indices,
                    &i.attributes,
                    i.locks.as_deref(),
                )
            })
            .collect()
    }

    /// What [`Self::raw_builds`] hands meshoptimizer besides the part itself.
    pub fn raw_inputs(&self) -> Vec<RawInput> {
        self.parts
            .iter()
            .map(|p| RawInput {
                attributes: attributes(self.part_vertices(p)),
                locks: Self::part_locks(p),
            })
            .collect()
    }
}

/// A mesh's materials as [`MaterialSplit::new_unwelded`] numbers them: by first
/// appearance, each with its sub-meshes in order and its range of the split's
/// vertices.
struct Materials<'m> {
    mesh: &'m Mesh,
    /// The first sub-mesh's material.
    first: Option<&'m str>,
    /// Every sub-mesh wears `first`: then neither list below is kept and every
    /// sub-mesh is part 0.
    one: bool,
    names: Vec<&'m str>,
    /// Each sub-mesh's material id (empty when `one`).
    of_submesh: Vec<usize>,
    count: usize,
    /// Each material's (first vertex, vertex count).
    ranges: Vec<(u32, u32)>,
    /// The vertex count of all of them.
    at: u32,
}

impl<'m> Materials<'m> {
    /// Numbers `mesh`'s materials and lays out their vertex ranges.
    fn of(mesh: &'m Mesh) -> Self {
        // Material ids by first appearance. A mesh of one material (most) keeps
        // no list of names or of sub-mesh materials: every sub-mesh is part 0.
        let first = mesh.submeshes.first().map(|s| s.material.as_str());
        let one = mesh
            .submeshes
            .iter()
            .all(|s| Some(s.material.as_str()) == first);
        let mut names: Vec<&str> = Vec::new();
        let mut of_submesh = Vec::new();
        if !one {
            of_submesh.reserve(mesh.submeshes.len());
            for s in &mesh.submeshes {
                let m = match names.iter().position(|&n| n == s.material) {
                    Some(m) => m,
                    None => {
                        names.push(&s.material);
                        names.len() - 1
                    }
                };
                of_submesh.push(m);
            }
        }
        let count = if one {
            usize::from(first.is_some())
        } else {
            names.len()
        };
        let mut ms = Materials {
            mesh,
            first,
            one,
            names,
            of_submesh,
            count,
            ranges: Vec::with_capacity(count),
            at: 0,
        };
        for m in 0..count {
            let n: usize = ms.subs(m).map(|s| s.vertices.len()).sum();
            ms.ranges.push((ms.at, n as u32));
            ms.at += n as u32;
        }
        ms
    }

    /// Material `m`'s name.
    fn name(&self, m: usize) -> &'m str {
        if self.one {
            self.first.unwrap_or_default()
        } else {
            self.names[m]
        }
    }

    /// Material `m`'s sub-meshes, in order.
    fn subs(&self, m: usize) -> impl Iterator<Item = &'m SubMesh> + '_ {
        let of = &self.of_submesh;
        self.mesh
            .submeshes
            .iter()
            .enumerate()
            .filter(move |&(i, _)| of.get(i).is_none_or(|&o| o == m))
            .map(|(_, s)| s)
    }

    /// Every sub-mesh, material by material.
    fn in_order(&self) -> impl Iterator<Item = &'m SubMesh> + '_ {
        (0..self.count).flat_map(|m| self.subs(m))
    }

    /// Material `m`'s triangles, indexing its own vertices.
    fn part_indices(&self, m: usize) -> Vec<u32> {
        let mut part = Vec::with_capacity(self.subs(m).map(|s| s.indices.len()).sum());
        let mut local = 0u32;
        for s in self.subs(m) {
            part.extend(s.indices.iter().map(|&i| i + local));
            local += s.vertices.len() as u32;
        }
        part
    }

    /// The seams: each position's owner material (MANY when several use it), from
    /// the position remap; then per material, per vertex, whether it is shared.
    fn seams(&self, remap: &[u32]) -> Vec<Vec<bool>> {
        const NONE: u32 = u32::MAX;
        const MANY: u32 = u32::MAX - 1;
        let mut owner = vec![NONE; remap.len()];
        for (m, &(base, count)) in self.ranges.iter().enumerate() {
            for &r in &remap[base as usize..(base + count) as usize] {
                let o = &mut owner[r as usize];
                *o = match *o {
                    NONE => m as u32,
                    x if x == m as u32 => x,
                    _ => MANY,
                };
            }
        }
        self.ranges
            .iter()
            .map(|&(base, count)| {
                remap[base as usize..(base + count) as usize]
                    .iter()
                    .map(|&r| owner[r as usize] == MANY)
                    .collect()
            })
            .collect()
    }

    /// The vertices copied in parallel chunks, beside every part's indices.
    fn copy_parallel(&self) -> (Vec<Vertex>, Vec<Vec<u32>>) {
        // Room is kept for the padding vertex a cook adds for the build (see
        // [`build_parts`]): zeroed, so the copy can fill it in pieces.
        let at = self.at as usize;
        let mut vertices = vec![Vertex::default(); at + 1];
        vertices.truncate(at);
        let mut copies: Vec<(&mut [Vertex], &[Vertex])> = Vec::new();
        let mut rest = &mut vertices[..];
        for s in self.in_order() {
            let (to, after) = std::mem::take(&mut rest).split_at_mut(s.vertices.len());
            copies.extend(to.chunks_mut(COPY_CHUNK).zip(s.vertices.chunks(COPY_CHUNK)));
            rest = after;
        }
        let copy = |(to, from): (&mut [Vertex], &[Vertex])| to.copy_from_slice(from);
        let ((), indices) = rayon::join(
            || copies.into_par_iter().for_each(copy),
            || -> Vec<Vec<u32>> {
                (0..self.count)
                    .into_par_iter()
                    .map(|m| self.part_indices(m))
                    .collect()
            },
        );
        (vertices, indices)
    }

    /// The position remap and the seams from the sub-meshes' positions (both empty
    /// for fewer than two materials).
    fn weld_positions(&self) -> (Vec<u32>, Vec<Vec<bool>>) {
        if self.count < 2 {
            return (Vec::new(), Vec::new());
        }
        let mut positions: Vec<[f32; 3]> = Vec::with_capacity(self.at as usize);
        for s in self.in_order() {
            positions.extend(s.vertices.iter().map(|v| v.position));
        }
        let remap = position_remap(&positions);
        let seams = self.seams(&remap);
        (remap, seams)
    }
}

/// The cells of the whole mesh's closed parts and open edges of LOD0 (see
/// [`build_parts`]).
pub(crate) type MeshLod0<'a> = (&'a OnceLock<Vec<bool>>, &'a OnceLock<Vec<[u32; 2]>>);

/// Per-part simplifier inputs of [`MaterialSplit::raw_builds`].
#[derive(Clone, Debug)]
pub struct RawInput {
    /// The simplifier's attribute stream (normal xyz, uv per vertex).
    pub attributes: Vec<f32>,
    /// Vertices the simplifier must not move (seams to other materials), if any.
    pub locks: Option<Vec<SimplifyVertex>>,
}

/// Builds every part's DAG (in parallel, seams locked) and merges them into one
/// DAG over [`MaterialSplit::vertices`] ([`PartDags`]): groups of part 0 first,
/// then part 1, ..., each group tagged with its material. Group ids stay
/// children-first.
/// `whole` is the position remap of [`MaterialSplit::vertices`] and the cell of
/// LOD0's closed parts when the caller has them (a part that is the whole mesh
/// welds by them instead of making its own).
/// `split.vertices` ends with one padding vertex past the parts: the simplifier
/// reads each part's attributes in place from it ([`Attributes::in_place`]), so
/// no attribute stream is copied. `beside` (work that needs no DAG) runs on the
/// first thread that finds no part left to start, and its result comes back too.
/// `mesh_lod0` holds the cells of the whole mesh's closed parts and open edges
/// of LOD0 (by its canonical vertex, `mesh_remap`'s) that `beside` fills: a part
/// takes its own closed parts from them when they are filled in time
/// ([`crate::clod::MeshClosed`]).
pub(crate) fn build_parts<S: Send>(
    config: &ClusterConfig,
    split: &MaterialSplit,
    whole: Option<crate::clod::Whole<'_>>,
    (mesh_remap, mesh_lod0): (Option<&[u32]>, Option<MeshLod0<'_>>),
    beside: impl FnOnce() -> S + Send,
) -> (PartDags, S) {
    let end = split
        .parts
        .last()
        .map_or(0, |p| p.vertex_base + p.vertex_count) as usize;
    assert_eq!(
        split.vertices.len(),
        end + 1,
        "one padding vertex past the parts"
    );
    // Several parts each take their own remap from the mesh's (no second weld).
    let remaps = match (whole, mesh_remap) {
        (None, Some(r)) => part_remaps(r, &split.parts),
        _ => Vec::new(),
    };
    let build = |p: &MaterialPart| {
        let range = p.vertex_base as usize..(p.vertex_base + p.vertex_count) as usize;
        let attributes = Attributes::in_place(&split.vertices, range.clone());
        // The whole mesh's remap and closed parts are the part's when the part is
        // the whole mesh.
        let whole = whole.filter(|w| w.remap.len() == range.len());
        let own_remap =
            (whole.is_none() && !remaps.is_empty()).then(|| remaps[range.clone()].to_vec());
        let from_mesh = match (whole, mesh_remap, mesh_lod0) {
            (None, Some(remap), Some((closed, open))) => Some(crate::clod::MeshClosed {
                closed,
                open,
                remap: &remap[range.clone()],
                base: p.vertex_base,
                seam: &p.seam,
            }),
            _ => None,
        };
        build_dag_with(
            config,
            (split.part_vertices(p), attributes),
            &p.indices,
            &p.seam,
            whole,
            own_remap,
            from_mesh,
        )
    };
    let (built, beside) = largest_first(&split.parts, |p| p.indices.len(), build, beside);
    (merge_parts(split, built), beside)
}

/// The parts' DAGs (`built`, in part order) merged into one over
/// [`MaterialSplit::vertices`]: each group tagged with its material and each
/// cluster's group ids moved past the parts before it; each part keeps its own
/// indices.
fn merge_parts(split: &MaterialSplit, mut built: Vec<BuiltDag>) -> PartDags {
    // The merged DAG grows from the first part's groups and clusters, taken as
    // they stand (its group ids need no offset): a one-part mesh, most small
    // ones, copies and allocates nothing here.
    let (groups, clusters) = built.first_mut().map_or_else(Default::default, |b| {
        let g = std::mem::take(&mut b.dag.groups);
        (g, std::mem::take(&mut b.dag.clusters))
    });
    let mut out = PartDags {
        built: BuiltDag {
            dag: RawDag {
                groups,
                clusters,
                indices: Vec::new(),
            },
            locked_vertices: 0,
            stuck_groups: 0,
        },
        indices: Vec::with_capacity(built.len()),
        part: Vec::new(),
    };
    let dag = &mut out.built.dag;
    for g in &mut dag.groups {
        g.material = 0;
    }
    let rest = built.iter().skip(1);
    dag.groups
        .reserve(rest.clone().map(|b| b.dag.groups.len()).sum());
    dag.clusters
        .reserve(rest.map(|b| b.dag.clusters.len()).sum());
    // The first part's clusters are already in (empty vectors taken from it).
    // One part: no list of parts (every cluster is part 0).
    let several = built.len() > 1;
    let first_clusters = dag.clusters.len();
    if several {
        out.part
            .reserve(first_clusters + built.iter().map(|b| b.dag.clusters.len()).sum::<usize>());
        out.part.extend(std::iter::repeat_n(0, first_clusters));
    }
    for ((m, part), b) in split.parts.iter().enumerate().zip(built) {
        let g0 = dag.groups.len() as u32;
        dag.groups
            .extend(b.dag.groups.iter().map(|g| crate::dag::DagGroup {
                material: m as u32,
                ..*g
            }));
        dag.clusters
            .extend(b.dag.clusters.iter().map(|c| crate::dag::DagCluster {
                group: c.group + g0,
                refined: if c.refined >= 0 {
                    c.refined + g0 as i32
                } else {
                    -1
                },
                ..*c
            }));
        if several {
            out.part
                .extend(std::iter::repeat_n(m as u32, b.dag.clusters.len()));
        }
        out.indices.push((b.dag.indices, part.vertex_base));
        out.built.locked_vertices += b.locked_vertices;
        out.built.stuck_groups += b.stuck_groups;
    }
    out
}

/// Each part's position remap (the part's first vertex at each vertex's position,
/// part-local), concatenated in vertex order, from the whole mesh's
/// (`mesh_remap[v]`: the mesh's first vertex at `v`'s position) in one pass,
/// without hashing the positions again. Each is what
/// `meshopt::generate_position_remap` gives on the part alone: both take the first
/// vertex of an equal position (-0 equal to 0, a NaN equal to nothing). A vertex
/// whose first lies in an earlier part (on a seam) takes the part's first vertex
/// that shares it.
pub(crate) fn part_remaps(mesh_remap: &[u32], parts: &[MaterialPart]) -> Vec<u32> {
    // By the mesh's first vertex: (part + 1, part-local first) of the latest part
    // that reached it from an earlier one.
    let mut seam_first = vec![(0u32, 0u32); mesh_remap.len()];
    let mut out = Vec::with_capacity(mesh_remap.len());
    for (tag, p) in (1u32..).zip(parts) {
        let base = p.vertex_base;
        let own = &mesh_remap[base as usize..(base + p.vertex_count) as usize];
        out.extend((0u32..).zip(own).map(|(i, &r)| match r.checked_sub(base) {
            Some(local) => local,
            None => {
                let first = &mut seam_first[r as usize];
                if first.0 != tag {
                    *first = (tag, i);
                }
                first.1
            }
        }));
    }
    out
}

/// `f` of every item, in parallel, the largest items (by `size`) started first:
/// each free thread takes the largest item not started yet (greedy longest-first
/// scheduling), so a large part never starts late behind small ones and the
/// threads finish close together. The first thread to find no item left runs
/// `then` (work that needs no item, started where a thread would otherwise idle:
/// beside the last items, or beside the only one); on one thread it runs first.
/// Results come back in item order.
pub(crate) fn largest_first<T: Sync, R: Send, S: Send>(
    items: &[T],
    size: impl Fn(&T) -> usize,
    f: impl Fn(&T) -> R + Sync,
    then: impl FnOnce() -> S + Send,
) -> (Vec<R>, S) {
    if crate::par::inline() || rayon::current_num_threads() == 1 {
        // One thread: `then` first, so what it makes is ready for the items (a
        // one-part DAG build takes LOD0's closed parts from the edge reference).
        let after = then();
        return (items.iter().map(f).collect(), after);
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(size(&items[i])));
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let then = Mutex::new(Some(then));
    let after = Mutex::new(None);
    (0..rayon::current_num_threads().max(1))
        .into_par_iter()
        .for_each(|_| loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = order.get(k) else {
                let job = then.lock().ok().and_then(|mut t| t.take());
                if let Some(job) = job {
                    let s = job();
                    if let Ok(mut slot) = after.lock() {
                        *slot = Some(s);
                    }
                }
                break;
            };
            let r = f(&items[i]);
            if let Ok(mut slot) = done[i].lock() {
                *slot = Some(r);
            }
        });
    let results = done
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .expect("every item is built once")
        })
        .collect();
    let after = after.into_inner().ok().flatten().expect("run once");
    (results, after)
}

/// The parts' DAGs as one: groups and clusters merged (ids over all parts, each
/// group tagged with its material), triangles left in each part's own list and
/// read through [`PartDags::triangles`] (the packer copies them into the levels
/// once, adding the part's first vertex; no merged index list is made).
pub(crate) struct PartDags {
    /// The merged DAG; its `indices` are empty and a cluster's `first_index` is in
    /// its part's list.
    pub built: BuiltDag,
    /// Per part: its DAG's indices (the part's own vertex ids) and its first vertex.
    pub indices: Vec<(Vec<u32>, u32)>,
    /// The part of each cluster of `built.dag`; empty for one part.
    pub part: Vec<u32>,
}

impl PartDags {
    /// Cluster `c`'s triangles in its part's vertex ids, and what turns them into
    /// ids of [`MaterialSplit::vertices`].
    pub fn triangles(&self, c: usize) -> (&[u32], u32) {
        let cluster = &self.built.dag.clusters[c];
        let part = self.part.get(c).map_or(0, |&p| p as usize);
        let (indices, base) = &self.indices[part];
        let start = cluster.first_index as usize;
        (&indices[start..start + cluster.index_count as usize], *base)
    }
}

#[cfg(test)]
mod tests {
    use super::{part_remaps, MaterialPart};
    use crate::repair::position_remap;

    /// Each part's remap taken from the mesh's equals meshoptimizer's remap of the
    /// part alone: positions repeated within and across parts, -0 beside 0, NaNs.
    #[test]
    fn part_remaps_from_the_mesh_are_the_parts_own_welds() {
        let mut next = crate::test_numbers(0x2545_F491_4F6C_DD1D);
        for round in 0..20 {
            let coordinate = |k: u64| match k {
                0 => -0.0,
                1 => f32::NAN,
                2 => 0.0,
                k => k as f32 * 0.5,
            };
            let positions: Vec<[f32; 3]> = (0..300 + round * 40)
                .map(|_| [0; 3].map(|_| coordinate(next(5))))
                .collect();
            let mut parts = Vec::new();
            let mut base = 0u32;
            while (base as usize) < positions.len() {
                let count = (1 + next(90) as u32).min(positions.len() as u32 - base);
                parts.push(MaterialPart {
                    name: String::new(),
                    vertex_base: base,
                    vertex_count: count,
                    indices: Vec::new(),
                    seam: Vec::new(),
                });
                base += count;
            }
            let remaps = part_remaps(&position_remap(&positions), &parts);
            assert!(parts.len() > 2);
            for p in &parts {
                let range = p.vertex_base as usize..(p.vertex_base + p.vertex_count) as usize;
                assert_eq!(remaps[range.clone()], position_remap(&positions[range])[..]);
            }
        }
    }
}
