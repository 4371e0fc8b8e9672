//! farsight-cli's integration tests, one program (one link): the command line as
//! a user meets it, the cooked cluster file read by the streamer, materials kept by
//! `cook mesh`, and the `world` commands, each a module.

mod cli;
mod cooked_stream;
mod materials;
mod world;
