//! Position-welded edge counting for the cook's trust checks: LOD0's reference
//! (which connected parts are closed) and the open edges of a level or a cut.
//!
//! An edge is a key `(min << shift) | max` of its two canonical vertices. Open
//! edges are the keys that occur once, found by sorting the keys: a one-pass
//! bucket sort on their top bits for up to about 32 768 keys, an LSD radix sort
//! beyond (both linear; the comparison sort they replaced was the cook's largest
//! cost past `clod_build`). Keys are `u32` when both ids fit in 16 bits (every mesh under
//! 65 536 distinct positions), which halves the memory the sort moves, and `u64`
//! otherwise; the key value is the same either way.

use std::sync::OnceLock;

use crate::sort::{gallop_to, sort_counted, Histograms, Key};

/// The cells [`EdgeReference::from_parts`] shares LOD0's closed parts (by
/// canonical vertex) and open edges (pairs of canonical vertices) through.
pub(crate) type SharedLod0<'a> = (
    Option<&'a OnceLock<Vec<bool>>>,
    Option<&'a OnceLock<Vec<[u32; 2]>>>,
);

/// A level's sorted edge keys, in the width its mesh needs.
pub(crate) enum SortedKeys {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

/// LOD0's welded edge structure.
pub(crate) struct EdgeReference {
    /// Canonical vertex (first vertex at the same position) of every source vertex.
    pub remap: Vec<u32>,
    /// Per canonical vertex: its connected part of LOD0 is closed.
    pub closed: Vec<bool>,
    /// Bits of a vertex id in an edge key.
    shift: u32,
    /// LOD0's sorted edge keys and its open edges (sorted keys): what
    /// [`Self::level_open_edges`] gives for a level with LOD0's triangles.
    lod0_keys: SortedKeys,
    lod0_open: Vec<u64>,
    /// LOD0's triangles as sorted source-index triples, bucketed by their smallest
    /// index: `pairs[starts[a]..starts[a + 1]]` are the other two of each triangle
    /// whose smallest index is `a`. [`Self::is_lod0`] matches a level against it.
    starts: Vec<u32>,
    pairs: Vec<[u32; 2]>,
}

impl EdgeReference {
    pub fn new(remap: Vec<u32>, lod0: &[u32]) -> Self {
        Self::from_parts(remap, &[(lod0, 0)], (None, None))
    }

    /// [`Self::new`] with LOD0 given in parts: each part's triangles and what
    /// turns them into source indices (added to each), so no whole index list is
    /// made. `shared` holds [`Self::closed`] when another step (the DAG build of a
    /// one-part mesh) needs it too: whichever comes first makes it, and the other
    /// takes it; `open_out`, when given, gets LOD0's open edges as pairs of
    /// canonical vertices (the parts' DAG builds take their closed parts from
    /// both: [`crate::clod::MeshClosed`]).
    pub fn from_parts(
        remap: Vec<u32>,
        lod0: &[(&[u32], u32)],
        (shared, open_out): SharedLod0<'_>,
    ) -> Self {
        let known = shared.and_then(OnceLock::get);
        let n = remap.len();
        let shift = (usize::BITS - n.leading_zeros()).max(1);
        let mut this = Self {
            remap,
            closed: Vec::new(),
            shift,
            lod0_keys: SortedKeys::Narrow(Vec::new()),
            lod0_open: Vec::new(),
            starts: Vec::new(),
            pairs: Vec::new(),
        };
        // Connected parts (union-find), LOD0's open edges and its triangle index
        // are independent.
        let ((parent, (keys, open)), (starts, pairs)) = crate::par::join(
            || {
                crate::par::join(
                    || {
                        if known.is_some() {
                            return Vec::new();
                        }
                        let mut parent: Vec<u32> = (0..n as u32).collect();
                        for_each_triangle(lod0, |t| {
                            let [a, b, c] = t.map(|i| this.remap[i as usize]);
                            union(&mut parent, a, b);
                            union(&mut parent, b, c);
                        });
                        flatten(&mut parent);
                        parent
                    },
                    || {
                        let mut open = Vec::new();
                        let visit = |a, b| open.push(this.key(a, b));
                        let keys = if this.narrow() {
                            SortedKeys::Narrow(this.open_edges::<u32>(lod0, visit))
                        } else {
                            SortedKeys::Wide(this.open_edges::<u64>(lod0, visit))
                        };
                        (keys, open)
                    },
                )
            },
            || triangle_index(lod0, n),
        );
        let mask = (1u64 << shift) - 1;
        // `parent` is flat: each vertex's root.
        let closed = || {
            let mut open_root = vec![false; n];
            for &k in &open {
                open_root[parent[(k >> shift) as usize] as usize] = true;
            }
            parent.iter().map(|&r| !open_root[r as usize]).collect()
        };
        this.closed = match (known, shared) {
            (Some(known), _) => known.clone(),
            (None, Some(cell)) => cell.get_or_init(closed).clone(),
            (None, None) => closed(),
        };
        debug_assert!(open
            .iter()
            .all(|&k| !this.on_closed((k >> shift) as u32, (k & mask) as u32)));
        if let Some(cell) = open_out {
            let pairs = open
                .iter()
                .map(|&k| [(k >> shift) as u32, (k & mask) as u32]);
            let _ = cell.set(pairs.collect());
        }
        this.lod0_keys = keys;
        this.lod0_open = open;
        this.starts = starts;
        this.pairs = pairs;
        this
    }

    /// Whether `triangles` (source indices) are LOD0's triangles, each exactly once
    /// (in any order, each with its corners in any order). Such a level has LOD0's
    /// edges: [`Self::lod0_edges`] are its sorted keys and open edges, with no open
    /// edge on a closed part, so its sort is saved. One pass over the level with a
    /// lookup in the triangle index; a level that differs anywhere gets `false`
    /// (and the full check).
    pub fn is_lod0(&self, triangles: &[u32]) -> bool {
        if triangles.len() != 3 * self.pairs.len() {
            return false;
        }
        let mut used = vec![false; self.pairs.len()];
        for t in triangles.chunks_exact(3) {
            let [a, b, c] = sorted3([t[0], t[1], t[2]]);
            let Some(range) = self.starts.get(a as usize..a as usize + 2) else {
                return false;
            };
            let (start, end) = (range[0] as usize, range[1] as usize);
            let found = (start..end).find(|&i| !used[i] && self.pairs[i] == [b, c]);
            match found {
                Some(i) => used[i] = true,
                None => return false,
            }
        }
        true
    }

    /// LOD0's sorted edge keys and its open edges (sorted keys).
    pub fn lod0_edges(&self) -> (&SortedKeys, &[u64]) {
        (&self.lod0_keys, &self.lod0_open)
    }

    fn narrow(&self) -> bool {
        2 * self.shift <= 32
    }

    fn key(&self, a: u32, b: u32) -> u64 {
        u64::make(a, b, self.shift)
    }

    fn on_closed(&self, a: u32, b: u32) -> bool {
        self.closed[a as usize] || self.closed[b as usize]
    }

    /// Sorted edge keys of `triangles`: made in one tight pass, counted into the
    /// sort's histograms in a second (over keys still in the cache), then sorted.
    fn sorted<K: Key>(&self, parts: &[(&[u32], u32)]) -> Vec<K> {
        let key_bits = 2 * self.shift;
        let len = parts.iter().map(|(t, _)| t.len()).sum();
        let mut keys = Vec::with_capacity(len);
        for &(tris, base) in parts {
            for t in tris.chunks_exact(3) {
                let [a, b, c] = [t[0], t[1], t[2]].map(|i| self.remap[(i + base) as usize]);
                for (x, y) in [(a, b), (b, c), (c, a)] {
                    if x != y {
                        keys.push(K::make(x.min(y), x.max(y), self.shift));
                    }
                }
            }
        }
        let mut hist = Histograms::new(key_bits, keys.len());
        hist.count(&keys);
        sort_counted(&mut keys, &mut Vec::new(), hist);
        keys
    }

    /// Calls `f(a, b)` for every edge of `triangles` used once; returns the keys.
    fn open_edges<K: Key>(&self, parts: &[(&[u32], u32)], f: impl FnMut(u32, u32)) -> Vec<K> {
        let keys = self.sorted::<K>(parts);
        self.for_each_open(&keys, f);
        keys
    }

    fn for_each_open<K: Key>(&self, keys: &[K], mut f: impl FnMut(u32, u32)) {
        let mask = (1u64 << self.shift) - 1;
        for_each_single(keys, |k| {
            let k = k.wide();
            f((k >> self.shift) as u32, (k & mask) as u32);
        });
    }

    /// One pass over a level drawn alone: the number of its open edges on closed
    /// parts of LOD0, all its open edges, sorted (for [`Self::cracks`]), and all its
    /// edge keys, sorted (the base of [`Self::cracks_from_base`]).
    pub fn level_open_edges(&self, triangles: &[u32]) -> (usize, Vec<u64>, SortedKeys) {
        let mut open = Vec::new();
        let mut on_closed = 0;
        let mut visit = |a, b| {
            on_closed += usize::from(self.on_closed(a, b));
            open.push(self.key(a, b));
        };
        let keys = if self.narrow() {
            SortedKeys::Narrow(self.open_edges::<u32>(&[(triangles, 0)], &mut visit))
        } else {
            SortedKeys::Wide(self.open_edges::<u64>(&[(triangles, 0)], &mut visit))
        };
        (on_closed, open, keys)
    }

    /// Open edges of a cut that are cracks: on a closed part, or open in no level
    /// alone (`level_open`: each level's open edges, sorted). (The cook runs its
    /// two halves apart.)
    #[cfg(test)]
    pub fn cracks(&self, triangles: &[u32], level_open: &[&[u64]]) -> usize {
        self.crack_count(&self.open_keys(triangles), level_open)
    }

    /// The open edges of `triangles` (keys, sorted).
    pub fn open_keys(&self, triangles: &[u32]) -> Vec<u64> {
        let mut open = Vec::new();
        let visit = |a, b| open.push(self.key(a, b));
        if self.narrow() {
            self.open_edges::<u32>(&[(triangles, 0)], visit);
        } else {
            self.open_edges::<u64>(&[(triangles, 0)], visit);
        }
        open
    }

    /// How many of `open` (a cut's open edges) are cracks: on a closed part, or
    /// open in no level alone (`level_open`: each level's open edges, sorted).
    pub fn crack_count(&self, open: &[u64], level_open: &[&[u64]]) -> usize {
        let mask = (1u64 << self.shift) - 1;
        open.iter()
            .filter(|&&k| {
                let (a, b) = ((k >> self.shift) as u32, (k & mask) as u32);
                self.on_closed(a, b) || !open_in_a_level(level_open, k)
            })
            .count()
    }

    /// The sorted edge keys of `triangles`, in the width of this mesh.
    pub fn sorted_keys(&self, triangles: &[u32]) -> SortedKeys {
        if self.narrow() {
            SortedKeys::Narrow(self.sorted::<u32>(&[(triangles, 0)]))
        } else {
            SortedKeys::Wide(self.sorted::<u64>(&[(triangles, 0)]))
        }
    }

    /// [`Self::cracks`] of the cut whose triangles are a level's (`base`: its sorted
    /// keys from [`Self::level_open_edges`]) without the `minus` triangles (a subset
    /// of that level) and with the `plus` triangles. The base level has passed the
    /// level check (each of its open edges is in `level_open` and off the closed
    /// parts), so an edge neither list touches has its base count and is no crack:
    /// only the two small lists are sorted and walked, each of their keys counted
    /// in the level's keys by a galloping search. (The cook sorts the lists with
    /// its other sorts, then calls [`Self::cracks_between`].)
    #[cfg(test)]
    pub fn cracks_from_base(
        &self,
        base: &SortedKeys,
        minus: &[u32],
        plus: &[u32],
        level_open: &[&[u64]],
    ) -> usize {
        let (minus, plus) = (self.sorted_keys(minus), self.sorted_keys(plus));
        self.cracks_between(base, &minus, &plus, level_open)
    }

    /// [`Self::cracks_from_base`] with the two lists' keys sorted already
    /// ([`Self::sorted_keys`]).
    pub fn cracks_between(
        &self,
        base: &SortedKeys,
        minus: &SortedKeys,
        plus: &SortedKeys,
        level_open: &[&[u64]],
    ) -> usize {
        use SortedKeys::{Narrow, Wide};
        match (base, minus, plus) {
            (Narrow(b), Narrow(m), Narrow(p)) => self.merge_cracks(b, m, p, level_open),
            (Wide(b), Wide(m), Wide(p)) => self.merge_cracks(b, m, p, level_open),
            // One reference makes every list in its own width.
            _ => usize::MAX,
        }
    }

    fn merge_cracks<K: Key>(&self, base: &[K], m: &[K], p: &[K], level_open: &[&[u64]]) -> usize {
        let run = |list: &[K], at: &mut usize, key: K| {
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
            let key = [m.get(j), p.get(k)].into_iter().flatten().min().copied();
            let Some(key) = key else { break };
            let (removed, added) = (run(m, &mut j, key), run(p, &mut k, key));
            gallop_to(base, &mut i, key);
            let here = run(base, &mut i, key);
            debug_assert!(removed <= here, "minus is part of the base level");
            if (here + added).saturating_sub(removed) == 1 {
                let w = key.wide();
                let (a, b) = ((w >> self.shift) as u32, (w & mask) as u32);
                if self.on_closed(a, b) || !open_in_a_level(level_open, w) {
                    count += 1;
                }
            }
        }
        count
    }
}

/// Whether `key` is among the open edges of some level (`level_open`: each
/// level's, sorted). The few keys a cut check asks about are searched in each
/// list, rather than the lists merged into one (on an open mesh, sorting their
/// union cost a quarter of the checks).
fn open_in_a_level(level_open: &[&[u64]], key: u64) -> bool {
    level_open.iter().any(|l| l.binary_search(&key).is_ok())
}

/// The triangle index of [`EdgeReference`]: `starts` (`n + 1` entries) and the
/// `pairs`, by a counting sort on each triangle's smallest index, triangles in
/// order within a bucket.
fn triangle_index(lod0: &[(&[u32], u32)], n: usize) -> (Vec<u32>, Vec<[u32; 2]>) {
    let mut starts = vec![0u32; n + 1];
    for_each_triangle(lod0, |t| {
        let a = t[0].min(t[1]).min(t[2]) as usize;
        if let Some(s) = starts.get_mut(a + 1) {
            *s += 1;
        }
    });
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut at = starts.clone();
    let mut pairs = vec![[0u32; 2]; lod0.iter().map(|(t, _)| t.len() / 3).sum()];
    for_each_triangle(lod0, |t| {
        let [a, b, c] = sorted3(t);
        if let Some(slot) = at.get_mut(a as usize) {
            pairs[*slot as usize] = [b, c];
            *slot += 1;
        }
    });
    (starts, pairs)
}

/// `f` of each triangle of parts (`(indices, base)`, `base` added to each
/// index), in order: loops over each part's triangles (a flattened iterator
/// costs a branch per triangle on which part it is in).
#[inline]
fn for_each_triangle(parts: &[(&[u32], u32)], mut f: impl FnMut([u32; 3])) {
    for &(tris, base) in parts {
        for t in tris.chunks_exact(3) {
            f([t[0] + base, t[1] + base, t[2] + base]);
        }
    }
}

fn sorted3([a, b, c]: [u32; 3]) -> [u32; 3] {
    let (a, b) = (a.min(b), a.max(b));
    let (b, c) = (b.min(c), b.max(c));
    [a.min(b), a.max(b), c]
}

/// Moves the keys of `sorted` that occur once to its front, in order; returns
/// how many there are (what [`for_each_single`] visits, without a list to grow).
pub(crate) fn keep_singles<K: PartialEq + Copy>(sorted: &mut [K]) -> usize {
    let (mut kept, mut i) = (0, 0);
    while let Some(k) = next_single(sorted, &mut i) {
        // `kept <= i`: a kept key is written over one already read.
        sorted[kept] = k;
        kept += 1;
    }
    kept
}

/// The next key from `*i` on that occurs exactly once in `sorted`, `*i` moved past
/// it: a key equal to the next is a pair (an interior edge, most keys) and is
/// passed over with its run, and any further use (a non-manifold edge), without
/// counting it first.
#[inline(always)]
fn next_single<K: PartialEq + Copy>(sorted: &[K], i: &mut usize) -> Option<K> {
    while *i < sorted.len() {
        let k = sorted[*i];
        if sorted.get(*i + 1) == Some(&k) {
            *i += 2;
            while sorted.get(*i) == Some(&k) {
                *i += 1;
            }
        } else {
            *i += 1;
            return Some(k);
        }
    }
    None
}

/// Calls `f` with every key that occurs exactly once in `sorted`: a key equal to
/// the next is a pair (an interior edge, most keys) and is passed over with its
/// run, without counting it first.
pub(crate) fn for_each_single<K: PartialEq + Copy>(sorted: &[K], mut f: impl FnMut(K)) {
    let mut i = 0;
    while let Some(k) = next_single(sorted, &mut i) {
        f(k);
    }
}

/// Joins the sets of `x` and `y` in a union-find forest whose links go to
/// smaller ids (`parent[v] <= v`, so a root is its set's smallest id): Rem's
/// algorithm with splicing, which walks the two paths up together from their
/// larger parent and relinks each node it leaves to the smaller one (the sets
/// and roots are those of union by smaller root over path-halving finds;
/// tested), in fewer steps than the two finds.
#[inline]
pub(crate) fn union(parent: &mut [u32], mut x: u32, mut y: u32) {
    loop {
        let (px, py) = (parent[x as usize], parent[y as usize]);
        if px == py {
            return;
        }
        if px < py {
            parent[y as usize] = px;
            if y == py {
                return;
            }
            y = py;
        } else {
            parent[x as usize] = py;
            if x == px {
                return;
            }
            x = px;
        }
    }
}

/// Points every id of a forest whose links go to smaller ids (see [`union`]) at
/// its root, in one pass in id order: a smaller id's root is set first.
pub(crate) fn flatten(parent: &mut [u32]) {
    for v in 0..parent.len() {
        parent[v] = parent[parent[v] as usize];
    }
}

/// The root of `x` in a union-find forest, halving the path on the way.
#[cfg(test)]
pub(crate) fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        parent[x as usize] = parent[parent[x as usize] as usize];
        x = parent[x as usize];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::{for_each_single, keep_singles, EdgeReference, SortedKeys};

    /// Rem's unions and a flatten give every vertex the root that path-halving
    /// finds and union by smaller root give (its set's smallest id), on random
    /// edge lists: few and many ids, self-loops, repeated edges.
    #[test]
    fn rems_union_and_flatten_give_the_find_roots() {
        let mut next = crate::test_numbers(0xD1B5_4A32_D192_ED03);
        for round in 0..2000u64 {
            let n = 1 + next(200) as usize;
            let edges = next(3 * n as u64 + 1);
            let mut old: Vec<u32> = (0..n as u32).collect();
            let mut new = old.clone();
            for _ in 0..edges {
                let (x, y) = (next(n as u64) as u32, next(n as u64) as u32);
                let (rx, ry) = (super::find(&mut old, x), super::find(&mut old, y));
                if rx != ry {
                    old[rx.max(ry) as usize] = rx.min(ry);
                }
                super::union(&mut new, x, y);
                assert!(new.iter().enumerate().all(|(v, &p)| p as usize <= v));
            }
            super::flatten(&mut new);
            let want: Vec<u32> = (0..n as u32).map(|v| super::find(&mut old, v)).collect();
            assert_eq!(new, want, "round {round}");
        }
    }

    /// The singles moved to the front are the ones `for_each_single` visits.
    #[test]
    fn keep_singles_keeps_what_for_each_single_visits() {
        let mut x = 0x9E37_79B9u32;
        for len in 0..200 {
            let mut keys: Vec<u32> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x % (len as u32 / 2 + 1)
                })
                .collect();
            keys.sort_unstable();
            let mut visited = Vec::new();
            for_each_single(&keys, |k| visited.push(k));
            // The keys used once, counted plainly.
            let once: Vec<u32> = keys
                .iter()
                .copied()
                .filter(|k| keys.iter().filter(|&x| x == k).count() == 1)
                .collect();
            assert_eq!(visited, once);
            let kept = keep_singles(&mut keys);
            assert_eq!(keys[..kept], visited[..]);
        }
    }

    /// A closed tetrahedron pair sharing nothing, plus an open quad, over `n` ids.
    fn reference(n: usize) -> (EdgeReference, Vec<u32>) {
        let tris = vec![
            0, 1, 2, 0, 3, 1, 1, 3, 2, 2, 3, 0, // closed
            4, 5, 6, 4, 6, 7, // open quad
        ];
        let remap: Vec<u32> = (0..n as u32).collect();
        (EdgeReference::new(remap, &tris), tris)
    }

    #[test]
    fn narrow_and_wide_keys_give_the_same_edges() {
        let (narrow, tris) = reference(8);
        let (wide, _) = reference(70_000);
        assert!(narrow.narrow() && !wide.narrow());
        for r in [&narrow, &wide] {
            assert!(r.closed[0] && !r.closed[4]);
            // The quad alone: its 4 border edges are open, none on a closed part.
            let (on_closed, open, keys) = r.level_open_edges(&tris[12..]);
            assert_eq!((on_closed, open.len()), (0, 4));
            // Dropping one tetrahedron face opens 3 edges of a closed part.
            assert_eq!(r.cracks(&tris[3..], &[&open]), 3);
            let base = match &keys {
                SortedKeys::Narrow(k) => k.len(),
                SortedKeys::Wide(k) => k.len(),
            };
            assert_eq!(base, 6);
            // The quad minus a triangle plus nothing: the cut edge is open and was
            // open in no level alone.
            assert_eq!(r.cracks_from_base(&keys, &tris[12..15], &[], &[&open]), 1);
            assert_eq!(r.cracks_from_base(&keys, &[], &[], &[&open]), 0);
        }
    }

    #[test]
    fn a_level_is_lod0_only_with_each_lod0_triangle_once() {
        let (r, tris) = reference(8);
        assert!(r.is_lod0(&tris));
        // Reordered triangles, rotated and flipped corners: still LOD0.
        let mut moved: Vec<u32> = tris.chunks_exact(3).rev().flatten().copied().collect();
        moved[..3].rotate_left(1);
        moved.swap(4, 5);
        assert!(r.is_lod0(&moved));
        // One triangle missing, one twice, one changed: not LOD0.
        assert!(!r.is_lod0(&tris[3..]));
        let mut twice = tris.clone();
        twice[3..6].copy_from_slice(&tris[..3]);
        assert!(!r.is_lod0(&twice));
        let mut changed = tris.clone();
        changed[14] = 5;
        assert!(!r.is_lod0(&changed));
        let mut past = tris.clone();
        past[0] = 99;
        assert!(!r.is_lod0(&past));
        // LOD0's own edges, as the level pass would give them.
        let (on_closed, open, keys) = r.level_open_edges(&tris);
        let (lod0_keys, lod0_open) = r.lod0_edges();
        assert_eq!(on_closed, 0);
        assert_eq!(open, lod0_open);
        match (keys, lod0_keys) {
            (SortedKeys::Narrow(a), SortedKeys::Narrow(b)) => assert_eq!(&a, b),
            _ => panic!("narrow keys expected"),
        }
    }
}
