//! Mesh loading and glTF writing shared by the farsight-format benches
//! (`format.rs` and `format_gltfpack.rs`). OBJ through tobj, glTF through gltf.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use farsight_format::MeshData;

pub fn meshes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/meshes")
}

fn must_exist(path: &Path) {
    assert!(path.exists(), "benchmark mesh missing: {}", path.display());
}

#[path = "../../../crates/farsight-format/tests/support/obj.rs"]
mod obj;

/// An OBJ as one indexed mesh (every model merged).
pub fn load_obj(name: &str) -> MeshData {
    obj::obj_mesh(meshes_dir().join(name)).unwrap_or_else(|e| panic!("benchmark {e}"))
}

/// Every triangle primitive of a glTF as its own mesh (no node transforms: sizes
/// do not depend on them).
pub fn load_gltf(rel: &str) -> Vec<MeshData> {
    let path = meshes_dir().join(rel);
    must_exist(&path);
    let gltf = gltf::Gltf::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let buffers = gltf::import_buffers(&gltf.document, path.parent(), gltf.blob.clone())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for mesh in gltf.document.meshes() {
        for prim in mesh.primitives() {
            if prim.mode() != gltf::mesh::Mode::Triangles {
                continue;
            }
            let r = prim.reader(|b| Some(&buffers[b.index()].0[..]));
            let mut m = MeshData::default();
            m.positions = r.read_positions().expect("positions").collect();
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
            out.push(m);
        }
    }
    out
}

/// The three meshes of issue 3's size table, as (name, parts).
pub fn bench_meshes() -> Vec<(&'static str, Vec<MeshData>)> {
    vec![
        ("bunny", vec![load_obj("bunny.obj")]),
        ("pirate", vec![load_obj("pirate.obj")]),
        ("FlightHelmet", load_gltf("FlightHelmet/FlightHelmet.gltf")),
    ]
}

pub fn triangles(parts: &[MeshData]) -> usize {
    parts.iter().map(MeshData::triangle_count).sum()
}

/// Writes `parts` as a glTF (`.gltf` + `.bin` + a 2x2 PNG) with one textured material
/// per part, a normal texture on parts that have tangents, so gltfpack keeps uvs and
/// tangents exactly where the cooked file has them.
pub fn write_gltf(parts: &[MeshData], dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let png_path = dir.join("texture.png");
    {
        let file = std::fs::File::create(&png_path).unwrap();
        let mut enc = png::Encoder::new(std::io::BufWriter::new(file), 2, 2);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()
            .unwrap()
            .write_image_data(&[200u8; 16])
            .unwrap();
    }
    let mut bin: Vec<u8> = Vec::new();
    let mut views = Vec::new();
    let mut accessors = Vec::new();
    let mut meshes = Vec::new();
    let mut materials = Vec::new();
    let mut push = |bytes: &[u8],
                    count: usize,
                    kind: &str,
                    comp: u32,
                    minmax: Option<(Vec<f32>, Vec<f32>)>,
                    target: u32|
     -> usize {
        while bin.len() % 4 != 0 {
            bin.push(0);
        }
        views.push(format!(
            r#"{{"buffer":0,"byteOffset":{},"byteLength":{},"target":{}}}"#,
            bin.len(),
            bytes.len(),
            target
        ));
        bin.extend_from_slice(bytes);
        let mm = minmax.map_or(String::new(), |(lo, hi)| {
            format!(r#","min":{lo:?},"max":{hi:?}"#)
        });
        accessors.push(format!(
            r#"{{"bufferView":{},"componentType":{comp},"count":{count},"type":"{kind}"{mm}}}"#,
            views.len() - 1
        ));
        accessors.len() - 1
    };
    for (i, m) in parts.iter().enumerate() {
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for p in &m.positions {
            for k in 0..3 {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        let n = m.positions.len();
        let mut attrs = vec![format!(
            r#""POSITION":{}"#,
            push(
                bytemuck::cast_slice(&m.positions),
                n,
                "VEC3",
                5126,
                Some((lo.to_vec(), hi.to_vec())),
                34962
            )
        )];
        if !m.normals.is_empty() {
            attrs.push(format!(
                r#""NORMAL":{}"#,
                push(
                    bytemuck::cast_slice(&m.normals),
                    n,
                    "VEC3",
                    5126,
                    None,
                    34962
                )
            ));
        }
        if !m.tangents.is_empty() {
            attrs.push(format!(
                r#""TANGENT":{}"#,
                push(
                    bytemuck::cast_slice(&m.tangents),
                    n,
                    "VEC4",
                    5126,
                    None,
                    34962
                )
            ));
        }
        if !m.uvs.is_empty() {
            attrs.push(format!(
                r#""TEXCOORD_0":{}"#,
                push(bytemuck::cast_slice(&m.uvs), n, "VEC2", 5126, None, 34962)
            ));
        }
        let idx = push(
            bytemuck::cast_slice(&m.indices),
            m.indices.len(),
            "SCALAR",
            5125,
            None,
            34963,
        );
        let normal_tex = if m.tangents.is_empty() {
            String::new()
        } else {
            r#","normalTexture":{"index":0}"#.to_string()
        };
        materials.push(format!(r#"{{"name":"m{i}","pbrMetallicRoughness":{{"baseColorTexture":{{"index":0}}}}{normal_tex}}}"#));
        meshes.push(format!(
            r#"{{"primitives":[{{"attributes":{{{}}},"indices":{idx},"material":{i}}}]}}"#,
            attrs.join(",")
        ));
    }
    let nodes: Vec<String> = (0..parts.len())
        .map(|i| format!(r#"{{"mesh":{i}}}"#))
        .collect();
    let scene_nodes: Vec<String> = (0..parts.len()).map(|i| i.to_string()).collect();
    let bin_name = format!("{name}.bin");
    let json = format!(
        r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[{}]}}],"nodes":[{}],"meshes":[{}],"materials":[{}],"textures":[{{"source":0}}],"images":[{{"uri":"texture.png"}}],"buffers":[{{"uri":"{bin_name}","byteLength":{}}}],"bufferViews":[{}],"accessors":[{}]}}"#,
        scene_nodes.join(","),
        nodes.join(","),
        meshes.join(","),
        materials.join(","),
        bin.len(),
        views.join(","),
        accessors.join(",")
    );
    std::fs::write(dir.join(&bin_name), &bin).unwrap();
    let path = dir.join(format!("{name}.gltf"));
    std::fs::write(&path, json).unwrap();
    path
}

/// The BIN chunk of a .glb (the buffer gltfpack wrote), or the whole file if it is
/// not a glb.
pub fn glb_bin_chunk(glb: &[u8]) -> &[u8] {
    if glb.len() < 20 || &glb[0..4] != b"glTF" {
        return glb;
    }
    let json_len = u32::from_le_bytes(glb[12..16].try_into().unwrap()) as usize;
    let at = 20 + json_len;
    if glb.len() < at + 8 {
        return &[];
    }
    let bin_len = u32::from_le_bytes(glb[at..at + 4].try_into().unwrap()) as usize;
    &glb[at + 8..(at + 8 + bin_len).min(glb.len())]
}
