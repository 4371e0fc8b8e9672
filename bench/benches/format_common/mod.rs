//! Mesh loading and glTF writing shared by the farsight-format benches
//! (`format.rs` and `format_gltfpack.rs`). OBJ through tobj, glTF through gltf.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use farsight_format::MeshData;

/// The corpus, `../shared/data/meshes`, or the folder `FARSIGHT_BENCH_MESH_DIR`
/// names (content the work was not tuned on: every `.obj`, `.glb` and `.gltf` in
/// it and in its sub-folders one level down).
pub fn meshes_dir() -> PathBuf {
    match std::env::var_os("FARSIGHT_BENCH_MESH_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/meshes"),
    }
}

fn must_exist(path: &Path) {
    assert!(path.exists(), "benchmark mesh missing: {}", path.display());
}

pub mod gltfpack;

#[path = "../../../crates/farsight-format/tests/support/obj.rs"]
mod obj;

#[path = "../../../crates/farsight-format/tests/support/tile.rs"]
mod tile;

#[path = "../../../crates/farsight-format/tests/support/gltf_parts.rs"]
mod gltf_parts;

/// An OBJ as one indexed mesh (every model merged).
pub fn load_obj(name: &str) -> MeshData {
    obj::obj_mesh(meshes_dir().join(name)).unwrap_or_else(|e| panic!("benchmark {e}"))
}

/// Every triangle primitive of a glTF as its own mesh (no node transforms: sizes
/// do not depend on them; non-finite attributes replaced, see `gltf_parts`).
pub fn load_gltf(rel: &str) -> Vec<MeshData> {
    let path = meshes_dir().join(rel);
    must_exist(&path);
    let gltf = gltf::Gltf::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let buffers = gltf::import_buffers(&gltf.document, path.parent(), gltf.blob.clone())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let buffers: Vec<&[u8]> = buffers.iter().map(|b| &b.0[..]).collect();
    gltf_parts::primitive_meshes(&gltf.document, &buffers)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every mesh file of `../shared/data/meshes` (or `FARSIGHT_BENCH_MESH_DIR`), sorted,
/// as (name, path relative to the folder, full path). Names are leaked into
/// `&'static str`: a bench process lists them once.
pub fn corpus_files() -> Vec<(&'static str, String, PathBuf)> {
    let root = meshes_dir();
    must_exist(&root);
    let mut files: Vec<PathBuf> = Vec::new();
    let mut scan = |dir: &Path| {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if matches!(ext, "obj" | "glb" | "gltf") {
                files.push(p);
            }
        }
    };
    scan(&root);
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            scan(&p);
        }
    }
    files.sort();
    // Outside the corpus files of one name may stand in several folders
    // (`left.glb`): a mesh is then named by its path.
    let by_path = std::env::var_os("FARSIGHT_BENCH_MESH_DIR").is_some();
    files
        .into_iter()
        .map(|f| {
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let name = if by_path {
                rel.rsplit_once('.')
                    .map_or(rel.as_str(), |(n, _)| n)
                    .replace('/', "_")
            } else {
                f.file_stem().unwrap().to_string_lossy().into_owned()
            };
            (&*Box::leak(name.into_boxed_str()), rel, f)
        })
        .collect()
}

/// The parts of a corpus file (`rel` to the corpus folder): an OBJ merged, each
/// glTF / GLB primitive its own part.
pub fn corpus_parts(rel: &str) -> Vec<MeshData> {
    if rel.ends_with(".obj") {
        vec![load_obj(rel)]
    } else {
        load_gltf(rel)
    }
}

/// Whether `FARSIGHT_BENCH_MESHES=a,b` keeps the mesh `name` (it names a part of
/// it), or is unset.
pub fn kept(name: &str) -> bool {
    match std::env::var("FARSIGHT_BENCH_MESHES") {
        Ok(keep) => keep
            .split(',')
            .filter(|k| !k.is_empty())
            .any(|k| name.contains(k)),
        Err(_) => true,
    }
}

/// Every mesh of `../shared/data/meshes` (the OBJs merged, each glTF / GLB
/// primitive its own part), then the generated stress cases, as (name, parts).
/// `FARSIGHT_BENCH_MESHES=a,b` keeps the meshes whose names contain one of them.
pub fn bench_meshes() -> Vec<(&'static str, Vec<MeshData>)> {
    let mut out: Vec<(&'static str, Vec<MeshData>)> = corpus_files()
        .into_iter()
        .map(|(name, rel, _)| (name, corpus_parts(&rel)))
        .collect();
    out.extend(stress_meshes());
    out.retain(|(n, _)| kept(n));
    out
}

/// A bumpy patch of `tris` triangles (two per quad, an odd count ends on one),
/// `w` quads wide, with normals and uvs, offset by `at`.
fn patch(tris: usize, w: usize, at: [f32; 3]) -> MeshData {
    let quads = tris.div_ceil(2);
    let rows = quads.div_ceil(w);
    let mut m = MeshData::default();
    for y in 0..=rows {
        for x in 0..=w {
            let (fx, fy) = (x as f32 / w as f32, y as f32 / rows.max(1) as f32);
            let h = 0.05 * (fx * 7.0 + at[0]).sin() * (fy * 5.0 + at[2]).cos();
            m.positions.push([at[0] + fx, at[1] + h, at[2] + fy]);
            let n = [-0.35 * (fx * 7.0).cos(), 1.0, 0.25 * (fy * 5.0).sin()];
            let l = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            m.normals.push([n[0] / l, n[1] / l, n[2] / l]);
            m.uvs.push([fx, fy]);
        }
    }
    let row = (w + 1) as u32;
    for q in 0..quads {
        let (x, y) = ((q % w) as u32, (q / w) as u32);
        let i = y * row + x;
        m.indices.extend_from_slice(&[i, i + row, i + 1]);
        if m.indices.len() / 3 < tris {
            m.indices.extend_from_slice(&[i + 1, i + row, i + row + 1]);
        }
    }
    m
}

/// The issue 16 stress cases: 100 parts of 2-300 triangles; one 200-triangle
/// geometry placed 50 times (50 identical parts); a 256 x 256 quad grid tile whose
/// uvs are linear in its positions; a 12-triangle box (24 vertices, flat normals);
/// then issue 27's terrain tile, 125 x 125 quads (31,250 triangles) of value-noise
/// heights with normals from the height function and uvs following x and z.
pub fn stress_meshes() -> Vec<(&'static str, Vec<MeshData>)> {
    let parts100 = (0..100)
        .map(|i| {
            let tris = 2 + (i * 37) % 299;
            patch(tris, 2 + i % 9, [i as f32 * 1.5, 0.0, 0.0])
        })
        .collect();
    let one = patch(200, 10, [0.0; 3]);
    let placed50 = vec![one; 50];
    let mut grid = MeshData::default();
    let n = 256u32;
    for y in 0..=n {
        for x in 0..=n {
            let (fx, fy) = (x as f32 / n as f32, y as f32 / n as f32);
            let h = 0.03 * (fx * 31.0).sin() * (fy * 23.0).cos();
            grid.positions.push([fx * 2.0 - 1.0, h, fy * 2.0 - 1.0]);
            grid.normals.push([0.0, 1.0, 0.0]);
            grid.uvs.push([fx, fy]);
        }
    }
    for y in 0..n {
        for x in 0..n {
            let i = y * (n + 1) + x;
            grid.indices
                .extend_from_slice(&[i, i + n + 1, i + 1, i + 1, i + n + 1, i + n + 2]);
        }
    }
    let mut bx = MeshData::default();
    let faces: [([f32; 3], [f32; 3], [f32; 3]); 6] = [
        ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]),
        ([0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
        ([0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]),
    ];
    for (n, u, v) in faces {
        let base = bx.positions.len() as u32;
        for (a, b) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            bx.positions
                .push([0, 1, 2].map(|k| n[k] + a * u[k] + b * v[k]));
            bx.normals.push(n);
            bx.uvs.push([(a + 1.0) / 2.0, (b + 1.0) / 2.0]);
        }
        bx.indices
            .extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    vec![
        ("gen_parts100", parts100),
        ("gen_placed50", placed50),
        ("gen_grid256", vec![grid]),
        ("gen_box12", vec![bx]),
        ("gen_tile125", vec![tile::terrain_tile(125, 4.0)]),
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
