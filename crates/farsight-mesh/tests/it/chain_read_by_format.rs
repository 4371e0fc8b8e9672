//! A cooked chain read with farsight-format alone, through the manifest fields that
//! farsight-format's `CookedSet` docs declare (a game that does not link
//! farsight-mesh): every sub-mesh's part range draws the triangles farsight-mesh's
//! own reader gives for it.

use crate::common;

use farsight_format::{
    AlignedBytes, Container, CookConfig, CookedSet, Manifest, RecordIndex, RecordTag, Version,
};
use farsight_mesh::{
    decode_lod_entry, encode_lod_chain_as, generate_lod_chain, read_lod_chain, ChainRecords,
    LodChainConfig, Mesh,
};
use serde::{Deserialize, Serialize};

// The structs of the `CookedSet` doc example.
#[derive(Serialize, Deserialize)]
struct Chain {
    levels: Vec<Level>,
    #[serde(default)]
    sets: bool,
}
#[derive(Serialize, Deserialize)]
struct Level {
    max_distance: f32,
    submeshes: Vec<SubMesh>,
}
#[derive(Serialize, Deserialize)]
struct SubMesh {
    material: String,
    record: RecordIndex,
    #[serde(default)]
    part: u32,
}
impl Manifest for Chain {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        let tag = if self.sets {
            RecordTag::MESH_COOKED_SET
        } else {
            RecordTag::MESH_COOKED
        };
        for s in self.levels.iter().flat_map(|l| &l.submeshes) {
            visit(s.record, tag);
        }
    }
}

/// The test sphere's triangles split between three materials.
fn three_materials() -> Mesh {
    let mut mesh = common::sphere(12);
    let whole = mesh.submeshes.remove(0);
    let tris = whole.indices.len() / 3;
    for (k, material) in ["wood", "iron", "glass"].into_iter().enumerate() {
        let mut s = whole.clone();
        s.material = material.into();
        s.name = format!("sphere/{k}");
        s.indices = whole.indices[3 * (tris * k / 3)..3 * (tris * (k + 1) / 3)].to_vec();
        mesh.submeshes.push(s);
    }
    mesh
}

#[test]
fn a_cooked_chain_reads_with_farsight_format_alone() {
    let chain = generate_lod_chain(&three_materials(), &LodChainConfig::default());
    let records = ChainRecords::Cooked(CookConfig::default());
    let bytes = encode_lod_chain_as("sphere", &chain, &records).unwrap();
    let bytes = AlignedBytes::from(&bytes[..]);
    let file = Container::<Chain>::read(&bytes).unwrap();
    assert_eq!(file.version(), Version::Cooked);
    assert!(file.manifest().sets);
    let ours = read_lod_chain(&bytes).unwrap();
    let mut parts_past_0 = 0;
    for (level, their_level) in file.manifest().levels.iter().zip(&ours.manifest().levels) {
        assert_eq!(level.max_distance, their_level.max_distance);
        for (sub, theirs) in level.submeshes.iter().zip(&their_level.submeshes) {
            assert_eq!(sub.material, theirs.material);
            parts_past_0 += usize::from(sub.part > 0);
            let record = file.record(sub.record).unwrap();
            let set = CookedSet::parse(record.bytes).unwrap();
            let decoded = set.decode().unwrap();
            let span = set.part_span(sub.part as usize).unwrap();
            let mesh = &decoded[span.record];
            let first = 3 * span.first_triangle as usize;
            let drawn = &mesh.indices[first..first + 3 * span.triangle_count as usize];
            // farsight-mesh's reader gives the part with its own vertices: the same
            // triangles, corner by corner.
            let want = decode_lod_entry(&record, theirs).unwrap();
            assert_eq!(drawn.len(), want.indices.len());
            for (&i, &j) in drawn.iter().zip(&want.indices) {
                assert_eq!(
                    mesh.positions[i as usize],
                    want.vertices[j as usize].position
                );
            }
        }
    }
    assert!(parts_past_0 > 0, "no sub-mesh drew a part other than 0");
}
