//! farsight-view's integration tests: one program (one link), a module per topic.
//! The no-allocation test is a program of its own (`tests/no_alloc.rs`): it counts
//! every thread's allocations, which tests running beside it would disturb.

mod common;
mod fox_posed_bounds;
mod lod;
mod memory;
mod reference;
