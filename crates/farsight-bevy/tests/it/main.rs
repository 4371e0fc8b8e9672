//! farsight-bevy's integration tests, one program (one link of Bevy) with a module
//! per area. `tests/no_alloc.rs` is the other program: its counting allocator would
//! see the allocations of the tests beside it (Bevy's task pools are shared by every
//! app in a process), so it runs alone.
//!
//! The GPU tests (`gpu_cut`, `gpu_bevy`, `gpu_prepass`) skip where no adapter can run the GPU path;
//! `.ci/screenshots` runs them with `FARSIGHT_REQUIRE_GPU=1` through the filter
//! `gpu_`. `gpu_bevy` and `gpu_prepass` render each picture in a child process (this program again,
//! filtered to its one test), so no Bevy renderer shares a process with another.
//! `gpu_alloc` counts allocations with the counting allocator installed here, in a
//! child process of its own for the same reason.

use farsight_testkit::CountingAlloc;

/// Counts allocations for `gpu_alloc` (and forwards everything to the system's).
#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

mod common;

mod assets;
mod buildings;
mod chain_materials;
mod cluster_materials;
mod clusters;
mod gpu_alloc;
mod gpu_bevy;
mod gpu_cut;
mod gpu_prepass;
mod gpu_requests;
mod lod;
mod prelude;
mod regions;
mod terrain;
