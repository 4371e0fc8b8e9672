//! `farsight`: the command line of the farsight toolkit.
//!
//! Each subcommand lives in its own module; this file only parses arguments and
//! dispatches. Subcommands print reports to stdout and progress to stderr.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bake_buildings;
mod cook;
mod demo;
mod inspect;
mod stream_sim;
mod terrain;

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
    /// Seed 000's city block: visibility, culling and entity LOD over a camera flight.
    Demo(demo::DemoArgs),
    /// What a farsight container file holds: identifier, version, manifest, records.
    Inspect(inspect::InspectArgs),
    /// Cook source assets into farsight files (`cook mesh IN... -o OUT`).
    Cook(cook::CookArgs),
    /// Region and cluster-level streaming over a scripted flight with a teleport.
    StreamSim(stream_sim::StreamSimArgs),
    /// Seed 001's voxel terrain: generate, fly with edits, mesh, collide; PNG by level.
    Terrain(terrain::TerrainArgs),
    /// Bake content: `bake buildings --kit K --grid N -o DIR` (seed 004).
    Bake(bake_buildings::BakeArgs),
    // Helpers: add one variant per subcommand here, each backed by its own module.
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let result: Result<(), Box<dyn std::error::Error>> = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Bake(args) => bake_buildings::run(args),
        Command::Cook(args) => cook::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Terrain(args) => terrain::run(args),
        Command::StreamSim(args) => stream_sim::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            let mut source = e.source();
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::FAILURE
        }
    }
}
