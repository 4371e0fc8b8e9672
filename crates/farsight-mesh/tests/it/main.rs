//! farsight-mesh's integration tests, one program (one link) with a module per
//! area; `common` holds the meshes they share.

mod common;

mod bad_input;
mod chain_and_skin;
mod chain_read_by_format;
mod cluster_dag;
mod import;
mod instances;
mod materials;
mod required_extensions;
mod version_word;
