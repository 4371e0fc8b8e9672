//! farsight-building: the bake of one building, of an 8 x 8 metropolis on 1 and 2
//! threads (the target of docs/design/baked-buildings.md#levels-are-simpler-recipes: 0.3 s, 12.4 MB), for both kits, and the read time per
//! building of the full and the cooked file. The floor beside the read is copying the
//! file's bytes. A metropolis bakes as the CLI does: one element cache and one record
//! cache for the city (made fresh each iteration), full files written.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use farsight_building::bake::{bake, bake_cached, ManifoldKernel, MeshCache};
use farsight_building::{metropolis, BakedBuilding, Building, Kit, LodPolicy, RecordCache};
use rayon::prelude::*;

fn tangents(m: &farsight_format::MeshData) -> Vec<[f32; 4]> {
    // Benchmarks time reading; any valid unit tangent serves the writer here.
    m.normals
        .iter()
        .map(|n| {
            let v = glam::Vec3::from(*n).any_orthonormal_vector();
            [v.x, v.y, v.z, 1.0]
        })
        .collect()
}

fn bake_city(city: &[Building], threads: usize) -> usize {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let (cache, records) = (MeshCache::new(), RecordCache::new());
    pool.install(|| {
        city.par_iter()
            .map(|b| {
                let (baked, _) =
                    bake_cached(b, &LodPolicy::ladder(), &ManifoldKernel, &cache).unwrap();
                baked.write_full_with(&records).unwrap().len()
            })
            .sum()
    })
}

fn benches(c: &mut Criterion) {
    for name in ["corporate", "dark-city"] {
        let kit = Kit::builtin(name).unwrap();
        let one = kit.building(0, 0, 1);
        let mut g = c.benchmark_group(format!("building/{name}"));
        g.sample_size(10);
        g.bench_function(BenchmarkId::new("bake_one", one.instances.len()), |b| {
            b.iter(|| bake(&one, &LodPolicy::ladder(), &ManifoldKernel).unwrap())
        });
        let city = metropolis(&kit, 8, 1);
        let bytes = bake_city(&city, 1);
        println!(
            "{name} 8x8 metropolis: {:.2} MB of full files",
            bytes as f64 / 1e6
        );
        for threads in [1, 2] {
            g.bench_function(
                BenchmarkId::new("bake_metropolis_8x8_threads", threads),
                |b| b.iter(|| bake_city(&city, threads)),
            );
        }
        let baked = bake(&one, &LodPolicy::ladder(), &ManifoldKernel).unwrap();
        let full = baked.write_full().unwrap();
        let cooked = baked.write_cooked(&tangents).unwrap();
        g.bench_function(BenchmarkId::new("read_full_bytes", full.len()), |b| {
            b.iter(|| BakedBuilding::read_full(&full).unwrap())
        });
        g.bench_function(BenchmarkId::new("read_cooked_bytes", cooked.len()), |b| {
            b.iter(|| BakedBuilding::read_cooked(&cooked).unwrap())
        });
        g.bench_function(BenchmarkId::new("floor_copy_full_bytes", full.len()), |b| {
            b.iter(|| full.to_vec())
        });
        g.finish();
    }
}

criterion_group!(building, benches);
criterion_main!(building);
