//! farsight-world's integration tests, one program (one link): the building files,
//! hand edits of a world's files, the loop's allocation-free steady state and the
//! loop over generated worlds, each a module.

mod building_files;
mod hand_edits;
mod no_alloc;
mod world_loop;
