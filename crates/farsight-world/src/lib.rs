//! farsight-world: one world on disk and one frame loop over it.
//!
//! A world is a folder: `world.ron` ([`WorldManifest`]) names the voxel terrain file,
//! the region scene (region 0 the base every other region needs), the cluster-LOD
//! models (one farsight level file per level), the baked buildings (each level made
//! resident by reading and checking its building file on the I/O threads) and the
//! entity-LOD props. [`World`] runs one loop per frame over it: region streaming
//! (BVH, states, sources) -> the visibility pass over every loaded object -> cluster
//! level residency from the same view -> terrain view and publication, under one
//! resident-memory budget and one upload budget per frame ([`Budget`]), with one bias
//! that coarsens every system under pressure.
//!
//! Every decision of a frame is a pure function of (state, inputs, completed I/O);
//! the I/O completions are inputs ([`FrameInput`]), so a [`Recording`] replays
//! through [`World::open_replay`] to the same per-frame, per-system hashes.
//!
//! This crate links no bake-time code (no importers, simplifier or CSG kernel): a
//! game can run the loop. Building a world lives in `farsight-cli`.
#![warn(missing_docs)]

mod budget;
mod building_io;
mod flight;
mod hash;
mod manifest;
mod record;
mod synthetic;
mod world;

pub use budget::{Budget, SystemId, SYSTEMS};
pub use building_io::{BuildingDone, MAX_BUILDING_FILE};
pub use flight::{Flight, FlightFrame};
pub use hash::DecisionHash;
pub use manifest::{
    BadField, BuildingEntry, BuildingLevel, EntityKind, ModelEntry, PropEntry, TerrainEntry,
    WorldError, WorldManifest, MANIFEST_FILE, MAX_LEVEL_BYTES, WORLD_VERSION,
};
pub use record::{Edit, FrameInput, Mismatch, RecordError, Recording, TerrainPublication};
pub use synthetic::{default_props, generate, SyntheticConfig};
pub use world::{
    FrameReport, SystemFrame, TerrainSplit, World, WorldConfig, BASES_PER_FRAME,
    PREFETCH_COLLIDERS_PER_FRAME, REGION_OBJECTS_PER_FRAME, REGION_READS_IN_FLIGHT,
};
