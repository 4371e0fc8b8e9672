//! Shared input generators for the benchmarks in `benches/`.
