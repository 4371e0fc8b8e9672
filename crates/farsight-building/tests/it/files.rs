//! The full and cooked building files: round trips, refusals by kind, truncation and
//! bit flips, identical bytes over runs and threads.
#![cfg(feature = "bake")]

use crate::common::*;
use farsight_building::bake::*;
use farsight_building::*;
use farsight_format::{FormatError, Version};
use rand::{Rng, SeedableRng};

fn baked() -> BakedBuilding {
    let mut ladder = LodPolicy::ladder();
    ladder[2].cell = Some(LodCell::Side(35.0));
    bake(&sample(), &ladder, &ManifoldKernel).unwrap()
}

#[test]
fn full_file_round_trips() {
    let b = baked();
    let bytes = b.write_full().unwrap();
    let back = BakedBuilding::read_full(&bytes).unwrap();
    assert_eq!(back, b);
    assert_eq!(BakedBuilding::read(&bytes).unwrap(), b);
    // A mesh shared by levels is one record and one allocation after reading.
    let crown = |n: usize| {
        std::sync::Arc::clone(&back.level(n).unwrap().part("crown").unwrap().elements[0].mesh)
    };
    assert!(std::sync::Arc::ptr_eq(&crown(0), &crown(1)));
    // Written again, the same bytes.
    assert_eq!(back.write_full().unwrap(), bytes);
}

#[test]
fn cooked_file_reads_back_the_same_structure() {
    let b = baked();
    let bytes = b.write_cooked(&test_tangents).unwrap();
    let back = BakedBuilding::read_cooked(&bytes).unwrap();
    assert!(back.recipe.is_none());
    assert_eq!(back.ladder, b.ladder);
    for (l, m) in b.levels.iter().zip(&back.levels) {
        let (pa, pb): (Vec<_>, Vec<_>) = (l.pieces().collect(), m.pieces().collect());
        assert_eq!(pa.len(), pb.len());
        for (x, y) in pa.iter().zip(&pb) {
            assert_eq!(x.kind, y.kind);
            assert_eq!(x.bounds, y.bounds);
            assert_eq!(x.origin, y.origin);
            assert_eq!(x.material, y.material);
            assert_eq!(x.mesh.triangle_count(), y.mesh.triangle_count());
            assert_eq!(y.mesh.tangents.len(), y.mesh.positions.len());
            // Quantised against its own bounds: within a 16-bit step of the box.
            let ext = (0..3)
                .map(|k| x.bounds.max[k] - x.bounds.min[k])
                .fold(0.0, f32::max);
            let slack = ext / 30000.0;
            let inside = |p: &[f32; 3]| {
                p.iter()
                    .zip(x.bounds.min.iter().zip(&x.bounds.max))
                    .all(|(v, (lo, hi))| *v >= lo - slack && *v <= hi + slack)
            };
            assert!(y.mesh.positions.iter().all(inside));
        }
        assert_eq!(m.colliders(), l.colliders());
        assert_eq!(m.portals(), l.portals());
    }
    assert!(bytes.len() < b.write_full().unwrap().len());
}

#[test]
fn readers_refuse_by_kind() {
    let b = baked();
    let full = b.write_full().unwrap();
    let cooked = b.write_cooked(&test_tangents).unwrap();
    assert!(matches!(
        BakedBuilding::read_full(&cooked),
        Err(FileError::WrongVersion {
            expected: Version::Full,
            found: Version::Cooked
        })
    ));
    assert!(matches!(
        BakedBuilding::read_cooked(&full),
        Err(FileError::WrongVersion {
            expected: Version::Cooked,
            found: Version::Full
        })
    ));
    let mut wrong_id = full.clone();
    wrong_id[0] ^= 1;
    assert!(matches!(
        BakedBuilding::read(&wrong_id),
        Err(FileError::Format(_))
    ));
    let mut version = full.clone();
    version[12] = 9;
    assert!(matches!(
        BakedBuilding::read(&version),
        Err(FileError::Format(FormatError::UnknownVersion { found: 9 }))
    ));
    let mut trailing = full.clone();
    trailing.push(0);
    assert!(matches!(
        BakedBuilding::read(&trailing),
        Err(FileError::Format(_))
    ));
    // A recipe written by other rules is refused on read.
    let mut bad = b.clone();
    if let Some(r) = &mut bad.recipe {
        r.parts[1].elements[0].shape.geometry = Geometry::Cylinder {
            radius: 0.4,
            height: 6.0,
            segments: 2,
        };
    }
    let bytes = bad.write_full().unwrap();
    match BakedBuilding::read(&bytes) {
        Err(FileError::Recipe(RecipeError::Invalid { at, rule })) => {
            assert_eq!(at, "part `column`, element `shaft`");
            assert_eq!(rule, Rule::Segments { found: 2 });
        }
        other => panic!("{other:?}"),
    }
    // A ladder that no longer checks.
    let mut bad = b.clone();
    bad.ladder[2].cell = Some(LodCell::Side(0.0));
    let bytes = bad.write_full().unwrap();
    assert!(matches!(
        BakedBuilding::read(&bytes),
        Err(FileError::Policy(PolicyError::BadCell { level: 2, .. }))
    ));
    // A cell so small the recipe's far corner has no cell index.
    let mut bad = b.clone();
    bad.ladder[2].cell = Some(LodCell::Side(1e-12));
    let bytes = bad.write_full().unwrap();
    assert!(matches!(
        BakedBuilding::read(&bytes),
        Err(FileError::Policy(PolicyError::CellIndexOutOfRange {
            level: 2,
            ..
        }))
    ));
    // A level that ends inside its own fade-in.
    let mut bad = b.clone();
    bad.ladder[1].until = Some(61.0);
    let bytes = bad.write_full().unwrap();
    assert!(matches!(
        BakedBuilding::read(&bytes),
        Err(FileError::Policy(PolicyError::NarrowerThanCrossfade {
            level: 1,
            ..
        }))
    ));
    // A face naming an operand its group does not have.
    let mut bad = b.clone();
    bad.levels[0].groups[0].operands.truncate(1);
    let bytes = bad.write_full().unwrap();
    assert!(matches!(
        BakedBuilding::read(&bytes),
        Err(FileError::Structure { level: 0, .. })
    ));
}

#[test]
fn every_truncation_and_random_bit_flips_are_refused() {
    let b = bake(&row(4), &LodPolicy::ladder(), &ManifoldKernel).unwrap();
    for bytes in [
        b.write_full().unwrap(),
        b.write_cooked(&test_tangents).unwrap(),
    ] {
        for len in 0..bytes.len() {
            assert!(
                BakedBuilding::read(&bytes[..len]).is_err(),
                "prefix {len} of {}",
                bytes.len()
            );
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for _ in 0..3000 {
            let mut flipped = bytes.clone();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..flipped.len());
                flipped[i] ^= 1 << rng.random_range(0..8);
            }
            assert!(BakedBuilding::read(&flipped).is_err());
        }
    }
}

#[test]
fn bytes_are_identical_over_20_runs_and_on_1_and_2_threads() {
    let ladder = {
        let mut l = LodPolicy::ladder();
        l[2].cell = Some(LodCell::Side(35.0));
        l
    };
    let one = |b: &Building| {
        let baked = bake(b, &ladder, &ManifoldKernel).unwrap();
        (
            baked.write_full().unwrap(),
            baked.write_cooked(&test_tangents).unwrap(),
        )
    };
    let buildings = [sample(), row(6)];
    let reference: Vec<_> = buildings.iter().map(one).collect();
    for _ in 0..20 {
        assert_eq!(one(&buildings[0]), reference[0]);
    }
    // Two threads baking at once (kernel ids interleave) give the same bytes.
    let both: Vec<_> = std::thread::scope(|s| {
        let h: Vec<_> = buildings.iter().map(|b| s.spawn(|| one(b))).collect();
        h.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(both, reference);
}

#[test]
fn one_cache_over_a_city_on_two_threads_gives_the_bytes_of_separate_bakes() {
    let kit = Kit::builtin("dark-city").unwrap();
    let city = metropolis(&kit, 2, 3);
    let ladder = LodPolicy::ladder();
    let alone: Vec<Vec<u8>> = city
        .iter()
        .map(|b| {
            bake(b, &ladder, &ManifoldKernel)
                .unwrap()
                .write_full()
                .unwrap()
        })
        .collect();
    let cache = MeshCache::new();
    let records = RecordCache::new();
    let kernel = Counting::default();
    let shared: Vec<Vec<u8>> = std::thread::scope(|s| {
        let h: Vec<_> = city
            .chunks(2)
            .map(|chunk| {
                s.spawn(|| {
                    chunk
                        .iter()
                        .map(|b| {
                            let (baked, _) = bake_cached(b, &ladder, &kernel, &cache).unwrap();
                            baked.write_full_with(&records).unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        h.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(shared, alone);
    // The kit's elements were meshed about once each, not once per building.
    let elements: usize = city
        .iter()
        .map(|b| b.parts.iter().map(|p| p.elements.len()).sum::<usize>())
        .sum();
    assert!(
        cache.hits() > cache.misses(),
        "{} {}",
        cache.hits(),
        cache.misses()
    );
    assert!(
        cache.misses() < elements,
        "{} of {elements}",
        cache.misses()
    );
}

#[test]
fn a_bad_structure_record_is_refused_by_kind() {
    let b = baked();
    let bytes = b.write_full().unwrap();
    // The head names the structure record; past the meshes it is the last record.
    let raw = farsight_format::RawFile::read(&bytes).unwrap();
    assert!(raw.manifest_text().contains("layout"));
    assert!(raw.manifest_text().len() < 200, "{}", raw.manifest_text());
    let last = raw.records().last().unwrap();
    assert_eq!(last.tag, farsight_building::file::STRUCTURE_TAG);
}

#[test]
fn a_merge_group_is_meshed_once_per_members_poses_and_materials() {
    let kit = Kit::builtin("corporate").unwrap();
    let first = kit.building(0, 0, 1);
    // The same podium under another building's name, and under another material.
    let mut renamed = first.clone();
    renamed.id = "renamed".into();
    let mut repainted = first.clone();
    repainted.id = "repainted".into();
    let slab = repainted.part(&kit.slab).unwrap().elements[0]
        .binding
        .clone();
    repainted.palette.insert(slab, "vermilion".into());
    let ladder = LodPolicy::ladder();
    let cache = MeshCache::new();
    let kernel = Counting::default();
    let mut counts = Vec::new();
    let mut podiums = Vec::new();
    for b in [&first, &renamed, &repainted] {
        let (baked, _) = bake_cached(b, &ladder, &kernel, &cache).unwrap();
        let alone = bake(b, &ladder, &ManifoldKernel).unwrap();
        assert_eq!(
            baked.write_full().unwrap(),
            alone.write_full().unwrap(),
            "{}",
            b.id
        );
        assert_eq!(
            baked.write_cooked(&test_tangents).unwrap(),
            alone.write_cooked(&test_tangents).unwrap(),
            "{}",
            b.id
        );
        counts.push((cache.group_misses(), cache.group_hits()));
        podiums.push(baked.level(0).unwrap().groups[0].clone());
    }
    // The first podium went through the kernel; the renamed one took its batches (the
    // same meshes), the repainted one did not.
    let (m0, h0) = counts[0];
    assert!(m0 >= 1);
    assert_eq!(counts[1], (m0, h0 + m0));
    assert!(counts[2].0 > m0);
    assert!(std::sync::Arc::ptr_eq(
        &podiums[0].batches[0].mesh,
        &podiums[1].batches[0].mesh
    ));
    assert!(podiums[2].batches.iter().any(|b| b.binding == "vermilion"));
    assert!(!podiums[0].batches.iter().any(|b| b.binding == "vermilion"));
}

/// Two levels joined at different cell sizes put the same pieces in differently named
/// cells: their batches are equal but separate in memory, and one record in the file.
/// Unique triangles are the same fresh from the bake and read back, under every
/// ladder of the band tests as well.
#[test]
fn unique_triangles_are_the_same_fresh_and_read_back() {
    let far = |until: Option<f32>, side: f32| LodPolicy {
        min_feature: 0.35,
        segment_scale: 0.5,
        drop_interior: true,
        until,
        cell: Some(LodCell::Side(side)),
    };
    let twice = vec![
        LodPolicy::as_authored(Some(60.0)),
        far(Some(250.0), 1000.0),
        far(None, 2000.0),
    ];
    let mut ladders = ladders();
    ladders.push(("one level joined at two cell sizes", twice));
    for b in [sample(), row(6)] {
        for (name, ladder) in &ladders {
            let fresh = bake(&b, ladder, &ManifoldKernel).unwrap();
            let back = BakedBuilding::read_full(&fresh.write_full().unwrap()).unwrap();
            assert_eq!(back.triangles(), fresh.triangles(), "{} {name}", b.id);
            assert_eq!(back.meshes().len(), fresh.meshes().len(), "{} {name}", b.id);
            let cooked = fresh.write_cooked(&test_tangents).unwrap();
            let cooked = BakedBuilding::read_cooked(&cooked).unwrap();
            assert_eq!(cooked.triangles(), fresh.triangles(), "{} {name}", b.id);
        }
    }
    // The case that told them apart: the far level's batches once, not twice.
    let b = row(6);
    let fresh = bake(&b, &ladders.last().unwrap().1, &ManifoldKernel).unwrap();
    let level = |n: usize| fresh.levels[n].unique_triangles();
    assert_eq!(
        fresh.levels[1].drawn_triangles(),
        fresh.levels[2].drawn_triangles()
    );
    assert!(fresh.triangles() < level(0) + level(1) + level(2));
}
