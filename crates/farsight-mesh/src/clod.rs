//! The cluster LOD DAG build: the loop of
//! docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time (group, lock
//! the borders, simplify, split), on meshoptimizer's clusteriser, partitioner and
//! simplifiers, with `ClodConfig`'s settings and the same steps as meshoptimizer's
//! `clod_build` (the benchmark's peer), and two rules `clod_build` lacks, so that the DAG
//! passes the cook's trust checks the first time:
//!
//! - **A group whose simplification would open the surface is stuck.** The
//!   permissive simplifier (collapses across attribute seams) and the sloppy
//!   fallback (vertex clustering, which ignores topology) can leave an edge used by
//!   one triangle on a part of LOD0 that is closed, or drop an edge of the group's
//!   locked border; each candidate result is checked on position-welded edges and
//!   the last one that keeps the surface is taken (regular, then permissive, then
//!   sloppy); when none does the group is stuck, as one that could not simplify.
//! - **A stuck group's border holds for the rest of the build.** Its clusters are
//!   drawn at every coarser distance (the stamping copies them), so every vertex
//!   at the position of one of its vertices stays locked in every coarser level.
//!   `clod_build` forgets the border of a stuck group once its level is done.
//!
//! A level's groups are simplified in parallel (`clod_build` runs them one after
//! another) and recorded in order, so the DAG is the same on any number of threads.

use std::borrow::Cow;
use std::sync::OnceLock;

use meshopt::{
    ClodConfig, PositionDataAdapter, RadiusDataAdapter, SimplifyOptions, SimplifyVertex,
    VertexDataAdapter,
};

use crate::dag::RawDag;
use crate::dag::{attribute_weights, Attributes, BuiltDag, ClusterConfig, DagCluster, DagGroup};
use crate::edges::{flatten, keep_singles, union};
use crate::mesh::Vertex;
use crate::par;
use crate::prepare::adapter;
use crate::sort::{sort_counted, Histograms, Key};

/// A sphere and an error, as `clod_build` keeps them per cluster.
#[derive(Clone, Copy, Debug, Default)]
struct Bounds {
    center: [f32; 3],
    radius: f32,
    error: f32,
}

#[derive(Clone, Copy, Debug)]
struct Cluster {
    index_offset: usize,
    index_count: usize,
    /// The group it was simplified from, -1 for LOD0.
    refined: i32,
    bounds: Bounds,
}

/// Clusters and the triangles they index (`indices[index_offset..][..index_count]`).
#[derive(Default)]
struct Clusters {
    list: Vec<Cluster>,
    indices: Vec<u32>,
}

/// What the loop reads: the mesh, its welding and the settings.
struct Build<'a> {
    config: ClodConfig,
    adapter: VertexDataAdapter<'a>,
    vertices: &'a [Vertex],
    attributes: Attributes<'a>,
    weights: [f32; 5],
    /// First vertex at the same position.
    remap: Cow<'a, [u32]>,
    /// LOD0's triangles.
    lod0: &'a [u32],
    /// Per canonical vertex: its connected part of LOD0 has no open edge (made
    /// when a simplification first opens an edge, unless LOD0's edge reference
    /// made it first; from the whole mesh's when this mesh is a part of a cook
    /// and those are made: see [`MeshClosed`]).
    closed: &'a OnceLock<Vec<bool>>,
    /// The whole mesh's closed parts and open edges, when this mesh is one part
    /// of a cook ([`MeshClosed`]).
    from_mesh: Option<MeshClosed<'a>>,
}

/// What a part's build can take its closed parts of LOD0 from: the whole mesh's
/// closed parts and open edges, which LOD0's edge reference makes (by the mesh's
/// canonical vertex), and where the part lies in the mesh. A part whose build
/// needs its closed parts before they are made makes its own (the same values,
/// so the DAG does not depend on which came first); see [`part_closed`].
#[derive(Clone, Copy)]
pub(crate) struct MeshClosed<'a> {
    pub closed: &'a OnceLock<Vec<bool>>,
    /// The mesh's open edges of LOD0, as pairs of its canonical vertices.
    pub open: &'a OnceLock<Vec<[u32; 2]>>,
    /// The mesh's canonical vertex of each of the part's vertices.
    pub remap: &'a [u32],
    /// The part's first vertex in the mesh.
    pub base: u32,
    /// Per part vertex: another part uses its position (the part's seam).
    pub seam: &'a [bool],
}

/// What a cook of one part hands its DAG build: the mesh's position remap and
/// the cell of LOD0's closed parts that LOD0's edge reference fills too
/// ([`crate::edges::EdgeReference::from_parts`]): one weld, and the closed parts
/// found once.
#[derive(Clone, Copy)]
pub(crate) struct Whole<'a> {
    pub remap: &'a [u32],
    pub closed: &'a OnceLock<Vec<bool>>,
}

/// Builds the DAG of one mesh (one material) with the locks `seam` (per vertex;
/// empty for none: every vertex at a seam vertex's position is locked too), with
/// the whole mesh's remap and closed parts when the mesh is the cook's only part,
/// else its own remap when the cook has it (`remap[v]`: the first vertex at `v`'s
/// position; made here when neither is given).
pub(crate) fn build(
    config: &ClusterConfig,
    (vertices, attributes): (&[Vertex], Attributes<'_>),
    indices: &[u32],
    seam: &[bool],
    whole: Option<Whole<'_>>,
    own_remap: Option<Vec<u32>>,
    from_mesh: Option<MeshClosed<'_>>,
) -> BuiltDag {
    let n = vertices.len();
    let adapter = adapter(vertices);
    let remap: Cow<'_, [u32]> = match (whole, own_remap) {
        (Some(w), _) => Cow::Borrowed(w.remap),
        (None, Some(r)) => Cow::Owned(r),
        (None, None) => Cow::Owned(meshopt::generate_position_remap(&adapter)),
    };
    let own = OnceLock::new();
    let closed = whole.map_or(&own, |w| w.closed);
    debug_assert_eq!(remap.len(), n);
    let b = Build {
        config: config.clod_config(),
        adapter,
        vertices,
        attributes,
        weights: attribute_weights(config.normal_weight, config.uv_weight),
        lod0: indices,
        closed,
        from_mesh: from_mesh.filter(|m| m.remap.len() == n),
        remap,
    };
    // Locks that hold for the whole build, by canonical vertex: the seams, then
    // the borders of stuck groups.
    let mut held = b.held_seams(seam);
    let protect = b.uv_protect();
    let mut dag = RawDag::default();
    if indices.len() >= 3 * 1024 {
        // Each level about half the one before: the DAG's triangles about twice
        // LOD0's (a hint; the list grows past it when a level keeps more). Not
        // for a small mesh, whose list grows cheaply in place.
        dag.indices.reserve(2 * indices.len());
    }
    let mut locked_vertices = 0;
    let mut clusters = b.lod0_clusters(indices);
    let mut pending = Clusters::default();
    let mut locks = vec![SimplifyVertex::None; n];
    let mut marks = BorderMarks {
        mark: vec![0u8; n],
        seen_in: Vec::new(),
        next_group: 1,
    };
    let mut depth = 0u32;
    while clusters.list.len() > 1 {
        let offsets = b.partition(&mut clusters);
        b.lock_borders(&clusters, &offsets, &held, &protect, &mut marks, &mut locks);
        pending.list.clear();
        pending.indices.clear();
        // The groups of a level are independent: each reads the level's locks and
        // marks (the held vertices among them, as the level began; only a stuck
        // group of this level adds to them, once every group is simplified, and
        // only at its own vertices). So they simplify in parallel and are
        // recorded in order, the same DAG on any number of threads.
        let groups = offsets.len() - 1;
        let range = |g: usize| offsets[g] as usize..offsets[g + 1] as usize;
        let level = Level {
            clusters: &clusters,
            locks: &locks,
            mark: &marks.mark,
        };
        let outcomes = if groups >= PARALLEL_GROUPS {
            par::map_range(groups, |g| b.simplify_group(&level, range(g)))
        } else {
            (0..groups)
                .map(|g| b.simplify_group(&level, range(g)))
                .collect()
        };
        for (g, outcome) in outcomes.into_iter().enumerate() {
            let group = &clusters.list[range(g)];
            let at = (&mut dag, depth);
            locked_vertices += b.record(at, group, &clusters, outcome, &mut pending, &mut held);
        }
        std::mem::swap(&mut clusters, &mut pending);
        depth += 1;
    }
    if let [last] = clusters.list[..] {
        let mut bounds = last.bounds;
        bounds.error = f32::MAX;
        emit(&mut dag, &b, depth, bounds, &[last], &clusters.indices);
    }
    let stuck_groups = dag.stuck_groups().count();
    BuiltDag {
        dag,
        locked_vertices,
        stuck_groups,
    }
}

impl Build<'_> {
    /// Per canonical vertex: a vertex of the seam `seam` (per vertex) is there.
    fn held_seams(&self, seam: &[bool]) -> Vec<bool> {
        let mut held = vec![false; self.vertices.len()];
        for (v, _) in seam.iter().enumerate().filter(|(_, &s)| s) {
            held[self.remap[v] as usize] = true;
        }
        held
    }

    /// Per vertex: it lies on a UV seam (attributes 3 and 4 differ from its
    /// canonical vertex's), which permissive collapses keep where it is.
    fn uv_protect(&self) -> Vec<bool> {
        (0..self.vertices.len())
            .map(|i| {
                let r = self.remap[i] as usize;
                r != i && (3..5).any(|j| self.attribute(i, j) != self.attribute(r, j))
            })
            .collect()
    }

    /// LOD0's clusters, each with its tight bounds (error zero).
    fn lod0_clusters(&self, indices: &[u32]) -> Clusters {
        let mut clusters = Clusters::default();
        self.clusterize(&mut clusters, indices, -1);
        for cl in &mut clusters.list {
            let tris = &clusters.indices[cl.index_offset..][..cl.index_count];
            cl.bounds = self.tight_bounds(tris, 0.0);
        }
        clusters
    }

    /// Records `group` (clusters of `clusters`) at `depth` of the DAG by its
    /// outcome: a stuck group's vertices are held from now on (returns how many
    /// were newly held); a simplified group's clusters join `pending`, the next
    /// level, refining it.
    fn record(
        &self,
        (dag, depth): (&mut RawDag, u32),
        group: &[Cluster],
        clusters: &Clusters,
        outcome: Outcome,
        pending: &mut Clusters,
        held: &mut [bool],
    ) -> usize {
        let mut locked_vertices = 0;
        match outcome {
            Outcome::Stuck(bounds) => {
                emit(dag, self, depth, bounds, group, &clusters.indices);
                for cl in group {
                    for &v in &clusters.indices[cl.index_offset..][..cl.index_count] {
                        let r = self.remap[v as usize] as usize;
                        if !held[r] {
                            held[r] = true;
                            locked_vertices += 1;
                        }
                    }
                }
            }
            Outcome::Simplified(bounds, made) => {
                let id = emit(dag, self, depth, bounds, group, &clusters.indices);
                let base = pending.indices.len();
                pending.indices.extend_from_slice(&made.indices);
                pending.list.extend(made.list.iter().map(|cl| Cluster {
                    index_offset: cl.index_offset + base,
                    refined: id as i32,
                    bounds,
                    ..*cl
                }));
            }
        }
        locked_vertices
    }
}

/// Records a group and its clusters; returns the group's id.
fn emit(
    dag: &mut RawDag,
    b: &Build<'_>,
    depth: u32,
    bounds: Bounds,
    group: &[Cluster],
    indices: &[u32],
) -> u32 {
    let id = dag.groups.len() as u32;
    dag.groups.push(DagGroup {
        depth,
        sphere: [
            bounds.center[0],
            bounds.center[1],
            bounds.center[2],
            bounds.radius,
        ],
        error: bounds.error,
        material: 0,
    });
    for cl in group {
        let tris = &indices[cl.index_offset..][..cl.index_count];
        let own = if b.config.optimize_bounds && cl.refined != -1 {
            b.tight_bounds(tris, cl.bounds.error)
        } else {
            cl.bounds
        };
        dag.clusters.push(DagCluster {
            group: id,
            refined: cl.refined,
            bounds: [own.center[0], own.center[1], own.center[2], own.radius],
            first_index: dag.indices.len() as u32,
            index_count: cl.index_count as u32,
        });
        dag.indices.extend_from_slice(tris);
    }
    id
}

/// The sphere around the clusters' spheres, with the largest of their errors.
fn merge_bounds(group: &[Cluster]) -> Bounds {
    let spheres: Vec<[f32; 4]> = group
        .iter()
        .map(|c| {
            [
                c.bounds.center[0],
                c.bounds.center[1],
                c.bounds.center[2],
                c.bounds.radius,
            ]
        })
        .collect();
    let bytes: &[u8] = bytemuck::cast_slice(&spheres);
    let s = meshopt::compute_sphere_bounds(
        PositionDataAdapter {
            data: bytes,
            position_count: spheres.len(),
            position_stride: 16,
            position_offset: 0,
        },
        Some(RadiusDataAdapter {
            data: bytes,
            radius_count: spheres.len(),
            radius_stride: 16,
            radius_offset: 12,
        }),
    );
    Bounds {
        center: s.center,
        radius: s.radius,
        error: group.iter().fold(0.0, |e, c| e.max(c.bounds.error)),
    }
}

/// What the groups of one level read.
struct Level<'a> {
    clusters: &'a Clusters,
    locks: &'a [SimplifyVertex],
    /// Bit 0: locked (a border between groups, or held); see
    /// [`Build::lock_borders`].
    mark: &'a [u8],
}

/// The marks [`Build::lock_borders`] makes per level: bit 0 of `mark`, locked
/// (a position two groups share, or held), by canonical vertex; `seen_in`, the
/// id of the last group that met each position (made at the first level; ids
/// grow over the whole build, `next_group` is the next, so it is never cleared).
struct BorderMarks {
    mark: Vec<u8>,
    seen_in: Vec<u32>,
    next_group: u32,
}

/// A group's simplification: stuck (its bounds, error `f32::MAX`), or its bounds
/// and the clusters split from the result (their `refined` and bounds set when
/// the group is recorded).
enum Outcome {
    Stuck(Bounds),
    Simplified(Bounds, Clusters),
}

/// From this many groups a level simplifies its groups in parallel (a group's
/// simplification takes tens of microseconds; a hand-over, a few).
const PARALLEL_GROUPS: usize = 2;

impl Build<'_> {
    /// Merges, simplifies and splits the group of clusters `range` of the level.
    fn simplify_group(&self, level: &Level<'_>, range: std::ops::Range<usize>) -> Outcome {
        let c = &self.config;
        let group = &level.clusters.list[range];
        let indices = &level.clusters.indices;
        let mut merged = Vec::with_capacity(group.iter().map(|cl| cl.index_count).sum());
        for cl in group {
            merged.extend_from_slice(&indices[cl.index_offset..][..cl.index_count]);
        }
        let target = ((merged.len() / 3) as f32 * c.simplify_ratio) as usize * 3;
        let mut bounds = merge_bounds(group);
        let simplified = self.simplify(&merged, level.locks, level.mark, target);
        match simplified {
            Some((s, error)) if self.simplified_enough(s.len(), merged.len()) => {
                bounds.error = (bounds.error * c.simplify_error_merge_previous).max(error)
                    + error * c.simplify_error_merge_additive;
                let mut made = Clusters::default();
                self.clusterize(&mut made, &s, -1);
                Outcome::Simplified(bounds, made)
            }
            _ => {
                bounds.error = f32::MAX;
                Outcome::Stuck(bounds)
            }
        }
    }

    /// Whether a group of `merged` indices simplified to `lod` is taken (else
    /// the group is stuck): `clod_build`'s `simplify_threshold`.
    fn simplified_enough(&self, lod: usize, merged: usize) -> bool {
        lod as f32 <= merged as f32 * self.config.simplify_threshold
    }

    fn attribute(&self, v: usize, j: usize) -> f32 {
        self.attributes.floats[v * (self.attributes.stride / 4) + j]
    }

    fn position(&self, v: u32) -> [f32; 3] {
        self.vertices[v as usize].position
    }

    fn tight_bounds(&self, tris: &[u32], error: f32) -> Bounds {
        let b = meshopt::compute_cluster_bounds(tris, &self.adapter);
        Bounds {
            center: b.center,
            radius: b.radius,
            error,
        }
    }

    /// Splits `tris` into clusters appended to `out`, each simplified from `refined`.
    fn clusterize(&self, out: &mut Clusters, tris: &[u32], refined: i32) {
        let c = &self.config;
        let meshlets = if c.cluster_spatial {
            meshopt::build_meshlets_spatial(
                tris,
                &self.adapter,
                c.max_vertices,
                c.min_triangles,
                c.max_triangles,
                c.cluster_fill_weight,
            )
        } else {
            meshopt::build_meshlets_flex(
                tris,
                &self.adapter,
                c.max_vertices,
                c.min_triangles,
                c.max_triangles,
                0.0,
                c.cluster_split_factor,
            )
        };
        // The meshlets hold every triangle once: the lists grow once.
        out.indices.reserve(tris.len());
        out.list.reserve(meshlets.len());
        for m in meshlets.iter() {
            let index_offset = out.indices.len();
            out.indices
                .extend(m.triangles.iter().map(|&t| m.vertices[t as usize]));
            out.list.push(Cluster {
                index_offset,
                index_count: m.triangles.len(),
                refined,
                bounds: Bounds::default(),
            });
        }
    }

    /// Orders the clusters into groups of about `partition_size` that share
    /// vertices; returns the groups' starts (and the end).
    fn partition(&self, clusters: &mut Clusters) -> Vec<u32> {
        let c = &self.config;
        let count = clusters.list.len();
        if count <= c.partition_size {
            return vec![0, count as u32];
        }
        let counts: Vec<u32> = clusters.list.iter().map(|c| c.index_count as u32).collect();
        let mut welded: Vec<u32> = Vec::with_capacity(clusters.indices.len());
        for cl in &clusters.list {
            let tris = &clusters.indices[cl.index_offset..][..cl.index_count];
            welded.extend(tris.iter().map(|&v| self.remap[v as usize]));
        }
        let mut part = vec![0u32; count];
        let parts = if c.partition_spatial {
            meshopt::partition_clusters_with_positions(
                &mut part,
                &welded,
                &counts,
                &self.adapter,
                c.partition_size,
            )
        } else {
            meshopt::partition_clusters(
                &mut part,
                &welded,
                &counts,
                self.vertices.len(),
                c.partition_size,
            )
        };
        if c.partition_sort {
            // Each group's place: the centre of its last cluster.
            let mut points = vec![[0.0f32; 3]; parts];
            for (cl, &p) in clusters.list.iter().zip(&part) {
                points[p as usize] = cl.bounds.center;
            }
            let adapter = VertexDataAdapter::new(bytemuck::cast_slice(&points), 12, 0)
                .expect("12-byte points");
            let order = meshopt::spatial_sort_remap(&adapter);
            for p in &mut part {
                *p = order[*p as usize];
            }
        }
        let mut offsets = vec![0u32; parts + 1];
        for &p in &part {
            offsets[p as usize + 1] += 1;
        }
        for i in 1..=parts {
            offsets[i] += offsets[i - 1];
        }
        let mut at = offsets.clone();
        let mut sorted = clusters.list.clone();
        for (cl, &p) in clusters.list.iter().zip(&part) {
            sorted[at[p as usize] as usize] = *cl;
            at[p as usize] += 1;
        }
        clusters.list = sorted;
        offsets
    }

    /// Locks every position two groups share (and the held ones), per vertex, and
    /// marks both in `marks.mark` (bit 0, by canonical vertex).
    fn lock_borders(
        &self,
        clusters: &Clusters,
        offsets: &[u32],
        held: &[bool],
        protect: &[bool],
        marks: &mut BorderMarks,
        locks: &mut [SimplifyVertex],
    ) {
        const LOCKED: u8 = 1;
        let BorderMarks {
            mark,
            seen_in,
            next_group,
        } = marks;
        mark.fill(0);
        if seen_in.is_empty() {
            *seen_in = vec![0; mark.len()];
        }
        // One pass: a position is locked when a group meets it that an earlier
        // group of this level stamped (ids from `first` on are this level's).
        let first = *next_group;
        for g in offsets.windows(2) {
            let id = *next_group;
            *next_group += 1;
            let group = &clusters.list[g[0] as usize..g[1] as usize];
            // Each cluster's triangles in turn (loops, not a flattened iterator).
            let tris = |cl: &Cluster| &clusters.indices[cl.index_offset..][..cl.index_count];
            for cl in group {
                for &v in tris(cl) {
                    let r = self.remap[v as usize] as usize;
                    let s = seen_in[r];
                    mark[r] |= u8::from(s >= first && s != id) * LOCKED;
                    seen_in[r] = id;
                }
            }
        }
        // The held vertices are locked too: bit 0 then says "locked" alone, one
        // load where the group surface checks ask it of every edge's ends.
        for (m, &h) in mark.iter_mut().zip(held) {
            *m |= u8::from(h) * LOCKED;
        }
        // Each vertex's flags from its bits, without a branch: `Lock` is bit 0
        // (`LOCKED`), `Protect` bit 1.
        const _: () =
            assert!(SimplifyVertex::Lock.bits() == LOCKED && SimplifyVertex::Protect.bits() == 2);
        if 4 * clusters.indices.len() < locks.len() {
            // A coarse level uses few of the vertices: only its own are set (the
            // simplifiers read the locks of a group's vertices alone: sparse
            // simplification, and the sloppy fallback's copy). A lookup per
            // index costs more than the loop over every vertex, so only past a
            // quarter.
            for cl in &clusters.list {
                for &v in &clusters.indices[cl.index_offset..][..cl.index_count] {
                    let (v, r) = (v as usize, self.remap[v as usize] as usize);
                    locks[v] = SimplifyVertex::from_bits_retain(
                        (mark[r] & LOCKED) | (u8::from(protect[v]) << 1),
                    );
                }
            }
        } else {
            for ((l, &r), &p) in locks.iter_mut().zip(self.remap.iter()).zip(protect) {
                *l = SimplifyVertex::from_bits_retain(
                    (mark[r as usize] & LOCKED) | (u8::from(p) << 1),
                );
            }
        }
    }

    /// Simplifies a group towards `target` indices: regular (or permissive)
    /// simplification, then the configured fallbacks while the target is not
    /// reached; the last result that keeps the surface (see [`Self::keeps_surface`])
    /// and its absolute error, or `None` when none does (or when only results the
    /// group refuses do: [`Self::simplified_enough`]).
    fn simplify(
        &self,
        merged: &[u32],
        locks: &[SimplifyVertex],
        mark: &[u8],
        target: usize,
    ) -> Option<(Vec<u32>, f32)> {
        let c = &self.config;
        let mut options = SimplifyOptions::Sparse | SimplifyOptions::ErrorAbsolute;
        if c.simplify_error_clamped {
            options |= SimplifyOptions::ErrorClamped;
        }
        if c.simplify_permissive {
            options |= SimplifyOptions::Permissive;
        }
        if c.simplify_regularize {
            options |= SimplifyOptions::Regularize;
        }
        if c.simplify_preserve_folds {
            options |= SimplifyOptions::PreserveFolds;
        }
        let run = |options: SimplifyOptions| {
            let mut error = 0.0f32;
            let lod = meshopt::simplify_with_attributes_and_locks(
                merged,
                &self.adapter,
                self.attributes.floats,
                &self.weights,
                self.attributes.stride,
                locks,
                target,
                f32::MAX,
                options,
                Some(&mut error),
            );
            (lod, error)
        };
        let edges = GroupEdges::new(self, merged, mark);
        // The candidates in order; the first that keeps the surface and reaches
        // the target is taken, else the smallest that keeps the surface.
        let mut best: Option<(Vec<u32>, f32)> = None;
        let mut first = true;
        let mut consider = |(mut lod, error): (Vec<u32>, f32)| -> (bool, bool) {
            let first = std::mem::replace(&mut first, false);
            if lod.is_empty() && !merged.is_empty() {
                // `clod_build` never leaves a group empty (a cluster needs a triangle).
                lod.extend_from_slice(&merged[..3]);
            }
            // A result no smaller than the best kept so far is not taken whether
            // it keeps the surface or not, and reaches no target the best missed
            // (the best would have ended the search): its check is skipped (on
            // cakeBirthday a third of the candidates, 1.5% of the cook). Only the
            // first candidate's `keeps` is read, and it meets no best.
            if best.as_ref().is_some_and(|(b, _)| lod.len() >= b.len()) {
                return (false, false);
            }
            let reached = lod.len() <= target;
            // Nor is a result that misses the target and that the group would
            // refuse ([`Self::simplified_enough`]) checked, but for the first
            // (whose `keeps` picks the next candidate): kept, it would be a best
            // refused in turn (the group stuck, as with none), and it ends no search.
            if !first && !reached && !self.simplified_enough(lod.len(), merged.len()) {
                return (false, false);
            }
            let keeps = edges.keeps_surface(self, &lod);
            if keeps {
                best = Some((lod, error));
            }
            (keeps, keeps && reached)
        };
        let (keeps, mut done) = consider(run(options));
        if !done && c.simplify_fallback_permissive && !c.simplify_permissive {
            done = consider(run(options | SimplifyOptions::Permissive)).1;
        }
        if !done && !keeps && c.simplify_permissive {
            done = consider(run(options - SimplifyOptions::Permissive)).1;
        }
        if !done && c.simplify_fallback_sloppy {
            let (lod, error) = self.sloppy(merged, locks, target);
            consider((lod, error * c.simplify_error_factor_sloppy));
        }
        let (lod, mut error) = best?;
        if c.simplify_error_edge_limit > 0.0 {
            error = error.min(self.edge_limit(merged) * c.simplify_error_edge_limit);
        }
        Some((lod, error))
    }

    /// Vertex clustering over the group alone (its corners copied out, so the
    /// clustering grid spans the group, not the mesh); absolute error.
    fn sloppy(&self, merged: &[u32], locks: &[SimplifyVertex], target: usize) -> (Vec<u32>, f32) {
        let subset: Vec<[f32; 3]> = merged.iter().map(|&v| self.position(v)).collect();
        let subset_locks: Vec<SimplifyVertex> = merged.iter().map(|&v| locks[v as usize]).collect();
        let corners: Vec<u32> = (0..merged.len() as u32).collect();
        let adapter =
            VertexDataAdapter::new(bytemuck::cast_slice(&subset), 12, 0).expect("12-byte points");
        let mut error = 0.0f32;
        let lod = meshopt::simplify_sloppy_with_locks(
            &corners,
            &adapter,
            &subset_locks,
            target,
            f32::MAX,
            Some(&mut error),
        );
        let error = error * meshopt::simplify_scale(&adapter);
        (lod.iter().map(|&i| merged[i as usize]).collect(), error)
    }

    /// The edge length that bounds the error of dense groups (`clod_build`'s
    /// `simplify_error_edge_limit`).
    fn edge_limit(&self, merged: &[u32]) -> f32 {
        let mut max_sq = 0.0f32;
        for t in merged.chunks_exact(3) {
            let [a, b, c] = [t[0], t[1], t[2]].map(|v| glam::Vec3::from(self.position(v)));
            let e = [
                a.distance_squared(b),
                a.distance_squared(c),
                b.distance_squared(c),
            ];
            let (lo, hi) = (e[0].min(e[1]).min(e[2]), e[0].max(e[1]).max(e[2]));
            max_sq = max_sq.max(lo.max(hi / 4.0));
        }
        max_sq.sqrt()
    }
}

/// What a group's simplified result is checked against: the group's open edges
/// (position-welded, sorted keys) whose two ends are locked, its borders with
/// other groups and with held vertices. On a closed part of LOD0 a level's open
/// edges are all such borders (LOD0 has none there; an accepted group opens none
/// but these; a stuck group leaves a hole whose rim is held), so only the edges
/// between two locked vertices need counting, not the whole group's.
struct GroupEdges<'a> {
    locked_open: Vec<u64>,
    /// Bit 0: locked (a border between groups, or held).
    mark: &'a [u8],
}

impl<'a> GroupEdges<'a> {
    fn new(b: &Build<'_>, merged: &[u32], mark: &'a [u8]) -> Self {
        let mut edges = Self {
            locked_open: Vec::new(),
            mark,
        };
        edges.locked_open = single_edges(&b.remap, merged, |x, y| edges.both_locked(x, y));
        edges
    }

    fn both_locked(&self, x: u32, y: u32) -> bool {
        let locked = |r: u32| self.mark[r as usize] & 1 != 0;
        locked(x) && locked(y)
    }

    /// Whether `lod` (the group simplified) keeps the surface: every locked border
    /// edge is still there and open, and no other edge is open on a part of LOD0
    /// that is closed (the cook's level check, applied to the group). Once LOD0's
    /// closed parts are known, only the edges either rule is about are counted:
    /// those between two locked vertices or touching a closed part (an edge's
    /// count does not depend on the others, so the answer is the same; on an open
    /// part of LOD0 that leaves the few locked borders).
    fn keeps_surface(&self, b: &Build<'_>, lod: &[u32]) -> bool {
        let after = match b.closed.get() {
            Some(closed) => single_edges(&b.remap, lod, |x, y| {
                closed[x as usize] || closed[y as usize] || self.both_locked(x, y)
            }),
            None => open_edges(&b.remap, lod),
        };
        let mut j = 0;
        for &k in &self.locked_open {
            while j < after.len() && after[j] < k {
                if b.on_closed(after[j]) {
                    return false;
                }
                j += 1;
            }
            if j < after.len() && after[j] == k {
                j += 1;
            } else {
                return false;
            }
        }
        after[j..].iter().all(|&k| !b.on_closed(k))
    }
}

impl Build<'_> {
    /// Whether an edge touches a closed part of LOD0. The closed parts are made
    /// when first needed: from the whole mesh's when those are made already
    /// ([`MeshClosed`], [`part_closed`]), else from LOD0 ([`closed_parts`]).
    fn on_closed(&self, key: u64) -> bool {
        let closed = self.closed.get_or_init(|| {
            let m = self.from_mesh;
            match m.and_then(|m| Some((m, m.closed.get()?, m.open.get()?))) {
                Some((m, mesh, open)) => part_closed(&self.remap, self.lod0, &m, mesh, open),
                None => closed_parts(&self.remap, self.lod0),
            }
        });
        let (a, b) = key_ends(key, closed.len());
        closed[a] || closed[b]
    }
}

/// Bits of a vertex id in an edge key, for `n` vertices.
fn key_shift(n: usize) -> u32 {
    (usize::BITS - n.leading_zeros()).max(1)
}

/// The two vertices of an edge key of a mesh of `n` vertices.
fn key_ends(key: u64, n: usize) -> (usize, usize) {
    let shift = key_shift(n);
    (
        (key >> shift) as usize,
        (key & ((1u64 << shift) - 1)) as usize,
    )
}

/// The edges (canonical vertex pairs, `min << shift | max`) used by exactly one
/// of `tris`, sorted.
fn open_edges(remap: &[u32], tris: &[u32]) -> Vec<u64> {
    single_edges(remap, tris, |_, _| true)
}

/// The edges of `tris` (canonical vertex pairs `(a, b)`, `a < b`) for which
/// `keep(a, b)` holds, used once among those, as sorted keys. Sorted as `u32`
/// keys when both ids fit in 16 bits (half the memory the sort moves), as `u64`
/// otherwise; the key value is the same either way.
fn single_edges(remap: &[u32], tris: &[u32], keep: impl Fn(u32, u32) -> bool) -> Vec<u64> {
    let shift = key_shift(remap.len());
    if 2 * shift <= 32 {
        single_edges_as::<u32>(remap, tris, shift, keep)
    } else {
        single_edges_as::<u64>(remap, tris, shift, keep)
    }
}

fn single_edges_as<K: Key>(
    remap: &[u32],
    tris: &[u32],
    shift: u32,
    keep: impl Fn(u32, u32) -> bool,
) -> Vec<u64> {
    let mut keys: Vec<K> = Vec::with_capacity(tris.len());
    for t in tris.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|v| remap[v as usize]);
        for (x, y) in [(a, b), (b, c), (c, a)] {
            let (x, y) = (x.min(y), x.max(y));
            if x != y && keep(x, y) {
                keys.push(K::make(x, y, shift));
            }
        }
    }
    // The edge checks' bucket sort (a key's top bits are its smaller vertex).
    let mut hist = Histograms::new(2 * shift, keys.len());
    hist.count(&keys);
    sort_counted(&mut keys, &mut Vec::new(), hist);
    // The single keys moved to the front, then widened at their count (no
    // growing list).
    let singles = keep_singles(&mut keys);
    keys[..singles].iter().map(|k| k.wide()).collect()
}

/// The connected parts of `tris` (welded by `remap`): each vertex's root (its
/// part's smallest id), from a flattened union-find forest.
fn components(remap: &[u32], tris: &[u32]) -> Vec<u32> {
    let mut parent: Vec<u32> = (0..remap.len() as u32).collect();
    for t in tris.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|v| remap[v as usize]);
        union(&mut parent, a, b);
        union(&mut parent, b, c);
    }
    flatten(&mut parent);
    parent
}

/// Per canonical vertex: whether its connected part of `tris` (welded by
/// `remap`) has no open edge.
fn closed_parts(remap: &[u32], tris: &[u32]) -> Vec<bool> {
    let n = remap.len();
    let root = components(remap, tris);
    let mut open_root = vec![false; n];
    for k in open_edges(remap, tris) {
        open_root[root[key_ends(k, n).0] as usize] = true;
    }
    root.iter().map(|&r| !open_root[r as usize]).collect()
}

/// [`closed_parts`] of a part (`remap`, its own weld; `tris`, its triangles)
/// from the whole mesh's closed parts (`mesh_closed`) and open edges
/// (`mesh_open`), both by the mesh's canonical vertex: the same list (tested).
/// A part with no seam has the mesh's triangles at its positions to itself, so
/// its connected parts, their open edges and closed parts are the mesh's there,
/// read through the mesh's weld. With seams, an edge used once in the part is
/// either open in the mesh with an end at a position only this part has (its
/// triangles are all the part's), or joins two seam vertices: the part's own
/// connected parts are found, then marked open by those mesh edges and by its
/// seam edges counted among its own triangles (a few: no sort of all its edges).
fn part_closed(
    remap: &[u32],
    tris: &[u32],
    m: &MeshClosed<'_>,
    mesh_closed: &[bool],
    mesh_open: &[[u32; 2]],
) -> Vec<bool> {
    let n = remap.len();
    if !m.seam.contains(&true) {
        // A vertex that is not canonical is alone in its part: closed.
        let own = remap.iter().zip(m.remap).enumerate();
        return own
            .map(|(v, (&r, &c))| r as usize != v || mesh_closed[c as usize])
            .collect();
    }
    let root = components(remap, tris);
    let mut open_root = vec![false; n];
    for &[a, b] in mesh_open {
        let only_here = [a, b].into_iter().find_map(|x| {
            let local = x.checked_sub(m.base).filter(|&l| (l as usize) < n)?;
            (!m.seam[local as usize]).then_some(local)
        });
        if let Some(local) = only_here {
            open_root[root[remap[local as usize] as usize] as usize] = true;
        }
    }
    let seam_edges = single_edges(remap, tris, |x, y| m.seam[x as usize] && m.seam[y as usize]);
    for k in seam_edges {
        open_root[root[key_ends(k, n).0] as usize] = true;
    }
    root.iter().map(|&r| !open_root[r as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::{Build, GroupEdges};
    use crate::dag::{attribute_weights, Attributes, ClusterConfig};
    use crate::mesh::Vertex;
    use crate::prepare::adapter;

    /// The surface rule on a tetrahedron (closed: vertices 0-3) and a square of two
    /// triangles (open: vertices 4-7) whose corners are locked, as a group border.
    #[test]
    fn a_result_that_opens_a_closed_part_or_drops_a_locked_border_is_refused() {
        let at = |p: [f32; 3]| Vertex {
            position: p,
            ..Vertex::default()
        };
        let vertices: Vec<Vertex> = [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [5.0, 0.0, 0.0],
            [6.0, 0.0, 0.0],
            [6.0, 1.0, 0.0],
            [5.0, 1.0, 0.0],
        ]
        .map(at)
        .to_vec();
        let tetra = [0, 1, 2, 0, 3, 1, 1, 3, 2, 2, 3, 0];
        let square = [4, 5, 6, 4, 6, 7];
        let lod0: Vec<u32> = tetra.iter().chain(&square).copied().collect();
        let attributes = crate::dag::attributes(&vertices);
        let config = ClusterConfig::default();
        let remap: Vec<u32> = (0..8).collect();
        let build = |closed| Build {
            config: config.clod_config(),
            adapter: adapter(&vertices),
            vertices: &vertices,
            attributes: Attributes {
                floats: &attributes,
                stride: 20,
            },
            weights: attribute_weights(0.5, 1.0),
            remap: remap.as_slice().into(),
            lod0: &lod0,
            closed,
            from_mesh: None,
        };
        let locked = [0, 0, 0, 0, 1, 1, 1, 1u8];
        // A tetrahedron face gone: three open edges on a closed part.
        let opened: Vec<u32> = tetra[3..].iter().chain(&square).copied().collect();
        // The square's diagonal flipped: same locked border, so kept.
        let flipped: Vec<u32> = tetra.iter().chain(&[4, 5, 7, 5, 6, 7]).copied().collect();
        // Half the square gone: two locked border edges dropped; unlocked, the
        // square's border may recede (an open part).
        let dropped: Vec<u32> = tetra.iter().chain(&square[..3]).copied().collect();
        let cases: [(&[u32], [u8; 8], bool); 5] = [
            (&lod0, locked, true),
            (&opened, locked, false),
            (&flipped, locked, true),
            (&dropped, locked, false),
            (&dropped, [0; 8], true),
        ];
        // LOD0's closed parts not known yet (every edge of the result counted),
        // and known (only the edges the rules are about).
        let known = std::sync::OnceLock::new();
        let _ = known.set(super::closed_parts(&remap, &lod0));
        let unknown: Vec<_> = cases.iter().map(|_| std::sync::OnceLock::new()).collect();
        for ((lod, mark, keeps), unknown) in cases.into_iter().zip(&unknown) {
            for closed in [unknown, &known] {
                let b = build(closed);
                let edges = GroupEdges::new(&b, &lod0, &mark);
                assert_eq!(edges.keeps_surface(&b, lod), keeps, "{lod:?} {mark:?}");
            }
        }
    }

    /// A part's closed parts taken from the whole mesh's closed parts and open
    /// edges are its own ([`super::closed_parts`] of the part alone): parts with
    /// and without seams, closed shapes inside one part and split between two
    /// (closed in the mesh, open in each part), repeated positions, degenerate
    /// and repeated triangles.
    #[test]
    fn a_parts_closed_parts_from_the_meshs_are_its_own() {
        use super::{closed_parts, key_ends, open_edges, part_closed, MeshClosed};
        use crate::repair::position_remap;
        use std::sync::OnceLock;
        let mut next = crate::test_numbers(0x2545_F491_4F6C_DD1D);
        let tetra = [0u32, 1, 2, 0, 3, 1, 1, 3, 2, 2, 3, 0];
        let mut seamed = 0;
        for round in 0..200 {
            let parts = 2 + next(4) as usize;
            let mut positions: Vec<Vec<[f32; 3]>> = vec![Vec::new(); parts];
            let mut tris: Vec<Vec<u32>> = vec![Vec::new(); parts];
            // A shape's four corners at fresh positions (`shared`: the next
            // round's pool, which other parts reuse).
            let fresh = |k: u64| [k as f32, (k * 7 % 13) as f32, round as f32];
            let mut serial = 0u64;
            for p in 0..parts {
                let count = 4 + next(30) as usize;
                for _ in 0..count {
                    // Private positions, or one of a few shared by every part.
                    let k = if next(3) == 0 {
                        next(6)
                    } else {
                        100 + 1000 * p as u64 + next(12)
                    };
                    positions[p].push(fresh(k));
                }
                for _ in 0..next(12) {
                    let t = [0; 3].map(|_| next(count as u64) as u32);
                    tris[p].extend(t);
                }
                if next(2) == 0 {
                    // A closed tetrahedron of the part's own.
                    let at = positions[p].len() as u32;
                    serial += 1;
                    for c in 0..4 {
                        positions[p].push(fresh(50_000 + 10 * serial + c));
                    }
                    tris[p].extend(tetra.iter().map(|&i| i + at));
                }
            }
            for _ in 0..next(3) {
                // A tetrahedron split between two parts: closed in the mesh.
                let (a, b) = (next(parts as u64) as usize, next(parts as u64) as usize);
                serial += 1;
                let corners: Vec<[f32; 3]> =
                    (0..4).map(|c| fresh(90_000 + 10 * serial + c)).collect();
                for (p, faces) in [(a, &tetra[..6]), (b, &tetra[6..])] {
                    let at = positions[p].len() as u32;
                    positions[p].extend(&corners);
                    tris[p].extend(faces.iter().map(|&i| i + at));
                }
            }
            let all: Vec<[f32; 3]> = positions.iter().flatten().copied().collect();
            let mesh_remap = position_remap(&all);
            let mut bases = Vec::new();
            let mut global = Vec::new();
            let mut base = 0u32;
            for p in 0..parts {
                bases.push(base);
                global.extend(tris[p].iter().map(|&i| i + base));
                base += positions[p].len() as u32;
            }
            // A vertex is on a seam when another part uses its position.
            let mut owner = vec![u32::MAX; all.len()];
            for p in 0..parts {
                for v in 0..positions[p].len() {
                    let o = &mut owner[mesh_remap[bases[p] as usize + v] as usize];
                    *o = if *o == u32::MAX || *o == p as u32 {
                        p as u32
                    } else {
                        u32::MAX - 1
                    };
                }
            }
            let mesh_closed = closed_parts(&mesh_remap, &global);
            let mesh_open: Vec<[u32; 2]> = open_edges(&mesh_remap, &global)
                .into_iter()
                .map(|k| {
                    let (a, b) = key_ends(k, all.len());
                    [a as u32, b as u32]
                })
                .collect();
            let (closed_cell, open_cell) = (OnceLock::new(), OnceLock::new());
            let _ = closed_cell.set(mesh_closed.clone());
            let _ = open_cell.set(mesh_open.clone());
            for p in 0..parts {
                let range = bases[p] as usize..bases[p] as usize + positions[p].len();
                let seam: Vec<bool> = range
                    .clone()
                    .map(|v| owner[mesh_remap[v] as usize] == u32::MAX - 1)
                    .collect();
                seamed += usize::from(seam.contains(&true));
                let remap = position_remap(&positions[p]);
                let m = MeshClosed {
                    closed: &closed_cell,
                    open: &open_cell,
                    remap: &mesh_remap[range],
                    base: bases[p],
                    seam: &seam,
                };
                assert_eq!(
                    part_closed(&remap, &tris[p], &m, &mesh_closed, &mesh_open),
                    closed_parts(&remap, &tris[p]),
                    "round {round}, part {p}"
                );
            }
        }
        assert!(seamed > 100, "{seamed} parts with seams");
    }
}
