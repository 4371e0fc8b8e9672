//! farsight-building's integration tests: one program (one link), a module per topic;
//! `common` holds the test building, the counting kernel and the closed-solid check.
//! Every module but `recipe` needs the `bake` feature
//! (`cargo test -p farsight-building --features bake`).

mod bands;
mod common;
mod concat;
mod cooked;
mod files;
mod lod;
mod meshing;
mod recipe;
