//! Wavefront OBJ import through `tobj`: triangulated, single-indexed, one sub-mesh
//! per object and material.

use std::path::Path;

use crate::error::{ImportError, ImportErrorKind};
use crate::mesh::{ImportedScene, Mesh, SubMesh, Vertex};
use crate::repair::repair_submesh;
use crate::Warning;

/// Imports an OBJ file. A missing or broken material library is a warning (the
/// geometry does not depend on it); sub-meshes are then named by material index.
pub fn import_obj(path: &Path) -> Result<ImportedScene, ImportError> {
    let err = |kind| ImportError::new(path, kind);
    let text = std::fs::read(path).map_err(|e| err(ImportErrorKind::Io(e)))?;
    let (models, materials, mtl_failure) = load_models(path, &text)?;
    let mut warnings = Vec::new();
    if let Some(message) = mtl_failure {
        warnings.push(Warning::MaterialLibraryUnreadable { message });
    }
    let mut submeshes = Vec::with_capacity(models.len());
    for (i, model) in models.into_iter().enumerate() {
        let mut s = submesh_of(path, i, model, &materials)?;
        repair_submesh(&mut s, &mut warnings).map_err(err)?;
        if s.indices.is_empty() {
            warnings.push(Warning::EmptySubmeshRemoved { submesh: s.name });
        } else {
            submeshes.push(s);
        }
    }
    if submeshes.is_empty() {
        return Err(err(ImportErrorKind::Empty));
    }
    let name = path
        .file_stem()
        .map_or("mesh".into(), |s| s.to_string_lossy().into_owned());
    Ok(ImportedScene {
        meshes: vec![Mesh { name, submeshes }],
        instances: Vec::new(),
        warnings,
    })
}

/// An OBJ file's models, its materials and why its material library could not be
/// read, if it could not.
type LoadedObj = (Vec<tobj::Model>, Vec<tobj::Material>, Option<String>);

/// The file's models (triangulated, one index per vertex) and materials, and why
/// its material library could not be read, if it could not.
///
/// tobj drops `usemtl` switches to materials its library did not define, which
/// would merge every material into one sub-mesh when the .mtl is missing. So a
/// library that cannot be read is replaced by one naming every `usemtl` of the
/// file (and reported): the split per material survives.
fn load_models(path: &Path, text: &[u8]) -> Result<LoadedObj, ImportError> {
    let options = tobj::LoadOptions {
        single_index: true,
        triangulate: true,
        ignore_points: true,
        ignore_lines: true,
    };
    let used: Vec<String> = String::from_utf8_lossy(text)
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("usemtl "))
        .map(|n| n.trim().to_owned())
        .collect();
    let base = path.parent().unwrap_or(Path::new(".")).to_owned();
    let mtl_failure = std::cell::RefCell::new(None);
    let loaded = tobj::load_obj_buf(&mut std::io::Cursor::new(text), &options, |mtl| {
        tobj::load_mtl(base.join(mtl)).or_else(|e| {
            *mtl_failure.borrow_mut() = Some(format!("{}: {e}", base.join(mtl).display()));
            let mut names = std::collections::HashMap::new();
            let mut mats = Vec::new();
            for n in &used {
                if !names.contains_key(n) {
                    names.insert(n.clone(), mats.len());
                    mats.push(tobj::Material {
                        name: n.clone(),
                        ..Default::default()
                    });
                }
            }
            Ok((mats, names))
        })
    });
    let (models, materials) = loaded.map_err(|e| {
        ImportError::new(
            path,
            ImportErrorKind::Obj {
                message: e.to_string(),
            },
        )
    })?;
    Ok((
        models,
        materials.unwrap_or_default(),
        mtl_failure.into_inner(),
    ))
}

/// Model `i` as a sub-mesh (not yet repaired): named `object/i`, wearing its
/// material's name, its normals and uvs checked one per vertex (or absent: zero).
fn submesh_of(
    path: &Path,
    i: usize,
    model: tobj::Model,
    materials: &[tobj::Material],
) -> Result<SubMesh, ImportError> {
    let err = |kind| ImportError::new(path, kind);
    let m = model.mesh;
    let name = if model.name.is_empty() {
        format!("object{i}")
    } else {
        model.name.clone()
    };
    let name = format!("{name}/{i}");
    let material = match m.material_id {
        Some(id) => materials
            .get(id)
            .map_or_else(|| format!("material{id}"), |mat| mat.name.clone()),
        None => "default".to_owned(),
    };
    if m.positions.len() % 3 != 0 {
        return Err(err(ImportErrorKind::Obj {
            message: format!("{name}: position array not xyz triples"),
        }));
    }
    let n = m.positions.len() / 3;
    let check = |attribute: &'static str, len: usize, width: usize| {
        if len != 0 && len != n * width {
            return Err(err(ImportErrorKind::AttributeCountMismatch {
                submesh: name.clone(),
                attribute,
                found: len / width,
                vertex_count: n,
            }));
        }
        Ok(())
    };
    check("normal", m.normals.len(), 3)?;
    check("texcoord", m.texcoords.len(), 2)?;
    let vertices = (0..n)
        .map(|v| Vertex {
            position: [
                m.positions[3 * v],
                m.positions[3 * v + 1],
                m.positions[3 * v + 2],
            ],
            normal: if m.normals.is_empty() {
                [0.0; 3]
            } else {
                [m.normals[3 * v], m.normals[3 * v + 1], m.normals[3 * v + 2]]
            },
            uv: if m.texcoords.is_empty() {
                [0.0; 2]
            } else {
                [m.texcoords[2 * v], m.texcoords[2 * v + 1]]
            },
            tangent: [0.0; 4],
        })
        .collect();
    Ok(SubMesh {
        name,
        material,
        vertices,
        indices: m.indices,
        has_tangents: false,
    })
}
