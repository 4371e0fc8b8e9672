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
    // Each level alone (closed parts stay closed), in parallel.
    let per_level: Vec<(Vec<u64>, Vec<u64>)> = levels
        .par_iter()
        .enumerate()
        .map(|(level, l)| {
            let (open_edges, open, keys) = reference.level_open_edges(&l.indices);
            if open_edges > 0 {
                return Err(CookError::LevelIncomplete { level, open_edges });
            }
            Ok((open, keys))
        })
        .collect::<Result<_, _>>()?;
    let mut all_open: Vec<u64> = per_level
        .iter()
        .flat_map(|(o, _)| o.iter().copied())
        .collect();
    all_open.sort_unstable();
    all_open.dedup();
    // The uniform cut at every level's hand-over.
    let thresholds: Vec<f32> = levels
        .iter()
        .map(PackedLevel::max_parent_error)
        .filter(|&t| t < NO_PARENT_ERROR)
        .collect();
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

/// The cracks of the uniform cut at `t`. A cut is mostly one level: it is checked
/// as that level's sorted edge keys (`per_level`, from the level pass) minus its
/// clusters the cut leaves out plus the clusters it takes from other levels, so
/// only those few are sorted. A cut far from every level is sorted whole.
fn cut_cracks(
    levels: &[PackedLevel],
    per_level: &[(Vec<u64>, Vec<u64>)],
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
        return reference.cracks(&tris, all_open, &mut Vec::new());
    }
    reference.cracks_from_base(&per_level[base].1, &minus, &plus, all_open)
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

/// LOD0's welded edge structure.
pub(crate) struct EdgeReference {
    /// Canonical vertex (first vertex at the same position) of every source vertex.
    pub remap: Vec<u32>,
    /// Per canonical vertex: its connected part of LOD0 is closed.
    pub closed: Vec<bool>,
    /// Bits of a vertex id in an edge key: a key is `(min << shift) | max`, so keys
    /// have `2 * shift` significant bits and sort in few radix passes.
    shift: u32,
}

impl EdgeReference {
    pub fn new(remap: Vec<u32>, lod0: &[u32]) -> Self {
        let n = remap.len();
        let shift = (usize::BITS - n.leading_zeros()).max(1);
        // Connected parts (union-find) and LOD0's open edges are independent.
        let (mut parent, open) = rayon::join(
            || {
                let mut parent: Vec<u32> = (0..n as u32).collect();
                for t in lod0.chunks_exact(3) {
                    let [a, b, c] = [t[0], t[1], t[2]].map(|i| remap[i as usize]);
                    for (x, y) in [(a, b), (b, c)] {
                        let (rx, ry) = (find(&mut parent, x), find(&mut parent, y));
                        if rx != ry {
                            parent[rx.max(ry) as usize] = rx.min(ry);
                        }
                    }
                }
                parent
            },
            || {
                let mut keys = Vec::with_capacity(lod0.len());
                edge_keys(&remap, shift, lod0, &mut keys);
                let mut open = Vec::new();
                for_each_open(&mut keys, &mut Vec::new(), shift, |a, _| open.push(a));
                open
            },
        );
        let mut open_root = vec![false; n];
        for a in open {
            let r = find(&mut parent, a);
            open_root[r as usize] = true;
        }
        let closed = (0..n as u32)
            .map(|v| !open_root[find(&mut parent, v) as usize])
            .collect();
        Self {
            remap,
            closed,
            shift,
        }
    }

    /// One pass over a level drawn alone: the number of its open edges on closed
    /// parts of LOD0, all its open edges, sorted (for [`Self::cracks`]), and all its
    /// edge keys, sorted (the base of [`Self::cracks_from_base`]).
    pub fn level_open_edges(&self, triangles: &[u32]) -> (usize, Vec<u64>, Vec<u64>) {
        let mut keys = Vec::with_capacity(triangles.len());
        edge_keys(&self.remap, self.shift, triangles, &mut keys);
        let mut open = Vec::new();
        let mut on_closed = 0;
        let shift = self.shift;
        for_each_open(&mut keys, &mut Vec::new(), shift, |a, b| {
            on_closed += usize::from(self.closed[a as usize] || self.closed[b as usize]);
            open.push(((a as u64) << shift) | b as u64);
        });
        (on_closed, open, keys)
    }

    /// [`Self::cracks`] of the cut whose triangles are a level's (`base`: its sorted
    /// keys from [`Self::level_open_edges`]) without the `minus` triangles (a subset
    /// of that level) and with the `plus` triangles. Only the two small lists are
    /// sorted; the level's keys are merged in one linear pass.
    pub fn cracks_from_base(
        &self,
        base: &[u64],
        minus: &[u32],
        plus: &[u32],
        level_open: &[u64],
    ) -> usize {
        let mut scratch = Vec::new();
        let sorted = |triangles: &[u32], scratch: &mut Vec<u64>| {
            let mut keys = Vec::with_capacity(triangles.len());
            edge_keys(&self.remap, self.shift, triangles, &mut keys);
            radix_sort(&mut keys, scratch, 2 * self.shift);
            keys
        };
        let (m, p) = (sorted(minus, &mut scratch), sorted(plus, &mut scratch));
        let run = |list: &[u64], at: &mut usize, key: u64| {
            let start = *at;
            while *at < list.len() && list[*at] == key {
                *at += 1;
            }
            *at - start
        };
        let (mut i, mut j, mut k) = (0, 0, 0);
        let mask = (1u64 << self.shift) - 1;
        let mut count = 0;
        loop {
            let key = [base.get(i), m.get(j), p.get(k)]
                .into_iter()
                .flatten()
                .min()
                .copied();
            let Some(key) = key else { break };
            let uses = run(base, &mut i, key) + run(&p, &mut k, key) - run(&m, &mut j, key);
            if uses == 1 {
                let (a, b) = ((key >> self.shift) as usize, (key & mask) as usize);
                if self.closed[a] || self.closed[b] || level_open.binary_search(&key).is_err() {
                    count += 1;
                }
            }
        }
        count
    }

    /// Open edges of a cut that are cracks: on a closed part, or open in no level
    /// alone (`level_open` sorted).
    pub fn cracks(&self, triangles: &[u32], level_open: &[u64], keys: &mut Vec<u64>) -> usize {
        keys.clear();
        edge_keys(&self.remap, self.shift, triangles, keys);
        let mut count = 0;
        let shift = self.shift;
        for_each_open(keys, &mut Vec::new(), shift, |a, b| {
            let on_closed = self.closed[a as usize] || self.closed[b as usize];
            let key = ((a as u64) << shift) | b as u64;
            if on_closed || level_open.binary_search(&key).is_err() {
                count += 1;
            }
        });
        count
    }
}

fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        parent[x as usize] = parent[parent[x as usize] as usize];
        x = parent[x as usize];
    }
    x
}

fn edge_keys(remap: &[u32], shift: u32, indices: &[u32], keys: &mut Vec<u64>) {
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| remap[i as usize]);
        for (x, y) in [(a, b), (b, c), (c, a)] {
            if x != y {
                keys.push(((x.min(y) as u64) << shift) | x.max(y) as u64);
            }
        }
    }
}

/// Calls `f` for every key that occurs exactly once (sorts `keys`, using `scratch`).
fn for_each_open(
    keys: &mut Vec<u64>,
    scratch: &mut Vec<u64>,
    shift: u32,
    mut f: impl FnMut(u32, u32),
) {
    radix_sort(keys, scratch, 2 * shift);
    let mask = (1u64 << shift) - 1;
    let mut i = 0;
    while i < keys.len() {
        let mut j = i + 1;
        while j < keys.len() && keys[j] == keys[i] {
            j += 1;
        }
        if j - i == 1 {
            f((keys[i] >> shift) as u32, (keys[i] & mask) as u32);
        }
        i = j;
    }
}

/// LSD radix sort of keys below `2^key_bits`, 11 bits a pass (a pass whose digit
/// is the same for every key is skipped). Linear where the comparison sort it
/// replaced was the cook's largest cost past `clod_build`.
pub(crate) fn radix_sort(keys: &mut Vec<u64>, scratch: &mut Vec<u64>, key_bits: u32) {
    const DIGIT: u32 = 11;
    const BUCKETS: usize = 1 << DIGIT;
    if keys.len() < 512 {
        keys.sort_unstable();
        return;
    }
    scratch.clear();
    scratch.resize(keys.len(), 0);
    let mut count = vec![0u32; BUCKETS];
    let mut shift = 0;
    while shift < key_bits {
        count.fill(0);
        for &k in keys.iter() {
            count[((k >> shift) as usize) & (BUCKETS - 1)] += 1;
        }
        if count.iter().any(|&c| c as usize == keys.len()) {
            shift += DIGIT;
            continue;
        }
        let mut sum = 0u32;
        for c in count.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        for &k in keys.iter() {
            let d = ((k >> shift) as usize) & (BUCKETS - 1);
            scratch[count[d] as usize] = k;
            count[d] += 1;
        }
        std::mem::swap(keys, scratch);
        shift += DIGIT;
    }
}

#[cfg(test)]
mod tests {
    use super::radix_sort;

    #[test]
    fn radix_sort_matches_the_standard_sort() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for (n, bits) in [(0, 8), (100, 20), (5_000, 34), (70_000, 44), (3_000, 64)] {
            let mut keys: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if bits == 64 {
                        x
                    } else {
                        x & ((1u64 << bits) - 1)
                    }
                })
                .collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            radix_sort(&mut keys, &mut Vec::new(), bits);
            assert_eq!(keys, expected, "{n} keys of {bits} bits");
        }
    }
}
