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
use crate::par;
use crate::repair::position_remap;
use crate::split::{largest_first, MaterialSplit};

/// The cook's material check: every vertex of every cluster's triangles belongs to
/// the part (material) the cluster's record names. Levels in parallel.
pub fn check_cluster_materials(
    levels: &[PackedLevel],
    split: &MaterialSplit,
) -> Result<(), CookError> {
    let parts = &split.parts;
    let material_of =
        |v: u32| parts.partition_point(|p| p.vertex_base + p.vertex_count <= v) as u32;
    let check_level = |(level, l): (usize, &PackedLevel)| {
        for (cluster, c) in l.clusters.iter().enumerate() {
            let expected = u32::from(c.material);
            let (base, count) = parts
                .get(expected as usize)
                .map_or((0, 0), |p| (p.vertex_base, p.vertex_count));
            let tris = l.cluster_triangles(cluster);
            // A part's vertices are one range: one subtraction each, and the
            // largest offset compared once (a loop without an exit vectorises);
            // the first vertex out of range is looked for only when there is one.
            let largest = tris
                .iter()
                .fold(0, |m: u32, &v| m.max(v.wrapping_sub(base)));
            if largest < count {
                continue;
            }
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
    };
    if par::inline() {
        levels.iter().enumerate().try_for_each(check_level)
    } else {
        levels.par_iter().enumerate().try_for_each(check_level)
    }
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
    check_records(levels)?;
    // The uniform cut at every level's hand-over. Levels of a multi-material mesh
    // often share a hand-over (a part with fewer levels repeats its last one):
    // each distinct cut is checked once, in level order.
    let thresholds = cut_thresholds(levels);
    let plans: Vec<CutPlan> = par::map(&thresholds, |&t| CutPlan::new(levels, t));
    // Every sort first, as one set of jobs taken largest first by whichever thread
    // is free: each level alone (closed parts stay closed), and each cut's own
    // lists (a cut's sorts need no level's result). A level made of exactly LOD0's
    // triangles (level 0 as clod_build makes it) has LOD0's edges, which the
    // reference has sorted already (beside the DAG build).
    let jobs: Vec<Job> = (0..levels.len())
        .map(Job::Level)
        .chain((0..plans.len()).map(Job::Cut))
        .collect();
    let size = |job: &Job| match *job {
        Job::Level(l) => levels[l].indices.len(),
        Job::Cut(c) => plans[c].size,
    };
    let run = |job: &Job| -> Sorted<'_> {
        match *job {
            Job::Level(level) => {
                let l = &levels[level];
                if level == 0 && reference.is_lod0(&l.indices) {
                    let (keys, open) = reference.lod0_edges();
                    return Sorted::Level(Ok(LevelEdges::Lod0 { open, keys }));
                }
                let (open_edges, open, keys) = reference.level_open_edges(&l.indices);
                if open_edges > 0 {
                    return Sorted::Level(Err(CookError::LevelIncomplete { level, open_edges }));
                }
                Sorted::Level(Ok(LevelEdges::Own { open, keys }))
            }
            Job::Cut(c) => Sorted::Cut(plans[c].sort(levels, reference)),
        }
    };
    let (sorted, ()) = largest_first(&jobs, size, run, || ());
    // Jobs are levels first, then cuts: the first failing level is reported, in
    // level order.
    let mut per_level = Vec::with_capacity(levels.len());
    let mut cuts: Vec<CutKeys> = Vec::with_capacity(plans.len());
    for s in sorted {
        match s {
            Sorted::Level(l) => per_level.push(l?),
            Sorted::Cut(c) => cuts.push(c),
        }
    }
    // Each level's open edges, sorted (a cut's open edge is no crack when it is
    // open in some level alone).
    let level_open: Vec<&[u64]> = per_level.iter().map(LevelEdges::open).collect();
    let errors: Vec<Option<CookError>> = par::map_range(cuts.len(), |c| {
        let (keys, plan) = (&cuts[c], &plans[c]);
        let open_edges = match keys {
            CutKeys::Whole(open) => reference.crack_count(open, &level_open),
            CutKeys::Delta(minus, plus) => {
                reference.cracks_between(per_level[plan.base].keys(), minus, plus, &level_open)
            }
        };
        (open_edges > 0).then_some(CookError::CrackInCut {
            threshold: plan.t,
            open_edges,
        })
    });
    // Deterministic report: the first failing threshold.
    match errors.into_iter().flatten().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The records' checks, level by level: every cluster's error at most its parent's
/// (neither NaN), its sphere inside its parent's and its triangles within a slot;
/// each level's hand-over at least the one before.
fn check_records(levels: &[PackedLevel]) -> Result<(), CookError> {
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
    Ok(())
}

/// The distinct finite hand-overs of the levels, in level order.
fn cut_thresholds(levels: &[PackedLevel]) -> Vec<f32> {
    let mut thresholds: Vec<f32> = Vec::with_capacity(levels.len());
    for t in levels.iter().map(PackedLevel::max_parent_error) {
        if t < NO_PARENT_ERROR && !thresholds.contains(&t) {
            thresholds.push(t);
        }
    }
    thresholds
}

/// A job of [`check`]'s sorting pass.
enum Job {
    Level(usize),
    Cut(usize),
}

/// What a [`Job`] gives.
enum Sorted<'a> {
    Level(Result<LevelEdges<'a>, CookError>),
    Cut(CutKeys),
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

/// How the uniform cut at `t` is checked. A cut is mostly one level (`base`, the
/// level it draws most triangles of): it is checked as that level's sorted edge
/// keys minus the level's clusters the cut leaves out plus the clusters it takes
/// from other levels, so only those few are sorted. A cut far from every level
/// (it leaves out over half its base, so that the cut itself is smaller than the
/// two lists) is sorted whole.
struct CutPlan {
    t: f32,
    base: usize,
    whole: bool,
    /// Indices the cut's sorts go through (its job's size).
    size: usize,
}

impl CutPlan {
    fn new(levels: &[PackedLevel], t: f32) -> Self {
        let drawn = |c: &ClusterInfo| c.error <= t && t < c.parent_error;
        let mut sizes = vec![0usize; levels.len()];
        for (s, level) in sizes.iter_mut().zip(levels) {
            *s = (0..level.clusters.len())
                .filter(|&c| drawn(&level.clusters[c]))
                .map(|c| level.cluster_triangles(c).len())
                .sum();
        }
        let base = (0..levels.len())
            .max_by_key(|&l| (sizes[l], std::cmp::Reverse(l)))
            .unwrap_or(0);
        let total: usize = sizes.iter().sum();
        // Left out of the base and taken from other levels.
        let minus = levels.get(base).map_or(0, |l| l.indices.len()) - sizes[base];
        let plus = total - sizes[base];
        // The two lists are `minus + plus` indices, the whole cut `base - minus +
        // plus`: the cut is sorted whole when it is the smaller (AntiqueCamera's
        // first cut: 16K indices in the two lists against 24K whole; the merge's
        // galloping search over the base costs little beside either sort).
        let whole = 2 * minus > levels.get(base).map_or(0, |l| l.indices.len());
        Self {
            t,
            base,
            whole,
            size: if whole { total } else { minus + plus },
        }
    }

    /// The cut's sorting: its open edges when sorted whole, else the sorted keys
    /// of its two lists.
    fn sort(&self, levels: &[PackedLevel], reference: &EdgeReference) -> CutKeys {
        let t = self.t;
        if self.whole {
            let tris: Vec<u32> = uniform_cut(levels, t).collect();
            return CutKeys::Whole(reference.open_keys(&tris));
        }
        let drawn = |c: &ClusterInfo| c.error <= t && t < c.parent_error;
        let (mut minus, mut plus) = (Vec::new(), Vec::new());
        for (l, level) in levels.iter().enumerate() {
            for (c, info) in level.clusters.iter().enumerate() {
                let tris = level.cluster_triangles(c);
                match (l == self.base, drawn(info)) {
                    (true, false) => minus.extend_from_slice(tris),
                    (false, true) => plus.extend_from_slice(tris),
                    _ => {}
                }
            }
        }
        CutKeys::Delta(reference.sorted_keys(&minus), reference.sorted_keys(&plus))
    }
}

/// A cut's sorted keys (see [`CutPlan::sort`]).
enum CutKeys {
    /// The open edges of the whole cut, sorted.
    Whole(Vec<u64>),
    /// The sorted keys of the base level's clusters it leaves out and of the
    /// clusters it takes from other levels.
    Delta(SortedKeys, SortedKeys),
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

#[cfg(test)]
mod tests {
    use super::{uniform_cut, CutPlan};
    use crate::edges::EdgeReference;
    use crate::{cook_clusters, import_prepared, ClusterConfig, MaterialSplit, PackedLevel};

    /// The cracks of every hand-over's cut, counted whole and from its base level.
    fn both_ways(levels: &[PackedLevel], reference: &EdgeReference) -> Vec<(usize, usize)> {
        let per_level: Vec<_> = levels
            .iter()
            .map(|l| reference.level_open_edges(&l.indices))
            .collect();
        let mut all_open: Vec<u64> = per_level.iter().flat_map(|l| l.1.clone()).collect();
        all_open.sort_unstable();
        all_open.dedup();
        let mut out = Vec::new();
        for t in levels.iter().map(PackedLevel::max_parent_error) {
            if t >= farsight_format::NO_PARENT_ERROR {
                continue;
            }
            let plan = CutPlan::new(levels, t);
            let whole: Vec<u32> = uniform_cut(levels, t).collect();
            let whole = reference.crack_count(&reference.open_keys(&whole), &[&all_open]);
            let (mut minus, mut plus) = (Vec::new(), Vec::new());
            for (l, level) in levels.iter().enumerate() {
                for (c, info) in level.clusters.iter().enumerate() {
                    let drawn = info.error <= t && t < info.parent_error;
                    if l == plan.base && !drawn {
                        minus.extend_from_slice(level.cluster_triangles(c));
                    } else if l != plan.base && drawn {
                        plus.extend_from_slice(level.cluster_triangles(c));
                    }
                }
            }
            let base = &per_level[plan.base].2;
            out.push((
                whole,
                reference.cracks_from_base(base, &minus, &plus, &[&all_open]),
            ));
        }
        out
    }

    #[test]
    fn a_cut_counts_the_same_cracks_whole_and_from_its_base() {
        // pirate: seven materials at different error scales, so its cuts mix
        // levels (some are checked whole in the cook, some from a base level).
        let path = farsight_testkit::mesh("pirate.obj");
        let (prepared, _) = import_prepared(&path).unwrap();
        let cooked = cook_clusters(&prepared.mesh, &ClusterConfig::default()).unwrap();
        let split = MaterialSplit::new(&prepared.mesh);
        let reference = EdgeReference::new(split.remap.clone(), &split.global_indices());
        let counts = both_ways(&cooked.levels, &reference);
        assert!(counts.len() > 2);
        assert!(counts.iter().all(|&(w, b)| w == 0 && b == 0), "{counts:?}");
        let plans: Vec<bool> = cooked
            .levels
            .iter()
            .map(|l| CutPlan::new(&cooked.levels, l.max_parent_error()).whole)
            .collect();
        assert!(plans.contains(&true) && plans.contains(&false), "{plans:?}");
        // Holes: a cluster of each level claims an own error above the hand-over
        // below it, so that cut draws neither it nor its children.
        let mut holes = 0;
        for level in 1..cooked.levels.len() {
            let mut levels = cooked.levels.clone();
            let t = levels[level - 1].max_parent_error();
            let Some(c) = levels[level]
                .clusters
                .iter_mut()
                .find(|c| c.error <= t && t < c.parent_error && c.parent_error < f32::MAX)
            else {
                continue;
            };
            c.error = 0.5 * (t + c.parent_error);
            let counts = both_ways(&levels, &reference);
            assert!(counts.iter().all(|&(w, b)| w == b), "{counts:?}");
            assert!(
                counts.iter().any(|&(w, _)| w > 0),
                "level {level}: {counts:?}"
            );
            holes += 1;
        }
        assert!(holes >= 2, "{holes} holes");
    }
}
