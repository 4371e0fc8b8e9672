//! farsight-terrain's integration tests: one program (one link), a module per topic.
//! `no_alloc` installs farsight-testkit's counting allocator for the whole program;
//! it counts per thread, so the other tests still run beside it.

mod background;
mod collision;
mod common;
mod frame;
mod io;
mod meshing;
mod no_alloc;
mod picking;
mod seams;
mod solver;
mod storage;
mod water;
