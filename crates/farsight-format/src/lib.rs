//! farsight-format owns the farsight container file and the mesh encodings inside it:
//! the identifier and version word, the length-prefixed RON manifest (generic over the
//! asset kind's serde type), the aligned record table with deduplicated records, and
//! the record kinds of meshes: full precision (version 1), cooked for a GPU (version 2)
//! and cluster-LOD levels. It is a run-time crate: a game links it to read files, so
//! its decoders depend on nothing made for baking. The cooking encoders sit behind the
//! `encode` feature; the `portable` feature compiles the portable decode loops other
//! targets run on x86_64 too, in place of its SIMD forms (the same bits). It must
//! not know about any asset kind's meaning (buildings, tiles, terrain), importers,
//! simplifiers or how a renderer uploads what it decodes.
//!
//! Reading a file:
//!
//! ```no_run
//! use farsight_format::{AlignedBytes, ClusterLevel, ClusterMeshManifest, Container};
//! let bytes = AlignedBytes::read_file("model.farsight")?;
//! let file = Container::<ClusterMeshManifest>::read(&bytes)?;
//! for level in &file.manifest().levels {
//!     let record = file.record(level.record)?;
//!     let level = ClusterLevel::parse(record.bytes)?;
//!     println!("{} clusters", level.clusters.len());
//! }
//! # Ok::<(), farsight_format::FormatError>(())
//! ```
//!
//! Writing one: see [`FileWriter`].
//!
//! What the bytes of every record kind mean, byte by byte (enough to write a reader
//! from): `FORMAT.md` beside this crate's `Cargo.toml`.

#![warn(missing_docs)]

#[cfg(target_endian = "big")]
compile_error!("farsight-format reads little-endian records in place");

// The crate under its own name, for test support files shared with the integration
// tests (`tests/support/obj.rs` imports `farsight_format::MeshData`).
#[cfg(test)]
extern crate self as farsight_format;

mod aligned;
mod buckets;
mod cluster;
mod coding;
mod container;
#[cfg(feature = "encode")]
mod cook;
mod cooked;
mod cost;
mod decode;
mod describe;
mod error;
mod full;
mod head;
mod instances;
mod layout;
mod material;
mod meshopt_into;
mod predict;
pub mod quant;
mod reader;
/// A plain reader written from `FORMAT.md` alone, for tests that hold the fast
/// readers to it (not part of the API).
#[doc(hidden)]
pub mod reference;
mod set;
#[cfg(simd_x86)]
mod simd;
mod unwalk;
mod varint;
mod walk;

pub use aligned::AlignedBytes;
pub use cluster::{
    enclosing_sphere, encode_cluster_level, error_bounds, push_cluster_slot, ClusterGeometry,
    ClusterGeometryEntry, ClusterInfo, ClusterLevel, ClusterLevelEntry, ClusterLevelHeader,
    ClusterMeshManifest, ClusterVertex, FloatVertex, OctCache, CLUSTER_SLOT_SHIFT,
    CLUSTER_SLOT_TRIANGLES, NO_PARENT_ERROR,
};
pub use container::FileWriter;
#[cfg(feature = "encode")]
pub use cook::{cook_mesh, cook_meshes, CookConfig};
#[cfg(feature = "encode")]
pub use cooked::compact_record;
pub use cooked::{
    max_extent, Codec, CookedHeader, CookedMesh, StreamDesc, EXPANSION_SLACK, MAX_EXPANSION,
};
pub use decode::DecodeScratch;
pub use describe::{describe_record, RecordSummary, StreamSummary};
pub use error::{FormatError, Section, Stream};
pub use full::{encode_full, FullMesh, FullMeshHeader, MeshData};
pub use head::{FileHead, RecordRange};
pub use instances::{check_instances, check_transform, Instance};
pub use layout::{RecordIndex, RecordTag, Version, IDENTIFIER, RECORD_ALIGN};
pub use material::{
    AlphaMode, ImageFormat, Material, MaterialExtras, MaterialTable, Texture, TextureData,
    TextureSlot, UvTransform, Wrap, TEXTURE_TAG,
};
pub use reader::{verify_record_crc, Container, Manifest, RawFile, ReadConfig, Record};
#[cfg(feature = "encode")]
pub use set::cook_mesh_set;
pub use set::{CookedSet, CookedSetHeader, PartSpan, SetCodec, Spans, SET_VERSION};
