//! A glTF or GLB file as one [`MeshData`] per triangle primitive, for
//! farsight-format's tests and the format benches (each includes this file with
//! `#[path]`). farsight-format itself imports no source format: `farsight-mesh` owns
//! the importers.

use std::path::Path;

use farsight_format::MeshData;

/// Every triangle primitive of the glTF at `path` as its own mesh (positions,
/// normals, tangents and first uvs as stored; no node transforms). Real files
/// carry non-finite attributes (SubpassScene's NaN normals), which writers refuse
/// as they should: those are set to +z normals, +x tangents and zero uvs. Buffers
/// are the GLB blob or files beside `path`. An unreadable file is an error naming
/// the path.
pub fn gltf_parts(path: impl AsRef<Path>) -> Result<Vec<MeshData>, String> {
    let path = path.as_ref();
    let named = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let bytes = std::fs::read(path).map_err(|e| named(&e))?;
    let g = gltf::Gltf::from_slice(&bytes).map_err(|e| named(&e))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut buffers = Vec::new();
    for b in g.buffers() {
        buffers.push(match b.source() {
            gltf::buffer::Source::Bin => g.blob.clone().ok_or_else(|| named(&"no GLB blob"))?,
            gltf::buffer::Source::Uri(uri) => {
                std::fs::read(dir.join(uri)).map_err(|e| named(&format!("{uri}: {e}")))?
            }
        });
    }
    let buffers: Vec<&[u8]> = buffers.iter().map(|b| b.as_slice()).collect();
    primitive_meshes(&g.document, &buffers).map_err(|e| named(&e))
}

/// [`gltf_parts`] of a document whose buffers are already loaded (in buffer order).
pub fn primitive_meshes(
    document: &gltf::Document,
    buffers: &[&[u8]],
) -> Result<Vec<MeshData>, String> {
    let mut out = Vec::new();
    for prim in document.meshes().flat_map(|m| m.primitives()) {
        if prim.mode() != gltf::mesh::Mode::Triangles {
            continue;
        }
        let r = prim.reader(|b| buffers.get(b.index()).copied());
        let mut m = MeshData {
            positions: r
                .read_positions()
                .ok_or("a primitive without positions")?
                .collect(),
            ..MeshData::default()
        };
        m.normals = r.read_normals().map(|n| n.collect()).unwrap_or_default();
        m.tangents = r.read_tangents().map(|n| n.collect()).unwrap_or_default();
        m.uvs = r
            .read_tex_coords(0)
            .map(|t| t.into_f32().collect())
            .unwrap_or_default();
        m.indices = match r.read_indices() {
            Some(i) => i.into_u32().collect(),
            None => (0..m.positions.len() as u32).collect(),
        };
        let finite = |v: &[f32]| v.iter().all(|c| c.is_finite());
        for n in m.normals.iter_mut().filter(|n| !finite(&n[..])) {
            *n = [0.0, 0.0, 1.0];
        }
        for t in m.tangents.iter_mut().filter(|t| !finite(&t[..])) {
            *t = [1.0, 0.0, 0.0, 1.0];
        }
        for uv in m.uvs.iter_mut().filter(|uv| !finite(&uv[..])) {
            *uv = [0.0; 2];
        }
        out.push(m);
    }
    Ok(out)
}
