//! Where a cook's parallel steps run: on rayon's pool, or every one of them on the
//! calling thread when the input is too small to split ([`small`]). A step handed
//! to another thread costs a wake-up and a wait (microseconds each); a cook of a
//! few dozen triangles takes tens of microseconds in all, so on two threads its
//! dozen joins cost more than the work they share out (a 12-triangle box cooked
//! 7.9x slower than `clod_build` on two threads, 3.6x inline, under load). Either
//! way the steps and their results are the same: the bytes do not depend on where
//! they ran.

use std::cell::Cell;

use rayon::prelude::*;

/// Below this many triangles a cook of one material runs inline (see the module
/// docs): its one DAG runs on one thread anyway, and what runs beside it
/// (packing, LOD0's edge reference) is too short to pay for a hand-over.
pub(crate) const INLINE_TRIANGLES: usize = 2048;
/// Below this many triangles a cook of several materials runs inline too. Above
/// it, its parts' DAGs (hundreds of microseconds each) are worth sharing out.
pub(crate) const INLINE_TRIANGLES_PARTS: usize = 256;

/// Whether a cook of `triangles` triangles in `materials` materials is too small
/// to split.
pub(crate) fn small(triangles: usize, materials: usize) -> bool {
    triangles < INLINE_TRIANGLES_PARTS || (materials <= 1 && triangles < INLINE_TRIANGLES)
}

thread_local! {
    /// Set while a cook runs inline on this thread.
    static INLINE: Cell<bool> = const { Cell::new(false) };
}

/// Whether the steps run on this thread only.
pub(crate) fn inline() -> bool {
    INLINE.with(Cell::get)
}

/// Restores the inline flag when a cook ends (or unwinds).
struct Restore(bool);

impl Drop for Restore {
    fn drop(&mut self) {
        INLINE.with(|c| c.set(self.0));
    }
}

/// Runs a cook: inline on this thread when it is `small` (see [`small`]), already
/// inline, or on a pool of one thread (where no step can run beside another, and
/// rayon's hand-overs and splitting are all cost: 0.1-0.4% of a one-thread cook
/// of 285 to 400,000 triangles), else on a rayon worker. Called from outside the pool,
/// every parallel step would be handed to the pool and waited for on its own (a
/// wake-up and a hand-back each, tens of microseconds); entering the pool once
/// makes the steps plain work-stealing joins. Inside the pool it just runs `f`.
pub(crate) fn cook<R: Send>(small: bool, f: impl FnOnce() -> R + Send) -> R {
    if inline() || small || rayon::current_num_threads() == 1 {
        let _restore = Restore(INLINE.with(|c| c.replace(true)));
        f()
    } else {
        rayon::scope(|_| f())
    }
}

/// `rayon::join`, or `a` then `b` when inline.
pub(crate) fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if inline() {
        (a(), b())
    } else {
        rayon::join(a, b)
    }
}

/// `f` of every item, in order, in parallel unless inline.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    if inline() {
        items.iter().map(f).collect()
    } else {
        items.par_iter().map(f).collect()
    }
}

/// `f` of every item with a state made by `init` for each run of items one thread
/// takes (one state for all of them inline), in order, in parallel unless inline.
pub(crate) fn map_init<T: Sync, S, R: Send>(
    items: &[T],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &T) -> R + Sync + Send,
) -> Vec<R> {
    if inline() {
        let mut state = init();
        items.iter().map(|item| f(&mut state, item)).collect()
    } else {
        items.par_iter().map_init(init, f).collect()
    }
}

/// `f(i)` for `i` in `0..n`, in order, in parallel unless inline.
pub(crate) fn map_range<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    if inline() {
        (0..n).map(f).collect()
    } else {
        (0..n).into_par_iter().map(f).collect()
    }
}
