//! Cooked files keep every face's provenance through the cook's reorder: bands from a
//! cooked file are the full file's, and every level answers the same face sources.
#![cfg(feature = "bake")]

use crate::common::*;
use farsight_building::bake::*;
use farsight_building::*;

fn sorted_words(m: &Mesh) -> Vec<u32> {
    let mut w: Vec<u32> = m.sources.iter().map(|s| s.to_word()).collect();
    w.sort_unstable();
    w
}

fn centroid(m: &Mesh, t: usize) -> [f32; 3] {
    let c = |k: usize| {
        (0..3)
            .map(|v| m.positions[m.indices[3 * t + v] as usize][k])
            .sum::<f32>()
            / 3.0
    };
    [c(0), c(1), c(2)]
}

/// The triangle's unit normal, or zero for a sliver the cook's quantisation may turn.
fn unit_normal(m: &Mesh, t: usize) -> glam::Vec3 {
    let p = |v: usize| glam::Vec3::from(m.positions[m.indices[3 * t + v] as usize]);
    let n = (p(1) - p(0)).cross(p(2) - p(0));
    if n.length() < 1e-4 {
        return glam::Vec3::ZERO;
    }
    n.normalize()
}

/// Each cooked triangle names the source of the full triangle it is: the one nearest
/// its centroid that faces the same way (checked on pieces small enough to search).
fn same_sources_per_triangle(full: &Mesh, cooked: &Mesh, what: &str) -> usize {
    if full.triangle_count() > 400 {
        return 0;
    }
    let mut checked = 0;
    for t in 0..cooked.triangle_count() {
        let (c, n) = (
            glam::Vec3::from(centroid(cooked, t)),
            unit_normal(cooked, t),
        );
        if n == glam::Vec3::ZERO {
            continue;
        }
        let near = (0..full.triangle_count())
            .filter(|&u| unit_normal(full, u).dot(n) > 0.9)
            .min_by(|&a, &b| {
                let d = |u| glam::Vec3::from(centroid(full, u)).distance(c);
                d(a).total_cmp(&d(b))
            })
            .unwrap_or_else(|| panic!("{what}: cooked triangle {t} faces no full triangle"));
        assert_eq!(
            cooked.sources[t], full.sources[near],
            "{what}: cooked triangle {t}"
        );
        checked += 1;
    }
    checked
}

#[test]
fn bands_and_face_sources_from_a_cooked_file_equal_the_full_files() {
    let mut per_triangle = 0;
    for kit in ["corporate", "dark-city"] {
        let kit = Kit::builtin(kit).unwrap();
        let building = kit.building(1, 0, 1);
        for (name, ladder) in ladders() {
            let baked = bake(&building, &ladder, &ManifoldKernel).unwrap();
            let full = BakedBuilding::read_full(&baked.write_full().unwrap()).unwrap();
            let cooked =
                BakedBuilding::read_cooked(&baked.write_cooked(&test_tangents).unwrap()).unwrap();
            let what = format!("{}, {name}", kit.id);
            assert_eq!(
                bands(&cooked, DEFAULT_CROSSFADE),
                bands(&full, DEFAULT_CROSSFADE),
                "{what}"
            );
            for n in 0..full.level_count() {
                let (lf, lc) = (full.level(n).unwrap(), cooked.level(n).unwrap());
                let (pf, pc): (Vec<_>, Vec<_>) = (lf.pieces().collect(), lc.pieces().collect());
                assert_eq!(pf.len(), pc.len(), "{what}, level {n}");
                for (a, b) in pf.iter().zip(&pc) {
                    let at = format!("{what}, level {n}, {:?}", a.kind);
                    assert_eq!(a.kind, b.kind, "{at}");
                    assert_eq!(b.mesh.sources.len(), b.mesh.triangle_count(), "{at}");
                    assert_eq!(sorted_words(a.mesh), sorted_words(b.mesh), "{at}");
                    assert_eq!(a.is_cut, b.is_cut, "{at}");
                    assert_eq!(lf.placed_elements(a), lc.placed_elements(b), "{at}");
                    per_triangle += same_sources_per_triangle(a.mesh, b.mesh, &at);
                }
                // Groups and cells name the same operands.
                let ops = |l: &MeshedBuilding| {
                    l.groups
                        .iter()
                        .map(|g| (g.id.clone(), g.operands.clone()))
                        .collect::<Vec<_>>()
                };
                assert_eq!(ops(lf), ops(lc), "{what}, level {n}");
            }
        }
    }
    assert!(per_triangle > 1000, "{per_triangle}");
}

#[test]
fn a_cooked_file_stores_its_face_sources_in_one_small_record() {
    let baked = bake(&sample(), &LodPolicy::ladder(), &ManifoldKernel).unwrap();
    let bytes = baked.write_cooked(&test_tangents).unwrap();
    let raw = farsight_format::RawFile::read(&bytes).unwrap();
    let sources: Vec<_> = raw
        .records()
        .filter(|r| r.tag == farsight_building::file::SOURCES_TAG)
        .collect();
    assert_eq!(sources.len(), 1);
    let triangles = baked.triangles();
    assert!(
        sources[0].bytes.len() * 4 < triangles,
        "{} bytes for {triangles} triangles",
        sources[0].bytes.len()
    );
    // A full file has none: its mesh records carry their provenance.
    let full = baked.write_full().unwrap();
    let raw = farsight_format::RawFile::read(&full).unwrap();
    assert!(raw
        .records()
        .all(|r| r.tag != farsight_building::file::SOURCES_TAG));
}

/// A cooked file's head as the reader reads it, to rebuild a file around changed
/// records or a changed head.
#[derive(serde::Serialize, serde::Deserialize)]
struct Head {
    kind: String,
    id: String,
    layout: u32,
    meshes: u32,
    structure: farsight_format::RecordIndex,
    cooked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sources: Option<farsight_format::RecordIndex>,
}

impl farsight_format::Manifest for Head {
    fn visit_records(
        &self,
        visit: &mut dyn FnMut(farsight_format::RecordIndex, farsight_format::RecordTag),
    ) {
        for i in 0..self.meshes {
            visit(
                farsight_format::RecordIndex(i),
                farsight_format::RecordTag::MESH_COOKED,
            );
        }
        visit(self.structure, farsight_building::file::STRUCTURE_TAG);
        if let Some(s) = self.sources {
            visit(s, farsight_building::file::SOURCES_TAG);
        }
    }
}

/// The file with its head changed by `head` and its face-source record's bytes by
/// `table` (given the old bytes).
fn rebuilt(bytes: &[u8], head: impl Fn(&mut Head), table: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let raw = farsight_format::RawFile::read(bytes).unwrap();
    let mut h: Head = ron::from_str(raw.manifest_text()).unwrap();
    let mut w = farsight_format::FileWriter::new(farsight_format::Version::Cooked);
    for r in raw.records() {
        let data = if r.tag == farsight_building::file::SOURCES_TAG {
            table(r.bytes)
        } else {
            r.bytes.to_vec()
        };
        assert_eq!(w.add_owned_record(r.tag, data), r.index);
    }
    head(&mut h);
    w.finish(&h).unwrap()
}

/// A face-source record holding `table` (layout 1, its length, one zstd frame).
fn source_record(table: &[u8]) -> Vec<u8> {
    let mut out = 1u32.to_le_bytes().to_vec();
    out.extend_from_slice(&(table.len() as u32).to_le_bytes());
    out.extend_from_slice(&zstd::bulk::compress(table, 3).unwrap());
    out
}

#[test]
fn cooked_face_sources_are_refused_by_kind() {
    let baked = bake(&row(4), &LodPolicy::ladder(), &ManifoldKernel).unwrap();
    let bytes = baked.write_cooked(&test_tangents).unwrap();
    // Rebuilt unchanged, the file reads.
    let same = rebuilt(&bytes, |_| {}, <[u8]>::to_vec);
    assert_eq!(same, bytes);
    let refused = |b: &[u8]| BakedBuilding::read(b).unwrap_err().to_string();
    // No face-source record.
    let none = rebuilt(&bytes, |h| h.sources = None, <[u8]>::to_vec);
    let e = refused(&none);
    assert!(e.contains("without its face sources"), "{e}");
    // A table of no entries, which every mesh names past its end.
    let e = refused(&rebuilt(&bytes, |_| {}, |_| source_record(&[0])));
    assert!(e.contains("face-source entry 0 of 0"), "{e}");
    // An entry whose triangles are not its mesh's.
    let e = refused(&rebuilt(&bytes, |_| {}, |_| source_record(&[1, 1, 1, 0])));
    assert!(e.contains("has 1 triangles"), "{e}");
    // A table that does not parse, and a record that does not unpack.
    let e = refused(&rebuilt(
        &bytes,
        |_| {},
        |_| source_record(&[1, 3, 2, 2, 5, 2, 0, 1, 1, 1]),
    ));
    assert!(
        e.contains("face-source table: entry 0: runs cover 2 of 3"),
        "{e}"
    );
    let e = refused(&rebuilt(
        &bytes,
        |_| {},
        |old| old[..old.len() - 1].to_vec(),
    ));
    assert!(e.contains("face-source table"), "{e}");
}
