//! An OBJ file as one [`MeshData`], for farsight-format's tests and examples and the
//! format benches (each includes this file with `#[path]`). farsight-format itself
//! imports no source format: `farsight-mesh` owns the importers.

use std::path::Path;

use farsight_format::MeshData;

/// Every model of the OBJ at `path` merged into one indexed mesh (single index,
/// triangulated): positions, normals and uvs as stored, indices offset per model.
/// A missing file is an error naming the path.
pub fn obj_mesh(path: impl AsRef<Path>) -> Result<MeshData, String> {
    let path = path.as_ref();
    if !path.exists() {
        return Err(format!("mesh missing: {}", path.display()));
    }
    let opts = tobj::LoadOptions {
        single_index: true,
        triangulate: true,
        ..Default::default()
    };
    let (models, _) =
        tobj::load_obj(path, &opts).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut m = MeshData::default();
    for model in models {
        let base = m.positions.len() as u32;
        let mesh = model.mesh;
        m.positions
            .extend(mesh.positions.chunks_exact(3).map(|p| [p[0], p[1], p[2]]));
        m.normals
            .extend(mesh.normals.chunks_exact(3).map(|p| [p[0], p[1], p[2]]));
        m.uvs
            .extend(mesh.texcoords.chunks_exact(2).map(|p| [p[0], p[1]]));
        m.indices.extend(mesh.indices.iter().map(|i| i + base));
    }
    Ok(m)
}
