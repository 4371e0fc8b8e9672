//! Whole-file cooks: import, prepare, then a discrete chain or the cluster DAG,
//! one mesh or several in parallel.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::chain_file::{encode_lod_chains_with, ChainRecords};
use crate::dag::ClusterConfig;
use crate::encode::encode_cluster_scene_with;
use crate::error::{CookError, ImportError, ImportErrorKind};
use crate::lod_chain::{generate_lod_chain, LodChain, LodChainConfig};
use crate::looks::{gather_looks, Looks, TextureConfig};
use crate::mesh::{ImportConfig, ImportedScene, Mesh};
use crate::pack::{cook_clusters, cook_clusters_encoded, ClusterMesh};
use crate::prepare::{prepare, PreparedMesh};
use crate::tangents::fit_tangents;
use crate::{gltf_import, obj_import, Warning};

/// Imports `.gltf`, `.glb` or `.obj` by extension.
pub fn import(path: &Path, options: &ImportConfig) -> Result<ImportedScene, ImportError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "gltf" | "glb" => gltf_import::import_gltf(path, options),
        "obj" => obj_import::import_obj(path),
        _ => Err(ImportError::new(
            path,
            ImportErrorKind::UnknownExtension { found: ext },
        )),
    }
}

/// Imports with node transforms applied and prepares the one resulting mesh.
pub fn import_prepared(path: &Path) -> Result<(PreparedMesh, Vec<Warning>), ImportError> {
    let (mesh, warnings) = import(path, &ImportConfig::default())?.into_mesh();
    Ok((prepare(&mesh), warnings))
}

/// What to cook.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CookKind {
    /// A discrete LOD chain, its sub-meshes stored as `ChainRecords` says.
    LodChain(LodChainConfig, ChainRecords),
    /// A cluster LOD DAG.
    Clusters(ClusterConfig),
}

/// A cooked result.
#[derive(Clone, Debug, PartialEq)]
pub enum Cooked {
    /// One chain per geometry (one for most files), and the instances placing them
    /// when the source drew a mesh more than once (empty otherwise).
    LodChain {
        /// The chains, geometry 0 first.
        chains: Vec<LodChain>,
        /// The placements of the geometries.
        instances: Vec<farsight_format::Instance>,
    },
    /// One cluster DAG (a mesh drawn once, or one mesh drawn several times).
    Clusters(ClusterMesh),
    /// The cluster DAGs of a scene drawing several distinct meshes, some of them
    /// more than once: one per geometry (stored once, in its own space) and the
    /// placements drawing them.
    ClusterScene {
        /// One DAG per geometry, geometry 0 first.
        meshes: Vec<ClusterMesh>,
        /// The placements drawing the geometries.
        placements: Vec<farsight_format::Instance>,
    },
}

/// One finished cook: the file bytes and what it reported.
#[derive(Clone, Debug, PartialEq)]
pub struct CookOutput {
    /// The source file cooked.
    pub input: PathBuf,
    /// What was cooked, before encoding.
    pub cooked: Cooked,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// What was repaired or dropped on the way.
    pub warnings: Vec<Warning>,
    /// The materials in the file's manifest and the images they use; unless
    /// embedded, the images belong beside the file ([`Looks::write_beside`]).
    pub looks: Looks,
}

/// Cooks one file into container bytes (nothing is written on failure). A glTF
/// that draws a mesh more than once (nodes sharing it, `EXT_mesh_gpu_instancing`)
/// keeps every drawn mesh once, in its own space, with the placements in the
/// manifest: a LOD chain file one chain per mesh, a cluster DAG file one DAG per
/// mesh ([`Cooked::ClusterScene`]; one mesh placed several times is
/// [`Cooked::Clusters`] with its `instances`).
///
/// The file's materials and textures are kept ([`cook_file_with`] with the
/// default [`TextureConfig`]: images to be stored beside the file, as the
/// source gave them).
pub fn cook_file(path: &Path, kind: &CookKind) -> Result<CookOutput, CookError> {
    cook_file_with(path, kind, &TextureConfig::default())
}

/// [`cook_file`] with textures stored as `textures` says.
pub fn cook_file_with(
    path: &Path,
    kind: &CookKind,
    textures: &TextureConfig,
) -> Result<CookOutput, CookError> {
    match kind {
        CookKind::LodChain(config, records) => cook_chains(path, config, records, textures),
        CookKind::Clusters(config) => cook_dag(path, config, textures),
    }
}

/// The looks of `path` for the materials `meshes` use, with the uv transforms
/// they share applied to `meshes` and tangents kept or made exactly on the
/// sub-meshes whose material has a normal texture ([`fit_tangents`]), and the
/// warnings.
fn looks_of(
    path: &Path,
    meshes: &mut [Mesh],
    textures: &TextureConfig,
) -> Result<(Looks, Vec<Warning>), ImportError> {
    let mut used: Vec<&str> = Vec::new();
    for s in meshes.iter().flat_map(|m| &m.submeshes) {
        if !used.contains(&s.material.as_str()) {
            used.push(&s.material);
        }
    }
    let (looks, warnings) = gather_looks(path, &used, textures)?;
    let normal_mapped = |name: &str| {
        looks
            .table
            .get(name)
            .is_some_and(|m| m.normal_texture.is_some())
    };
    for m in meshes {
        looks.apply_uv_transforms(m);
        fit_tangents(m, normal_mapped);
    }
    Ok((looks, warnings))
}

/// The cluster DAG cook (see [`cook_file`]).
fn cook_dag(
    path: &Path,
    config: &ClusterConfig,
    textures: &TextureConfig,
) -> Result<CookOutput, CookError> {
    let Some((mut geometries, mut warnings, placements)) = scene_import(path)? else {
        let (prepared, mut warnings) = import_prepared(path)?;
        let mut meshes = [prepared.mesh];
        let (looks, more) = looks_of(path, &mut meshes, textures)?;
        warnings.extend(more);
        let (mesh, bytes) = if looks.table.is_empty() {
            cook_clusters_encoded(&meshes[0], config)?
        } else {
            let mesh = cook_clusters(&meshes[0], config)?;
            let bytes = encode_cluster_scene_with(&[&mesh], &[], &looks)?;
            (mesh, bytes)
        };
        warnings.extend(mesh.warnings.iter().cloned());
        return Ok(CookOutput {
            input: path.to_owned(),
            cooked: Cooked::Clusters(mesh),
            bytes,
            warnings,
            looks,
        });
    };
    let (looks, more) = looks_of(path, &mut geometries, textures)?;
    warnings.extend(more);
    let (cooked, bytes) = if geometries.len() == 1 {
        // One mesh placed several times: cooked once, named as the file, with its
        // placements in the manifest's `instances`.
        geometries[0].name = file_stem(path);
        let mut mesh = cook_clusters(&geometries[0], config)?;
        mesh.instances = placements.iter().map(|i| i.transform).collect();
        let bytes = encode_cluster_scene_with(&[&mesh], &[], &looks)?;
        warnings.extend(mesh.warnings.iter().cloned());
        (Cooked::Clusters(mesh), bytes)
    } else {
        // Several meshes, some drawn more than once: each geometry's DAG once (in
        // parallel), one file, the placements drawing them.
        let meshes = geometries
            .par_iter()
            .map(|g| cook_clusters(g, config))
            .collect::<Result<Vec<ClusterMesh>, CookError>>()?;
        let refs: Vec<&ClusterMesh> = meshes.iter().collect();
        let bytes = encode_cluster_scene_with(&refs, &placements, &looks)?;
        for m in &meshes {
            warnings.extend(m.warnings.iter().cloned());
        }
        (Cooked::ClusterScene { meshes, placements }, bytes)
    };
    Ok(CookOutput {
        input: path.to_owned(),
        cooked,
        bytes,
        warnings,
        looks,
    })
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map_or("mesh".into(), |s| s.to_string_lossy().into_owned())
}

/// The LOD chain cook: one chain per drawn geometry (see [`cook_file`]).
fn cook_chains(
    path: &Path,
    config: &LodChainConfig,
    records: &ChainRecords,
    textures: &TextureConfig,
) -> Result<CookOutput, CookError> {
    let (mut geometries, mut warnings, instances) = match scene_import(path)? {
        Some(scene) => scene,
        None => {
            let (prepared, warnings) = import_prepared(path)?;
            (vec![prepared.mesh], warnings, Vec::new())
        }
    };
    let (looks, more) = looks_of(path, &mut geometries, textures)?;
    warnings.extend(more);
    // The sub-meshes that need tangents have them now (`looks_of`): cooked records
    // make none of their own for the others.
    let records = match *records {
        ChainRecords::Cooked(options) => ChainRecords::Cooked(farsight_format::CookConfig {
            generate_tangents: false,
            ..options
        }),
        full => full,
    };
    let records = &records;
    let chains: Vec<LodChain> = geometries
        .par_iter()
        .map(|g| generate_lod_chain(g, config))
        .collect();
    for c in &chains {
        warnings.extend(c.warnings.iter().cloned());
    }
    let named: Vec<(&str, &LodChain)> = geometries
        .iter()
        .zip(&chains)
        .map(|(g, c)| (g.name.as_str(), c))
        .collect();
    let bytes = encode_lod_chains_with(&named, &instances, records, &looks)?;
    Ok(CookOutput {
        input: path.to_owned(),
        cooked: Cooked::LodChain { chains, instances },
        bytes,
        warnings,
        looks,
    })
}

/// A glTF that draws some mesh more than once ([`gltf_import::import_gltf_instances`]):
/// every drawn mesh prepared, the import's warnings and the instances.
type SceneImport = (Vec<Mesh>, Vec<Warning>, Vec<farsight_format::Instance>);

fn scene_import(path: &Path) -> Result<Option<SceneImport>, ImportError> {
    if !is_gltf(path) {
        return Ok(None);
    }
    Ok(gltf_import::import_gltf_instances(path)?.map(|scene| {
        let instances = scene
            .instances
            .iter()
            .map(|i| farsight_format::Instance {
                geometry: i.mesh as u32,
                transform: i.transform.to_cols_array(),
            })
            .collect();
        let meshes = scene.geometries.iter().map(|g| prepare(g).mesh).collect();
        (meshes, scene.warnings, instances)
    }))
}

fn is_gltf(path: &Path) -> bool {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    matches!(ext.as_str(), "gltf" | "glb")
}

/// Every file a cook of `path` reads, `path` first: a glTF's external buffers (by
/// relative URI, as the import loads them; data URIs are inside the file) and
/// images (those that exist), an OBJ's material libraries (`mtllib`, those that
/// exist). What
/// a content-addressed cache hashes as the cook's input bytes.
pub fn cook_inputs(path: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let err = |kind| ImportError::new(path, kind);
    let bytes = std::fs::read(path).map_err(|e| err(ImportErrorKind::Io(e)))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut files = vec![path.to_owned()];
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "gltf" | "glb" => {
            let gltf = gltf::Gltf::from_slice_without_validation(&bytes).map_err(|e| {
                err(ImportErrorKind::Gltf {
                    message: e.to_string(),
                })
            })?;
            for buffer in gltf.document.buffers() {
                if let gltf::buffer::Source::Uri(uri) = buffer.source() {
                    if !uri.starts_with("data:") && !uri.contains("://") {
                        files.push(base.join(uri.replace("%20", " ")));
                    }
                }
            }
            // Images the materials keep (those that exist: a missing one is a
            // warning of the cook, not a failure).
            // (From the JSON: the document is not validated here.)
            for image in &gltf.document.as_json().images {
                if let Some(uri) = &image.uri {
                    let file = base.join(uri.replace("%20", " "));
                    if !uri.starts_with("data:") && !uri.contains("://") && file.is_file() {
                        files.push(file);
                    }
                }
            }
        }
        "obj" => {
            let text = String::from_utf8_lossy(&bytes);
            for line in text.lines() {
                if let Some(names) = line.trim_start().strip_prefix("mtllib ") {
                    let lib = base.join(names.trim());
                    if lib.is_file() {
                        files.push(lib);
                    }
                }
            }
        }
        _ => {
            return Err(err(ImportErrorKind::UnknownExtension { found: ext }));
        }
    }
    Ok(files)
}

/// Cooks several files in parallel on rayon's pool; results in input order, each
/// independent (one failure does not stop the others).
pub fn cook_files(paths: &[PathBuf], kind: &CookKind) -> Vec<Result<CookOutput, CookError>> {
    paths.par_iter().map(|p| cook_file(p, kind)).collect()
}

/// Writes bytes to `path` through a temporary file and a rename, so a failed or
/// interrupted write never leaves a partial file under the final name.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CookError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let wrap = |source| CookError::Write {
        path: path.to_owned(),
        source,
    };
    std::fs::write(&tmp, bytes).map_err(wrap)?;
    std::fs::rename(&tmp, path).map_err(wrap)
}
