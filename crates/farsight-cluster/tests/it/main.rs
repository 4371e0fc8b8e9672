//! farsight-cluster's integration tests, one program (one link) with a module per
//! topic. The program installs farsight-testkit's counting allocator (`no_alloc`);
//! it counts per thread, so the tests still run in parallel.

mod cut_and_levels;
mod no_alloc;
