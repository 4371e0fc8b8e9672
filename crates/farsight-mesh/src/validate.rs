//! The checks a cook runs before it trusts its result (errors monotonic, one
//! material per cluster, each level complete alone, no crack in any uniform cut),
//! on position-welded edges.
//!
//! "Watertight wherever the source is": a connected part of LOD0 with no open edge
//! must stay closed in every level and every cut. A part with an open border may
//! see that border recede as it simplifies, so there an open edge of a cut is
//! accepted only when the same edge is also open in some level drawn alone (a
//! receded border); an edge open only in a mix of levels is a crack.

use farsight_format::{ClusterInfo, CLUSTER_SLOT_TRIANGLES, NO_PARENT_ERROR};
use glam::Vec3;
use rayon::prelude::*;

use crate::edges::{EdgeReference, SortedKeys};
use crate::error::CookError;
use crate::mesh::Vertex;
use crate::pack::PackedLevel;
use crate::repair::position_remap;
use crate::split::MaterialSplit;

/// The cook's material check: every vertex of every cluster's triangles belongs to
/// the part (material) the cluster's record names. Levels in parallel.
pub fn check_cluster_materials(
    levels: &[PackedLevel],
    split: &MaterialSplit,
) -> Result<(), CookError> {
    let parts = &split.parts;
    let material_of =
        |v: u32| parts.partition_point(|p| p.vertex_base + p.vertex_count <= v) as u32;
    levels.par_iter().enumerate().try_for_each(|(level, l)| {
        for (cluster, c) in l.clusters.iter().enumerate() {
            let expected = u32::from(c.material);
            let (base, count) = parts
                .get(expected as usize)
                .map_or((0, 0), |p| (p.vertex_base, p.vertex_count));
            let tris = l.cluster_triangles(cluster);
            // A part's vertices are one range: one subtraction and compare each.
            if let Some(&v) = tris.iter().find(|&&v| v.wrapping_sub(base) >= count) {
                return Err(CookError::MixedMaterials {
                    level,
                    cluster,
                    expected,
                    found: material_of(v),
                });
            }
        }
        Ok(())
    })
}

/// The cook's trust checks on stamped levels over `vertices`, against LOD0
/// (`lod0`): errors monotonic (own error never above the parent's, level hand-overs
/// non-decreasing), clusters within a slot, each level complete alone (closed parts
/// of LOD0 stay closed), and the uniform cut at every level's hand-over free of
/// cracks. [`crate::cook_clusters`] runs it and refuses a result that fails.
pub fn check_cluster_levels(
    levels: &[PackedLevel],
    vertices: &[Vertex],
    lod0: &[u32],
) -> Result<(), CookError> {
    let positions: Vec<[f32; 3]> = vertices.iter().map(|v| v.position).collect();
    let reference = EdgeReference::new(position_remap(&positions), lod0);
    check(levels, &reference)
}

pub(crate) fn check(levels: &[PackedLevel], reference: &EdgeReference) -> Result<(), CookError> {
    for (level, l) in levels.iter().enumerate() {
        for (cluster, c) in l.clusters.iter().enumerate() {
            if c.error > c.parent_error || c.error.is_nan() || c.parent_error.is_nan() {
                return Err(CookError::ErrorNotMonotonic {
                    level,
                    cluster,
                    child_error: c.error,
                    parent_error: c.parent_error,
                });
            }
            let (own, parent) = (
                Vec3::from_slice(&c.sphere[..3]),
                Vec3::from_slice(&c.parent_sphere[..3]),
            );
            if own.distance(parent) + c.sphere[3] > c.parent_sphere[3] * (1.0 + 1e-5) + 1e-6 {
                return Err(CookError::SphereNotNested { level, cluster });
            }
            if u32::from(c.triangle_count) > CLUSTER_SLOT_TRIANGLES {
                return Err(CookError::ClusterTooLarge {
                    cluster,
                    triangles: c.triangle_count as usize,
                    slot: CLUSTER_SLOT_TRIANGLES,
                });
            }
        }
        if level > 0 {
            let (previous, found) = (levels[level - 1].max_parent_error(), l.max_parent_error());
            if found < previous {
                return Err(CookError::LevelErrorsNotOrdered {
                    level,
                    previous,
                    found,
                });
            }
        }
    }
    // Each level alone (closed parts stay closed), in parallel. A level made of
    // exactly LOD0's triangles (level 0 as clod_build makes it) has LOD0's edges,
    // which the reference has sorted already (beside the DAG build).
    let per_level: Vec<LevelEdges<'_>> = levels
        .par_iter()
        .enumerate()
        .map(|(level, l)| {
            if level == 0 && reference.is_lod0(&l.indices) {
                let (keys, open) = reference.lod0_edges();
                return Ok(LevelEdges::Lod0 { open, keys });
            }
            let (open_edges, open, keys) = reference.level_open_edges(&l.indices);
            if open_edges > 0 {
                return Err(CookError::LevelIncomplete { level, open_edges });
            }
            Ok(LevelEdges::Own { open, keys })
        })
        .collect::<Result<_, _>>()?;
    let mut all_open: Vec<u64> = per_level
        .iter()
        .flat_map(|l| l.open().iter().copied())
        .collect();
    all_open.sort_unstable();
    all_open.dedup();
    // The uniform cut at every level's hand-over.
    // Levels of a multi-material mesh often share a hand-over (a part with fewer
    // levels repeats its last one): each distinct cut is checked once, in level
    // order.
    let mut thresholds: Vec<f32> = Vec::with_capacity(levels.len());
    for t in levels.iter().map(PackedLevel::max_parent_error) {
        if t < NO_PARENT_ERROR && !thresholds.contains(&t) {
            thresholds.push(t);
        }
    }
    let mut errors: Vec<CookError> = thresholds
        .par_iter()
        .filter_map(|&t| {
            let open_edges = cut_cracks(levels, &per_level, reference, &all_open, t);
            (open_edges > 0).then_some(CookError::CrackInCut {
                threshold: t,
                open_edges,
            })
        })
        .collect();
    // Deterministic report: the first failing threshold.
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.swap_remove(0))
    }
}

/// A level's sorted edge keys and open edges: its own, or LOD0's from the
/// reference (see [`EdgeReference::is_lod0`]).
enum LevelEdges<'a> {
    Own {
        open: Vec<u64>,
        keys: SortedKeys,
    },
    Lod0 {
        open: &'a [u64],
        keys: &'a SortedKeys,
    },
}

impl LevelEdges<'_> {
    fn open(&self) -> &[u64] {
        match self {
            Self::Own { open, .. } => open,
            Self::Lod0 { open, .. } => open,
        }
    }

    fn keys(&self) -> &SortedKeys {
        match self {
            Self::Own { keys, .. } => keys,
            Self::Lod0 { keys, .. } => keys,
        }
    }
}

/// The cracks of the uniform cut at `t`. A cut is mostly one level: it is checked
/// as that level's sorted edge keys (`per_level`, from the level pass) minus its
/// clusters the cut leaves out plus the clusters it takes from other levels, so
/// only those few are sorted. A cut far from every level is sorted whole.
fn cut_cracks(
    levels: &[PackedLevel],
    per_level: &[LevelEdges<'_>],
    reference: &EdgeReference,
    all_open: &[u64],
    t: f32,
) -> usize {
    let drawn = |c: &ClusterInfo| c.error <= t && t < c.parent_error;
    let base = (0..levels.len())
        .max_by_key(|&l| {
            let level = &levels[l];
            let n: usize = (0..level.clusters.len())
                .filter(|&c| drawn(&level.clusters[c]))
                .map(|c| level.cluster_triangles(c).len())
                .sum();
            (n, std::cmp::Reverse(l))
        })
        .unwrap_or(0);
    let (mut minus, mut plus) = (Vec::new(), Vec::new());
    for (l, level) in levels.iter().enumerate() {
        for (c, info) in level.clusters.iter().enumerate() {
            let tris = level.cluster_triangles(c);
            match (l == base, drawn(info)) {
                (true, false) => minus.extend_from_slice(tris),
                (false, true) => plus.extend_from_slice(tris),
                _ => {}
            }
        }
    }
    if minus.len() + plus.len() > levels[base].indices.len() / 2 {
        let tris: Vec<u32> = uniform_cut(levels, t).collect();
        return reference.cracks(&tris, all_open);
    }
    reference.cracks_from_base(per_level[base].keys(), &minus, &plus, all_open)
}

/// Triangles (source indices) of the cut where every error is compared with `t`
/// directly (a view that sees the whole model at one scale).
pub fn uniform_cut(levels: &[PackedLevel], t: f32) -> impl Iterator<Item = u32> + '_ {
    levels.iter().flat_map(move |l| {
        l.clusters
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.error <= t && t < c.parent_error)
            .flat_map(move |(i, _)| l.cluster_triangles(i).iter().copied())
    })
}
