//! Checks a cook runs before it trusts its result, on position-welded edges.
//!
//! "Watertight wherever the source is": a connected part of LOD0 with no open edge
//! must stay closed in every level and every cut. A part with an open border may
//! see that border recede as it simplifies, so there an open edge of a cut is
//! accepted only when the same edge is also open in some level drawn alone (a
//! receded border); an edge open only in a mix of levels is a crack.

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
    /// parts of LOD0, and all its open edges, sorted (for [`Self::cracks`]).
    pub fn level_open_edges(&self, triangles: &[u32]) -> (usize, Vec<u64>) {
        let mut keys = Vec::with_capacity(triangles.len());
        edge_keys(&self.remap, self.shift, triangles, &mut keys);
        let mut open = Vec::new();
        let mut on_closed = 0;
        let shift = self.shift;
        for_each_open(&mut keys, &mut Vec::new(), shift, |a, b| {
            on_closed += usize::from(self.closed[a as usize] || self.closed[b as usize]);
            open.push(((a as u64) << shift) | b as u64);
        });
        (on_closed, open)
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
