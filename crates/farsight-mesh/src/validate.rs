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
}

impl EdgeReference {
    pub fn new(remap: Vec<u32>, lod0: &[u32]) -> Self {
        let n = remap.len();
        let mut parent: Vec<u32> = (0..n as u32).collect();
        fn find(parent: &mut [u32], mut x: u32) -> u32 {
            while parent[x as usize] != x {
                parent[x as usize] = parent[parent[x as usize] as usize];
                x = parent[x as usize];
            }
            x
        }
        for t in lod0.chunks_exact(3) {
            let [a, b, c] = [t[0], t[1], t[2]].map(|i| remap[i as usize]);
            for (x, y) in [(a, b), (b, c)] {
                let (rx, ry) = (find(&mut parent, x), find(&mut parent, y));
                if rx != ry {
                    parent[rx.max(ry) as usize] = rx.min(ry);
                }
            }
        }
        let mut keys = Vec::with_capacity(lod0.len());
        edge_keys(&remap, lod0, &mut keys);
        let mut open_root = vec![false; n];
        for_each_open(&mut keys, |a, _| {
            let r = find(&mut parent, a);
            open_root[r as usize] = true;
        });
        let closed = (0..n as u32)
            .map(|v| !open_root[find(&mut parent, v) as usize])
            .collect();
        Self { remap, closed }
    }

    /// One pass over a level drawn alone: the number of its open edges on closed
    /// parts of LOD0, and all its open edges, sorted (for [`Self::cracks`]).
    pub fn level_open_edges(&self, triangles: &[u32]) -> (usize, Vec<u64>) {
        let mut keys = Vec::with_capacity(triangles.len());
        edge_keys(&self.remap, triangles, &mut keys);
        let mut open = Vec::new();
        let mut on_closed = 0;
        for_each_open(&mut keys, |a, b| {
            on_closed += usize::from(self.closed[a as usize] || self.closed[b as usize]);
            open.push(((a as u64) << 32) | b as u64);
        });
        (on_closed, open)
    }

    /// Open edges of a cut that are cracks: on a closed part, or open in no level
    /// alone (`level_open` sorted).
    pub fn cracks(&self, triangles: &[u32], level_open: &[u64], keys: &mut Vec<u64>) -> usize {
        self.count_open(triangles, keys, |k| level_open.binary_search(&k).is_ok())
    }

    fn count_open(
        &self,
        triangles: &[u32],
        keys: &mut Vec<u64>,
        accepted_on_open_part: impl Fn(u64) -> bool,
    ) -> usize {
        keys.clear();
        edge_keys(&self.remap, triangles, keys);
        let mut count = 0;
        for_each_open(keys, |a, b| {
            let on_closed = self.closed[a as usize] || self.closed[b as usize];
            if on_closed || !accepted_on_open_part(((a as u64) << 32) | b as u64) {
                count += 1;
            }
        });
        count
    }
}

fn edge_keys(remap: &[u32], indices: &[u32], keys: &mut Vec<u64>) {
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| remap[i as usize]);
        for (x, y) in [(a, b), (b, c), (c, a)] {
            if x != y {
                keys.push(((x.min(y) as u64) << 32) | x.max(y) as u64);
            }
        }
    }
}

/// Calls `f` for every key that occurs exactly once (sorts `keys`).
fn for_each_open(keys: &mut [u64], mut f: impl FnMut(u32, u32)) {
    keys.sort_unstable();
    let mut i = 0;
    while i < keys.len() {
        let mut j = i + 1;
        while j < keys.len() && keys[j] == keys[i] {
            j += 1;
        }
        if j - i == 1 {
            f((keys[i] >> 32) as u32, keys[i] as u32);
        }
        i = j;
    }
}
