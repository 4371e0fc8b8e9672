//! From `clod_build`'s groups to the levels of
//! docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time: the cook's
//! steps and their order, stamping, stuck-group copies, and the trust checks' inputs (the
//! level records are written by `encode.rs`).

use farsight_format::{ClusterInfo, ClusterVertex, FloatVertex, OctCache, NO_PARENT_ERROR};
use farsight_geom::Aabb;
use glam::Vec3;

use crate::clod::Whole;
use crate::dag::{BuiltDag, ClusterConfig, DagGroup, RawDag};
use crate::edges::{EdgeReference, SharedLod0};
use crate::error::CookError;
use crate::mesh::{Mesh, Vertex};
use crate::par;
use crate::split::{build_parts, MaterialSplit};
use crate::validate::{check, check_cluster_materials};
use crate::Warning;

/// One level before encoding: cluster records and their triangles as source indices.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedLevel {
    /// The level's cluster records, stamped.
    pub clusters: Vec<ClusterInfo>,
    /// `3 * triangle_count` source vertex indices per cluster, concatenated.
    pub indices: Vec<u32>,
    /// Start of each cluster's triangles in `indices` (plus one end entry).
    pub offsets: Vec<u32>,
    /// Clusters copied from a finer level's stuck group (so the level is complete).
    pub copied_clusters: usize,
}

impl PackedLevel {
    /// Triangles of the level.
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    /// The triangles of cluster `c`, as source vertex indices.
    pub fn cluster_triangles(&self, c: usize) -> &[u32] {
        &self.indices[self.offsets[c] as usize..self.offsets[c + 1] as usize]
    }

    /// Largest parent error of the level.
    pub fn max_parent_error(&self) -> f32 {
        self.clusters.iter().fold(0.0, |m, c| m.max(c.parent_error))
    }

    /// Largest own error of the level's clusters.
    pub fn max_error(&self) -> f32 {
        self.clusters.iter().fold(0.0, |m, c| m.max(c.error))
    }
}

/// A cooked cluster-LOD mesh, ready to encode.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterMesh {
    /// The mesh's name.
    pub name: String,
    /// The box positions are quantised in.
    pub bounds: Aabb,
    /// Source vertices, grouped by material (see [`MaterialSplit`]); the levels'
    /// indices point here.
    pub vertices: Vec<Vertex>,
    /// `vertices` packed into `bounds` (32-byte GPU vertices), computed while the
    /// DAG builds; every level's compact vertex list is drawn from it.
    pub packed: Vec<ClusterVertex>,
    /// Material names; `ClusterInfo::material` indexes this list.
    pub materials: Vec<String>,
    /// The levels, LOD0 first.
    pub levels: Vec<PackedLevel>,
    /// What was repaired, locked or restricted on the way.
    pub warnings: Vec<Warning>,
    /// Mesh-to-world transforms (column-major) when the source placed this mesh
    /// more than once; written to the manifest. Empty for a mesh drawn once.
    pub instances: Vec<[f32; 16]>,
}

/// Cooks a mesh into its cluster DAG, checks it and packs it into levels. One DAG
/// per material (built in parallel, seams between materials locked), so every
/// cluster has one material. Fails (returning no result) when the DAG's errors are
/// not monotonic, a level is not complete alone, a uniform cut opens a crack, or a
/// cluster mixes materials.
pub fn cook_clusters(mesh: &Mesh, config: &ClusterConfig) -> Result<ClusterMesh, CookError> {
    par::cook(small(mesh), || {
        let cook = cook_checked(mesh, config, Unchecked::check)?;
        Ok(cook.0.mesh)
    })
}

/// Whether `mesh` is too small for its cook to be split across threads
/// ([`par::small`]).
fn small(mesh: &Mesh) -> bool {
    let materials = mesh.submeshes.first().map_or(0, |first| {
        let more = mesh.submeshes.iter().any(|s| s.material != first.material);
        1 + usize::from(more)
    });
    par::small(mesh.triangle_count(), materials)
}

/// The settings a cook tries in turn: the configured ones, then without the
/// sloppy (vertex clustering) fallback, then also without permissive collapses.
/// Sloppy simplification merges vertices by grid cell, across connected parts and
/// through non-manifold and duplicated triangles, and permissive collapses follow
/// positions across seams; either can leave an edge used by one triangle where
/// LOD0 is closed (ToyCar, AntiqueCamera, SubpassScene). The checks stay as they
/// are: a DAG is kept only when it passes them.
fn fallback_configs(config: &ClusterConfig) -> ([ClusterConfig; 3], usize) {
    // On the stack: a list of up to three is not worth an allocation (about 250
    // instructions of a 12-triangle cook).
    let mut out = [*config; 3];
    let mut len = 1;
    if config.fallback_sloppy {
        out[len] = ClusterConfig {
            fallback_sloppy: false,
            ..*config
        };
        len += 1;
    }
    if config.permissive || config.fallback_permissive {
        let last = out[len - 1];
        out[len] = ClusterConfig {
            permissive: false,
            fallback_permissive: false,
            ..last
        };
        len += 1;
    }
    (out, len)
}

/// Whether a refusal is about topology (an open edge or a crack), which a
/// topology-safe rebuild can cure.
fn topology_refusal(e: &CookError) -> bool {
    matches!(
        e,
        CookError::LevelIncomplete { .. } | CookError::CrackInCut { .. }
    )
}

/// Builds with each of [`fallback_configs`] until `check` passes or refuses for a
/// reason other than topology; the last refusal is returned when none passes. A
/// rebuild is reported as [`Warning::SimplificationRestricted`].
fn cook_checked<T>(
    mesh: &Mesh,
    config: &ClusterConfig,
    check: impl Fn(&Unchecked) -> Result<T, CookError>,
) -> Result<(Unchecked, T), CookError> {
    config.validate()?;
    let (configs, len) = fallback_configs(config);
    let configs = &configs[..len];
    let mut refused: Option<CookError> = None;
    for (i, c) in configs.iter().enumerate() {
        let mut cook = cook_unchecked(mesh, c)?;
        match check(&cook) {
            Ok(t) => {
                if let Some(e) = refused {
                    cook.mesh.warnings.push(Warning::SimplificationRestricted {
                        refused: e.to_string(),
                        sloppy: c.fallback_sloppy,
                        permissive: c.permissive || c.fallback_permissive,
                    });
                }
                return Ok((cook, t));
            }
            Err(e) if topology_refusal(&e) && i + 1 < configs.len() => {
                refused.get_or_insert(e);
            }
            Err(e) => return Err(refused.unwrap_or(e)),
        }
    }
    unreachable!("the last configuration returns")
}

/// [`cook_clusters`] and [`ClusterMesh::encode`] in one: the trust checks and the
/// record encoding run side by side (the bytes are dropped when a check fails), so
/// the encoder's serial container work overlaps the parallel checks. Same result
/// and bytes as the two calls in sequence; what `cook_file` runs.
pub fn cook_clusters_encoded(
    mesh: &Mesh,
    config: &ClusterConfig,
) -> Result<(ClusterMesh, Vec<u8>), CookError> {
    par::cook(small(mesh), || {
        let (cook, bytes) = cook_checked(mesh, config, |cook| {
            let (checked, bytes) = par::join(|| cook.check(), || cook.mesh.encode());
            checked.map(|()| bytes)
        })?;
        Ok((cook.mesh, bytes?))
    })
}

/// A part's LOD0 triangles (its own vertex ids) and its first vertex.
type PartLod0<'a> = (&'a [u32], u32);

/// A stamped cook whose trust checks have not run yet.
struct Unchecked {
    mesh: ClusterMesh,
    /// The material parts (their vertices moved into `mesh`).
    split: MaterialSplit,
    reference: EdgeReference,
}

impl Unchecked {
    /// The material check and the others, side by side; a material failure is
    /// reported first, as when they ran in sequence.
    fn check(&self) -> Result<(), CookError> {
        let (materials, rest) = par::join(
            || check_cluster_materials(&self.mesh.levels, &self.split),
            || check(&self.mesh.levels, &self.reference),
        );
        materials?;
        rest
    }
}

fn cook_unchecked(mesh: &Mesh, config: &ClusterConfig) -> Result<Unchecked, CookError> {
    config.validate()?;
    let mut split = material_split(mesh)?;
    // The position remap: found with the seams when there are several materials;
    // else made first, since the one part's DAG welds by it too (a remap fewer).
    let remap_cell = std::sync::OnceLock::new();
    if !split.remap.is_empty() {
        let _ = remap_cell.set(std::mem::take(&mut split.remap));
    } else if split.parts.len() == 1 {
        let _ = remap_cell.set(split.weld());
    }
    // The padding vertex `build_parts` reads the last part's attributes through
    // (capacity for it is reserved: no reallocation); taken off after the build.
    let n = split.vertices.len();
    split.vertices.push(Vertex::default());
    let remap = || remap_cell.get_or_init(|| split.weld()).as_slice();
    let source = &split.vertices[..n];
    // The bounds, vertex packing and LOD0's edge reference need only the source,
    // not the DAG: they run beside the DAG build (meshoptimizer builds one part on
    // one core), taken up by the first thread that finds no part left to start
    // (beside the only part of a one-material mesh; beside the last parts of
    // several, where a thread would otherwise wait for the largest).
    // A one-part mesh's DAG build and LOD0's edge reference weld by the same
    // remap, so they find LOD0's closed parts once between them.
    let closed = std::sync::OnceLock::new();
    let whole = remap_cell
        .get()
        .filter(|_| split.parts.len() == 1)
        .map(|remap| Whole {
            remap,
            closed: &closed,
        });
    let mesh_remap = remap_cell.get().map(Vec::as_slice);
    // Several parts: each takes its closed parts of LOD0 from the whole mesh's
    // closed parts and open edges, which LOD0's edge reference makes.
    let (mesh_closed, mesh_open) = (std::sync::OnceLock::new(), std::sync::OnceLock::new());
    let shared_closed = whole.map_or(&mesh_closed, |w| w.closed);
    let (parts, (bounds, packed, reference)) = build_parts(
        config,
        &split,
        whole,
        (mesh_remap, Some((&mesh_closed, &mesh_open))),
        || {
            let bounds = mesh.bounds();
            let (min, max) = (bounds.min.to_array(), bounds.max.to_array());
            let (packed, reference) = par::join(
                || pack_vertices(source, min, max),
                || lod0_reference(&split, remap(), (Some(shared_closed), Some(&mesh_open))),
            );
            (bounds, packed, reference)
        },
    );
    let warnings = build_warnings(&parts.built, config);
    let levels = stamp_with(&parts.built.dag, config.max_levels, &|c| parts.triangles(c));
    // The parts' names move into the mesh: nothing reads them after the build.
    let materials: Vec<String> = split
        .parts
        .iter_mut()
        .map(|p| std::mem::take(&mut p.name))
        .collect();
    split.vertices.truncate(n);
    let vertices = std::mem::take(&mut split.vertices);
    Ok(Unchecked {
        mesh: ClusterMesh {
            name: mesh.name.clone(),
            bounds,
            vertices,
            packed,
            materials,
            levels,
            warnings,
            instances: Vec::new(),
        },
        split,
        reference,
    })
}

/// `mesh` split per material (unwelded), refusing a mesh with no triangle or with
/// more materials than a cluster record can name.
fn material_split(mesh: &Mesh) -> Result<MaterialSplit, CookError> {
    let split = MaterialSplit::new_unwelded(mesh);
    if split.triangle_count() == 0 {
        return Err(CookError::Empty);
    }
    let max_materials = u16::MAX as usize + 1;
    if split.parts.len() > max_materials {
        return Err(CookError::TooManyMaterials {
            found: split.parts.len(),
            max: max_materials,
        });
    }
    Ok(split)
}

/// LOD0's edge reference over every part's triangles, welded by `remap`.
fn lod0_reference(split: &MaterialSplit, remap: &[u32], shared: SharedLod0<'_>) -> EdgeReference {
    // One part (most small meshes): its list on the stack.
    let (one, many): ([PartLod0<'_>; 1], Vec<PartLod0<'_>>);
    let lod0: &[PartLod0<'_>] = if let [p] = &split.parts[..] {
        one = [(&p.indices[..], p.vertex_base)];
        &one
    } else {
        many = split
            .parts
            .iter()
            .map(|p| (&p.indices[..], p.vertex_base))
            .collect();
        &many
    };
    EdgeReference::from_parts(remap.to_vec(), lod0, shared)
}

/// What the DAG build warns of: stuck groups (and the vertices locked for them),
/// and a DAG deeper than the level limit.
fn build_warnings(built: &BuiltDag, config: &ClusterConfig) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if built.stuck_groups > 0 {
        warnings.push(Warning::StuckGroupsLocked {
            groups: built.stuck_groups,
            locked_vertices: built.locked_vertices,
        });
    }
    if built.dag.level_count() > config.max_levels {
        warnings.push(Warning::LevelLimitReached {
            limit: config.max_levels,
        });
    }
    warnings
}

/// The stamping (step 4 of
/// docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time) over
/// `clod_build`'s output. Level `j` holds the clusters of the depth-`j` groups: own error
/// and sphere from the group they were simplified from (zero and their own bounds for
/// LOD0), parent error and sphere from their group, the same pair on both sides. A stuck
/// group's clusters are copied into every coarser level so each level is complete alone;
/// the copies form a chain (copy `j` owns the error copy `j-1` hands over at) so any cut
/// draws exactly one.
pub fn stamp_levels(dag: &RawDag, max_levels: usize) -> Vec<PackedLevel> {
    stamp_with(dag, max_levels, &|c| {
        (dag.cluster_indices(&dag.clusters[c]), 0)
    })
}

/// [`stamp_levels`] with cluster `c`'s triangles given by `triangles(c)`: indices
/// and an offset added to each (a part's DAG keeps its own vertex ids; see
/// [`crate::split::PartDags`]), copied into the levels once.
fn stamp_with<'t>(
    dag: &RawDag,
    max_levels: usize,
    triangles: &(dyn Fn(usize) -> (&'t [u32], u32) + Sync),
) -> Vec<PackedLevel> {
    let groups = nest_groups(dag);
    let n = dag.level_count().min(max_levels);
    let last = n as u32 - 1;
    // The pass's scratch in two allocations: floats (`p`, then each group's
    // parent error) and counts (`start`, `members`, each level's size, then
    // each level's groups).
    let mut floats = vec![0.0f32; n + groups.len()];
    let (p, parent_error_of) = floats.split_at_mut(n);
    let mut counts = vec![0usize; 2 * (groups.len() + 2) + dag.clusters.len() + 3 * n];
    let (start, rest) = counts.split_at_mut(groups.len() + 2);
    let (members, rest) = rest.split_at_mut(dag.clusters.len());
    let (size, rest) = rest.split_at_mut(2 * n);
    let (level_start, level_groups) = rest.split_at_mut(n + 2);
    // P[j]: largest finite parent error of level j's own (non-terminal) groups.
    for g in dag
        .groups
        .iter()
        .filter(|g| g.depth <= last && g.error != f32::MAX)
    {
        p[g.depth as usize] = p[g.depth as usize].max(g.error);
    }
    // Each group's clusters, in cluster order: `members[start[g]..start[g + 1]]`.
    let by_group = dag.clusters.iter().enumerate();
    bucket(by_group.map(|(i, c)| (c.group as usize, i)), start, members);
    // Each level's own groups, in id order: `level_groups[level_start[j]..level_start[j + 1]]`.
    let by_level = groups.iter().enumerate().filter(|(_, g)| g.depth <= last);
    let by_level = by_level.map(|(gi, g)| (g.depth as usize, gi));
    bucket(by_level, level_start, level_groups);
    let nested = Nested {
        dag,
        groups: &groups,
        members: Buckets {
            start,
            items: members,
        },
    };
    // One serial pass decides every group's parent error, the chains of the stuck
    // groups and each level's size; then the levels fill in parallel, each
    // allocated once at its size.
    let chains = nested.plan(n, p, parent_error_of, size);
    let levels = Buckets {
        start: level_start,
        items: level_groups,
    };
    let plan = Plan {
        levels,
        parent_error_of,
        chains: &chains,
        size,
    };
    par::map_range(n, |k| nested.fill(&plan, k, triangles))
}

/// A counting sort of `items` ((bucket, item) pairs, in order) into `out`: bucket
/// `b`'s items land in `out[start[b]..start[b + 1]]`, in their order. `start` holds
/// two slots more than there are buckets, all zero. One counting pass, no list per
/// bucket: the counts sit one slot further on, so the placing pass moves each
/// bucket's cursor `start[b + 1]` from its first item to its end, which is the next
/// bucket's start (no second array of cursors).
fn bucket(
    items: impl Iterator<Item = (usize, usize)> + Clone,
    start: &mut [usize],
    out: &mut [usize],
) {
    for (b, _) in items.clone() {
        start[b + 2] += 1;
    }
    for b in 0..start.len() - 2 {
        start[b + 2] += start[b + 1];
    }
    for (b, item) in items {
        let at = &mut start[b + 1];
        out[*at] = item;
        *at += 1;
    }
}

/// Buckets as [`bucket`] leaves them.
#[derive(Clone, Copy)]
struct Buckets<'a> {
    start: &'a [usize],
    items: &'a [usize],
}

impl<'a> Buckets<'a> {
    /// Bucket `b`'s items.
    fn of(&self, b: usize) -> &'a [usize] {
        &self.items[self.start[b]..self.start[b + 1]]
    }
}

/// The DAG being stamped, with its nested groups and each group's clusters.
struct Nested<'a> {
    dag: &'a RawDag,
    groups: &'a [DagGroup],
    members: Buckets<'a>,
}

/// What the serial pass decided, which every level's fill reads: each level's own
/// groups, each group's parent error, the stuck groups' chains and each level's
/// size (`n` cluster counts, then `n` index counts).
struct Plan<'a> {
    levels: Buckets<'a>,
    parent_error_of: &'a [f32],
    chains: &'a [(usize, Vec<f32>)],
    size: &'a [usize],
}

impl Nested<'_> {
    /// A cluster's own sphere and error: its refined group's for a simplified
    /// cluster, its own bounds and zero for LOD0.
    fn own(&self, c: &crate::dag::DagCluster) -> ([f32; 4], f32) {
        if c.refined >= 0 {
            let r = &self.groups[c.refined as usize];
            (r.sphere, r.error)
        } else {
            (c.bounds, 0.0)
        }
    }

    /// Group `gi`'s cluster and index counts.
    fn group_size(&self, gi: usize) -> (usize, usize) {
        let c = self.members.of(gi);
        let indices = c.iter().map(|&c| self.dag.clusters[c].index_count as usize);
        (c.len(), indices.sum())
    }

    /// The serial pass over `n` levels: every group's parent error into
    /// `parent_error_of`, each level's size into `size`, and the chains of the stuck
    /// groups ((group, the errors indexed by level)), which are returned. `p[j]` is
    /// level `j`'s largest finite parent error.
    fn plan(
        &self,
        n: usize,
        p: &[f32],
        parent_error_of: &mut [f32],
        size: &mut [usize],
    ) -> Vec<(usize, Vec<f32>)> {
        let last = n as u32 - 1;
        let mut chains: Vec<(usize, Vec<f32>)> = Vec::new();
        // (clusters, indices) per level.
        let (size_clusters, size_indices) = size.split_at_mut(n);
        for (gi, g) in self.groups.iter().enumerate() {
            if g.depth > last {
                continue;
            }
            let j = g.depth as usize;
            let stuck = g.error == f32::MAX && g.depth < last;
            parent_error_of[gi] = if stuck {
                let own_max = self
                    .members
                    .of(gi)
                    .iter()
                    .map(|&c| self.own(&self.dag.clusters[c]).1)
                    .fold(0.0f32, f32::max);
                let mut a = vec![0.0f32; n + 1];
                a[j + 1] = own_max.max(p[j]);
                for k in j + 1..n {
                    a[k + 1] = if k as u32 == last {
                        NO_PARENT_ERROR
                    } else {
                        a[k].max(p[k])
                    };
                }
                let e = a[j + 1];
                chains.push((gi, a));
                // Copied into every coarser level.
                let (c, i) = self.group_size(gi);
                for k in j + 1..n {
                    size_clusters[k] += c;
                    size_indices[k] += i;
                }
                e
            } else if g.depth == last {
                NO_PARENT_ERROR
            } else {
                g.error
            };
            let (c, i) = self.group_size(gi);
            size_clusters[j] += c;
            size_indices[j] += i;
        }
        chains
    }

    /// Level `k`, allocated once at its planned size: its own groups' clusters, then
    /// the copies of the finer stuck groups' clusters.
    fn fill<'t>(
        &self,
        plan: &Plan<'_>,
        k: usize,
        triangles: &(dyn Fn(usize) -> (&'t [u32], u32) + Sync),
    ) -> PackedLevel {
        let n = plan.size.len() / 2;
        let (cluster_count, index_count) = (plan.size[k], plan.size[n + k]);
        let mut level = PackedLevel {
            clusters: Vec::with_capacity(cluster_count),
            indices: Vec::with_capacity(index_count),
            offsets: Vec::with_capacity(cluster_count + 1),
            copied_clusters: 0,
        };
        level.offsets.push(0);
        let push = |level: &mut PackedLevel, info: ClusterInfo, c: usize| {
            let (tris, base) = triangles(c);
            level.clusters.push(info);
            level.indices.extend(tris.iter().map(|&i| i + base));
            level.offsets.push(level.indices.len() as u32);
        };
        for &gi in plan.levels.of(k) {
            let g = &self.groups[gi];
            let group_in_level = group_count(&level);
            for &c in self.members.of(gi) {
                let cl = &self.dag.clusters[c];
                let (sphere, error) = self.own(cl);
                let info = ClusterInfo {
                    sphere,
                    parent_sphere: g.sphere,
                    error,
                    parent_error: plan.parent_error_of[gi],
                    triangle_count: slot_count(cl.index_count),
                    material: g.material as u16,
                    group: group_in_level,
                };
                push(&mut level, info, c);
            }
        }
        // Copies, after the level's own groups.
        for (gi, a) in plan.chains {
            let g = &self.groups[*gi];
            if (g.depth as usize) >= k {
                continue;
            }
            let group_in_level = group_count(&level);
            for &c in self.members.of(*gi) {
                let cl = &self.dag.clusters[c];
                let info = ClusterInfo {
                    sphere: g.sphere,
                    parent_sphere: g.sphere,
                    error: a[k],
                    parent_error: a[k + 1],
                    triangle_count: slot_count(cl.index_count),
                    material: g.material as u16,
                    group: group_in_level,
                };
                push(&mut level, info, c);
                level.copied_clusters += 1;
            }
        }
        level
    }
}

/// `dag`'s groups, with spheres that enclose the own spheres of their clusters
/// and whose errors are at least theirs. meshoptimizer merges spheres
/// approximately; a child sphere poking out of its parent's would let the child
/// project a larger error than its parent from some viewpoint, and the cut would
/// then draw both or neither side of a group boundary (a crack). Groups are
/// emitted children first, so one pass in id order settles every sphere.
fn nest_groups(dag: &RawDag) -> Vec<DagGroup> {
    let mut out = dag.groups.clone();
    for c in &dag.clusters {
        let (child, child_error) = if c.refined >= 0 {
            let r = &out[c.refined as usize];
            (r.sphere, r.error)
        } else {
            (c.bounds, 0.0)
        };
        let g = &mut out[c.group as usize];
        g.sphere = enclose(g.sphere, child);
        g.error = g.error.max(child_error);
    }
    out
}

/// The smallest sphere around two spheres, grown by a relative hair so that the
/// enclosure survives f32 rounding.
pub(crate) fn enclose(a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
    let ca = glam::DVec3::new(a[0] as f64, a[1] as f64, a[2] as f64);
    let cb = glam::DVec3::new(b[0] as f64, b[1] as f64, b[2] as f64);
    let (ra, rb) = (a[3] as f64, b[3] as f64);
    let d = ca.distance(cb);
    if d + rb <= ra * (1.0 - 1e-6) {
        return a;
    }
    if d + ra <= rb {
        let r = rb * (1.0 + 1e-6) + 1e-12;
        return [b[0], b[1], b[2], r as f32];
    }
    let r = (d + ra + rb) * 0.5;
    let c = if d > 0.0 {
        ca + (cb - ca) * ((r - ra) / d)
    } else {
        ca
    };
    let r = r * (1.0 + 1e-5) + 1e-12;
    [c.x as f32, c.y as f32, c.z as f32, r as f32]
}

/// A cluster's triangle count as the record stores it (saturating, so a cluster
/// too large for a slot is still refused by the checks rather than wrapped).
fn slot_count(index_count: u32) -> u16 {
    u16::try_from(index_count / 3).unwrap_or(u16::MAX)
}

fn group_count(level: &PackedLevel) -> u32 {
    level.clusters.last().map_or(0, |c| c.group + 1)
}

/// Every source vertex packed into the bounds, in parallel, each thread's run of
/// vertices encoding each normal or tangent it meets once ([`OctCache`]; the same
/// bytes as packing each vertex alone).
fn pack_vertices(source: &[Vertex], min: [f32; 3], max: [f32; 3]) -> Vec<ClusterVertex> {
    let init = || OctCache::with_capacity(source.len());
    par::map_init(source, init, |cache, v| {
        ClusterVertex::pack_cached(&float_vertex(v), min, max, cache)
    })
}

fn float_vertex(v: &Vertex) -> FloatVertex {
    let t = Vec3::new(v.tangent[0], v.tangent[1], v.tangent[2]);
    FloatVertex {
        position: v.position,
        normal: v.normal,
        tangent: [t.x, t.y, t.z, if v.tangent[3] < 0.0 { -1.0 } else { 1.0 }],
        uv: v.uv,
    }
}
