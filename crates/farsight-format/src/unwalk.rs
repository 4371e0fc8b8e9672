//! The decoder's side of the parallelogram walk ([`unpredict`]; the encoder's is
//! `walk.rs`): restores positions, uvs and normals from their residuals in the walk's
//! order and sums the face normals on the way.
//!
//! Unsafe code: unchecked indexing of the per-vertex tables in the per-triangle fast
//! paths and in [`gather`] (the shared-positions lookups, every index asserted
//! below the table's length first), and nothing else. Every triangle reads and writes a dozen table entries
//! (three corners' values, the new vertex's slot, three corners' edge counts and
//! blocks, three normal sums), each a bounds check in safe Rust the compiler cannot
//! drop, since the indices come from the stream. Without them (and with the edge
//! table as two local slices, see [`Edges`]) a decode of ToyCar runs 7.9 % fewer
//! instructions, of LowPolyJungle 5.4 % (callgrind). Soundness does not rest on the
//! callers:
//! [`unpredict`] asserts on entry that every index is below `n` (one vectorised pass
//! over the indices) and that every table it reads holds the entries the walk can
//! name (`n + 1` values, `n` counts, sums and edge blocks). Inside, every index the
//! fast paths use is a triangle corner (below `n`), the zero element `n`, the last
//! vertex met (below `n`), or an edge table entry clamped to `n`; each unsafe block
//! says which. The rarely taken general walk and the tail stay checked.

#![allow(unsafe_code)]

use crate::predict::{add_face, face_normal};
use crate::walk::{EdgeBlock, WalkScratch, EDGES_PER_VERTEX};

/// `s[i]` without the bounds check.
///
/// # Safety
/// `i < s.len()`.
#[inline(always)]
unsafe fn at<T: Copy>(s: &[T], i: usize) -> T {
    debug_assert!(i < s.len());
    // SAFETY: the caller's promise.
    unsafe { *s.get_unchecked(i) }
}

/// `&mut s[i]` without the bounds check.
///
/// # Safety
/// `i < s.len()`.
#[inline(always)]
unsafe fn at_mut<T>(s: &mut [T], i: usize) -> &mut T {
    debug_assert!(i < s.len());
    // SAFETY: the caller's promise.
    unsafe { s.get_unchecked_mut(i) }
}

/// `table[i]` for every `i` of `idx` into `out` (the shared-positions walk's
/// triangles over positions, and each vertex's position): the indices checked
/// against the table once, in one vectorised pass, then read without a bounds
/// check each (a branch and a compare per element otherwise, 7 % of
/// LightsPunctualLamp's decode).
///
/// # Panics
/// If an index is not below `table.len()`.
#[inline(always)]
pub(crate) fn gather<T: Copy>(table: &[T], idx: &[u32], out: &mut [T]) {
    let max = idx.iter().fold(0u32, |m, &i| m.max(i));
    assert!(
        idx.is_empty() || (max as usize) < table.len(),
        "index {max} of {}",
        table.len()
    );
    for (o, &i) in out.iter_mut().zip(idx) {
        // SAFETY: every index is below the table's length (asserted above).
        *o = unsafe { at(table, i as usize) };
    }
}

/// The walk's edge table as two local slices of `n` entries each, so the
/// per-triangle loop keeps their addresses in registers (through `&mut WalkScratch`
/// every byte store to a count made the compiler reload both `Vec`s' pointers).
struct Edges<'a> {
    /// Per vertex, how many of its block's slots hold edges (at most
    /// [`EDGES_PER_VERTEX`]).
    counts: &'a mut [u8],
    blocks: &'a mut [EdgeBlock],
}

impl Edges<'_> {
    /// The third corner of the first remembered triangle holding the directed edge
    /// `b -> a` (the neighbour across `a -> b`), clamped to `zero` (the zero
    /// element's index, `n`): entries below a vertex's count were all written by
    /// this walk from corners below `n`, so the clamp never changes one, but it keeps
    /// every index the caller derives from the answer in range without relying on
    /// that.
    ///
    /// # Safety
    /// `b < self.counts.len() <= self.blocks.len()`.
    #[inline(always)]
    unsafe fn opposite(&self, b: u32, a: u32, zero: u32) -> Option<u32> {
        // SAFETY: the caller's promise; a count is at most EDGES_PER_VERTEX (the
        // slicing checks it, once).
        let (c, block) = unsafe {
            (
                at(self.counts, b as usize) as usize,
                &at_ref(self.blocks, b as usize).0,
            )
        };
        block[..c]
            .iter()
            .find(|e| e[0] == a)
            .map(|e| e[1].min(zero))
    }

    /// Remembers triangle `t`'s three directed edges with their opposite vertex, up to
    /// [`EDGES_PER_VERTEX`] per vertex, as the encoder's walk does after each
    /// triangle (`WalkScratch::remember_edges`).
    ///
    /// # Safety
    /// Every corner below `self.counts.len() <= self.blocks.len()`.
    #[inline(always)]
    unsafe fn remember(&mut self, [v0, v1, v2]: [u32; 3]) {
        for (from, to, opp) in [(v0, v1, v2), (v1, v2, v0), (v2, v0, v1)] {
            // SAFETY: `from` is a corner (the caller's promise).
            let c = unsafe { at_mut(self.counts, from as usize) };
            let k = *c as usize;
            if k < EDGES_PER_VERTEX {
                *c += 1;
                // SAFETY: as above; `k` is checked against the block's length.
                unsafe { at_mut(self.blocks, from as usize).0[k] = [to, opp] };
            }
        }
    }

    /// [`Self::remember`] for a triangle of three vertices met for the first time,
    /// none of which has an edge yet: each corner's first slot.
    ///
    /// # Safety
    /// As [`Self::remember`].
    #[inline(always)]
    unsafe fn remember_fresh(&mut self, [v0, v1, v2]: [u32; 3]) {
        for (from, to, opp) in [(v0, v1, v2), (v1, v2, v0), (v2, v0, v1)] {
            // SAFETY: `from` is a corner (the caller's promise).
            unsafe {
                at_mut(self.blocks, from as usize).0[0] = [to, opp];
                *at_mut(self.counts, from as usize) = 1;
            }
        }
    }

    /// [`Self::opposite`], bounds-checked (the general walk's form).
    fn opposite_checked(&self, b: u32, a: u32, zero: u32) -> Option<u32> {
        assert!((b as usize) < self.counts.len() && self.counts.len() <= self.blocks.len());
        // SAFETY: checked just above.
        unsafe { self.opposite(b, a, zero) }
    }

    /// [`Self::remember`], bounds-checked (the general walk's form).
    fn remember_checked(&mut self, t: [u32; 3]) {
        let n = self.counts.len();
        assert!(t.iter().all(|&v| (v as usize) < n) && n <= self.blocks.len());
        // SAFETY: checked just above.
        unsafe { self.remember(t) }
    }
}

/// `&s[i]` without the bounds check.
///
/// # Safety
/// `i < s.len()`.
#[inline(always)]
unsafe fn at_ref<T>(s: &[T], i: usize) -> &T {
    debug_assert!(i < s.len());
    // SAFETY: the caller's promise.
    unsafe { s.get_unchecked(i) }
}

/// The face normal of triangle `t` added to its corners' sums, without bounds checks.
///
/// # Safety
/// Every corner below `positions.len()` and `sums.len()`.
#[inline(always)]
unsafe fn sum_face(positions: &[[u16; 4]], sums: &mut [[f32; 4]], t: [u32; 3]) {
    let [ia, ib, ic] = t.map(|i| i as usize);
    // SAFETY: the caller's promise.
    unsafe {
        let f = face_normal(at(positions, ia), at(positions, ib), at(positions, ic));
        for i in [ia, ib, ic] {
            let s = at_mut(sums, i);
            *s = add4(*s, f);
        }
    }
}

/// [`sum_face`] for a triangle of three vertices met for the first time: each
/// corner's sum set to +0.0 plus the face normal (the bits `add4` gives on a
/// zeroed sum: a -0.0 lane becomes +0.0).
///
/// # Safety
/// As [`sum_face`].
#[inline(always)]
unsafe fn sum_fresh_face(positions: &[[u16; 4]], sums: &mut [[f32; 4]], t: [u32; 3]) {
    let [ia, ib, ic] = t.map(|i| i as usize);
    // SAFETY: the caller's promise.
    unsafe {
        let f = face_normal(at(positions, ia), at(positions, ib), at(positions, ic));
        let f = add4([0.0; 4], f);
        for i in [ia, ib, ic] {
            *at_mut(sums, i) = f;
        }
    }
}

/// Vertex `v`, met for the first time by the in-order walk: no remembered edges
/// yet and (with `NS`) a zero face-normal sum, set here rather than by a pass
/// over every vertex first.
///
/// # Safety
/// `v < edges.counts.len()` and, with `NS`, `v < sums.len()`.
#[inline(always)]
unsafe fn fresh<const NS: bool>(edges: &mut Edges<'_>, sums: &mut [[f32; 4]], v: usize) {
    // SAFETY: the caller's promise.
    unsafe {
        *at_mut(edges.counts, v) = 0;
        if NS {
            *at_mut(sums, v) = [0.0; 4];
        }
    }
}

/// `s + f` lane by lane, as [`add_face`] adds.
#[inline(always)]
fn add4(s: [f32; 4], f: [f32; 4]) -> [f32; 4] {
    #[cfg(simd_x86)]
    {
        crate::simd::add4(s, f)
    }
    #[cfg(not(simd_x86))]
    {
        std::array::from_fn(|k| s[k] + f[k])
    }
}

/// The tables [`unpredict`] restores in place (each with its zero element at `n`
/// where the walk restores it), the face-normal sums it adds to, the positions'
/// parallelogram weight and the zero element's index `n`. A local of the walk:
/// every phase is inlined into it, so its fields live in registers.
struct Tables<'a> {
    positions: &'a mut [[u16; 4]],
    uvs: &'a mut [[u16; 2]],
    normals: &'a mut [[u16; 2]],
    sums: &'a mut [[f32; 4]],
    position_weight: i32,
    zero: u32,
}

/// Where the in-order walk stopped: `next`, the first vertex it did not meet, and,
/// where a triangle broke first-use order, that triangle's number and corner.
struct InOrder {
    next: u32,
    broken: Option<(usize, usize)>,
}

/// The decoder's side of [`crate::walk::walk`]: replaces the zigzag residuals in
/// `positions` (components 0..3; w is kept), `uvs` and `normals` by the values, in the
/// walk's order and with its recipes, in one pass without building recipes.
/// `PP`/`PU`/`PN` say which of the three hold residuals. Each such slice carries one
/// extra element at index `n`, which must be zero: a copy of it is the `Zero` recipe,
/// so every recipe is a parallelogram or a midpoint (`Copy(a)` is the midpoint of `a`
/// and `a`).
///
/// With `NS` (positions restored by this walk, or final already), it also sums the
/// face normals into `sums` (resized to `n`) exactly as
/// [`crate::predict::normal_sums`] does, triangle by triangle once the triangle's
/// corners are final, saving that pass its second walk over the triangles.
///
/// Phases: the checks the unchecked reads rest on ([`check_tables`]), the residuals
/// unzigzagged ([`unzigzag_residuals`]), the in-order walk ([`walk_in_order`]), then
/// the general walk from where first-use order broke, or the vertices no triangle
/// met ([`walk_rest`]).
///
/// # Panics
/// If an index is not below `n`, or a slice the flags name is shorter than `n + 1`
/// (callers check indices against the vertex count first: a panic here is a bug).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn unpredict<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
    indices: &[u32],
    n: usize,
    position_weight: i32,
    positions: &mut [[u16; 4]],
    uvs: &mut [[u16; 2]],
    normals: &mut [[u16; 2]],
    scratch: &mut WalkScratch,
    sums: &mut Vec<[f32; 4]>,
) {
    check_tables::<PP, PU, NS, PN>(indices, n, positions.len(), uvs.len(), normals.len());
    // The sums and edge counts are not zeroed up front (a pass over 17 bytes per
    // vertex, 2 % of ToyCar's decode instructions): the in-order walk zeroes each
    // vertex's when it restores the vertex, before any triangle adds to them, and
    // the rest are zeroed where that walk stops. Only the elements past the last
    // walk's are zero-filled here, by growing.
    if NS {
        sums.truncate(n);
        sums.resize(n, [0.0; 4]);
    }
    let mut tables = Tables {
        positions,
        uvs,
        normals,
        sums: &mut sums[..],
        position_weight,
        zero: n as u32,
    };
    unzigzag_residuals::<PP, PU, PN>(&mut tables, n);
    let s = scratch;
    s.counts.truncate(n);
    s.counts.resize(n, 0);
    s.grow_edges(n);
    let mut edges = Edges {
        counts: &mut s.counts[..n],
        blocks: &mut s.edges[..n],
    };
    let (tris, _) = indices.as_chunks::<3>();
    let stop = walk_in_order::<PP, PU, NS, PN>(tris, &mut tables, &mut edges);
    walk_rest::<PP, PU, NS, PN>(tris, &mut tables, &mut edges, &mut s.visited, stop);
}

/// What every unsafe block of [`unpredict`] relies on, checked once: `n` fits the
/// u32 indices, every table the flags name holds `n + 1` elements, every index is
/// below `n` (one vectorised pass).
#[inline(always)]
fn check_tables<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
    indices: &[u32],
    n: usize,
    positions: usize,
    uvs: usize,
    normals: usize,
) {
    assert!(n < u32::MAX as usize, "{n} vertices");
    assert!(!(PP || NS) || positions > n, "positions table");
    assert!(!PU || uvs > n, "uvs table");
    assert!(!PN || normals > n, "normals table");
    let max = indices.iter().fold(0u32, |m, &i| m.max(i));
    assert!(
        indices.is_empty() || (max as usize) < n,
        "index {max} of {n}"
    );
}

/// Every vertex below n is restored exactly once, from vertices restored before
/// it or the zero element n: its residual is unzigzagged here, in one pass the
/// wide tiers vectorise, rather than per vertex on the walk (7 instructions a
/// restore, 1.5 % of ToyCar's decode).
#[inline(always)]
fn unzigzag_residuals<const PP: bool, const PU: bool, const PN: bool>(
    t: &mut Tables<'_>,
    n: usize,
) {
    if PP {
        unzigzag_positions(&mut t.positions[..n]);
    }
    if PU {
        unzigzag_all::<2, 2>(&mut t.uvs[..n]);
    }
    if PN {
        unzigzag_all::<2, 2>(&mut t.normals[..n]);
    }
}

/// The walk in first-use order (what the writer's fetch reordering gives): every
/// vertex is met first when it equals `next`, so "visited" is `v < next` and needs
/// no table. Triangles whose first two corners are known and whose third is known
/// or `next` (nearly all of them) take the branch-free path ([`restore_third`]),
/// three new vertices theirs ([`restore_fresh`]); a triangle that breaks the order
/// stops the walk there (its earlier corners restored), for [`walk_rest`].
#[inline(always)]
fn walk_in_order<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
    tris: &[[u32; 3]],
    tables: &mut Tables<'_>,
    edges: &mut Edges<'_>,
) -> InOrder {
    let mut next = 0u32;
    // The triangle's number is found from the iterator when the order breaks
    // rather than counted per triangle (the count lived on the stack).
    let mut walked = tris.iter();
    // `t` is a reference into the index buffer: a local copy of the triangle, which
    // the general case indexes with a run-time corner, lived on the stack.
    while let Some(t) = walked.next() {
        if t[0] < next && t[1] < next && t[2] <= next {
            // Corner 2 is new exactly when it is `next` (a branch that mispredicts
            // often; two branch-free forms that restored slot `next` either way, into
            // the slot or into a dump slot, both measured 2-3 ns per triangle slower:
            // the work on the half of triangles that add no vertex costs more than
            // the misses).
            if t[2] == next {
                restore_third::<PP, PU, NS, PN>(tables, edges, t);
                next += 1;
            }
        } else if t[0] == next && t[1] == t[0] + 1 && t[2] == t[1] + 1 {
            restore_fresh::<PP, PU, NS, PN>(tables, edges, t);
            next = t[2] + 1;
            continue;
        } else if let Some(k) = restore_in_order::<PP, PU, NS, PN>(tables, edges, t, &mut next) {
            let broken = Some((tris.len() - walked.len() - 1, k));
            return InOrder { next, broken };
        }
        // SAFETY: corners, below n, the edge table's length.
        unsafe { edges.remember(*t) };
        if NS {
            // SAFETY: corners, below n = sums.len() < positions.len().
            unsafe { sum_face(tables.positions, tables.sums, *t) };
        }
    }
    InOrder { next, broken: None }
}

/// Corner 2 of triangle `t`, the next vertex, whose other corners are known: the
/// parallelogram across their edge, or the midpoint where no triangle holds it.
#[inline(always)]
fn restore_third<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
    tables: &mut Tables<'_>,
    edges: &mut Edges<'_>,
    t: &[u32; 3],
) {
    // SAFETY: t[1] is a corner, below n, the edge table's length.
    let found = unsafe { edges.opposite(t[1], t[0], tables.zero) };
    let (pc, found) = match found {
        Some(c) => (c, true),
        None => (t[0], false),
    };
    let slot = t[2] as usize;
    // SAFETY: the slot is corner 2, below n, the length of the counts and (with
    // NS) of the sums.
    unsafe { fresh::<NS>(edges, tables.sums, slot) };
    let from = [t[0], t[1], pc];
    // SAFETY (the three blocks): the slot is corner 2 and the sources corners or
    // `pc`, at most `zero`; each restored table holds n + 1.
    if PP {
        let w = if found { tables.position_weight } else { 0 };
        unsafe { restore_unchecked::<4, 3>(tables.positions, slot, from, w) };
    }
    if PU || PN {
        let w = if found { 8 } else { 0 };
        if PU {
            unsafe { restore_unchecked::<2, 2>(tables.uvs, slot, from, w) };
        }
        if PN {
            unsafe { restore_unchecked::<2, 2>(tables.normals, slot, from, w) };
        }
    }
}

/// Triangle `t` of three new vertices `next`, `next + 1`, `next + 2` (nearly every
/// triangle of a flat-shaded mesh): the general loop's recipes without its lookups.
/// Corner 0 copies the last vertex met, corner 1 copies corner 0, and corner 2 is
/// the midpoint of the two, since corner 1 has no remembered edge yet. Remembers
/// the triangle's edges and (with `NS`) sets its corners' sums.
#[inline(always)]
fn restore_fresh<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
    tables: &mut Tables<'_>,
    edges: &mut Edges<'_>,
    t: &[u32; 3],
) {
    let [v0, v1, v2] = *t;
    let last = if v0 > 0 { v0 - 1 } else { tables.zero };
    for (v, a, b) in [(v0, last, last), (v1, v0, v0), (v2, v0, v1)] {
        // SAFETY (the three blocks): `v` is a corner, `a` and `b` corners or
        // `last`, below n or the zero element n; each table holds n + 1.
        if PP {
            unsafe { restore_unchecked::<4, 3>(tables.positions, v as usize, [a, b, a], 0) };
        }
        if PU {
            unsafe { restore_unchecked::<2, 2>(tables.uvs, v as usize, [a, b, a], 0) };
        }
        if PN {
            unsafe { restore_unchecked::<2, 2>(tables.normals, v as usize, [a, b, a], 0) };
        }
    }
    // SAFETY: corners, below n, the edge table's length.
    unsafe { edges.remember_fresh(*t) };
    if NS {
        // SAFETY: corners, below n = sums.len() < positions.len(); the three sums
        // are set here first (+0.0 plus the face, as the sum from zeroed sums adds).
        unsafe { sum_fresh_face(tables.positions, tables.sums, *t) };
    }
}

/// Triangle `t`'s new corners one by one with the general recipes, as long as each
/// is `next`: the corner that is not (first-use order broken) is returned, the
/// corners before it restored.
#[inline(always)]
fn restore_in_order<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
    tables: &mut Tables<'_>,
    edges: &mut Edges<'_>,
    t: &[u32; 3],
    next: &mut u32,
) -> Option<usize> {
    for k in 0..3 {
        let v = t[k];
        if v < *next {
            continue;
        }
        if v != *next {
            return Some(k);
        }
        let (a, b) = (t[(k + 1) % 3], t[(k + 2) % 3]);
        let last = if *next > 0 { *next - 1 } else { tables.zero };
        let from = recipe(edges, a, b, a < *next, b < *next, last, tables.zero);
        // SAFETY: `v` is a corner, below n, the length of the counts and (with NS)
        // of the sums.
        unsafe { fresh::<NS>(edges, tables.sums, v as usize) };
        restore_all::<PP, PU, PN>(tables, v as usize, from);
        *next += 1;
    }
    None
}

/// After the in-order walk: vertices from `next` on get zero sums and counts; where
/// first-use order broke, the general walk goes on from that triangle and corner
/// with a visited table; last, every vertex no triangle met is restored as zero
/// plus its residual.
#[inline(always)]
fn walk_rest<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
    tris: &[[u32; 3]],
    tables: &mut Tables<'_>,
    edges: &mut Edges<'_>,
    visited: &mut Vec<bool>,
    InOrder { next, broken }: InOrder,
) {
    let (n, zero) = (edges.counts.len(), tables.zero);
    // Vertices from `next` on were not met by the in-order walk: their sums and
    // counts are zeroed now (unused vertices keep zero sums; the general walk
    // below adds to them and reads the counts).
    if NS {
        tables.sums[next as usize..].fill([0.0; 4]);
    }
    let Some((ti, k0)) = broken else {
        for v in next as usize..n {
            restore_all::<PP, PU, PN>(tables, v, (zero, zero, None));
        }
        return;
    };
    edges.counts[next as usize..].fill(0);
    // The general walk from triangle `ti`, corner `k0` on, with the visited table.
    visited.clear();
    visited.resize(n, false);
    visited[..next as usize].fill(true);
    let mut last = if next > 0 { next - 1 } else { zero };
    for (i, &t) in tris.iter().enumerate().skip(ti) {
        let first = if i == ti { k0 } else { 0 };
        for k in first..3 {
            let v = t[k] as usize;
            if visited[v] {
                continue;
            }
            let (a, b) = (t[(k + 1) % 3], t[(k + 2) % 3]);
            let (va, vb) = (visited[a as usize], visited[b as usize]);
            let from = recipe(edges, a, b, va, vb, last, zero);
            restore_all::<PP, PU, PN>(tables, v, from);
            visited[v] = true;
            last = v as u32;
        }
        edges.remember_checked(t);
        if NS {
            let [ia, ib, ic] = t.map(|i| i as usize);
            let f = face_normal(
                tables.positions[ia],
                tables.positions[ib],
                tables.positions[ic],
            );
            add_face(tables.sums, [ia, ib, ic], f);
        }
    }
    for (v, &seen) in visited.iter().enumerate() {
        if !seen {
            restore_all::<PP, PU, PN>(tables, v, (zero, zero, None));
        }
    }
}

/// The first `C` components of every element unzigzagged in place (the residuals
/// the walk adds to its predictions).
#[inline(always)]
fn unzigzag_all<const N: usize, const C: usize>(values: &mut [[u16; N]]) {
    for v in values {
        for x in &mut v[..C] {
            *x = crate::coding::unzigzag(*x);
        }
    }
}

/// [`unzigzag_all`] of positions (three of four lanes) as u64 arithmetic on whole
/// elements, which LLVM vectorises with full-width loads and stores (the loop over
/// three lanes stored them one by one).
#[inline(always)]
fn unzigzag_positions(values: &mut [[u16; 4]]) {
    const LOW: u64 = 0x0000_0001_0001_0001;
    const HALF: u64 = 0x0000_7fff_7fff_7fff;
    const KEEP: u64 = 0xffff_0000_0000_0000;
    for v in bytemuck::cast_slice_mut::<[u16; 4], u64>(values) {
        let x = *v;
        let z = x & LOW;
        // 0xffff in each lane whose low bit is set: z * 0xffff, lane by lane.
        let neg = (z << 16).wrapping_sub(z);
        *v = (((x >> 1) & HALF) ^ neg) | (x & KEEP);
    }
}

/// The decoder's recipe for a new vertex whose triangle's other corners are `a` and
/// `b` (known when `va`, `vb`), as the encoder's walk makes it: corners (a, b,
/// Some(c)) for a parallelogram, (a, b, None) for a midpoint, and `Copy(x)` as (x,
/// x, None).
#[inline(always)]
fn recipe(
    edges: &Edges<'_>,
    a: u32,
    b: u32,
    va: bool,
    vb: bool,
    last: u32,
    zero: u32,
) -> (u32, u32, Option<u32>) {
    if va && vb {
        (a, b, edges.opposite_checked(b, a, zero))
    } else if va {
        (a, a, None)
    } else if vb {
        (b, b, None)
    } else {
        (last, last, None)
    }
}

/// [`restore`] of vertex `v` in each table the flags name, from the recipe
/// `(a, b, c)`: positions with the tables' position weight, uvs and normals with
/// the plain parallelogram. Bounds-checked (the general walk's form).
#[inline(always)]
fn restore_all<const PP: bool, const PU: bool, const PN: bool>(
    t: &mut Tables<'_>,
    v: usize,
    (a, b, c): (u32, u32, Option<u32>),
) {
    if PP {
        restore::<4, 3>(t.positions, v, a, b, c, t.position_weight);
    }
    if PU {
        restore::<2, 2>(t.uvs, v, a, b, c, 8);
    }
    if PN {
        restore::<2, 2>(t.normals, v, a, b, c, 8);
    }
}

/// `values[v]` = prediction + residual (unzigzagged by [`unzigzag_all`] when the
/// walk began) on the first `C` components: the
/// parallelogram of weight `w` when `c` is given, else the midpoint of `a`, `b`
/// (the weight-0 parallelogram). Bounds-checked (the general walk's form).
#[inline(always)]
fn restore<const N: usize, const C: usize>(
    values: &mut [[u16; N]],
    v: usize,
    a: u32,
    b: u32,
    c: Option<u32>,
    w: i32,
) {
    let (c, w) = match c {
        Some(c) => (c, w),
        None => (a, 0),
    };
    let slots = [a as usize, b as usize, c as usize, v];
    assert!(slots.iter().all(|&i| i < values.len()));
    // SAFETY: every slot checked just above.
    unsafe { restore_unchecked::<N, C>(values, v, [a, b, c], w) };
}

/// [`restore`] of slot `slot` from corners `[a, b, c]` as the weight-`w`
/// parallelogram (weight 0: the midpoint of `a` and `b`), without bounds checks.
///
/// # Safety
/// `slot`, `a`, `b` and `c` below `values.len()`.
#[inline(always)]
unsafe fn restore_unchecked<const N: usize, const C: usize>(
    values: &mut [[u16; N]],
    slot: usize,
    [a, b, c]: [u32; 3],
    w: i32,
) {
    // SAFETY: the caller's promise.
    let (pa, pb, pc, r) = unsafe {
        (
            at(values, a as usize),
            at(values, b as usize),
            at(values, c as usize),
            at(values, slot),
        )
    };
    #[cfg(simd_x86)]
    let out: [u16; N] = {
        // Four lanes either way; a [u16; 2] rides in the low two.
        let wide =
            |p: [u16; N]| -> [u16; 4] { std::array::from_fn(|i| if i < N { p[i] } else { 0 }) };
        let r = crate::simd::restore::<C>(wide(pa), wide(pb), wide(pc), wide(r), w);
        std::array::from_fn(|i| r[i])
    };
    #[cfg(not(simd_x86))]
    let out: [u16; N] = std::array::from_fn(|i| {
        if i < C {
            crate::coding::parallelogram(pa[i], pb[i], pc[i], w).wrapping_add(r[i])
        } else {
            r[i]
        }
    });
    // SAFETY: the caller's promise.
    unsafe { *at_mut(values, slot) = out };
}

#[cfg(all(test, feature = "encode"))]
mod tests {
    use crate::coding::unzigzag;
    use crate::walk::{walk, WalkScratch};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Positions, uvs and normals.
    type Tables = (Vec<[u16; 4]>, Vec<[u16; 2]>, Vec<[u16; 2]>);

    /// One instance of the walk in a function of its own (as the decode has it, not
    /// inlined into the test); returns the restored positions, uvs and normals.
    #[inline(never)]
    fn run<const PP: bool, const PU: bool, const NS: bool, const PN: bool>(
        indices: &[u32],
        n: usize,
        w: i32,
        residuals: &Tables,
    ) -> Tables {
        let (mut p, mut u, mut o) = residuals.clone();
        let mut sums = Vec::new();
        super::unpredict::<PP, PU, NS, PN>(
            indices,
            n,
            w,
            &mut p,
            &mut u,
            &mut o,
            &mut WalkScratch::default(),
            &mut sums,
        );
        (p, u, o)
    }

    #[test]
    fn positions_unzigzag_as_the_lane_by_lane_form() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let edge = [0u16, 1, 2, 3, 0x7fff, 0x8000, 0xfffe, 0xffff];
        let mut v: Vec<[u16; 4]> = (0..2000)
            .map(|i| {
                if i % 2 == 0 {
                    [0; 4].map(|_| edge[rng.random_range(0..edge.len())])
                } else {
                    [0; 4].map(|_| rng.random())
                }
            })
            .collect();
        let want: Vec<[u16; 4]> = v
            .iter()
            .map(|p| [unzigzag(p[0]), unzigzag(p[1]), unzigzag(p[2]), p[3]])
            .collect();
        super::unzigzag_positions(&mut v);
        assert_eq!(v, want);
    }

    #[test]
    fn every_instance_the_decoder_calls_restores_what_the_encoder_walked() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for case in 0..300 {
            let n = rng.random_range(1..40usize);
            // Triangles mostly in first-use order (new vertices, repeats of the
            // last ones, three new at once), some degenerate or out of order.
            let (mut idx, mut next) = (Vec::new(), 0u32);
            for _ in 0..rng.random_range(0..40) {
                for _ in 0..3 {
                    let fresh = rng.random_bool(0.4) && (next as usize) < n;
                    idx.push(if fresh {
                        next += 1;
                        next - 1
                    } else if case % 4 == 0 {
                        rng.random_range(0..n as u32)
                    } else {
                        rng.random_range(0..next.max(1))
                    });
                }
            }
            let w = rng.random_range(0..=8);
            let values = |rng: &mut ChaCha8Rng| -> Vec<[u16; 4]> {
                (0..n).map(|_| [0; 4].map(|_| rng.random())).collect()
            };
            let (p0, u0, o0) = (values(&mut rng), values(&mut rng), values(&mut rng));
            // The encoder's walk and recipes restore the expected values from the
            // residuals (`Recipe::predict` is the reference parallelogram).
            let (mut wp, mut wu, mut wo) = (p0.clone(), u0.clone(), o0.clone());
            walk(&idx, n, &mut WalkScratch::default(), |v, r| {
                let (p, u, o) = (r.predict(&wp, w), r.predict(&wu, 8), r.predict(&wo, 8));
                for k in 0..3 {
                    wp[v][k] = p[k].wrapping_add(unzigzag(p0[v][k]));
                }
                for k in 0..2 {
                    wu[v][k] = u[k].wrapping_add(unzigzag(u0[v][k]));
                    wo[v][k] = o[k].wrapping_add(unzigzag(o0[v][k]));
                }
            });
            let with_zero =
                |v: &[[u16; 4]]| -> Vec<[u16; 4]> { v.iter().copied().chain([[0; 4]]).collect() };
            let two = |v: &[[u16; 4]]| -> Vec<[u16; 2]> {
                v.iter().map(|a| [a[0], a[1]]).chain([[0; 2]]).collect()
            };
            let (rp, ru, ro) = (with_zero(&p0), two(&u0), two(&o0));
            let (ep, eu, eo) = (with_zero(&wp), two(&wu), two(&wo));
            let res = (rp.clone(), ru.clone(), ro.clone());
            macro_rules! check {
                ($pp:literal, $pu:literal, $ns:literal, $pn:literal) => {{
                    let (p, u, o) = run::<$pp, $pu, $ns, $pn>(&idx, n, w, &res);
                    let what = format!("case {case}, {:?}", ($pp, $pu, $ns, $pn));
                    assert_eq!(&p, if $pp { &ep } else { &rp }, "positions, {what}");
                    assert_eq!(&u, if $pu { &eu } else { &ru }, "uvs, {what}");
                    assert_eq!(&o, if $pn { &eo } else { &ro }, "normals, {what}");
                }};
            }
            // The decoder's instances (`CookedMesh::stages`, `shared_positions`).
            check!(true, true, true, false);
            check!(true, false, true, false);
            check!(true, true, false, false);
            check!(true, true, false, true);
            check!(true, false, false, false);
            check!(true, false, false, true);
            check!(false, true, true, false);
            check!(false, true, false, false);
            check!(false, true, false, true);
            check!(false, false, false, true);
        }
    }
}
