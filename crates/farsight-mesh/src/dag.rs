//! The raw cluster LOD DAG: its settings, its groups and clusters in flat arrays,
//! the build's entry points ([`build_dag`], run by the `clod` module) and
//! meshoptimizer's own `clod_build` configured the same way (the benchmark's peer,
//! [`clod_build_raw`]).

use meshopt::{ClodConfig, ClodMesh, SimplifyVertex};

use crate::error::CookError;
use crate::mesh::Vertex;
use crate::prepare::adapter;

/// The cluster DAG settings; defaults are meshoptimizer's rasterisation defaults
/// with clusters that fill farsight's 128-triangle slots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClusterConfig {
    /// Most triangles per cluster (4..=128: a cluster fills one slot).
    pub max_triangles: usize,
    /// Most vertices per cluster (3..=255).
    pub max_vertices: usize,
    /// Target clusters per group (meshoptimizer's default 16; see
    /// docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time).
    pub partition_size: usize,
    /// Each level aims at this share of the previous level's triangles.
    pub simplify_ratio: f32,
    /// A group keeping more than this share is stuck.
    pub simplify_threshold: f32,
    /// Permissive simplification (collapses across attribute seams where positions
    /// agree), protecting UV seams.
    pub permissive: bool,
    /// Retry a stuck group with permissive simplification.
    pub fallback_permissive: bool,
    /// Retry a stuck group with sloppy (vertex clustering) simplification.
    pub fallback_sloppy: bool,
    /// Most levels kept, LOD0 included.
    pub max_levels: usize,
    /// Weight of the normal and of the UV in the attribute-aware error.
    pub normal_weight: f32,
    /// Weight of the UV in the attribute-aware error.
    pub uv_weight: f32,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        let d = meshopt::clod_default_config(124);
        Self {
            max_triangles: 124,
            max_vertices: 64,
            partition_size: d.partition_size,
            simplify_ratio: d.simplify_ratio,
            simplify_threshold: d.simplify_threshold,
            permissive: d.simplify_permissive,
            fallback_permissive: d.simplify_fallback_permissive,
            fallback_sloppy: d.simplify_fallback_sloppy,
            max_levels: 25,
            normal_weight: 0.5,
            uv_weight: 1.0,
        }
    }
}

impl ClusterConfig {
    pub(crate) fn validate(&self) -> Result<(), CookError> {
        let bad = |what, found: f64| Err(CookError::BadConfig { what, found });
        if !(4..=farsight_format::CLUSTER_SLOT_TRIANGLES as usize).contains(&self.max_triangles) {
            return bad("max_triangles", self.max_triangles as f64);
        }
        if !(3..=255).contains(&self.max_vertices) {
            return bad("max_vertices", self.max_vertices as f64);
        }
        if self.partition_size < 2 {
            return bad("partition_size", self.partition_size as f64);
        }
        if !(self.simplify_ratio > 0.0 && self.simplify_ratio < 1.0) {
            return bad("simplify_ratio", self.simplify_ratio as f64);
        }
        if !(self.simplify_threshold > 0.0 && self.simplify_threshold <= 1.0) {
            return bad("simplify_threshold", self.simplify_threshold as f64);
        }
        if self.max_levels == 0 {
            return bad("max_levels", 0.0);
        }
        Ok(())
    }

    /// meshoptimizer's configuration for these settings.
    pub fn clod_config(&self) -> ClodConfig {
        let mut c = meshopt::clod_default_config(self.max_triangles);
        c.max_vertices = self.max_vertices;
        c.min_triangles = self.max_triangles / 3;
        c.partition_size = self.partition_size;
        c.simplify_ratio = self.simplify_ratio;
        c.simplify_threshold = self.simplify_threshold;
        c.simplify_permissive = self.permissive;
        c.simplify_fallback_permissive = self.fallback_permissive;
        c.simplify_fallback_sloppy = self.fallback_sloppy;
        c
    }
}

/// A group as `clod_build` reported it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DagGroup {
    /// The level of the clusters the group holds (0: LOD0).
    pub depth: u32,
    /// Simplified bounds: centre xyz, radius.
    pub sphere: [f32; 4],
    /// The error of the clusters simplified from this group; `f32::MAX` for a
    /// terminal group (stuck, or the last cluster).
    pub error: f32,
    /// The material of every cluster in the group (index into the mesh's
    /// materials; `clod_build` itself sees one material at a time).
    pub material: u32,
}

/// A cluster as `clod_build` reported it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DagCluster {
    /// The group it belongs to (its parent error and sphere).
    pub group: u32,
    /// The group it was simplified from (its own error and sphere), or -1 for LOD0.
    pub refined: i32,
    /// Its own tight bounds (used as its own sphere when `refined == -1`).
    pub bounds: [f32; 4],
    /// Range in [`RawDag::indices`].
    pub first_index: u32,
    /// Number of its indices in [`RawDag::indices`].
    pub index_count: u32,
}

/// `clod_build`'s output in flat arrays; indices refer to the source vertices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawDag {
    /// Every group, in the order `clod_build` made them.
    pub groups: Vec<DagGroup>,
    /// Every cluster, in the order `clod_build` made them.
    pub clusters: Vec<DagCluster>,
    /// The clusters' triangles, concatenated (source vertex indices).
    pub indices: Vec<u32>,
}

impl RawDag {
    /// Levels in the DAG (the deepest group's depth plus one).
    pub fn level_count(&self) -> usize {
        self.groups
            .iter()
            .map(|g| g.depth as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// The triangles of cluster `c`, as source vertex indices.
    pub fn cluster_indices(&self, c: &DagCluster) -> &[u32] {
        &self.indices[c.first_index as usize..(c.first_index + c.index_count) as usize]
    }

    /// Groups that could not simplify although coarser levels exist.
    pub fn stuck_groups(&self) -> impl Iterator<Item = usize> + '_ {
        let last = self.level_count().saturating_sub(1) as u32;
        self.groups
            .iter()
            .enumerate()
            .filter(move |(_, g)| g.error == f32::MAX && g.depth < last)
            .map(|(i, _)| i)
    }
}

/// The simplifier's weights for the [`attributes`] stream: normal xyz, then uv.
pub(crate) fn attribute_weights(normal: f32, uv: f32) -> [f32; 5] {
    [normal, normal, normal, uv, uv]
}

/// Attribute stream handed to the simplifier: normal xyz and uv, per vertex.
pub(crate) fn attributes(vertices: &[Vertex]) -> Vec<f32> {
    vertices
        .iter()
        .flat_map(|v| [v.normal[0], v.normal[1], v.normal[2], v.uv[0], v.uv[1]])
        .collect()
}

/// Floats per vertex of the [`attributes`] stream.
pub(crate) const ATTRIBUTE_FLOATS: usize = 5;

/// One plain `clod_build` run (what the benchmark compares against), with the
/// attribute stream of [`crate::simplifier_attributes`].
pub fn clod_build_raw(
    config: &ClusterConfig,
    vertices: &[Vertex],
    indices: &[u32],
    attributes: &[f32],
    locks: Option<&[SimplifyVertex]>,
) -> RawDag {
    let stream = Attributes {
        floats: attributes,
        stride: ATTRIBUTE_FLOATS * 4,
    };
    clod_build_with(config, vertices, indices, stream, locks)
}

/// The simplifier's attribute stream (normal xyz, uv per vertex) as meshoptimizer
/// reads it: `stride` bytes from one vertex's five floats to the next one's.
#[derive(Clone, Copy)]
pub(crate) struct Attributes<'a> {
    pub floats: &'a [f32],
    pub stride: usize,
}

impl<'a> Attributes<'a> {
    /// The stream of `vertices[range]` read in place, without a copy: a vertex's
    /// normal and uv are the five floats after its position, so the stream is the
    /// vertex array itself from 12 bytes in, at the 48-byte vertex stride.
    /// meshoptimizer wants `stride` bytes for every vertex, the last one's running
    /// 12 bytes past the range: `vertices` must hold one vertex after `range`.
    pub fn in_place(vertices: &'a [Vertex], range: std::ops::Range<usize>) -> Self {
        const _: () = assert!(
            std::mem::offset_of!(Vertex, normal) == 12 && std::mem::offset_of!(Vertex, uv) == 24
        );
        const STRIDE: usize = std::mem::size_of::<Vertex>() / 4;
        let floats: &[f32] = bytemuck::cast_slice(&vertices[range.start..range.end + 1]);
        Self {
            floats: &floats[3..3 + STRIDE * range.len()],
            stride: std::mem::size_of::<Vertex>(),
        }
    }
}

fn clod_build_with(
    config: &ClusterConfig,
    vertices: &[Vertex],
    indices: &[u32],
    attributes: Attributes<'_>,
    locks: Option<&[SimplifyVertex]>,
) -> RawDag {
    let adapter = adapter(vertices);
    let weights = attribute_weights(config.normal_weight, config.uv_weight);
    let mesh = ClodMesh {
        vertex_attributes: attributes.floats,
        vertex_attributes_stride: attributes.stride,
        vertex_lock: locks,
        attribute_weights: &weights,
        // Protect the UV seams in permissive mode (attributes 3 and 4).
        attribute_protect_mask: 0b11000,
        ..ClodMesh::new(indices, &adapter)
    };
    let mut dag = RawDag::default();
    meshopt::clod_build(config.clod_config(), &mesh, |group, clusters| {
        let id = dag.groups.len() as u32;
        let s = group.simplified;
        dag.groups.push(DagGroup {
            depth: group.depth as u32,
            sphere: [s.center[0], s.center[1], s.center[2], s.radius],
            error: s.error,
            material: 0,
        });
        for c in clusters {
            let b = c.bounds;
            dag.clusters.push(DagCluster {
                group: id,
                refined: c.refined,
                bounds: [b.center[0], b.center[1], b.center[2], b.radius],
                first_index: dag.indices.len() as u32,
                index_count: c.indices.len() as u32,
            });
            dag.indices.extend_from_slice(c.indices);
        }
        id as i32
    });
    dag
}

/// Result of [`build_dag`].
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltDag {
    /// The DAG.
    pub dag: RawDag,
    /// Vertices locked because they border a stuck group.
    pub locked_vertices: usize,
    /// Stuck groups in the DAG.
    pub stuck_groups: usize,
}

/// Builds the DAG in one pass (`clod`: `clod_build`'s steps, with a
/// group whose simplification would open the surface kept as stuck, and the
/// border of every stuck group locked for the rest of the build). Stuck clusters
/// draw at every coarser distance
/// (docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time),
/// so their borders must hold.
pub fn build_dag(config: &ClusterConfig, vertices: &[Vertex], indices: &[u32]) -> BuiltDag {
    build_dag_locked(config, vertices, indices, &[])
}

/// [`build_dag`] with vertices that must never move (`seam[v]`, by vertex; empty
/// for none): the borders a material shares with other materials. Every vertex at
/// the position of a seam vertex is locked with it.
pub fn build_dag_locked(
    config: &ClusterConfig,
    vertices: &[Vertex],
    indices: &[u32],
    seam: &[bool],
) -> BuiltDag {
    let attributes = attributes(vertices);
    let stream = Attributes {
        floats: &attributes,
        stride: ATTRIBUTE_FLOATS * 4,
    };
    build_dag_with(config, (vertices, stream), indices, seam, None, None, None)
}

/// [`build_dag_locked`] with the attribute stream given (`attributes` over
/// `vertices`), and what a cook shares with the build of one part: the whole
/// mesh's weld ([`crate::clod::Whole`]) or the part's own position remap.
pub(crate) fn build_dag_with(
    config: &ClusterConfig,
    (vertices, attributes): (&[Vertex], Attributes<'_>),
    indices: &[u32],
    seam: &[bool],
    whole: Option<crate::clod::Whole<'_>>,
    own_remap: Option<Vec<u32>>,
    from_mesh: Option<crate::clod::MeshClosed<'_>>,
) -> BuiltDag {
    let va = (vertices, attributes);
    crate::clod::build(config, va, indices, seam, whole, own_remap, from_mesh)
}
