//! Preparing a source mesh before its DAG or chain is built: split per material, weld,
//! optimise for the vertex cache, overdraw and vertex fetch, and bound
//! (docs/design/cooked-meshes.md#import-and-repair).

use farsight_geom::Aabb;

use crate::mesh::{Mesh, SubMesh, Vertex};

/// A mesh ready for LOD generation: one sub-mesh per material, each with unique
/// vertices in fetch order and triangles in cache- and overdraw-friendly order.
#[derive(Clone, Debug, PartialEq)]
pub struct PreparedMesh {
    /// The prepared mesh.
    pub mesh: Mesh,
    /// The box around its vertices.
    pub bounds: Aabb,
}

/// meshoptimizer's recommended overdraw threshold: at most 5% worse vertex cache
/// efficiency in exchange for less overdraw.
const OVERDRAW_THRESHOLD: f32 = 1.05;

/// Prepares a mesh. Sub-meshes sharing a material are merged (each later cluster
/// then holds one material); order follows the first appearance of each material,
/// so the result is deterministic.
pub fn prepare(mesh: &Mesh) -> PreparedMesh {
    let mut by_material: Vec<SubMesh> = Vec::new();
    for s in &mesh.submeshes {
        match by_material.iter_mut().find(|m| m.material == s.material) {
            Some(m) => {
                let base = m.vertices.len() as u32;
                m.vertices.extend_from_slice(&s.vertices);
                m.indices.extend(s.indices.iter().map(|&i| i + base));
                m.has_tangents &= s.has_tangents;
                m.name = format!("{}+", m.name.trim_end_matches('+'));
            }
            None => by_material.push(SubMesh {
                name: s.material.clone(),
                ..s.clone()
            }),
        }
    }
    for s in &mut by_material {
        optimize_submesh(s);
    }
    let mesh = Mesh {
        name: mesh.name.clone(),
        submeshes: by_material,
    };
    let bounds = mesh.bounds();
    PreparedMesh { mesh, bounds }
}

/// Welds identical vertices, then reorders triangles for the vertex cache and for
/// overdraw, then vertices for fetch.
pub fn optimize_submesh(s: &mut SubMesh) {
    if s.indices.is_empty() {
        s.vertices.clear();
        return;
    }
    let (count, remap) = meshopt::generate_vertex_remap(&s.vertices, Some(&s.indices));
    let mut indices = meshopt::remap_index_buffer(Some(&s.indices), count, &remap);
    let mut vertices = meshopt::remap_vertex_buffer(&s.vertices, count, &remap);
    meshopt::optimize_vertex_cache_in_place(&mut indices, vertices.len());
    {
        let adapter = adapter(&vertices);
        meshopt::optimize_overdraw_in_place(&mut indices, &adapter, OVERDRAW_THRESHOLD);
    }
    vertices = meshopt::optimize_vertex_fetch(&mut indices, &vertices);
    s.vertices = vertices;
    s.indices = indices;
}

/// Positions of a vertex array as meshoptimizer reads them (48-byte stride).
pub(crate) fn adapter(vertices: &[Vertex]) -> meshopt::VertexDataAdapter<'_> {
    meshopt::VertexDataAdapter::new(
        bytemuck::cast_slice(vertices),
        std::mem::size_of::<Vertex>(),
        0,
    )
    .expect("48-byte stride with positions at offset 0")
}
