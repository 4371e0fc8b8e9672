//! The sorts of the cook's edge checks: edge keys (`u32` or `u64`) sorted by a
//! one-pass bucket sort on their top bits (up to about 32 768 keys) or an LSD
//! radix sort (beyond), the histograms counted in one pass over the keys; and a
//! galloping search over sorted keys.

/// A sortable edge key: `u32` or `u64`.
pub(crate) trait Key: Copy + Ord + Send + Sync + 'static {
    fn make(a: u32, b: u32, shift: u32) -> Self;
    fn wide(self) -> u64;
}

impl Key for u32 {
    #[inline]
    fn make(a: u32, b: u32, shift: u32) -> Self {
        (a << shift) | b
    }
    #[inline]
    fn wide(self) -> u64 {
        self as u64
    }
}

impl Key for u64 {
    #[inline]
    fn make(a: u32, b: u32, shift: u32) -> Self {
        ((a as u64) << shift) | b as u64
    }
    #[inline]
    fn wide(self) -> u64 {
        self
    }
}

/// Moves `at` forward to the first key of `list` (sorted) not below `key`, by
/// an exponential then a binary search from `at` (the keys asked for increase).
pub(crate) fn gallop_to<K: Key>(list: &[K], at: &mut usize, key: K) {
    let rest = &list[*at..];
    let mut bound = 1;
    while bound < rest.len() && rest[bound] < key {
        bound *= 2;
    }
    let (lo, hi) = (bound / 2, (bound + 1).min(rest.len()));
    *at += lo + rest[lo..hi].partition_point(|&x| x < key);
}

/// Below this many keys the standard sort is cheaper than a bucket pass (in
/// instructions, over the corpus cooks: from 512 down to 160 the group surface
/// checks' and small levels' sorts take 0.2-0.4% off a cook of 300-1,400
/// triangles; lower moves nothing further and costs the smallest).
const SORT_MIN: usize = 160;
/// Most bits of a bucket number in the one-pass bucket sort: beyond a histogram
/// of this size (32 KiB, about 32 768 keys) its scatter misses the cache, and
/// the LSD radix sort wins.
const MAX_BUCKET_BITS: u32 = 13;
/// A bucket up to this size is insertion-sorted; a larger one (many keys sharing
/// their top bits: a vertex of very high degree) gets the standard sort.
const INSERTION_MAX: usize = 24;
/// Most bits of one LSD radix digit: a key is sorted in as few passes of at most
/// this many bits as it needs (32-bit keys in two passes of 16 bits, 42-bit keys
/// in three of 14). Wide digits mean fewer passes; their histograms (256 KiB each)
/// still fit in L2, and edge keys arrive nearly sorted by their smaller vertex,
/// so the scatter's many streams stay in the cache.
const MAX_DIGIT: u32 = 16;
/// A digit has at most this many bits fewer than the key count has: a wide
/// digit's histogram must be small beside the keys, or clearing and summing it
/// costs more than the pass it saves.
const DIGIT_BELOW_LEN: u32 = 2;

/// The histograms of a sort ([`Histograms::count`]): for a few keys
/// none (the standard sort), for up to about 32 768 keys one histogram of a
/// one-pass bucket sort on the top bits (about four keys a bucket), beyond that
/// the per-digit histograms of an LSD radix sort (digits of up to 16 bits).
pub(crate) enum Histograms {
    None,
    Buckets {
        counts: Vec<u32>,
        /// A key's bucket is `key >> shift`.
        shift: u32,
    },
    Radix {
        /// `passes << digit` counts, digit `p`'s at `p << digit`.
        counts: Vec<u32>,
        /// Bits of one digit.
        digit: u32,
    },
}

impl Histograms {
    /// Histograms for up to `len` keys below `2^key_bits`.
    pub(crate) fn new(key_bits: u32, len: usize) -> Self {
        if len < SORT_MIN {
            return Self::None;
        }
        let bits = (usize::BITS - (len / 4).leading_zeros()).min(key_bits);
        if bits <= MAX_BUCKET_BITS {
            Self::Buckets {
                counts: vec![0; 1 << bits],
                shift: key_bits - bits,
            }
        } else {
            let len_bits = usize::BITS - len.leading_zeros();
            let widest = MAX_DIGIT
                .min(len_bits.saturating_sub(DIGIT_BELOW_LEN))
                .max(8);
            let passes = key_bits.div_ceil(widest).max(1);
            let digit = key_bits.div_ceil(passes);
            Self::Radix {
                counts: vec![0; (passes as usize) << digit],
                digit,
            }
        }
    }

    /// Counts `keys` (the keys the sort will get).
    pub(crate) fn count<K: Key>(&mut self, keys: &[K]) {
        match self {
            Self::None => {}
            Self::Buckets { counts, shift } => {
                for k in keys {
                    if let Some(c) = counts.get_mut((k.wide() >> *shift) as usize) {
                        *c += 1;
                    }
                }
            }
            Self::Radix {
                counts,
                digit: bits,
            } => {
                let bits = *bits;
                let size = 1usize << bits;
                // Every digit counted in one pass over the keys (each key read
                // once), for the two or three passes edge keys take.
                match counts.len() >> bits {
                    2 => {
                        let (c0, c1) = counts.split_at_mut(size);
                        for &k in keys {
                            c0[digit(k, 0, bits)] += 1;
                            c1[digit(k, bits, bits)] += 1;
                        }
                    }
                    3 => {
                        let (c0, rest) = counts.split_at_mut(size);
                        let (c1, c2) = rest.split_at_mut(size);
                        for &k in keys {
                            c0[digit(k, 0, bits)] += 1;
                            c1[digit(k, bits, bits)] += 1;
                            c2[digit(k, 2 * bits, bits)] += 1;
                        }
                    }
                    _ => {
                        for (p, counts) in counts.chunks_exact_mut(size).enumerate() {
                            let shift = p as u32 * bits;
                            for &k in keys {
                                counts[digit(k, shift, bits)] += 1;
                            }
                        }
                    }
                }
            }
        }
    }
}

#[inline]
fn digit<K: Key>(k: K, shift: u32, bits: u32) -> usize {
    ((k.wide() >> shift) as usize) & ((1 << bits) - 1)
}

/// Sorts keys below `2^key_bits` (test helper: counts, then [`sort_counted`]).
#[cfg(test)]
pub(crate) fn sort_keys<K: Key>(keys: &mut Vec<K>, scratch: &mut Vec<K>, key_bits: u32) {
    let mut hist = Histograms::new(key_bits, keys.len());
    hist.count(keys);
    sort_counted(keys, scratch, hist);
}

/// Sorts `keys`, whose [`Histograms`] were counted over exactly these keys.
pub(crate) fn sort_counted<K: Key>(keys: &mut Vec<K>, scratch: &mut Vec<K>, hist: Histograms) {
    match hist {
        Histograms::Buckets { counts, shift } if keys.len() >= SORT_MIN => {
            bucket_sort(keys, scratch, counts, shift)
        }
        Histograms::Radix { counts, digit } if keys.len() >= SORT_MIN => {
            radix_sort(keys, scratch, counts, digit)
        }
        _ => keys.sort_unstable(),
    }
}

/// One scatter pass into buckets by the top bits, then each bucket (a few keys:
/// an edge key's top bits are its smaller vertex) sorted in place.
fn bucket_sort<K: Key>(keys: &mut Vec<K>, scratch: &mut Vec<K>, mut counts: Vec<u32>, shift: u32) {
    debug_assert_eq!(
        counts.iter().map(|&c| c as usize).sum::<usize>(),
        keys.len()
    );
    let mut sum = 0u32;
    for c in counts.iter_mut() {
        let here = *c;
        *c = sum;
        sum += here;
    }
    scratch.clear();
    scratch.resize(keys.len(), keys[0]);
    for &k in keys.iter() {
        let b = &mut counts[(k.wide() >> shift) as usize];
        scratch[*b as usize] = k;
        *b += 1;
    }
    // `counts[b]` is now the end of bucket `b`.
    let mut start = 0;
    for &end in &counts {
        let bucket = &mut scratch[start..end as usize];
        if bucket.len() <= INSERTION_MAX {
            insertion_sort(bucket);
        } else {
            bucket.sort_unstable();
        }
        start = end as usize;
    }
    std::mem::swap(keys, scratch);
}

fn insertion_sort<K: Key>(v: &mut [K]) {
    // Most buckets hold two to four keys: sorting networks of branch-free
    // compare-exchanges there (an insertion sort mispredicts about once a key).
    let cx = |v: &mut [K], i: usize, j: usize| {
        let (a, b) = (v[i], v[j]);
        v[i] = a.min(b);
        v[j] = a.max(b);
    };
    match v.len() {
        0 | 1 => return,
        2 => return cx(v, 0, 1),
        3 => {
            cx(v, 0, 1);
            cx(v, 1, 2);
            return cx(v, 0, 1);
        }
        4 => {
            cx(v, 0, 1);
            cx(v, 2, 3);
            cx(v, 0, 2);
            cx(v, 1, 3);
            return cx(v, 1, 2);
        }
        _ => {}
    }
    for i in 1..v.len() {
        let k = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > k {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = k;
    }
}

/// LSD radix sort, `bits` bits a pass (a pass whose digit is the same for every
/// key is skipped).
fn radix_sort<K: Key>(keys: &mut Vec<K>, scratch: &mut Vec<K>, mut counts: Vec<u32>, bits: u32) {
    scratch.clear();
    scratch.resize(keys.len(), keys[0]);
    for (p, count) in counts.chunks_exact_mut(1 << bits).enumerate() {
        if count.iter().any(|&c| c as usize == keys.len()) {
            continue;
        }
        let shift = p as u32 * bits;
        let mut sum = 0u32;
        for c in count.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        for &k in keys.iter() {
            let d = digit(k, shift, bits);
            scratch[count[d] as usize] = k;
            count[d] += 1;
        }
        std::mem::swap(keys, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::{gallop_to, sort_keys};

    #[test]
    fn galloping_finds_the_first_key_not_below() {
        let mut x = 7u64;
        for n in [0usize, 1, 2, 3, 17, 1000] {
            let mut list: Vec<u32> = (0..n).map(|_| (xorshift(&mut x) % 50) as u32).collect();
            list.sort_unstable();
            let mut at = 0;
            for key in 0..55u32 {
                gallop_to(&list, &mut at, key);
                assert_eq!(
                    at,
                    list.partition_point(|&v| v < key),
                    "{n} keys, key {key}"
                );
            }
        }
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn bucket_sort_matches_the_standard_sort() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for (n, bits) in [
            (0, 8),
            (100, 20),
            (160, 20),
            (333, 26),
            (5_000, 34),
            (70_000, 44),
            (3_000, 64),
        ] {
            let mut keys: Vec<u64> = (0..n)
                .map(|_| {
                    let v = xorshift(&mut x);
                    if bits == 64 {
                        v
                    } else {
                        v & ((1u64 << bits) - 1)
                    }
                })
                .collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            sort_keys(&mut keys, &mut Vec::new(), bits);
            assert_eq!(keys, expected, "{n} keys of {bits} bits");
        }
        // Every key in one bucket (the standard sort's fallback), and many
        // duplicates.
        for (n, mask) in [(5_000, 0xF_FFFF), (20_000, 0x3F)] {
            let mut keys: Vec<u64> = (0..n).map(|_| xorshift(&mut x) & mask).collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            sort_keys(&mut keys, &mut Vec::new(), 40);
            assert_eq!(keys, expected, "{n} keys under {mask:#x}");
        }
        for (n, bits) in [(600, 12), (40_000, 32)] {
            let mut keys: Vec<u32> = (0..n)
                .map(|_| (xorshift(&mut x) & ((1u64 << bits) - 1)) as u32)
                .collect();
            let mut expected = keys.clone();
            expected.sort_unstable();
            sort_keys(&mut keys, &mut Vec::new(), bits);
            assert_eq!(keys, expected, "{n} u32 keys of {bits} bits");
        }
    }
}
