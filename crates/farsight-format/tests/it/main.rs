//! farsight-format's integration tests, one program (one link) with a module per
//! area; `tests/reference.rs` (the fast readers held to the plain reference reader
//! over the corpus) is the other, slower program.

use farsight_testkit::CountingAlloc;

/// Counts allocations for `decode_alloc` (which counts its own thread only, so the
/// other tests running beside it do not disturb it).
#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::new();

#[path = "../support/obj.rs"]
mod obj;
#[path = "../support/tile.rs"]
mod tile;

mod cluster;
mod container;
mod decode_alloc;
mod materials;
mod mesh;
mod random_inputs;
mod set;
mod streamed;
mod uv_from_positions;
