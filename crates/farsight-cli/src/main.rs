//! `farsight`: the command line of the farsight toolkit.
//!
//! Each subcommand lives in its own module; this file only parses arguments and
//! dispatches. Subcommands print reports to stdout and progress to stderr.
#![warn(missing_docs)]

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Every command's `println!`: this one shadows the standard macro in every module
/// below (they are declared after it), so a reader that closes stdout early
/// (`farsight cook mesh ... | head -1`) ends the command quietly instead of panicking.
macro_rules! println {
    () => {
        $crate::output::print_line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::print_line(format_args!($($arg)*))
    };
}

/// Every command's `print!`, for the same reason as `println!`.
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::print_text(format_args!($($arg)*))
    };
}

mod bake_buildings;
mod city_picture;
mod cook;
mod demo;
mod inspect;
mod output;
mod picture;
mod sample_meshes;
mod stream_sim;
mod terrain;
mod world;

#[derive(Parser)]
#[command(
    name = "farsight",
    version,
    about = "Draw and stream very large 3D worlds"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// A city block of buildings and street lamps through the visibility pass:
    /// culling and per-building level of detail over a camera flight, with a picture;
    /// then the terrain and streaming demos at a small size.
    Demo(demo::DemoArgs),
    /// What a farsight container file holds: identifier, version, manifest, records.
    Inspect(inspect::InspectArgs),
    /// Cook source assets into farsight files (`cook mesh IN... -o OUT`).
    Cook(cook::CookArgs),
    /// Region and cluster-level streaming over a scripted flight with a teleport.
    StreamSim(stream_sim::StreamSimArgs),
    /// Voxel terrain: generate, fly over it with edits, mesh in the background,
    /// collide; writes a picture from above coloured by level of detail.
    Terrain(terrain::TerrainArgs),
    /// Bake content: `bake buildings --kit K --grid N -o DIR` bakes a city of procedural
    /// buildings with their levels of detail.
    Bake(bake_buildings::BakeArgs),
    /// One world: `world build -o DIR` writes terrain, buildings, models and props in
    /// regions; `world fly DIR` flies it under one budget; `world replay FILE` checks
    /// a recorded flight decision by decision.
    World(world::WorldArgs),
    // Helpers: add one variant per subcommand here, each backed by its own module.
}

fn allow_negative_numbers(cmd: clap::Command) -> clap::Command {
    cmd.allow_negative_numbers(true)
        .mut_subcommands(allow_negative_numbers)
}

fn dispatch(command: Command) -> Result<(), Box<dyn std::error::Error>> {
    match command {
        Command::Demo(args) => demo::run(args),
        Command::Bake(args) => bake_buildings::run(args),
        Command::Cook(args) => cook::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Terrain(args) => terrain::run(args),
        Command::StreamSim(args) => stream_sim::run(args),
        Command::World(args) => world::run(args),
    }
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    // Negative numbers are values, not flags (`--x -5` as well as `--x=-5`), in every
    // subcommand, including those added later.
    let matches = allow_negative_numbers(Cli::command()).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // A closed stdout unwinds out of the command (its destructors run) and ends it
    // with success, as `inspect` always did; any other panic goes on as it was.
    let result = match std::panic::catch_unwind(|| dispatch(cli.command)) {
        Ok(result) => result,
        Err(payload) if payload.is::<output::StdoutClosed>() => return ExitCode::SUCCESS,
        Err(payload) => std::panic::resume_unwind(payload),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Errors that already quote their source (an I/O error after its path)
            // are printed once: a cause is shown only when it adds words.
            let mut said = e.to_string();
            output::say(format_args!("error: {said}"));
            let mut source = e.source();
            while let Some(s) = source {
                let text = s.to_string();
                if !said.contains(&text) {
                    output::say(format_args!("  caused by: {text}"));
                    said.push_str(&text);
                }
                source = s.source();
            }
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option of every subcommand (however deep) says what it is, in words a
    /// user has: no references to design documents.
    #[test]
    fn every_option_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let id = a.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                match a.get_help() {
                    None => missing.push(format!("{path} --{id}: no help")),
                    Some(h) if h.to_string().to_lowercase().contains("seed 00") => {
                        missing.push(format!("{path} --{id}: speaks of seeds"))
                    }
                    Some(_) => {}
                }
            }
            if let Some(about) = cmd.get_about() {
                if about.to_string().to_lowercase().contains("seed 00") {
                    missing.push(format!("{path}: about speaks of seeds"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "farsight", &mut missing);
        assert!(missing.is_empty(), "{missing:#?}");
    }
}
