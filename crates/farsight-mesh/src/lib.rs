//! farsight-mesh owns the bake-time mesh pipeline (docs/design/cooked-meshes.md,
//! docs/design/region-streaming-and-cluster-lod.md#the-cluster-dag-bake-time,
//! docs/design/visibility-pass.md#generated-lod-chains): import
//! (glTF 2.0 through `gltf`, OBJ through `tobj`) with typed errors and repair
//! warnings, preparation (split per material, meshoptimizer's vertex cache,
//! overdraw and fetch optimisation, bounds), discrete LOD chains
//! (`generate_lod_chain`), and the cluster LOD DAG built with `clod_build`'s steps on
//! meshoptimizer's clusteriser and simplifiers (one DAG per material, so a cluster
//! never mixes materials; a group's simplification kept only where it keeps the
//! surface, stuck borders held), stamped, checked
//! and packed into `farsight-format`'s cluster level records. It
//! also loads glTF skins for posed bounds.
//!
//! It is a bake-time crate: games do not link it. It must not own run-time
//! selection (the cut and residency levels live in `farsight-cluster`, which the
//! cook reuses to check its own output), file layout (`farsight-format`), or LOD
//! rules (`farsight-lod`). Its DAG loop (`clod.rs`) keeps meshoptimizer's steps
//! and settings (`clod_build` is its benchmark peer) and refuses a result it
//! cannot trust.
//!
//! ```no_run
//! use farsight_mesh::{cook_file, write_atomically, ClusterConfig, CookKind};
//! let out = cook_file("bunny.obj".as_ref(), &CookKind::Clusters(ClusterConfig::default()))?;
//! write_atomically("bunny.farsight".as_ref(), &out.bytes)?;
//! # Ok::<(), farsight_mesh::CookError>(())
//! ```

#![warn(missing_docs)]

mod chain_file;
mod clod;
mod cook;
mod dag;
mod edges;
mod encode;
pub use encode::{encode_cluster_scene, encode_cluster_scene_with};
mod error;
mod gltf_import;
mod lod_chain;
mod looks;
mod mesh;
mod obj_import;
mod pack;
mod par;
mod prepare;
mod repair;
mod skin;
mod sort;
mod split;
mod tangents;
mod validate;

pub use chain_file::{
    decode_lod_entry, decode_lod_record, decode_lod_submesh, encode_lod_chain, encode_lod_chain_as,
    encode_lod_chains, encode_lod_chains_with, read_lod_chain, ChainRecords, LodChainManifest,
    LodGeometryEntry, LodLevelEntry, LodSubMeshEntry, LOD_SUBMESH_TAG,
};
pub use cook::{
    cook_file, cook_file_with, cook_files, cook_inputs, import, import_prepared, write_atomically,
    CookKind, CookOutput, Cooked,
};
pub use dag::{
    build_dag, build_dag_locked, clod_build_raw, BuiltDag, ClusterConfig, DagCluster, DagGroup,
    RawDag,
};
pub use error::{CookError, ImportError, ImportErrorKind, Warning};
pub use gltf_import::{
    import_gltf, import_gltf_instanced, import_gltf_instances, InstancedMesh, InstancedScene,
};
pub use lod_chain::{
    generate_lod_chain, one_pixel_distance, LodChain, LodChainConfig, LodChainLevel,
    REFERENCE_VIEWPORT_HEIGHT,
};
pub use looks::{gather_looks, Looks, StoredImage, TextureConfig};
pub use mesh::{ImportConfig, ImportedScene, Instance, Mesh, SubMesh, TransformMode, Vertex};
pub use obj_import::import_obj;
pub use pack::{cook_clusters, cook_clusters_encoded, stamp_levels, ClusterMesh, PackedLevel};
pub use prepare::{optimize_submesh, prepare, PreparedMesh};
pub use skin::{load_skinned_meshes, SkinnedMesh};
pub use split::{MaterialPart, MaterialSplit, RawInput};
pub use tangents::{fit_tangents, generate_tangents};
pub use validate::{check_cluster_levels, check_cluster_materials, uniform_cut};

/// Attribute stream the DAG build hands the simplifier (normal xyz, uv): exposed
/// for the benchmark's raw `clod_build` baseline.
pub fn simplifier_attributes(vertices: &[Vertex]) -> Vec<f32> {
    dag::attributes(vertices)
}

/// The unit tests' xorshift generator: `next(n)` is a number below `n`.
#[cfg(test)]
pub(crate) fn test_numbers(mut x: u64) -> impl FnMut(u64) -> u64 {
    move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}
