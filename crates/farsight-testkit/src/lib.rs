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
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// A global allocator that counts allocations and reallocations and forwards every call
/// to the system allocator. Install it in a test program with
/// `#[global_allocator] static A: CountingAlloc = CountingAlloc::new();`, then compare
/// [`CountingAlloc::count`] around the code that must not allocate.
pub struct CountingAlloc {
    count: AtomicU64,
}

impl CountingAlloc {
    /// A counter at zero.
    pub const fn new() -> Self {
        Self {
            count: AtomicU64::new(0),
        }
    }

    /// Allocations and reallocations so far, in every thread of the program.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

impl Default for CountingAlloc {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees are ours; the counter is a relaxed atomic with no other effect.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.count.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.count.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.count.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`; the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
