//! The decode compiled once per x86_64 instruction-set tier ([`Tier`], detected in
//! `simd.rs`): each function here wraps a part of the portable decode in copies
//! carrying `#[target_feature]`, and calls the best copy the CPU runs. A child of
//! `decode.rs` (it calls back into the decode it wraps), so the SIMD kernels in
//! `simd.rs` stay a leaf the codec modules share.
//!
//! Unsafe code: the calls into the AVX2 and AVX-512 copies, whose obligation (the
//! CPU has the features) is checked by [`Tier::detect`] and asserted before each call.

#![allow(unsafe_code)]

use crate::simd::Tier;

/// The whole decode ([`crate::CookedMesh::stages`], inlined with every loop it runs)
/// compiled for `tier`, which must be at most [`Tier::detect`]'s: LLVM widens the
/// portable loops and uses BMI2's flag-free shifts in the bit unpacking and the walk.
/// Only integer and IEEE operations whose results do not depend on the instruction
/// set (no fused multiply-add is enabled, and Rust never contracts on its own), so
/// every tier gives the bits of the baseline (tested).
pub(crate) fn stages(
    tier: Tier,
    mesh: &crate::CookedMesh<'_>,
    out: &mut crate::MeshData,
    scratch: &mut crate::DecodeScratch,
) -> Result<(), crate::FormatError> {
    use crate::{CookedMesh, DecodeScratch, FormatError, MeshData};
    type Out<'a> = &'a mut MeshData;
    type Scratch<'a> = &'a mut DecodeScratch;
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    fn avx2(m: &CookedMesh<'_>, o: Out<'_>, s: Scratch<'_>) -> Result<(), FormatError> {
        m.stages::<true>(o, s)
    }
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt,avx512f,avx512bw,avx512vl,avx512dq")]
    fn avx512(m: &CookedMesh<'_>, o: Out<'_>, s: Scratch<'_>) -> Result<(), FormatError> {
        m.stages::<true>(o, s)
    }
    assert!(
        tier <= Tier::detect(),
        "{tier:?} is not supported by this CPU"
    );
    match tier {
        Tier::Sse2 => mesh.stages::<false>(out, scratch),
        // SAFETY: the CPU has every feature the function is compiled for (asserted
        // above).
        Tier::Avx2 => unsafe { avx2(mesh, out, scratch) },
        // SAFETY: as above.
        Tier::Avx512 => unsafe { avx512(mesh, out, scratch) },
    }
}

/// `CookedMesh::shared_positions` in a function of its own, compiled for AVX2 with
/// BMI2 when `WIDE` (the AVX2 and AVX-512 tiers), else for the baseline. Inlined
/// into the decode instead, it made the compiler allocate the registers of the
/// decode's other loops worse (ToyCar, which has no shared positions, ran 2 % more
/// instructions); compiled for the baseline alone, as it was, its bit unpacking and
/// walk ran 3 % of LowPolyJungle's decode slower.
#[inline(always)]
pub(crate) fn shared_positions<const WIDE: bool>(
    mesh: &crate::CookedMesh<'_>,
    indices: &[u32],
    pp: bool,
    scratch: &mut crate::DecodeScratch,
) -> Result<(), crate::FormatError> {
    use crate::{CookedMesh, DecodeScratch, FormatError};
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    fn avx2(
        m: &CookedMesh<'_>,
        i: &[u32],
        pp: bool,
        s: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        m.shared_positions(i, pp, s)
    }
    #[inline(never)]
    fn baseline(
        m: &CookedMesh<'_>,
        i: &[u32],
        pp: bool,
        s: &mut DecodeScratch,
    ) -> Result<(), FormatError> {
        m.shared_positions(i, pp, s)
    }
    if WIDE {
        assert!(Tier::detect() >= Tier::Avx2, "AVX2 code on this CPU");
        // SAFETY: the CPU has every feature the function is compiled for (asserted
        // above).
        unsafe { avx2(mesh, indices, pp, scratch) }
    } else {
        baseline(mesh, indices, pp, scratch)
    }
}

/// `buckets::decode` in a function of its own, compiled for AVX2 with BMI2 where
/// the CPU has them (its bit unpacking uses BMI2's flag-free shifts), else for the
/// baseline; the same bits either way (integer operations only). Inlined into the
/// decode, every change to it moved the register allocation of the walk that shares
/// the function (a change that made the unpacking cheaper made ToyCar's walk 1 %
/// of the decode's instructions dearer).
pub(crate) fn buckets(
    stored: &[u8],
    c: usize,
    zigzag: bool,
    out: &mut [u16],
    scratch: &mut Vec<u8>,
    form: crate::buckets::Form<'_>,
) -> Result<(), crate::buckets::BucketError> {
    use crate::buckets::{decode, BucketError, Form};
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    #[inline(never)]
    fn avx2(
        st: &[u8],
        c: usize,
        zz: bool,
        o: &mut [u16],
        b: &mut Vec<u8>,
        z: Form<'_>,
    ) -> Result<(), BucketError> {
        decode(st, c, zz, o, b, z)
    }
    #[inline(never)]
    fn baseline(
        st: &[u8],
        c: usize,
        zz: bool,
        o: &mut [u16],
        b: &mut Vec<u8>,
        z: Form<'_>,
    ) -> Result<(), BucketError> {
        decode(st, c, zz, o, b, z)
    }
    if Tier::detect() >= Tier::Avx2 {
        // SAFETY: the CPU has every feature the function is compiled for (checked
        // just above).
        unsafe { avx2(stored, c, zigzag, out, scratch, form) }
    } else {
        baseline(stored, c, zigzag, out, scratch, form)
    }
}
