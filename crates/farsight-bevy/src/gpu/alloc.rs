//! The pools' range allocator: an address-ordered free list that coalesces.
//!
//! A pool is `capacity` units long (vertices, indices or cluster-table rows). A
//! level takes one contiguous range in each pool and gives it back whole on
//! eviction. Allocation is first fit in address order; a freed range merges with
//! the free ranges either side of it, so no two free ranges ever touch.
//!
//! **Fragmentation bound.** Because free ranges never touch, each lies between two
//! live ranges (or a pool end): there are at most `live + 1` of them. An
//! allocation of `n` units fails only when every free range is shorter than `n`,
//! so it always succeeds while `free > (live + 1) * (n - 1)`
//! ([`RangeAllocator::guaranteed_fit`]). With levels of a few hundred kilobytes to
//! megabytes and a pool of a gigabyte, a few dozen live levels waste at most their
//! count times the largest request; `tests::the_fragmentation_bound_holds_under_churn`
//! checks the bound after every step of a random load and evict run.

use std::collections::BTreeMap;
use std::ops::Range;

/// A first-fit allocator of ranges of `0..capacity` with a coalescing free list.
#[derive(Clone, Debug)]
pub struct RangeAllocator {
    capacity: u64,
    /// Free ranges by start: `start -> end`; never two touching.
    free: BTreeMap<u64, u64>,
    /// Live ranges by start: `start -> end`.
    live: BTreeMap<u64, u64>,
    free_total: u64,
}

/// Why a range could not be freed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FreeError {
    /// The range is not one this allocator handed out and still holds live.
    #[error("range {start}..{end} is not a live allocation")]
    NotLive {
        /// Start of the range given back.
        start: u64,
        /// End of the range given back.
        end: u64,
    },
}

impl RangeAllocator {
    /// An empty pool of `capacity` units.
    pub fn new(capacity: u64) -> Self {
        let mut free = BTreeMap::new();
        if capacity > 0 {
            free.insert(0, capacity);
        }
        Self {
            capacity,
            free,
            live: BTreeMap::new(),
            free_total: capacity,
        }
    }

    /// Units in the pool.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Units not handed out.
    pub fn free_units(&self) -> u64 {
        self.free_total
    }

    /// Live allocations.
    pub fn live_ranges(&self) -> usize {
        self.live.len()
    }

    /// Free ranges (at most `live_ranges() + 1`).
    pub fn free_ranges(&self) -> usize {
        self.free.len()
    }

    /// The longest free range.
    pub fn largest_free(&self) -> u64 {
        self.free.iter().map(|(s, e)| e - s).max().unwrap_or(0)
    }

    /// Whether the fragmentation bound promises an allocation of `n` units now:
    /// `free > (live + 1) * (n - 1)`. When true, [`RangeAllocator::alloc`] of `n`
    /// succeeds.
    pub fn guaranteed_fit(&self, n: u64) -> bool {
        let slack = (self.live.len() as u64 + 1).saturating_mul(n.saturating_sub(1));
        self.free_total > slack
    }

    /// `n` units (at least one) from the lowest free range that holds them; `None`
    /// when none does.
    pub fn alloc(&mut self, n: u64) -> Option<Range<u64>> {
        let n = n.max(1);
        let (&start, &end) = self.free.iter().find(|(s, e)| *e - *s >= n)?;
        self.free.remove(&start);
        if end - start > n {
            self.free.insert(start + n, end);
        }
        self.free_total -= n;
        self.live.insert(start, start + n);
        Some(start..start + n)
    }

    /// Gives back a range [`RangeAllocator::alloc`] handed out, merging it with the
    /// free ranges that touch it.
    pub fn free(&mut self, range: Range<u64>) -> Result<(), FreeError> {
        if self.live.get(&range.start) != Some(&range.end) {
            return Err(FreeError::NotLive {
                start: range.start,
                end: range.end,
            });
        }
        self.live.remove(&range.start);
        self.free_total += range.end - range.start;
        let (mut start, mut end) = (range.start, range.end);
        if let Some((&s, &e)) = self.free.range(..start).next_back() {
            if e == start {
                self.free.remove(&s);
                start = s;
            }
        }
        if let Some(e) = self.free.remove(&end) {
            end = e;
        }
        self.free.insert(start, end);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator (xorshift), so the test needs no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn check_invariants(a: &RangeAllocator) {
        let mut all: Vec<(u64, u64, bool)> = a
            .free
            .iter()
            .map(|(&s, &e)| (s, e, true))
            .chain(a.live.iter().map(|(&s, &e)| (s, e, false)))
            .collect();
        all.sort();
        let mut at = 0;
        for w in all.windows(2) {
            assert!(!(w[0].2 && w[1].2), "two free ranges touch: {w:?}");
        }
        for (s, e, _) in &all {
            assert_eq!(*s, at, "ranges leave a gap or overlap");
            assert!(e > s);
            at = *e;
        }
        assert_eq!(at, a.capacity);
        assert!(a.free_ranges() <= a.live_ranges() + 1);
        assert_eq!(
            a.free.iter().map(|(s, e)| e - s).sum::<u64>(),
            a.free_units()
        );
    }

    #[test]
    fn freed_neighbours_coalesce_into_one_range() {
        let mut a = RangeAllocator::new(100);
        let x = a.alloc(10).unwrap();
        let y = a.alloc(20).unwrap();
        let z = a.alloc(30).unwrap();
        assert_eq!((x.clone(), y.clone(), z.clone()), (0..10, 10..30, 30..60));
        a.free(x).unwrap();
        a.free(z).unwrap();
        assert_eq!(a.free_ranges(), 2);
        assert_eq!(a.largest_free(), 70);
        a.free(y).unwrap();
        assert_eq!(a.free_ranges(), 1);
        assert_eq!(a.largest_free(), 100);
        assert_eq!(a.alloc(100), Some(0..100));
        assert_eq!(a.alloc(1), None);
        check_invariants(&a);
    }

    #[test]
    fn freeing_what_was_not_handed_out_is_refused() {
        let mut a = RangeAllocator::new(64);
        let x = a.alloc(8).unwrap();
        assert_eq!(a.free(0..4), Err(FreeError::NotLive { start: 0, end: 4 }));
        a.free(x.clone()).unwrap();
        assert!(a.free(x).is_err(), "a double free");
        check_invariants(&a);
    }

    #[test]
    fn the_fragmentation_bound_holds_under_churn() {
        let mut a = RangeAllocator::new(1 << 20);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut live: Vec<Range<u64>> = Vec::new();
        let mut fits_promised = 0;
        for step in 0..20_000 {
            // Mostly level-sized requests, now and then one twenty times larger.
            let n = 1 + rng.next() % if rng.next() % 16 == 0 { 40_000 } else { 2_000 };
            let room = a.free_units() > a.capacity() / 4;
            if (room && rng.next() % 2 == 0) || live.is_empty() {
                let promised = a.guaranteed_fit(n);
                match a.alloc(n) {
                    Some(r) => live.push(r),
                    None => assert!(!promised, "step {step}: the bound promised {n} units"),
                }
                fits_promised += usize::from(promised);
            } else {
                let k = (rng.next() % live.len() as u64) as usize;
                a.free(live.swap_remove(k)).unwrap();
            }
            check_invariants(&a);
        }
        assert!(
            fits_promised > 1000,
            "the bound promised too little to test"
        );
    }
}
