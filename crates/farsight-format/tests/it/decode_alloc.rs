//! Decoding cooked records allocates nothing once the output mesh and the scratch
//! have grown to the largest record: a loader decoding record after record on an IO
//! thread does no per-record allocation (counted with a global allocator). The same
//! for cooked sets, whose zstd body is undone into the scratch.

use crate::GLOBAL;
use farsight_format::{
    cook_mesh, cook_mesh_set, CookConfig, CookedMesh, CookedSet, DecodeScratch, MeshData,
};

use crate::obj;

fn load_obj(name: &str) -> MeshData {
    let path = farsight_testkit::mesh(name);
    obj::obj_mesh(path).unwrap_or_else(|e| panic!("test {e}"))
}

#[test]
fn decoding_records_in_turn_allocates_nothing_once_buffers_have_grown() {
    let opts = CookConfig::default();
    let bare = CookConfig {
        predict_positions: false,
        predict_uvs: false,
        predict_normals: false,
        entropy: false,
        ..opts
    };
    let mut records: Vec<Vec<u8>> = ["pirate.obj", "bunny.obj"]
        .iter()
        .flat_map(|name| {
            let m = load_obj(name);
            [cook_mesh(&m, &opts).unwrap(), cook_mesh(&m, &bare).unwrap()]
        })
        .collect();
    // Quads of four vertices each (uvs 0..1 per quad): vertices share positions.
    let mut quads = MeshData::default();
    for q in 0..400u32 {
        let (x, z) = ((q % 20) as f32, (q / 20) as f32);
        for (dx, dz) in [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)] {
            let (px, pz) = (x + dx, z + dz);
            quads
                .positions
                .push([px, 0.3 * (px * 0.7).sin() * (pz * 0.5).cos(), pz]);
            quads.normals.push([0.0, 1.0, 0.0]);
            quads.uvs.push([dx, dz]);
        }
        let b = 4 * q;
        quads.indices.extend([b, b + 3, b + 1, b + 1, b + 3, b + 2]);
    }
    records.push(cook_mesh(&quads, &opts).unwrap());
    let parsed: Vec<CookedMesh<'_>> = records
        .iter()
        .map(|r| CookedMesh::parse(r).unwrap())
        .collect();
    // The quads' vertices share positions: the remap's buffers are covered too.
    let shared = farsight_format::CookedHeader::SHARED_POSITIONS;
    assert!(parsed.iter().any(|m| m.header.flags & shared != 0));
    let mut out = MeshData::default();
    let mut scratch = DecodeScratch::default();
    // First round: buffers grow to the largest record.
    for m in &parsed {
        m.decode_into(&mut out, &mut scratch).unwrap();
    }
    // This thread's allocations only: the tests beside this one in the program
    // allocate on theirs.
    let (allocations, ()) = GLOBAL.count_this_thread(|| {
        for _ in 0..3 {
            for m in &parsed {
                m.decode_into(&mut out, &mut scratch).unwrap();
                assert_eq!(out.indices.len(), m.header.index_count as usize);
            }
        }
    });
    assert_eq!(allocations, 0, "allocations while decoding in steady state");
    decoding_sets_in_turn_allocates_nothing_once_buffers_have_grown();
}

/// Part of the one test above (as it was when the counter counted every thread).
fn decoding_sets_in_turn_allocates_nothing_once_buffers_have_grown() {
    let bunny = load_obj("bunny.obj");
    let mut small = bunny.clone();
    small.indices.truncate(300);
    let raw = CookConfig {
        entropy: false,
        ..CookConfig::default()
    };
    let sets = [
        cook_mesh_set(
            &[small.clone(), bunny.clone(), small.clone()],
            &CookConfig::default(),
        )
        .unwrap(),
        cook_mesh_set(&[small, bunny], &raw).unwrap(),
    ];
    let parsed: Vec<CookedSet<'_>> = sets.iter().map(|s| CookedSet::parse(s).unwrap()).collect();
    let mut out = Vec::new();
    let mut scratch = DecodeScratch::default();
    for s in &parsed {
        s.decode_into(&mut out, &mut scratch).unwrap();
    }
    let (allocations, ()) = GLOBAL.count_this_thread(|| {
        for _ in 0..3 {
            for s in &parsed {
                s.decode_into(&mut out, &mut scratch).unwrap();
                assert_eq!(out.len(), s.record_count());
            }
        }
    });
    assert_eq!(
        allocations, 0,
        "allocations while decoding sets in steady state"
    );
}
