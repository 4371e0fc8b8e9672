//! Meshes the tests share: the corpus files and a generated sphere.

use std::path::PathBuf;

/// A test mesh: the vendored copy in `testdata/meshes`, else the shared corpus's.
pub fn mesh_path(rel: &str) -> PathBuf {
    farsight_testkit::mesh(rel)
}

/// The real meshes most tests run over.
pub const REAL: [&str; 3] = ["bunny.obj", "pirate.obj", "FlightHelmet/FlightHelmet.gltf"];

/// A closed, bumpy sphere-like grid (UV sphere) with `n` segments.
pub fn sphere(n: u32) -> farsight_mesh::Mesh {
    use farsight_mesh::{Mesh, SubMesh, Vertex};
    let mut vertices = Vec::new();
    let rings = n;
    let segs = 2 * n;
    for r in 0..=rings {
        let th = std::f32::consts::PI * r as f32 / rings as f32;
        for s in 0..=segs {
            // The seam column repeats column 0 exactly and the poles are exact, so
            // vertices meant to coincide have identical positions.
            let ph = 2.0 * std::f32::consts::PI * (s % segs) as f32 / segs as f32;
            let bump = 1.0 + 0.05 * (5.0 * th).sin() * (7.0 * ph).cos();
            let d = if r == 0 {
                [0.0, 1.0, 0.0]
            } else if r == rings {
                [0.0, -1.0, 0.0]
            } else {
                [th.sin() * ph.cos(), th.cos(), th.sin() * ph.sin()]
            };
            let bump = if r == 0 || r == rings { 1.0 } else { bump };
            vertices.push(Vertex {
                position: [d[0] * bump, d[1] * bump, d[2] * bump],
                normal: d,
                uv: [s as f32 / segs as f32, r as f32 / rings as f32],
                tangent: [0.0; 4],
            });
        }
    }
    let row = segs + 1;
    let mut indices = Vec::new();
    for r in 0..rings {
        for s in 0..segs {
            let i = r * row + s;
            indices.extend_from_slice(&[i, i + row, i + 1, i + 1, i + row, i + row + 1]);
        }
    }
    let mut sub = SubMesh {
        name: "sphere".into(),
        material: "m".into(),
        vertices,
        indices,
        has_tangents: false,
    };
    // Poles and seam produce degenerate triangles: drop them as the importer would.
    sub.indices = sub
        .indices
        .chunks_exact(3)
        .filter(|t| {
            let p = |i: u32| glam::Vec3::from(sub.vertices[i as usize].position);
            (p(t[1]) - p(t[0]))
                .cross(p(t[2]) - p(t[0]))
                .length_squared()
                > 1e-12
        })
        .flatten()
        .copied()
        .collect();
    Mesh {
        name: "sphere".into(),
        submeshes: vec![sub],
    }
}

/// Every mesh file of the corpus (`../shared/data/meshes` beside the checkout, else
/// the vendored subset), sorted by path, so a mesh added to the corpus is tested
/// without a list.
pub fn corpus() -> Vec<PathBuf> {
    let out = farsight_testkit::corpus();
    let least = if farsight_testkit::corpus_is_shared() {
        16
    } else {
        10
    };
    assert!(
        out.len() >= least,
        "corpus under {} has {} meshes",
        farsight_testkit::corpus_root().display(),
        out.len()
    );
    out
}
