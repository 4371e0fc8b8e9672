//! gltfpack's side of the comparisons (`format_gltfpack.rs`, `cluster_upload.rs`):
//! packing a glTF with gltfpack's cli, and decoding its output as a loader does.

// One FFI call per buffer view into buffers reused between runs, so that the peer
// is timed without the safe wrappers' allocation and zero fill: meshoptimizer's
// decoders write at most `count * stride` bytes, which each destination holds.
#![allow(unsafe_code)]

use std::path::Path;
use std::process::Command;

/// Packs the glTF `input` with gltfpack (`cli`: its cli.js, run by node) at the bit
/// depths the comparisons use (16-bit positions, uvs and normals, meshopt-coded,
/// meshes and nodes kept) and returns the .glb it wrote beside `input`.
pub fn pack(cli: &str, input: &Path) -> Vec<u8> {
    let stem = input.file_stem().unwrap().to_string_lossy();
    let output = input.with_file_name(format!("{stem}.packed.glb"));
    let status = Command::new("node")
        .arg(cli)
        .args(["-i"])
        .arg(input)
        .arg("-o")
        .arg(&output)
        .args(["-cc", "-vp", "16", "-vt", "16", "-vn", "16", "-km", "-kn"])
        .status()
        .expect("node must be installed to run gltfpack");
    assert!(status.success(), "gltfpack failed on {}", input.display());
    std::fs::read(&output).unwrap()
}

/// How a compressed buffer view is coded (EXT_meshopt_compression).
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    Attributes,
    Triangles,
    Indices,
}

/// The filter applied after decoding (EXT_meshopt_compression).
#[derive(Clone, Copy, Debug)]
pub enum Filter {
    None,
    Octahedral,
    Quaternion,
    Exponential,
}

/// One compressed buffer view of gltfpack's output: where its bytes lie in the BIN
/// chunk and what decodes them.
#[derive(Debug)]
pub struct PeerView {
    pub offset: usize,
    pub length: usize,
    pub stride: usize,
    pub count: usize,
    pub mode: Mode,
    pub filter: Filter,
}

/// Every EXT_meshopt_compression buffer view of a GLB that gltfpack wrote.
pub fn peer_views(glb: &[u8]) -> Vec<PeerView> {
    use gltf::json::Value;
    let json_len = u32::from_le_bytes(glb[12..16].try_into().unwrap()) as usize;
    let root: Value = gltf::json::deserialize::from_slice(&glb[20..20 + json_len]).unwrap();
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0) as usize;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut views = Vec::new();
    for view in root["bufferViews"].as_array().unwrap() {
        let Some(ext) = view.pointer("/extensions/EXT_meshopt_compression") else {
            continue;
        };
        assert_eq!(
            num(ext, "buffer"),
            0,
            "compressed views live in the BIN chunk"
        );
        views.push(PeerView {
            offset: num(ext, "byteOffset"),
            length: num(ext, "byteLength"),
            stride: num(ext, "byteStride"),
            count: num(ext, "count"),
            mode: match text(ext, "mode").as_str() {
                "ATTRIBUTES" => Mode::Attributes,
                "TRIANGLES" => Mode::Triangles,
                "INDICES" => Mode::Indices,
                m => panic!("unknown EXT_meshopt_compression mode {m}"),
            },
            filter: match text(ext, "filter").as_str() {
                "" | "NONE" => Filter::None,
                "OCTAHEDRAL" => Filter::Octahedral,
                "QUATERNION" => Filter::Quaternion,
                "EXPONENTIAL" => Filter::Exponential,
                f => panic!("unknown EXT_meshopt_compression filter {f}"),
            },
        });
    }
    views
}

/// Decodes gltfpack's file as a loader does: zstd over the BIN chunk into `bin`,
/// then every compressed view into its buffer of `out` (grown once, reused).
/// Returns the bytes decoded.
pub fn peer_decode(
    zbin: &[u8],
    views: &[PeerView],
    bin: &mut Vec<u8>,
    out: &mut Vec<Vec<u8>>,
    z: &mut zstd::bulk::Decompressor<'static>,
) -> usize {
    use meshopt::ffi;
    bin.clear();
    bin.reserve(zbin.len() * 64 + (1 << 16));
    z.decompress_to_buffer(zbin, bin).unwrap();
    out.resize_with(views.len(), Vec::new);
    let mut total = 0;
    for (v, dst) in views.iter().zip(out.iter_mut()) {
        let size = v.count * v.stride;
        if dst.len() != size {
            dst.resize(size, 0);
        }
        let src = &bin[v.offset..v.offset + v.length];
        // SAFETY: `dst` holds `count * stride` bytes, all that each decoder and filter
        // writes; `src` is readable for its length, and the decoders check every read
        // against it.
        let rc = unsafe {
            let d = dst.as_mut_ptr().cast();
            match v.mode {
                Mode::Attributes => {
                    ffi::meshopt_decodeVertexBuffer(d, v.count, v.stride, src.as_ptr(), src.len())
                }
                Mode::Triangles => {
                    ffi::meshopt_decodeIndexBuffer(d, v.count, v.stride, src.as_ptr(), src.len())
                }
                Mode::Indices => {
                    ffi::meshopt_decodeIndexSequence(d, v.count, v.stride, src.as_ptr(), src.len())
                }
            }
        };
        assert_eq!(rc, 0, "meshopt refused gltfpack's view {v:?}");
        // SAFETY: as above; each filter rewrites the `count * stride` bytes in place.
        unsafe {
            let d = dst.as_mut_ptr().cast();
            match v.filter {
                Filter::None => {}
                Filter::Octahedral => ffi::meshopt_decodeFilterOct(d, v.count, v.stride),
                Filter::Quaternion => ffi::meshopt_decodeFilterQuat(d, v.count, v.stride),
                Filter::Exponential => ffi::meshopt_decodeFilterExp(d, v.count, v.stride),
            }
        }
        total += size;
    }
    total
}
