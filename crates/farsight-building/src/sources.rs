//! Face sources of cooked meshes. The cook welds, reorders triangles for the vertex
//! cache and may rotate them, so a cooked file stores each mesh's per-triangle
//! provenance in the cooked order: [`trace`] finds which source triangle each cooked
//! triangle is, and a [`SourceTable`] stores the words compactly (per entry a sorted
//! palette of distinct words and runs of equal palette index), in one record the
//! file compresses.
//!
//! The table's bytes: a varint entry count, then per entry a varint triangle count
//! `T`, a varint palette length `P` (0 exactly when `T` is 0, at most `T`), `P`
//! strictly increasing varint words, and, when `P` is over 1, a varint run count and
//! per run a varint palette index and a varint length of at least 1, the lengths
//! summing to `T`. Varints are LEB128, at most five bytes, never past `u32`.

use std::collections::BTreeMap;
#[cfg(feature = "bake")]
use std::collections::HashMap;
use std::ops::Range;

#[cfg(feature = "bake")]
use farsight_format::MeshData;

use crate::mesh::FaceSource;

/// For each triangle of `cooked` (the cook of `original`, decoded), the word of the
/// original triangle it is (`words` has one per original triangle). Each original
/// vertex is matched to the nearest cooked vertex (position in steps of the mesh's
/// quantisation, then normal, uv and tangent), each original triangle to an unclaimed
/// cooked triangle on the same three vertices in the same winding; what no match
/// finds (a triangle the weld made degenerate) is paired in order. Deterministic.
#[cfg(feature = "bake")]
pub(crate) fn trace(original: &MeshData, words: &[u32], cooked: &MeshData) -> Vec<u32> {
    let tris = cooked.indices.len() / 3;
    let mut out: Vec<Option<u32>> = vec![None; tris];
    let vertex = nearest_vertices(original, cooked);
    let canon = |t: [u32; 3]| -> [u32; 3] {
        // Rotated so the smallest index leads; the winding is kept.
        let k = (0..3).min_by_key(|&k| t[k]).unwrap_or(0);
        [t[k], t[(k + 1) % 3], t[(k + 2) % 3]]
    };
    let mut by_corners: HashMap<[u32; 3], (Vec<usize>, usize)> = HashMap::new();
    for (c, t) in cooked.indices.chunks_exact(3).enumerate() {
        by_corners
            .entry(canon([t[0], t[1], t[2]]))
            .or_default()
            .0
            .push(c);
    }
    let mut unmatched: Vec<u32> = Vec::new();
    for (o, t) in original.indices.chunks_exact(3).enumerate() {
        let word = words.get(o).copied().unwrap_or(0);
        let corners = [t[0], t[1], t[2]].map(|v| vertex.get(v as usize).copied().flatten());
        let slot = match corners {
            [Some(a), Some(b), Some(c)] => {
                by_corners
                    .get_mut(&canon([a, b, c]))
                    .and_then(|(list, next)| {
                        let c = list.get(*next).copied();
                        *next += 1;
                        c
                    })
            }
            _ => None,
        };
        match slot {
            Some(c) => out[c] = Some(word),
            None => unmatched.push(word),
        }
    }
    let mut rest = unmatched.into_iter();
    let fill = words.first().copied().unwrap_or(0);
    out.into_iter()
        .map(|w| w.unwrap_or_else(|| rest.next().unwrap_or(fill)))
        .collect()
}

/// For each original vertex, the cooked vertex nearest it (`None` if no cooked vertex
/// lies within a few quantisation steps).
#[cfg(feature = "bake")]
fn nearest_vertices(original: &MeshData, cooked: &MeshData) -> Vec<Option<u32>> {
    let extent =
        |lo: &[f32], hi: &[f32]| lo.iter().zip(hi).map(|(a, b)| b - a).fold(0.0f32, f32::max);
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for p in &original.positions {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let (mut ulo, mut uhi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
    for uv in &original.uvs {
        for k in 0..2 {
            ulo[k] = ulo[k].min(uv[k]);
            uhi[k] = uhi[k].max(uv[k]);
        }
    }
    let step = (extent(&lo, &hi) / 65535.0).max(1e-7);
    let uv_step = (extent(&ulo, &uhi) / 65535.0).max(1e-7);
    let cell = 4.0 * step;
    let cell_of = |p: &[f32; 3]| [0, 1, 2].map(|k| ((p[k] - lo[k]) / cell).floor() as i64);
    let mut grid: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
    for (i, p) in cooked.positions.iter().enumerate() {
        grid.entry(cell_of(p)).or_default().push(i as u32);
    }
    let d2 = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>();
    original
        .positions
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = cell_of(p);
            let mut best: Option<(f32, u32)> = None;
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        let Some(list) = grid.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) else {
                            continue;
                        };
                        for &j in list {
                            let j_ = j as usize;
                            let mut score = d2(p, &cooked.positions[j_]) / (step * step);
                            if let (Some(a), Some(b)) =
                                (original.normals.get(i), cooked.normals.get(j_))
                            {
                                score += d2(a, b) * 1e6;
                            }
                            if let (Some(a), Some(b)) = (original.uvs.get(i), cooked.uvs.get(j_)) {
                                score += d2(a, b) / (uv_step * uv_step);
                            }
                            if let (Some(a), Some(b)) =
                                (original.tangents.get(i), cooked.tangents.get(j_))
                            {
                                score += d2(&a[..3], &b[..3]) * 1e6;
                                if (a[3] < 0.0) != (b[3] < 0.0) {
                                    score += 1e9;
                                }
                            }
                            if best.is_none_or(|(s, k)| score < s || (score == s && j < k)) {
                                best = Some((score, j));
                            }
                        }
                    }
                }
            }
            best.map(|(_, j)| j)
        })
        .collect()
}

/// Face-source entries of a cooked file, each stored once.
#[derive(Debug, Default)]
pub(crate) struct SourceTable {
    entries: Vec<Vec<u32>>,
    index: BTreeMap<Vec<u32>, u32>,
}

impl SourceTable {
    /// The entry of `words` (one per triangle), added if new.
    pub(crate) fn add(&mut self, words: &[u32]) -> u32 {
        if let Some(&i) = self.index.get(words) {
            return i;
        }
        let i = self.entries.len() as u32;
        self.entries.push(words.to_vec());
        self.index.insert(words.to_vec(), i);
        i
    }

    /// The table's bytes (see the module docs).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, self.entries.len() as u32);
        for words in &self.entries {
            let mut palette = words.clone();
            palette.sort_unstable();
            palette.dedup();
            put(&mut out, words.len() as u32);
            put(&mut out, palette.len() as u32);
            for &w in &palette {
                put(&mut out, w);
            }
            if palette.len() <= 1 {
                continue;
            }
            let mut runs: Vec<(u32, u32)> = Vec::new();
            for w in words {
                let at = palette.binary_search(w).expect("a word of the palette") as u32;
                match runs.last_mut() {
                    Some((i, n)) if *i == at => *n += 1,
                    _ => runs.push((at, 1)),
                }
            }
            put(&mut out, runs.len() as u32);
            for (i, n) in runs {
                put(&mut out, i);
                put(&mut out, n);
            }
        }
        out
    }
}

fn put(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One entry of a parsed table: its palette and where its runs lie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SourceEntry {
    pub triangles: usize,
    palette: Vec<u32>,
    runs: Range<usize>,
}

/// A varint reader that refuses by what it found.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn varint(&mut self, what: &str) -> Result<u32, String> {
        let mut v: u64 = 0;
        for k in 0..5 {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err(format!("{what} runs past the end at byte {}", self.at));
            };
            self.at += 1;
            v |= u64::from(b & 0x7f) << (7 * k);
            if b & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| format!("{what} {v} is past u32"));
            }
        }
        Err(format!(
            "{what} is longer than five bytes at byte {}",
            self.at
        ))
    }
}

/// Parses a table, checking every length and index; it allocates no more than the
/// bytes could hold (palettes and entries take at least a byte each; runs are only
/// checked here and expanded by [`SourceEntry::sources`], once the caller has
/// checked the triangle count against its mesh).
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<SourceEntry>, String> {
    let mut c = Cursor { bytes, at: 0 };
    let count = c.varint("the entry count")? as usize;
    if count > bytes.len() {
        return Err(format!("{count} entries in {} bytes", bytes.len()));
    }
    let mut entries = Vec::with_capacity(count);
    for e in 0..count {
        let triangles = c.varint("a triangle count")? as usize;
        let p = c.varint("a palette length")? as usize;
        if (p == 0) != (triangles == 0) || p > triangles {
            return Err(format!(
                "entry {e}: a palette of {p} words for {triangles} triangles"
            ));
        }
        if p > bytes.len() - c.at {
            return Err(format!("entry {e}: a palette of {p} words past the end"));
        }
        let mut palette = Vec::with_capacity(p);
        for _ in 0..p {
            let w = c.varint("a palette word")?;
            if palette.last().is_some_and(|&last| w <= last) {
                return Err(format!("entry {e}: palette words not strictly increasing"));
            }
            palette.push(w);
        }
        let start = c.at;
        if p > 1 {
            let runs = c.varint("a run count")? as usize;
            if runs > (bytes.len() - c.at) / 2 || runs > triangles {
                return Err(format!("entry {e}: {runs} runs past the end"));
            }
            let mut covered: usize = 0;
            for r in 0..runs {
                let i = c.varint("a palette index")? as usize;
                let n = c.varint("a run length")? as usize;
                if i >= p {
                    return Err(format!("entry {e}, run {r}: palette index {i} of {p}"));
                }
                if n == 0 || n > triangles - covered {
                    return Err(format!(
                        "entry {e}, run {r}: a run of {n} past its {triangles} triangles"
                    ));
                }
                covered += n;
            }
            if covered != triangles {
                return Err(format!(
                    "entry {e}: runs cover {covered} of {triangles} triangles"
                ));
            }
        }
        entries.push(SourceEntry {
            triangles,
            palette,
            runs: start..c.at,
        });
    }
    if c.at != bytes.len() {
        return Err(format!("{} bytes past the last entry", bytes.len() - c.at));
    }
    Ok(entries)
}

impl SourceEntry {
    /// The entry's face sources (`bytes` is the table it was parsed from).
    pub(crate) fn sources(&self, bytes: &[u8]) -> Vec<FaceSource> {
        let p = self.palette.len();
        if p <= 1 {
            return vec![
                FaceSource::from_word(self.palette.first().copied().unwrap_or(0));
                self.triangles
            ];
        }
        let mut c = Cursor {
            bytes: &bytes[self.runs.clone()],
            at: 0,
        };
        let mut out = Vec::with_capacity(self.triangles);
        let runs = c.varint("a run count").expect("checked by parse");
        for _ in 0..runs {
            let i = c.varint("a palette index").expect("checked by parse") as usize;
            let n = c.varint("a run length").expect("checked by parse") as usize;
            out.extend(std::iter::repeat_n(
                FaceSource::from_word(self.palette[i]),
                n,
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_round_trip_and_refuse_by_kind() {
        let mut t = SourceTable::default();
        let many: Vec<u32> = (0..700).map(|i| (i * 7) % 300).collect();
        let entries = [vec![], vec![4; 9], vec![1, 3, 3, 1, 0], many];
        for e in &entries {
            t.add(e);
        }
        assert_eq!(t.add(&[4; 9]), 1, "an entry is stored once");
        let bytes = t.to_bytes();
        let parsed = parse(&bytes).unwrap();
        assert_eq!(parsed.len(), entries.len());
        for (p, e) in parsed.iter().zip(&entries) {
            let words: Vec<u32> = p.sources(&bytes).iter().map(|s| s.to_word()).collect();
            assert_eq!(&words, e);
        }
        // Every prefix is refused, and so is a trailing byte.
        for len in 0..bytes.len() {
            assert!(parse(&bytes[..len]).is_err(), "prefix {len}");
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(parse(&trailing)
            .unwrap_err()
            .contains("past the last entry"));
        // [entries 1][T 3][P 2][words 2 5][runs 2][0 x1][1 x2]
        let mut t = SourceTable::default();
        t.add(&[2, 5, 5]);
        let good = t.to_bytes();
        assert_eq!(good, [1, 3, 2, 2, 5, 2, 0, 1, 1, 2]);
        // A palette index past its palette, a run past the triangles, runs short.
        let mut bad = good.clone();
        bad[8] = 2;
        assert!(parse(&bad).unwrap_err().contains("palette index 2 of 2"));
        let mut bad = good.clone();
        bad[9] = 3;
        assert!(parse(&bad).unwrap_err().contains("past its 3 triangles"));
        let mut bad = good.clone();
        bad[9] = 1;
        assert!(parse(&bad).unwrap_err().contains("cover 2 of 3"));
        let mut bad = good.clone();
        bad[7] = 0;
        assert!(parse(&bad).unwrap_err().contains("a run of 0"));
        // A palette for no triangles, a count past the bytes, a varint past u32.
        assert!(parse(&[1, 0, 1, 0])
            .unwrap_err()
            .contains("palette of 1 words"));
        assert!(parse(&[200, 1]).is_err());
        assert!(parse(&[0xff, 0xff, 0xff, 0xff, 0x7f])
            .unwrap_err()
            .contains("past u32"));
        // Palette words must increase.
        assert!(parse(&[1, 3, 2, 5, 5, 0, 1, 1])
            .unwrap_err()
            .contains("increasing"));
    }
}
