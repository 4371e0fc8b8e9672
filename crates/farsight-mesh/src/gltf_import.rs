//! glTF 2.0 import (`.gltf` + `.bin`, `.glb`) through the `gltf` crate.
//!
//! Buffers are loaded here rather than by `gltf::import` so that images are never
//! decoded (a mesh cook does not need them) and so that every accessor is bounds
//! checked against the bytes actually present before the `gltf` reader slices them:
//! a short or lying file gives a typed error, never a panic.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use glam::{Mat3, Mat4, Vec3};
use gltf::accessor::{DataType, Dimensions};
use gltf::mesh::Mode;

use crate::error::{ImportError, ImportErrorKind};
use crate::mesh::{ImportConfig, ImportedScene, Instance, Mesh, SubMesh, TransformMode, Vertex};
use crate::repair::repair_submesh;

/// What a required glTF extension means for a mesh import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RequiredExtension {
    /// Carries no geometry (lights, cameras, materials, textures): import and say
    /// it was ignored.
    Ignorable,
    /// Changes the geometry (compressed or quantised vertex data, instancing) and
    /// farsight cannot read it: refuse.
    ChangesGeometry,
    /// Unknown to farsight: refuse, since it may change anything.
    Unknown,
}

/// Classifies one required extension by name.
pub(crate) fn classify_required_extension(name: &str) -> RequiredExtension {
    const GEOMETRY: &[&str] = &[
        "KHR_draco_mesh_compression",
        "EXT_meshopt_compression",
        "KHR_meshopt_compression",
        "KHR_mesh_quantization",
        "EXT_mesh_gpu_instancing",
    ];
    const NO_GEOMETRY_PREFIXES: &[&str] = &["KHR_materials_", "KHR_texture_", "EXT_texture_"];
    const NO_GEOMETRY: &[&str] = &[
        "KHR_lights_punctual",
        "EXT_lights_image_based",
        "KHR_xmp_json_ld",
        "KHR_animation_pointer",
        "MSFT_texture_dds",
    ];
    if GEOMETRY.contains(&name) {
        RequiredExtension::ChangesGeometry
    } else if NO_GEOMETRY.contains(&name)
        || NO_GEOMETRY_PREFIXES.iter().any(|p| name.starts_with(p))
    {
        RequiredExtension::Ignorable
    } else {
        RequiredExtension::Unknown
    }
}

/// A parsed glTF document with its buffers loaded and checked.
pub(crate) struct LoadedGltf {
    pub path: PathBuf,
    pub document: gltf::Document,
    pub buffers: Vec<Vec<u8>>,
    /// Required extensions carrying no geometry that the import ignores.
    pub ignored_extensions: Vec<String>,
}

impl LoadedGltf {
    pub fn err(&self, kind: ImportErrorKind) -> ImportError {
        ImportError::new(&self.path, kind)
    }

    /// Checks that `accessor` can be read whole from the loaded buffers.
    pub fn check_accessor(
        &self,
        accessor: &gltf::Accessor<'_>,
        what: &'static str,
    ) -> Result<(), ImportError> {
        let index = accessor.index();
        if accessor.sparse().is_some() {
            return Err(self.err(ImportErrorKind::SparseAccessor {
                accessor: index,
                what,
            }));
        }
        let Some(view) = accessor.view() else {
            return Err(self.err(ImportErrorKind::Gltf {
                message: format!("accessor {index} ({what}) has no buffer view"),
            }));
        };
        let data = &self.buffers[view.buffer().index()];
        let view_start = view.offset() as u64;
        let view_end = view_start + view.length() as u64;
        if view_end > data.len() as u64 {
            return Err(self.err(ImportErrorKind::AccessorOutOfBounds {
                accessor: index,
                what,
                start: view_start,
                end: view_end,
                available: data.len() as u64,
            }));
        }
        let count = accessor.count() as u64;
        if count == 0 {
            return Ok(());
        }
        let elem = accessor.size() as u64;
        let stride = view.stride().map_or(elem, |s| s as u64);
        let start = accessor.offset() as u64;
        let end = start + stride * (count - 1) + elem;
        if end > view.length() as u64 {
            return Err(self.err(ImportErrorKind::AccessorOutOfBounds {
                accessor: index,
                what,
                start: view_start + start,
                end: view_start + end,
                available: view_end,
            }));
        }
        Ok(())
    }

    /// Checks component type and shape, then bounds.
    pub fn check_typed(
        &self,
        accessor: &gltf::Accessor<'_>,
        what: &'static str,
        types: &[DataType],
        dims: Dimensions,
    ) -> Result<(), ImportError> {
        if !types.contains(&accessor.data_type()) || accessor.dimensions() != dims {
            return Err(self.err(ImportErrorKind::Gltf {
                message: format!(
                    "accessor {} ({what}) is {:?} {:?}, expected {dims:?} of {types:?}",
                    accessor.index(),
                    accessor.dimensions(),
                    accessor.data_type()
                ),
            }));
        }
        self.check_accessor(accessor, what)
    }

    /// A primitive's indices, checked for type and bounds; a non-indexed primitive
    /// gets `0..vertex_count`. (Range checks against the vertex count are the
    /// caller's, with its own error wording.)
    pub fn read_indices(
        &self,
        p: &gltf::Primitive<'_>,
        vertex_count: usize,
    ) -> Result<Vec<u32>, ImportError> {
        match p.indices() {
            Some(acc) => {
                self.check_typed(
                    &acc,
                    "indices",
                    &[DataType::U8, DataType::U16, DataType::U32],
                    Dimensions::Scalar,
                )?;
                Ok(p.reader(|b| self.buffers.get(b.index()).map(Vec::as_slice))
                    .read_indices()
                    .map(|r| r.into_u32().collect())
                    .unwrap_or_default())
            }
            None => Ok((0..vertex_count as u32).collect()),
        }
    }
}

/// Reads the file, checks required extensions, validates the document and loads
/// every buffer.
pub(crate) fn load_gltf(path: &Path) -> Result<LoadedGltf, ImportError> {
    load_gltf_buffers(path, false)
}

/// [`load_gltf`], loading with `images_only` just the buffers some image's buffer
/// view lies in (the others are left empty): what reading materials needs.
pub(crate) fn load_gltf_buffers(path: &Path, images_only: bool) -> Result<LoadedGltf, ImportError> {
    let err = |kind| ImportError::new(path, kind);
    let bytes = std::fs::read(path).map_err(|e| err(ImportErrorKind::Io(e)))?;
    let gltf = gltf::Gltf::from_slice_without_validation(&bytes).map_err(|e| {
        err(ImportErrorKind::Gltf {
            message: e.to_string(),
        })
    })?;
    // Required extensions first: the generic validation would only say "unsupported".
    let mut ignored_extensions = Vec::new();
    for name in gltf.document.extensions_required() {
        match classify_required_extension(name) {
            RequiredExtension::Ignorable => ignored_extensions.push(name.to_owned()),
            RequiredExtension::ChangesGeometry => {
                return Err(err(ImportErrorKind::GeometryExtensionUnsupported {
                    name: name.to_owned(),
                }))
            }
            RequiredExtension::Unknown => {
                return Err(err(ImportErrorKind::UnsupportedRequiredExtension {
                    name: name.to_owned(),
                }))
            }
        }
    }
    let gltf::Gltf { document, blob } = gltf;
    let mut root = document.into_json();
    // The ignored ones are no longer required of this reader (the gltf crate's
    // validation refuses any it does not know).
    root.extensions_required
        .retain(|n| !ignored_extensions.contains(n));
    let document = gltf::Document::from_json(root).map_err(|e| {
        err(ImportErrorKind::Gltf {
            message: format!("validation failed: {e}"),
        })
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut buffers = Vec::with_capacity(document.buffers().len());
    for buffer in document.buffers() {
        let index = buffer.index();
        let wanted = !images_only
            || document.as_json().images.iter().any(|i| {
                // Read from the JSON: the gltf crate's `Image::source` panics on an
                // image with a view and no MIME type, which validation lets through.
                i.buffer_view
                    .and_then(|v| document.views().nth(v.value()))
                    .is_some_and(|view| view.buffer().index() == index)
            });
        if !wanted {
            buffers.push(Vec::new());
            continue;
        }
        let data = match buffer.source() {
            gltf::buffer::Source::Bin => blob.clone().ok_or_else(|| {
                err(ImportErrorKind::MissingBuffer {
                    buffer: index,
                    uri: None,
                    reason: "the file has no binary chunk".into(),
                })
            })?,
            gltf::buffer::Source::Uri(uri) => load_uri(base, uri).map_err(|reason| {
                err(ImportErrorKind::MissingBuffer {
                    buffer: index,
                    uri: Some(uri.to_owned()),
                    reason,
                })
            })?,
        };
        if data.len() < buffer.length() {
            return Err(err(ImportErrorKind::BufferTooShort {
                buffer: index,
                declared: buffer.length() as u64,
                available: data.len() as u64,
            }));
        }
        buffers.push(data);
    }
    Ok(LoadedGltf {
        path: path.to_owned(),
        document,
        buffers,
        ignored_extensions,
    })
}

pub(crate) fn load_uri(base: &Path, uri: &str) -> Result<Vec<u8>, String> {
    if let Some(rest) = uri.strip_prefix("data:") {
        let Some((_, payload)) = rest.split_once(";base64,") else {
            return Err("data URI is not base64".into());
        };
        return base64::engine::general_purpose::STANDARD
            .decode(payload)
            .map_err(|e| format!("bad base64: {e}"));
    }
    if uri.contains("://") {
        return Err("only relative file URIs and data URIs are supported".into());
    }
    let decoded = uri.replace("%20", " ");
    let file = base.join(decoded);
    std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))
}

/// Imports a glTF file: one sub-mesh per placed primitive (or per mesh primitive
/// with [`TransformMode::KeepInstances`]), repaired and validated.
pub fn import_gltf(path: &Path, options: &ImportConfig) -> Result<ImportedScene, ImportError> {
    let file = load_gltf(path)?;
    let mut warnings = Vec::new();
    if !file.ignored_extensions.is_empty() {
        warnings.push(crate::Warning::RequiredExtensionsIgnored {
            names: file.ignored_extensions.clone(),
        });
    }
    let stem = path
        .file_stem()
        .map_or("mesh".into(), |s| s.to_string_lossy().into_owned());
    let placements = node_placements(&file);
    let mut scene = ImportedScene {
        meshes: Vec::new(),
        instances: Vec::new(),
        warnings: Vec::new(),
    };
    match options.transforms {
        TransformMode::Apply => {
            let mut submeshes = Vec::new();
            for (mesh_index, transform) in &placements {
                let mesh = file
                    .document
                    .meshes()
                    .nth(*mesh_index)
                    .expect("validated index");
                for p in mesh.primitives() {
                    submeshes.push(read_primitive(&file, &mesh, &p, *transform)?);
                }
            }
            scene.meshes.push(Mesh {
                name: stem,
                submeshes,
            });
        }
        TransformMode::KeepInstances => {
            for mesh in file.document.meshes() {
                let mut submeshes = Vec::new();
                for p in mesh.primitives() {
                    submeshes.push(read_primitive(&file, &mesh, &p, Mat4::IDENTITY)?);
                }
                let name = mesh
                    .name()
                    .map_or_else(|| format!("{stem}/mesh{}", mesh.index()), str::to_owned);
                scene.meshes.push(Mesh { name, submeshes });
            }
            scene.instances = placements
                .iter()
                .map(|&(mesh, transform)| Instance { mesh, transform })
                .collect();
        }
    }
    for mesh in &mut scene.meshes {
        let mut kept = Vec::with_capacity(mesh.submeshes.len());
        for mut s in std::mem::take(&mut mesh.submeshes) {
            repair_submesh(&mut s, &mut warnings).map_err(|k| file.err(k))?;
            if s.indices.is_empty() {
                warnings.push(crate::Warning::EmptySubmeshRemoved { submesh: s.name });
            } else {
                kept.push(s);
            }
        }
        mesh.submeshes = kept;
    }
    if scene.meshes.iter().all(|m| m.submeshes.is_empty()) {
        return Err(file.err(ImportErrorKind::Empty));
    }
    scene.warnings = warnings;
    Ok(scene)
}

/// `(mesh index, world transform)` for every node of the default scene (or of every
/// scene root when there is no default, or of every mesh when there are no scenes).
pub(crate) fn node_placements(file: &LoadedGltf) -> Vec<(usize, Mat4)> {
    let doc = &file.document;
    let roots: Vec<gltf::Node<'_>> = match doc.default_scene().or_else(|| doc.scenes().next()) {
        Some(scene) => scene.nodes().collect(),
        None => {
            return doc.meshes().map(|m| (m.index(), Mat4::IDENTITY)).collect();
        }
    };
    let mut out = Vec::new();
    // Explicit stack with a depth bound: a malformed file with a node cycle ends.
    let limit = doc.nodes().len();
    let mut stack: Vec<(gltf::Node<'_>, Mat4, usize)> = roots
        .into_iter()
        .rev()
        .map(|n| (n, Mat4::IDENTITY, 0))
        .collect();
    while let Some((node, parent, depth)) = stack.pop() {
        if depth > limit {
            continue;
        }
        let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
        if let Some(mesh) = node.mesh() {
            // glTF: a skinned mesh ignores its node's transform (the joints place
            // it), so it is imported in bind pose.
            let placed = if node.skin().is_some() {
                Mat4::IDENTITY
            } else {
                world
            };
            out.push((mesh.index(), placed));
        }
        let children: Vec<_> = node.children().collect();
        for c in children.into_iter().rev() {
            stack.push((c, world, depth + 1));
        }
    }
    out
}

fn read_primitive(
    file: &LoadedGltf,
    mesh: &gltf::Mesh<'_>,
    p: &gltf::Primitive<'_>,
    transform: Mat4,
) -> Result<SubMesh, ImportError> {
    let (mi, pi) = (mesh.index(), p.index());
    if p.mode() != Mode::Triangles {
        return Err(file.err(ImportErrorKind::NonTrianglePrimitive {
            mesh: mi,
            primitive: pi,
            mode: format!("{:?}", p.mode()),
        }));
    }
    let name = format!(
        "{}/{pi}",
        mesh.name()
            .map_or_else(|| format!("mesh{mi}"), str::to_owned)
    );
    let material = match (p.material().index(), p.material().name()) {
        (_, Some(n)) => n.to_owned(),
        (Some(i), None) => format!("material{i}"),
        (None, None) => "default".to_owned(),
    };
    let f32_only = [DataType::F32];
    let pos = p.get(&gltf::Semantic::Positions).ok_or_else(|| {
        file.err(ImportErrorKind::MissingPositions {
            mesh: mi,
            primitive: pi,
        })
    })?;
    file.check_typed(&pos, "POSITION", &f32_only, Dimensions::Vec3)?;
    let reader = p.reader(|b| file.buffers.get(b.index()).map(Vec::as_slice));
    let positions: Vec<[f32; 3]> = reader
        .read_positions()
        .map(Iterator::collect)
        .unwrap_or_default();
    let n = positions.len();
    let mut vertices: Vec<Vertex> = positions
        .iter()
        .map(|&position| Vertex {
            position,
            ..Vertex::default()
        })
        .collect();
    let (has_normals, has_tangents) = read_attributes(file, p, &name, &mut vertices)?;
    let indices = file.read_indices(p, n)?;
    let mut s = SubMesh {
        name,
        material,
        vertices,
        indices,
        has_tangents,
    };
    if !has_normals {
        // Marker for the repair step: all-zero normals are regenerated.
        for v in &mut s.vertices {
            v.normal = [0.0; 3];
        }
    }
    if transform != Mat4::IDENTITY {
        apply_transform(&mut s, transform);
    }
    Ok(s)
}

/// Primitive `p`'s normals, tangents and first uvs into `vertices` (one of each per
/// vertex, typed as glTF allows), each where the primitive has it; says whether it
/// had normals and tangents.
fn read_attributes(
    file: &LoadedGltf,
    p: &gltf::Primitive<'_>,
    name: &str,
    vertices: &mut [Vertex],
) -> Result<(bool, bool), ImportError> {
    let f32_only = [DataType::F32];
    let n = vertices.len();
    let reader = p.reader(|b| file.buffers.get(b.index()).map(Vec::as_slice));
    let mut has_normals = false;
    if let Some(acc) = p.get(&gltf::Semantic::Normals) {
        file.check_typed(&acc, "NORMAL", &f32_only, Dimensions::Vec3)?;
        let normals: Vec<[f32; 3]> = reader
            .read_normals()
            .map(Iterator::collect)
            .unwrap_or_default();
        count_matches(file, name, "NORMAL", normals.len(), n)?;
        for (v, nrm) in vertices.iter_mut().zip(normals) {
            v.normal = nrm;
        }
        has_normals = true;
    }
    let mut has_tangents = false;
    if let Some(acc) = p.get(&gltf::Semantic::Tangents) {
        file.check_typed(&acc, "TANGENT", &f32_only, Dimensions::Vec4)?;
        let tangents: Vec<[f32; 4]> = reader
            .read_tangents()
            .map(Iterator::collect)
            .unwrap_or_default();
        count_matches(file, name, "TANGENT", tangents.len(), n)?;
        for (v, t) in vertices.iter_mut().zip(tangents) {
            v.tangent = t;
        }
        has_tangents = true;
    }
    if let Some(acc) = p.get(&gltf::Semantic::TexCoords(0)) {
        file.check_typed(
            &acc,
            "TEXCOORD_0",
            &[DataType::F32, DataType::U8, DataType::U16],
            Dimensions::Vec2,
        )?;
        let uvs: Vec<[f32; 2]> = reader
            .read_tex_coords(0)
            .map(|r| r.into_f32().collect())
            .unwrap_or_default();
        count_matches(file, name, "TEXCOORD_0", uvs.len(), n)?;
        for (v, uv) in vertices.iter_mut().zip(uvs) {
            v.uv = uv;
        }
    }
    Ok((has_normals, has_tangents))
}

fn count_matches(
    file: &LoadedGltf,
    submesh: &str,
    attribute: &'static str,
    found: usize,
    vertex_count: usize,
) -> Result<(), ImportError> {
    if found != vertex_count {
        return Err(file.err(ImportErrorKind::AttributeCountMismatch {
            submesh: submesh.to_owned(),
            attribute,
            found,
            vertex_count,
        }));
    }
    Ok(())
}

/// Bakes a node transform into a sub-mesh: positions by the matrix, normals by its
/// inverse transpose, tangents by its linear part; a mirroring transform flips the
/// winding so faces keep pointing out.
pub(crate) fn apply_transform(s: &mut SubMesh, m: Mat4) {
    let linear = Mat3::from_mat4(m);
    let normal_m = linear.inverse().transpose();
    for v in &mut s.vertices {
        v.position = m.transform_point3(Vec3::from(v.position)).to_array();
        let n = normal_m * Vec3::from(v.normal);
        v.normal = n.normalize_or_zero().to_array();
        let t = (linear * Vec3::new(v.tangent[0], v.tangent[1], v.tangent[2])).normalize_or_zero();
        v.tangent = [t.x, t.y, t.z, v.tangent[3]];
    }
    if linear.determinant() < 0.0 {
        for tri in s.indices.chunks_exact_mut(3) {
            tri.swap(1, 2);
        }
    }
}

// Instancing: a glTF that draws one mesh several times (nodes sharing it, or one
// node placing it through `EXT_mesh_gpu_instancing`) is cooked once, in mesh
// space, with its placements kept as instance transforms.

/// A mesh the file draws more than once, read once in its own space, with the
/// world transform of every placement.
pub struct InstancedMesh {
    /// The mesh, in its own space (repaired).
    pub mesh: Mesh,
    /// Its world transform at every placement.
    pub transforms: Vec<Mat4>,
    /// What was repaired on the way in.
    pub warnings: Vec<crate::Warning>,
}

/// The meshes a file's scene draws, each read once in its own space (repaired), and
/// every placement: [`Instance::mesh`] indexes `geometries`.
pub struct InstancedScene {
    /// Every distinct mesh the scene draws.
    pub geometries: Vec<Mesh>,
    /// Every placement, naming a geometry.
    pub instances: Vec<Instance>,
    /// What was repaired on the way in.
    pub warnings: Vec<crate::Warning>,
}

/// When every placement of the file's scene draws the same (unskinned) glTF mesh
/// and there are at least two placements, counting each instance of
/// `EXT_mesh_gpu_instancing` as one, that mesh (repaired) and the placements;
/// otherwise `None` (the file is imported as one baked mesh). A non-finite
/// instance transform is an error.
pub fn import_gltf_instanced(path: &Path) -> Result<Option<InstancedMesh>, ImportError> {
    let Some(scene) = import_gltf_instances(path)? else {
        return Ok(None);
    };
    if scene.geometries.len() != 1 {
        return Ok(None);
    }
    let mut mesh = scene.geometries.into_iter().next().expect("one geometry");
    mesh.name = path
        .file_stem()
        .map_or("mesh".into(), |s| s.to_string_lossy().into_owned());
    Ok(Some(InstancedMesh {
        mesh,
        transforms: scene.instances.iter().map(|i| i.transform).collect(),
        warnings: scene.warnings,
    }))
}

/// When the file's scene draws some glTF mesh more than once (nodes sharing it, or
/// `EXT_mesh_gpu_instancing`, each of its instances counted) and no placement is
/// skinned: every drawn mesh once, in order of first placement (meshes no node
/// draws are left out), named as the file names it (or `<stem>/mesh<N>`), with
/// every placement's world transform. Otherwise `None` (the file is imported as
/// one baked mesh). A non-finite instance transform is an error.
pub fn import_gltf_instances(path: &Path) -> Result<Option<InstancedScene>, ImportError> {
    let file = load_gltf(path)?;
    let Some(placements) = instance_placements(&file)? else {
        return Ok(None);
    };
    let stem = path
        .file_stem()
        .map_or("mesh".into(), |s| s.to_string_lossy().into_owned());
    let mut warnings = Vec::new();
    // glTF mesh index -> geometry index (None: not drawn, or empty once repaired).
    let mut geometry_of: Vec<Option<Option<usize>>> = vec![None; file.document.meshes().len()];
    let mut geometries = Vec::new();
    let mut instances = Vec::new();
    for &(mesh_index, transform) in &placements {
        if geometry_of[mesh_index].is_none() {
            let mesh = file
                .document
                .meshes()
                .nth(mesh_index)
                .expect("validated index");
            let mut submeshes = Vec::new();
            for p in mesh.primitives() {
                let mut s = read_primitive(&file, &mesh, &p, Mat4::IDENTITY)?;
                repair_submesh(&mut s, &mut warnings).map_err(|k| file.err(k))?;
                if s.indices.is_empty() {
                    warnings.push(crate::Warning::EmptySubmeshRemoved { submesh: s.name });
                } else {
                    submeshes.push(s);
                }
            }
            geometry_of[mesh_index] = Some((!submeshes.is_empty()).then(|| {
                let name = mesh
                    .name()
                    .map_or_else(|| format!("{stem}/mesh{mesh_index}"), str::to_owned);
                geometries.push(Mesh { name, submeshes });
                geometries.len() - 1
            }));
        }
        if let Some(Some(g)) = geometry_of[mesh_index] {
            instances.push(Instance { mesh: g, transform });
        }
    }
    if geometries.is_empty() {
        return Err(file.err(ImportErrorKind::Empty));
    }
    Ok(Some(InstancedScene {
        geometries,
        instances,
        warnings,
    }))
}

/// Every placement of the file's scene (glTF mesh index, world transform), each
/// `EXT_mesh_gpu_instancing` instance its own, walking the scene as
/// [`node_placements`] does; `None` when a placement is skinned or no mesh is
/// placed more than once.
fn instance_placements(file: &LoadedGltf) -> Result<Option<Vec<(usize, Mat4)>>, ImportError> {
    let doc = &file.document;
    let Some(scene) = doc.default_scene().or_else(|| doc.scenes().next()) else {
        return Ok(None);
    };
    let limit = doc.nodes().len();
    let mut stack: Vec<(gltf::Node<'_>, Mat4, usize)> = scene
        .nodes()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .map(|n| (n, Mat4::IDENTITY, 0))
        .collect();
    let mut placements: Vec<(usize, Mat4)> = Vec::new();
    while let Some((node, parent, depth)) = stack.pop() {
        if depth > limit {
            continue;
        }
        let world = parent * Mat4::from_cols_array_2d(&node.transform().matrix());
        if let Some(mesh) = node.mesh() {
            if node.skin().is_some() {
                return Ok(None);
            }
            let m = mesh.index();
            match gpu_instances(file, &node)? {
                Some(local) => placements.extend(local.into_iter().map(|l| (m, world * l))),
                None => placements.push((m, world)),
            }
        }
        for c in node.children().collect::<Vec<_>>().into_iter().rev() {
            stack.push((c, world, depth + 1));
        }
    }
    if let Some((_, bad)) = placements.iter().find(|(_, t)| !t.is_finite()) {
        return Err(file.err(ImportErrorKind::Gltf {
            message: format!("an instance transform is not finite: {bad:?}"),
        }));
    }
    let mut count = vec![0usize; doc.meshes().len()];
    for &(m, _) in &placements {
        count[m] += 1;
    }
    Ok(count.iter().any(|&c| c > 1).then_some(placements))
}

/// The instance transforms (relative to the node) that `EXT_mesh_gpu_instancing`
/// gives `node`, or `None` when the node does not use it. Translation, rotation and
/// scale are float accessors of one length; a missing one is the identity.
fn gpu_instances(
    file: &LoadedGltf,
    node: &gltf::Node<'_>,
) -> Result<Option<Vec<Mat4>>, ImportError> {
    let Some(ext) = node.extension_value("EXT_mesh_gpu_instancing") else {
        return Ok(None);
    };
    let bad = |message: String| file.err(ImportErrorKind::Gltf { message });
    let attributes = ext
        .get("attributes")
        .and_then(|a| a.as_object())
        .ok_or_else(|| {
            bad(format!(
                "node {}: EXT_mesh_gpu_instancing has no attributes",
                node.index()
            ))
        })?;
    let read = |name: &'static str, dims: Dimensions| -> Result<Option<Vec<f32>>, ImportError> {
        let Some(index) = attributes.get(name) else {
            return Ok(None);
        };
        let accessor = index
            .as_u64()
            .and_then(|i| file.document.accessors().nth(i as usize))
            .ok_or_else(|| {
                bad(format!(
                    "node {}: instance {name} accessor {index} does not exist",
                    node.index()
                ))
            })?;
        file.check_typed(&accessor, name, &[DataType::F32], dims)?;
        let view = accessor.view().expect("checked: has a view");
        let data = &file.buffers[view.buffer().index()];
        let width = accessor.dimensions().multiplicity();
        let stride = view.stride().unwrap_or(4 * width);
        let start = view.offset() + accessor.offset();
        let mut out = Vec::with_capacity(accessor.count() * width);
        for i in 0..accessor.count() {
            let at = start + i * stride;
            for k in 0..width {
                let b = &data[at + 4 * k..at + 4 * k + 4];
                out.push(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            }
        }
        Ok(Some(out))
    };
    let t = read("TRANSLATION", Dimensions::Vec3)?;
    let r = read("ROTATION", Dimensions::Vec4)?;
    let s = read("SCALE", Dimensions::Vec3)?;
    let counts: Vec<usize> = [(&t, 3), (&r, 4), (&s, 3)]
        .iter()
        .filter_map(|(v, w)| v.as_ref().map(|v| v.len() / w))
        .collect();
    let Some(&count) = counts.first() else {
        return Ok(None);
    };
    if counts.iter().any(|&c| c != count) {
        return Err(bad(format!(
            "node {}: EXT_mesh_gpu_instancing attributes have different counts {counts:?}",
            node.index()
        )));
    }
    Ok(Some(
        (0..count)
            .map(|i| {
                let tr = t
                    .as_ref()
                    .map_or(Vec3::ZERO, |t| Vec3::from_slice(&t[3 * i..]));
                let rot = r.as_ref().map_or(glam::Quat::IDENTITY, |r| {
                    glam::Quat::from_slice(&r[4 * i..]).normalize()
                });
                let sc = s
                    .as_ref()
                    .map_or(Vec3::ONE, |s| Vec3::from_slice(&s[3 * i..]));
                Mat4::from_scale_rotation_translation(sc, rot, tr)
            })
            .collect(),
    ))
}
