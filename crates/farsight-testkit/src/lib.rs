//! What farsight's tests share: where the real test meshes are, and a counting global
//! allocator for the no-allocation-per-frame tests. A dev-dependency only; no library
//! or binary of the workspace links it.
//!
//! ```
//! // A mesh vendored in the repository's `testdata/meshes`: present in every clone.
//! let bunny = farsight_testkit::mesh("bunny.obj");
//! assert!(bunny.ends_with("testdata/meshes/bunny.obj"));
//! // The corpus the whole-corpus tests walk: `../shared/data/meshes` beside the
//! // checkout when it is there, else the vendored subset.
//! assert!(!farsight_testkit::corpus().is_empty());
//! ```
//!
//! # Two sets of meshes
//! - `testdata/meshes/` (in the repository): a few small real meshes the default tests
//!   name one by one, so `cargo test --workspace` passes on a bare clone. Their sources
//!   and licences are in `testdata/README.md`.
//! - `../shared/data/meshes/` (beside the checkout, as CI lays it): the whole corpus.
//!   Tests that walk "every mesh" use it when it is there and the vendored subset
//!   otherwise. Set `FARSIGHT_REQUIRE_CORPUS=1` (as `.ci/run` does) to make its absence
//!   a failure that names the path instead.

#![warn(missing_docs)]
#![allow(unsafe_code)] // the counting allocator implements the unsafe `GlobalAlloc` trait

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The repository's root (the workspace folder holding `crates/` and `testdata/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The vendored meshes: `testdata/meshes` in the repository.
pub fn testdata_meshes() -> PathBuf {
    repo_root().join("testdata/meshes")
}

/// The whole corpus's folder as CI lays it: `../shared/data/meshes` beside the checkout.
pub fn shared_meshes() -> PathBuf {
    repo_root().join("../shared/data/meshes")
}

/// The environment variable that makes a missing shared corpus a failure.
pub const REQUIRE_CORPUS: &str = "FARSIGHT_REQUIRE_CORPUS";

fn corpus_required() -> bool {
    std::env::var_os(REQUIRE_CORPUS).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The path of a test mesh `rel` (`"bunny.obj"`, `"FlightHelmet/FlightHelmet.gltf"`):
/// the vendored copy when the repository has one, else the shared corpus's. Panics,
/// naming every place looked at, when neither has it.
pub fn mesh(rel: &str) -> PathBuf {
    let vendored = testdata_meshes().join(rel);
    if vendored.exists() {
        return vendored;
    }
    let shared = shared_meshes().join(rel);
    assert!(
        shared.exists(),
        "test mesh missing: {rel} is neither in {} nor in {} (the shared corpus CI lays \
         beside the checkout)",
        testdata_meshes().display(),
        shared_meshes().display()
    );
    shared
}

/// The folder the whole-corpus tests walk: the shared corpus when it is beside the
/// checkout, else the vendored subset. With `FARSIGHT_REQUIRE_CORPUS` set, a missing
/// shared corpus panics naming its path.
pub fn corpus_root() -> PathBuf {
    choose_corpus(&shared_meshes(), &testdata_meshes(), corpus_required())
}

/// [`corpus_root`]'s rule on explicit folders: `shared` when it is a folder, else
/// `vendored` unless `required`, in which case it panics naming `shared`.
pub fn choose_corpus(shared: &Path, vendored: &Path, required: bool) -> PathBuf {
    if shared.is_dir() {
        return shared.to_path_buf();
    }
    assert!(
        !required,
        "the shared corpus is missing: {} ({REQUIRE_CORPUS} is set, so the vendored subset \
         in {} does not stand in for it)",
        shared.display(),
        vendored.display()
    );
    vendored.to_path_buf()
}

/// Whether [`corpus_root`] is the whole shared corpus (and not the vendored subset).
pub fn corpus_is_shared() -> bool {
    corpus_root() == shared_meshes()
}

/// Every mesh file (OBJ, GLB, glTF) in [`corpus_root`] and its direct subfolders,
/// sorted by path, so a mesh added to the corpus is tested without a list.
pub fn corpus() -> Vec<PathBuf> {
    let root = corpus_root();
    let mut out = Vec::new();
    let mut push = |dir: &Path| {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in entries {
            let p = e
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .path();
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if p.is_file() && matches!(ext, "obj" | "glb" | "gltf") {
                out.push(p);
            }
        }
    };
    push(&root);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        push(&d);
    }
    out.sort();
    out
}

/// A fresh, empty folder for one test's files, named after the test program, the
/// process and `name`: `<temp>/farsight-<program>-<pid>-<name>`. Whatever a former
/// run left there is removed first; the folder is left behind for a look afterwards.
pub fn scratch(name: &str) -> PathBuf {
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "test".to_owned());
    let d = std::env::temp_dir().join(format!("farsight-{program}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    d
}

/// Which threads a counting window ([`CountingAlloc::open_window`]) counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// Every thread of the program.
    All,
    /// Only the threads that called [`CountingAlloc::mark_this_thread`] (the ones that
    /// run the code under test), so that other threads' allocations (a test harness,
    /// an engine's background pools) do not count.
    Marked,
}

thread_local! {
    // Const-initialised cells without destructors: the allocator reads them without
    // allocating, and they stay readable while a thread is torn down.
    /// [`CountingAlloc::count_this_thread`] is running on this thread.
    static THREAD_COUNTING: Cell<bool> = const { Cell::new(false) };
    /// Allocations counted by [`CountingAlloc::count_this_thread`] on this thread.
    static THREAD_COUNT: Cell<u64> = const { Cell::new(0) };
    /// A [`Threads::Marked`] window counts this thread.
    static MARKED: Cell<bool> = const { Cell::new(false) };
    /// The allocator is printing a backtrace on this thread: what that allocates is
    /// not counted (and not traced again).
    static TRACING: Cell<bool> = const { Cell::new(false) };
}

/// A global allocator that counts allocations (reallocations and zeroed ones included)
/// and forwards every call to the system allocator. One test program installs it:
/// `#[global_allocator] static A: CountingAlloc = CountingAlloc::new();`.
///
/// Three ways to count, by how much of the program may allocate meanwhile:
/// - [`count`](Self::count): every allocation of every thread since the start; compare
///   it around code that must not allocate when nothing else runs.
/// - [`count_this_thread`](Self::count_this_thread): only the calling thread, while a
///   closure runs; worker threads and other tests do not disturb it.
/// - A window ([`open_window`](Self::open_window) .. [`close_window`](Self::close_window),
///   read with [`window_count`](Self::window_count)): every thread, or only the marked
///   ones, between two points that may lie in different functions (a scheduler's
///   systems, a thread pool's frames).
///
/// [`set_backtraces`](Self::set_backtraces) prints the backtrace of each allocation the
/// last two count, to find where it comes from.
///
/// ```
/// use farsight_testkit::CountingAlloc;
/// // A test program would install it with `#[global_allocator]`; here it only counts
/// // the calls made on it directly.
/// static A: CountingAlloc = CountingAlloc::new();
/// assert_eq!(A.count(), 0);
/// ```
pub struct CountingAlloc {
    total: AtomicU64,
    window_open: AtomicBool,
    window_marked_only: AtomicBool,
    window: AtomicU64,
    backtraces: AtomicBool,
}

impl CountingAlloc {
    /// A counter at zero, no window open, no backtraces.
    pub const fn new() -> Self {
        Self {
            total: AtomicU64::new(0),
            window_open: AtomicBool::new(false),
            window_marked_only: AtomicBool::new(false),
            window: AtomicU64::new(0),
            backtraces: AtomicBool::new(false),
        }
    }

    /// Allocations and reallocations so far, in every thread of the program.
    pub fn count(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Runs `f` and returns the allocations this thread made while it ran (other
    /// threads' are not counted), with `f`'s result.
    pub fn count_this_thread<R>(&self, f: impl FnOnce() -> R) -> (u64, R) {
        THREAD_COUNT.with(|n| n.set(0));
        THREAD_COUNTING.with(|c| c.set(true));
        let r = f();
        THREAD_COUNTING.with(|c| c.set(false));
        (THREAD_COUNT.with(Cell::get), r)
    }

    /// Marks the calling thread as one a [`Threads::Marked`] window counts (for a
    /// thread pool, call it from the pool's start handler). It stays marked.
    pub fn mark_this_thread() {
        MARKED.with(|m| m.set(true));
    }

    /// Starts counting the allocations of `threads` into [`window_count`](Self::window_count),
    /// which keeps what earlier windows counted until [`reset_window`](Self::reset_window).
    pub fn open_window(&self, threads: Threads) {
        self.window_marked_only
            .store(threads == Threads::Marked, Ordering::SeqCst);
        self.window_open.store(true, Ordering::SeqCst);
    }

    /// Stops counting into the window.
    pub fn close_window(&self) {
        self.window_open.store(false, Ordering::SeqCst);
    }

    /// Allocations counted by the windows since the last [`reset_window`](Self::reset_window).
    pub fn window_count(&self) -> u64 {
        self.window.load(Ordering::SeqCst)
    }

    /// Sets [`window_count`](Self::window_count) back to zero.
    pub fn reset_window(&self) {
        self.window.store(0, Ordering::SeqCst);
    }

    /// Whether to print (to stderr) the backtrace of every allocation that
    /// [`count_this_thread`](Self::count_this_thread) or a window counts. What the
    /// printing itself allocates is not counted.
    pub fn set_backtraces(&self, on: bool) {
        self.backtraces.store(on, Ordering::SeqCst);
    }

    fn note(&self) {
        self.total.fetch_add(1, Ordering::Relaxed);
        if TRACING.try_with(Cell::get).unwrap_or(false) {
            return;
        }
        let mut counted = false;
        if THREAD_COUNTING.try_with(Cell::get).unwrap_or(false) {
            let _ = THREAD_COUNT.try_with(|n| n.set(n.get() + 1));
            counted = true;
        }
        if self.window_open.load(Ordering::Relaxed)
            && (!self.window_marked_only.load(Ordering::Relaxed)
                || MARKED.try_with(Cell::get).unwrap_or(false))
        {
            self.window.fetch_add(1, Ordering::Relaxed);
            counted = true;
        }
        if counted
            && self.backtraces.load(Ordering::Relaxed)
            && TRACING.try_with(|t| t.replace(true)) == Ok(false)
        {
            let bt = std::backtrace::Backtrace::force_capture();
            eprintln!("allocation while counting:\n{bt}");
            let _ = TRACING.try_with(|t| t.set(false));
        }
    }
}

impl Default for CountingAlloc {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees are ours; counting touches only atomics and const-initialised
// thread-local cells, which neither allocate nor reach the allocator.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: the caller's contract, passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: the caller's contract, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.note();
        // SAFETY: `ptr` came from `System` with `layout`; the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(feature = "world")]
pub mod world;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    // The unit tests run on several threads at once: only counts that other tests
    // cannot raise (this thread's, a marked window with no other marked thread) are
    // compared exactly.
    #[global_allocator]
    static ALLOC: CountingAlloc = CountingAlloc::new();

    #[test]
    fn this_thread_counts_its_own_allocations_and_no_other_threads() {
        let (n, ()) = ALLOC.count_this_thread(|| {
            black_box(Box::new(1u64));
            let mut v: Vec<u64> = black_box(Vec::with_capacity(1));
            v.extend_from_slice(&[1, 2]); // grows: a reallocation
            black_box(&v);
            std::thread::scope(|s| {
                s.spawn(|| black_box(vec![0u8; 64])).join().unwrap();
            });
        });
        // The box, the vector, its growth; spawning allocates on this thread too, the
        // spawned thread's vector is not counted.
        assert!(n >= 3, "{n}");
        let (quiet, ()) = ALLOC.count_this_thread(|| {
            let x = black_box(3u64) * 2;
            black_box(x);
        });
        assert_eq!(quiet, 0);
        let (one, ()) = ALLOC.count_this_thread(|| drop(black_box(Box::new(7u32))));
        assert_eq!(one, 1);
    }

    #[test]
    fn a_marked_window_counts_only_marked_threads() {
        // A window over marked threads only: this thread is not marked, the spawned
        // one is.
        ALLOC.open_window(Threads::Marked);
        black_box(Box::new(1u8));
        let spawned = std::thread::spawn(|| {
            CountingAlloc::mark_this_thread();
            drop(black_box(Box::new(2u8)));
            drop(black_box(Box::new(3u8)));
        });
        spawned.join().unwrap();
        ALLOC.close_window();
        black_box(Box::new(4u8));
        assert_eq!(ALLOC.window_count(), 2);
        ALLOC.reset_window();
        assert_eq!(ALLOC.window_count(), 0);
        assert!(ALLOC.count() >= 4);
    }

    #[test]
    fn scratch_is_a_fresh_empty_folder() {
        let d = scratch("fresh");
        std::fs::write(d.join("left-over"), b"x").unwrap();
        let again = scratch("fresh");
        assert_eq!(d, again);
        assert_eq!(std::fs::read_dir(&again).unwrap().count(), 0);
        assert!(again.starts_with(std::env::temp_dir()));
    }

    #[test]
    fn a_required_corpus_that_is_missing_fails_naming_its_path() {
        let missing = Path::new("/nonexistent/shared/data/meshes");
        let r = std::panic::catch_unwind(|| choose_corpus(missing, &testdata_meshes(), true));
        let msg = *r.expect_err("must fail").downcast::<String>().unwrap();
        assert!(msg.contains("/nonexistent/shared/data/meshes"), "{msg}");
        assert!(msg.contains(REQUIRE_CORPUS), "{msg}");
        // Not required: the vendored subset stands in.
        assert_eq!(
            choose_corpus(missing, &testdata_meshes(), false),
            testdata_meshes()
        );
        // Present: the shared corpus, required or not.
        let here = testdata_meshes();
        assert_eq!(choose_corpus(&here, Path::new("/x"), true), here);
    }

    #[test]
    fn every_vendored_mesh_is_listed_in_the_testdata_readme() {
        let readme = std::fs::read_to_string(repo_root().join("testdata/README.md")).unwrap();
        for e in std::fs::read_dir(testdata_meshes()).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                readme.contains(&format!("meshes/{name}")),
                "{name} not in the README"
            );
        }
    }
}
