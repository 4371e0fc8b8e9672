//! The bucket codec ([`crate::Codec::Buckets`], [`crate::Codec::BucketsZigzag`]): each
//! u16 component is split into its bit length (a "bucket", 0..=16) and the bits below
//! its leading one. Buckets carry all the skew of a residual distribution and go
//! through zstd (whose Huffman stage codes them near their entropy); the bits below the
//! leading one are close to uniform, so they are stored packed and raw, where a byte
//! coder would spend more than their count on them (the low byte of a 12-bit residual
//! is noise to any byte-level model). Decoding reads three bytes per vertex through
//! zstd instead of eight, then unpacks bits.
//!
//! ```text
//! u32 LE          zstd frame length
//! zstd frame      buckets: component 0 of every element, then component 1, ...
//! packed bits     the same order, little-endian bit order, (bucket - 1) bits each
//! ```
//!
//! `BucketsZigzag` zigzags every component first (for wrapping signed residuals, such
//! as the normal prediction's).

use crate::coding::unzigzag;

/// Stored form of `values` (`c` u16 components per element, `values.len()` a multiple
/// of `c`), buckets compressed at zstd `level`. `None` if zstd fails.
#[cfg(feature = "encode")]
pub(crate) fn encode(values: &[u16], c: usize, zigzag: bool, level: i32) -> Option<Vec<u8>> {
    let n = values.len() / c;
    let mut buckets = vec![0u8; values.len()];
    let mut bits = BitWriter::default();
    for comp in 0..c {
        for i in 0..n {
            let mut v = values[i * c + comp];
            if zigzag {
                v = crate::coding::zigzag(v);
            }
            let k = 16 - v.leading_zeros();
            buckets[comp * n + i] = k as u8;
            if k >= 2 {
                bits.push((v as u32) & ((1 << (k - 1)) - 1), k - 1);
            }
        }
    }
    // Matches of at least 7 bytes only: bucket bytes are small numbers whose short
    // repeats zstd would code as many short sequences, which cost decode time for
    // next to no bytes (measured: the same sizes to 0.1 %, 0.6-0.8 ns per triangle
    // less decode on pirate and FlightHelmet).
    let z = crate::coding::zstd_frame(&buckets, level, Some(7))?;
    let packed = bits.finish();
    let mut out = Vec::with_capacity(4 + z.len() + packed.len());
    out.extend_from_slice(&(z.len() as u32).to_le_bytes());
    out.extend_from_slice(&z);
    out.extend_from_slice(&packed);
    Some(out)
}

/// The range-coded form of `values` ([`crate::Codec::BucketsRanged`], FORMAT.md
/// 3.3.2): per value a symbol (its bucket and, from bucket 2, the bit below the
/// leading one) range-coded with a frequency table per component, the other bits
/// packed raw. `None` where there are no values.
#[cfg(feature = "encode")]
pub(crate) fn encode_ranged(values: &[u16], c: usize, zigzag: bool) -> Option<Vec<u8>> {
    let n = values.len() / c;
    if n == 0 || c > 4 {
        return None;
    }
    let mut syms = vec![0u8; n * c];
    let mut bits = BitWriter::default();
    for comp in 0..c {
        for i in 0..n {
            let mut v = values[i * c + comp] as u32;
            if zigzag {
                v = crate::coding::zigzag(v as u16) as u32;
            }
            let k = 32 - v.leading_zeros();
            syms[comp * n + i] = if k <= 1 {
                k as u8
            } else {
                (2 * k - 2 + ((v >> (k - 2)) & 1)) as u8
            };
            if k >= 3 {
                bits.push(v & ((1 << (k - 2)) - 1), k - 2);
            }
        }
    }
    let mut out = Vec::new();
    let mut tables = Vec::with_capacity(c);
    for comp in 0..c {
        let freqs = normalise(&syms[comp * n..(comp + 1) * n]);
        let mask = (0..SYMBOLS)
            .filter(|&s| freqs[s] > 0)
            .fold(0u32, |m, s| m | 1 << s);
        out.extend_from_slice(&mask.to_le_bytes());
        let mut start = [0u32; SYMBOLS];
        let mut at = 0;
        for s in 0..SYMBOLS {
            start[s] = at;
            at += freqs[s];
            if freqs[s] > 0 {
                let v = freqs[s] - 1;
                if v < 0x80 {
                    out.push(v as u8);
                } else {
                    out.extend_from_slice(&[(v as u8 & 0x7f) | 0x80, (v >> 7) as u8]);
                }
            }
        }
        tables.push((freqs, start));
    }
    // rANS from the last symbol back, value j on state j % 2 (two chains the
    // decoder's steps overlap); the bytes come out reversed.
    let mut x = [RANS_LOW; 2];
    let mut rev = Vec::new();
    for (j, &s) in syms.iter().enumerate().rev() {
        let (freqs, start) = &tables[j / n];
        let (f, st) = (freqs[s as usize], start[s as usize]);
        let max = ((RANS_LOW >> PROB_BITS) << 8) * f;
        let x = &mut x[j % 2];
        while *x >= max {
            rev.push(*x as u8);
            *x >>= 8;
        }
        *x = ((*x / f) << PROB_BITS) + *x % f + st;
    }
    rev.extend_from_slice(&x[1].to_be_bytes());
    rev.extend_from_slice(&x[0].to_be_bytes());
    rev.reverse();
    out.extend_from_slice(&(rev.len() as u32).to_le_bytes());
    out.extend_from_slice(&rev);
    out.extend_from_slice(&bits.finish());
    Some(out)
}

/// Frequencies summing to `1 << PROB_BITS` for the symbols `syms` (not empty): each
/// present symbol its share rounded down but at least 1, the rest to the most
/// frequent (the first on a tie), which keeps well above 1.
#[cfg(feature = "encode")]
fn normalise(syms: &[u8]) -> [u32; SYMBOLS] {
    let mut counts = [0u64; SYMBOLS];
    for &s in syms {
        counts[s as usize] += 1;
    }
    let n = syms.len() as u64;
    let mut freqs = [0u32; SYMBOLS];
    for s in 0..SYMBOLS {
        if counts[s] > 0 {
            freqs[s] = ((counts[s] << PROB_BITS) / n).max(1) as u32;
        }
    }
    let top = (0..SYMBOLS).fold(0, |b, s| if counts[s] > counts[b] { s } else { b });
    let sum: u32 = freqs.iter().sum();
    freqs[top] = (freqs[top] + (1 << PROB_BITS)) - sum;
    freqs
}

#[cfg(feature = "encode")]
#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

#[cfg(feature = "encode")]
impl BitWriter {
    fn push(&mut self, v: u32, k: u32) {
        self.acc |= (v as u64) << self.n;
        self.n += k;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }
    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// Why a bucket stream did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BucketError {
    /// The frame length, the zstd frame or the bucket count is wrong.
    Frame,
    /// A bucket above 16.
    Bucket,
    /// The packed bits end before the buckets do (or run on past them).
    Bits,
}

/// Where a bucket stream's buckets come from: its zstd frame ([`crate::Codec::Buckets`],
/// through the reused context) or its range-coded symbols
/// ([`crate::Codec::BucketsRanged`]).
pub(crate) enum Form<'z> {
    /// The zstd-framed buckets.
    Zstd(&'z mut zstd::bulk::Decompressor<'static>),
    /// The range-coded symbols.
    Ranged,
}

/// Decodes `stored` into `out` (u16 components, `c` per element, every one written
/// on success). `buckets` is scratch.
#[inline(always)]
pub(crate) fn decode(
    stored: &[u8],
    c: usize,
    zigzag: bool,
    out: &mut [u16],
    buckets: &mut Vec<u8>,
    form: Form<'_>,
) -> Result<(), BucketError> {
    let count = out.len();
    let n = count / c;
    let packed = match form {
        Form::Zstd(zstd) => zstd_buckets(stored, count, buckets, zstd)?,
        Form::Ranged => ranged_symbols(stored, c, count, buckets)?,
    };
    // The bit count is checked after unpacking (the unpacking reads zeros past the
    // stored bits and cannot fail; a wrong count is an error then, and the caller
    // drops what was written).
    if buckets.len() != n * c {
        return Err(BucketError::Frame);
    }
    let mut pos = 0usize;
    for comp in 0..c {
        let ks = &buckets[comp * n..(comp + 1) * n];
        if bitless(ks, out, c, comp, zigzag) {
            continue;
        }
        pos = match (zigzag, c) {
            (false, 4) => unpack::<false, 4>(ks, out, comp, packed, pos),
            (true, 2) => unpack::<true, 2>(ks, out, comp, packed, pos),
            (false, 2) => unpack::<false, 2>(ks, out, comp, packed, pos),
            (true, 4) => unpack::<true, 4>(ks, out, comp, packed, pos),
            _ => unpack_any(ks, out, c, comp, zigzag, packed, pos),
        };
    }
    if pos.div_ceil(8) != packed.len() {
        return Err(BucketError::Bits);
    }
    Ok(())
}

/// The zstd form's buckets into `buckets` (each checked to be at most 16); returns
/// the packed bits.
#[inline(always)]
fn zstd_buckets<'a>(
    stored: &'a [u8],
    count: usize,
    buckets: &mut Vec<u8>,
    zstd: &mut zstd::bulk::Decompressor<'static>,
) -> Result<&'a [u8], BucketError> {
    let Some((len, rest)) = stored.split_first_chunk::<4>() else {
        return Err(BucketError::Frame);
    };
    let zlen = u32::from_le_bytes(*len) as usize;
    if zlen > rest.len() {
        return Err(BucketError::Frame);
    }
    let (frame, packed) = rest.split_at(zlen);
    buckets.clear();
    // `count` is the stream's decoded element count, bounded by parse().
    buckets.reserve(count);
    let got = zstd
        .decompress_to_buffer(frame, buckets)
        .map_err(|_| BucketError::Frame)?;
    if got != count {
        return Err(BucketError::Frame);
    }
    if buckets.iter().fold(0u8, |m, &k| m.max(k)) > 16 {
        return Err(BucketError::Bucket);
    }
    Ok(packed)
}

/// The range-coded form's frequency tables, one per component (at most 4), and the
/// bytes after them.
type Tables<'a> = ([[u16; SYMBOLS]; 4], &'a [u8]);

/// Reads `c` frequency tables: per component a u32 mask of the symbols present,
/// then per present symbol (ascending) its frequency less one as a LEB128 varint of
/// one or two bytes (one encoding: a second byte is never 0); each table must sum
/// to `1 << PROB_BITS`.
fn read_tables(stored: &[u8], c: usize) -> Result<Tables<'_>, BucketError> {
    let mut freqs = [[0u16; SYMBOLS]; 4];
    let mut rest = stored;
    if c > 4 {
        return Err(BucketError::Frame);
    }
    for table in freqs.iter_mut().take(c) {
        let Some((mask, r)) = rest.split_first_chunk::<4>() else {
            return Err(BucketError::Frame);
        };
        rest = r;
        let mask = u32::from_le_bytes(*mask);
        let mut sum = 0u32;
        for (s, f) in table.iter_mut().enumerate() {
            if mask & (1 << s) == 0 {
                continue;
            }
            let (&b0, r) = rest.split_first().ok_or(BucketError::Frame)?;
            rest = r;
            let mut v = (b0 & 0x7f) as u32;
            if b0 & 0x80 != 0 {
                let (&b1, r) = rest.split_first().ok_or(BucketError::Frame)?;
                rest = r;
                if b1 == 0 || b1 >= 0x80 {
                    return Err(BucketError::Frame);
                }
                v |= (b1 as u32) << 7;
            }
            *f = (v + 1).min(1 << PROB_BITS) as u16;
            sum += v + 1;
        }
        if sum != 1 << PROB_BITS {
            return Err(BucketError::Frame);
        }
    }
    Ok((freqs, rest))
}

/// The range-coded form's symbols into `buckets` as [`BUCKET`]'s bytes; returns
/// the packed bits. Two interleaved rANS states over every component in order
/// (component-major), each component with its table; see FORMAT.md 3.3.2.
#[inline(always)]
fn ranged_symbols<'a>(
    stored: &'a [u8],
    c: usize,
    count: usize,
    buckets: &mut Vec<u8>,
) -> Result<&'a [u8], BucketError> {
    let (freqs, rest) = read_tables(stored, c)?;
    let Some((len, rest)) = rest.split_first_chunk::<4>() else {
        return Err(BucketError::Frame);
    };
    let rlen = u32::from_le_bytes(*len) as usize;
    if rlen > rest.len() || rlen < 8 {
        return Err(BucketError::Frame);
    }
    let (coded, packed) = rest.split_at(rlen);
    let state = |at: usize| u32::from_le_bytes(coded[at..at + 4].try_into().expect("4 bytes"));
    // `x` decodes the next value, `y` the one after: they swap after each value.
    let (mut x, mut y) = (state(0), state(4));
    if !(RANS_LOW..RANS_LOW << 8).contains(&x) || !(RANS_LOW..RANS_LOW << 8).contains(&y) {
        return Err(BucketError::Frame);
    }
    let mut at = 8usize;
    let n = count / c;
    buckets.clear();
    // `count` is the stream's decoded element count, bounded by parse().
    buckets.resize(n * c, 0);
    let mut lut = [0u32; 1 << PROB_BITS];
    for (table, syms) in freqs.iter().zip(buckets.chunks_exact_mut(n.max(1))) {
        // Per slot: the symbol's byte, its frequency less one, the slot's offset
        // from the symbol's first slot.
        let mut start = 0usize;
        for (s, &f) in table.iter().enumerate() {
            let byte = if s < 2 {
                s as u32
            } else {
                SYMBOL_BASE as u32 + s as u32
            };
            for (j, e) in lut[start..start + f as usize].iter_mut().enumerate() {
                *e = byte | (f as u32 - 1) << 8 | (j as u32) << 20;
            }
            start += f as usize;
        }
        // x stays in RANS_LOW..RANS_LOW << 8: a step leaves it at least 2^11, so
        // two bytes at most bring it back (bytes past the end read as 0 and fail
        // the count check below).
        for out in syms.iter_mut() {
            let e = lut[(x & ((1 << PROB_BITS) - 1)) as usize];
            *out = e as u8;
            x = (((e >> 8) & 0xfff) + 1) * (x >> PROB_BITS) + (e >> 20);
            while x < RANS_LOW {
                x = x << 8 | coded.get(at).copied().unwrap_or(0) as u32;
                at += 1;
            }
            std::mem::swap(&mut x, &mut y);
        }
    }
    if at != rlen || x != RANS_LOW || y != RANS_LOW {
        return Err(BucketError::Frame);
    }
    Ok(packed)
}

/// Where every bucket of component `comp` is at most 1 (flags and constant
/// components, such as a position's tangent-sign word), the buckets are the values
/// and there are no bits to read: writes them and returns true. A vectorised
/// maximum rather than `all`, whose early exit ran a byte at a time through the
/// components it held for, and loops over elements of known size (a `step_by` over
/// components cost 13 instructions a value). Out of line: inlined, it moved the
/// registers of the unpacking loops.
#[inline(never)]
fn bitless(ks: &[u8], out: &mut [u16], c: usize, comp: usize, zigzag: bool) -> bool {
    if ks.iter().fold(0u8, |m, &k| m.max(k)) > 1 {
        return false;
    }
    match (zigzag, c) {
        (false, 4) => bitless_n::<false, 4>(ks, out, comp),
        (true, 4) => bitless_n::<true, 4>(ks, out, comp),
        (false, 2) => bitless_n::<false, 2>(ks, out, comp),
        (true, 2) => bitless_n::<true, 2>(ks, out, comp),
        _ => {
            for (&k, d) in ks.iter().zip(out.iter_mut().skip(comp).step_by(c)) {
                *d = if zigzag { unzigzag(k as u16) } else { k as u16 };
            }
        }
    }
    true
}

/// [`bitless`] for `C`-component elements (`C` a power of two, `comp` below it).
#[inline(always)]
fn bitless_n<const ZIGZAG: bool, const C: usize>(ks: &[u8], out: &mut [u16], comp: usize) {
    const { assert!(C.is_power_of_two()) };
    let comp = comp & (C - 1);
    for (&k, e) in ks.iter().zip(out.as_chunks_mut::<C>().0) {
        e[comp] = if ZIGZAG { unzigzag(k as u16) } else { k as u16 };
    }
}

/// One value from its bucket `k` (at most 16) and the bits at the bottom of `word`;
/// returns the value and how many bits it used. Table-driven: a variable shift
/// costs three micro-ops on x86-64 without BMI2, a table load one.
#[inline(always)]
fn value<const ZIGZAG: bool>(k: u8, word: u64) -> (u16, u32) {
    let [m, lead, mask] = BUCKET[k as usize];
    let v = (lead | (word as u32 & mask)) as u16;
    (if ZIGZAG { unzigzag(v) } else { v }, m)
}

/// Per bucket `k`: the bits stored below the leading one, the leading one, and the
/// mask of the stored bits (zeros past 16: buckets are checked to be at most 16).
/// An entry for every byte, so that a bucket indexes it without a mask.
///
/// The range-coded form ([`decode_ranged`]) shares it: its symbols 0 and 1 are the
/// buckets 0 and 1, and a symbol `s` of 2..=31 (bucket `s / 2 + 1` with the bit
/// below the leading one `s & 1`) is written as byte `SYMBOL_BASE + s`, whose entry
/// holds the two top bits and the `k - 2` bits stored below them.
static BUCKET: [[u32; 3]; 256] = {
    let mut t = [[0; 3]; 256];
    let mut k = 1;
    while k <= 16 {
        t[k] = [k as u32 - 1, 1 << (k - 1), (1 << (k - 1)) - 1];
        k += 1;
    }
    let mut s = 2;
    while s < SYMBOLS {
        let k = s as u32 / 2 + 1;
        let top = (1 << (k - 1)) | ((s as u32 & 1) << (k - 2));
        t[SYMBOL_BASE as usize + s] = [k - 2, top, (1 << (k - 2)) - 1];
        s += 1;
    }
    t
};

/// The range-coded form's symbols per value: 0, 1, then two per bucket 2..=16.
const SYMBOLS: usize = 32;
/// Where symbols 2.. sit in [`BUCKET`] (past the buckets 0..=16).
const SYMBOL_BASE: u8 = 32;
/// The range coder's frequency tables sum to `1 << PROB_BITS`.
const PROB_BITS: u32 = 12;
/// The coder's state stays in `RANS_LOW..RANS_LOW << 8` between symbols.
const RANS_LOW: u32 = 1 << 23;

/// The 64 bits of `packed` from bit `pos` on (the low `64 - pos % 8` of them
/// meaningful), bits past its end read as zeros (the last 8 bytes through
/// [`tail_word`]).
#[inline(always)]
fn bits_at(packed: &[u8], pos: usize) -> u64 {
    let at = pos >> 3;
    let word = match packed.get(at..at + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
        None => tail_word(packed, at),
    };
    word >> (pos & 7)
}

/// The 8 bytes of `packed` from byte `at` on, zeros past its end.
#[cold]
#[inline(never)]
fn tail_word(packed: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(t) = packed.get(at..) {
        let k = t.len().min(8);
        w[..k].copy_from_slice(&t[..k]);
    }
    u64::from_le_bytes(w)
}

/// Unpacks component `comp` of every `C`-component element of `out` from its buckets
/// `ks` and the packed bits from bit `pos` on; returns the bit position after them.
/// Three values per 64-bit read (at most 3 x 15 bits past a 7-bit offset). Bits past
/// the end of `packed` read as zeros (the caller checks the count afterwards). `C` is
/// a power of two (2 or 4) and `comp` below it.
#[inline(always)]
fn unpack<const ZIGZAG: bool, const C: usize>(
    ks: &[u8],
    out: &mut [u16],
    comp: usize,
    packed: &[u8],
    mut pos: usize,
) -> usize {
    const { assert!(C.is_power_of_two()) };
    // One index over buckets and elements (the zipped chunk iterators kept five
    // counters and spilled them in the loop).
    let elems = out.as_chunks_mut::<C>().0;
    let n = ks.len().min(elems.len());
    let (ks, elems) = (&ks[..n], &mut elems[..n]);
    let mut i = 0;
    // Straight from `packed` while 8 bytes are there to read; the values after
    // that through `unpack_tail` (off the hot loop).
    while i + 3 <= n {
        let at = pos >> 3;
        let word = match packed.get(at..at + 8) {
            Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
            None => break,
        } >> (pos & 7);
        pos = triple::<ZIGZAG, C>(&ks[i..i + 3], &mut elems[i..i + 3], comp, word, pos);
        i += 3;
    }
    if i < n {
        pos = unpack_tail::<ZIGZAG, C>(&ks[i..], &mut elems[i..], comp, packed, pos);
    }
    pos
}

/// [`unpack`]'s last values, from the bytes left copied once with zeros after
/// them: fewer than 8 where its loop ran out of bytes, and at most two values' bits
/// (under 5 bytes) where it ran out of triples. Out of line, so that the hot loop
/// keeps its registers.
#[inline(never)]
fn unpack_tail<const ZIGZAG: bool, const C: usize>(
    ks: &[u8],
    elems: &mut [[u16; C]],
    comp: usize,
    packed: &[u8],
    pos: usize,
) -> usize {
    let base = (pos >> 3).min(packed.len());
    let left = &packed[base..];
    let mut tail = [0u8; 24];
    let k = left.len().min(16);
    tail[..k].copy_from_slice(&left[..k]);
    let mut at = pos - 8 * base;
    for (&k, e) in ks.iter().zip(elems) {
        let (v, m) = value::<ZIGZAG>(k, bits_at(&tail, at));
        e[comp & (C - 1)] = v;
        at += m as usize;
    }
    8 * base + at
}

/// Three values of component `comp` from buckets `k` into the three elements of
/// `o`, their bits at the bottom of `word` (read at bit `pos`); returns the bit
/// position after them.
#[inline(always)]
fn triple<const ZIGZAG: bool, const C: usize>(
    k: &[u8],
    o: &mut [[u16; C]],
    comp: usize,
    mut word: u64,
    pos: usize,
) -> usize {
    let (v0, m0) = value::<ZIGZAG>(k[0], word);
    word >>= m0;
    let (v1, m1) = value::<ZIGZAG>(k[1], word);
    word >>= m1;
    let (v2, m2) = value::<ZIGZAG>(k[2], word);
    // `comp < C`, a power of two: the mask drops the bounds checks.
    let comp = comp & (C - 1);
    o[0][comp] = v0;
    o[1][comp] = v1;
    o[2][comp] = v2;
    pos + (m0 + m1 + m2) as usize
}

/// [`unpack`] for any component count, one value per read.
#[inline(always)]
fn unpack_any(
    ks: &[u8],
    out: &mut [u16],
    c: usize,
    comp: usize,
    zigzag: bool,
    packed: &[u8],
    mut pos: usize,
) -> usize {
    for (&k, o) in ks.iter().zip(out.chunks_exact_mut(c)) {
        let word = bits_at(packed, pos);
        let (v, m) = if zigzag {
            value::<true>(k, word)
        } else {
            value::<false>(k, word)
        };
        o[comp] = v;
        pos += m as usize;
    }
    pos
}

#[cfg(all(test, feature = "encode"))]
mod tests {
    use super::*;

    /// Both forms' decodes of `values` (the range-coded one's from a value on).
    fn round_trip(values: &[u16], c: usize, zigzag: bool) -> Vec<u16> {
        let stored = encode(values, c, zigzag, 3).unwrap();
        let mut out = vec![0xAAAA; values.len()];
        let mut z = zstd::bulk::Decompressor::new().unwrap();
        decode(
            &stored,
            c,
            zigzag,
            &mut out,
            &mut Vec::new(),
            Form::Zstd(&mut z),
        )
        .unwrap();
        if values.len() >= c {
            let stored = encode_ranged(values, c, zigzag).unwrap();
            let mut ranged = vec![0x5555; values.len()];
            decode(
                &stored,
                c,
                zigzag,
                &mut ranged,
                &mut Vec::new(),
                Form::Ranged,
            )
            .unwrap();
            assert_eq!(ranged, out, "the range-coded form");
        }
        out
    }

    /// On wide noisy residuals (a sum of uniform offsets, as a jittered grid's) the
    /// range-coded form stores smaller than the zstd one: zstd's Huffman stage
    /// codes the buckets above their entropy and stores the skewed bit below the
    /// leading one raw.
    #[test]
    fn range_coding_stores_wide_noise_smaller() {
        let mut seed = 0x2545_f491_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            (seed >> 16) as i32 % 700
        };
        let values: Vec<u16> = (0..40_000)
            .map(|_| (next() + next() - next()) as u16)
            .collect();
        let zstd = encode(&values, 2, true, 19).unwrap().len();
        let ranged = encode_ranged(&values, 2, true).unwrap().len();
        assert!(
            ranged * 100 < zstd * 99,
            "ranged {ranged} against zstd {zstd}"
        );
        assert_eq!(round_trip(&values, 2, true), values);
    }

    #[test]
    fn damaged_range_coded_states_and_tables_are_refused() {
        let values: Vec<u16> = (0..600u16).map(|i| i.wrapping_mul(977) % 5000).collect();
        let stored = encode_ranged(&values, 2, false).unwrap();
        let mut out = vec![0; values.len()];
        let mut run =
            |bytes: &[u8]| decode(bytes, 2, false, &mut out, &mut Vec::new(), Form::Ranged);
        assert_eq!(run(&stored), Ok(()));
        // A table's mask with one symbol more: its frequencies no longer sum.
        let mut more = stored.clone();
        more[3] ^= 0x80;
        assert_eq!(run(&more), Err(BucketError::Frame));
        // Cut anywhere before the packed bits: refused, never a panic.
        for cut in 0..stored.len() {
            assert!(run(&stored[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn every_bit_length_round_trips_both_ways() {
        let mut values: Vec<u16> = (0..16)
            .flat_map(|k| [1u16 << k, (2u32.pow(k + 1) - 1) as u16])
            .collect();
        values.extend([0, 0, 1, 2, 3, 0x7FFF, 0x8000, 0xFFFF, 12345, 54321]);
        values.truncate(values.len() / 4 * 4);
        for c in [1, 2, 4] {
            for zigzag in [false, true] {
                assert_eq!(
                    round_trip(&values, c, zigzag),
                    values,
                    "c {c} zigzag {zigzag}"
                );
            }
        }
    }

    #[test]
    fn every_length_round_trips_through_the_fast_loop_and_the_tail() {
        // Lengths around the three-value reads and the last 8 bytes of packed bits,
        // wide and narrow values, and components of zero-bit values after wide ones.
        let mut seed = 0x9e37_79b9_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for n in 0..40usize {
            for c in [1, 2, 4] {
                for zigzag in [false, true] {
                    for bits in [1u32, 3, 9, 16] {
                        let values: Vec<u16> = (0..n * c)
                            .map(|i| {
                                let v = (next() & ((1 << bits) - 1)) as u16;
                                if i % c == c - 1 && c > 1 {
                                    v & 1
                                } else {
                                    v
                                }
                            })
                            .collect();
                        assert_eq!(
                            round_trip(&values, c, zigzag),
                            values,
                            "n {n} c {c} zigzag {zigzag} bits {bits}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn short_or_long_bits_and_bad_buckets_are_refused() {
        let values: Vec<u16> = (0..64u16).map(|i| i * 977).collect();
        let stored = encode(&values, 2, false, 3).unwrap();
        let mut z = zstd::bulk::Decompressor::new().unwrap();
        let mut out = vec![0; values.len()];
        let mut run = |bytes: &[u8]| {
            decode(
                bytes,
                2,
                false,
                &mut out,
                &mut Vec::new(),
                Form::Zstd(&mut z),
            )
        };
        assert_eq!(run(&stored[..stored.len() - 1]), Err(BucketError::Bits));
        let mut longer = stored.clone();
        longer.push(0);
        assert_eq!(run(&longer), Err(BucketError::Bits));
        assert_eq!(run(&stored[..3]), Err(BucketError::Frame));
        let mut bad = 17u32.to_le_bytes().to_vec();
        let z17 = zstd::bulk::compress(&[17u8; 64], 3).unwrap();
        bad[..4].copy_from_slice(&(z17.len() as u32).to_le_bytes());
        bad.extend_from_slice(&z17);
        assert_eq!(run(&bad), Err(BucketError::Bucket));
    }
}
