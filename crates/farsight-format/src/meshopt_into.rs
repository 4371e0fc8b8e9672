//! meshoptimizer's vertex and index decoders writing into buffers the caller owns.
//!
//! The `meshopt` crate's safe decoders return a fresh `Vec` per call; a loader decoding
//! record after record on an IO thread should not allocate per record, so these two
//! wrappers call the same C functions on the caller's slices. This is the one module of
//! the crate that uses `unsafe`: two FFI calls whose only obligations are that the
//! destination holds `count * size` writable bytes and the source `len` readable bytes,
//! both of which the slice types guarantee.

#![allow(unsafe_code)]

use bytemuck::Pod;

/// Decodes meshopt's vertex codec into `out` (every element written on success).
/// `T` must be 4..=256 bytes and a multiple of 4 (meshopt's rule; the record types are
/// 4 and 8). Returns false when meshopt refuses the bytes.
pub(crate) fn vertices<T: Pod>(encoded: &[u8], out: &mut [T]) -> bool {
    let size = std::mem::size_of::<T>();
    const { assert!(std::mem::size_of::<T>() % 4 == 0 && std::mem::size_of::<T>() <= 256) };
    // SAFETY: `out` is a live, exclusively borrowed buffer of `out.len() * size` bytes,
    // which is exactly what meshopt writes at most; `encoded` is readable for its
    // length, and meshopt reads no further (its decoder checks every read against
    // `buffer_size`). `T: Pod` accepts any bytes meshopt writes.
    let rc = unsafe {
        meshopt::ffi::meshopt_decodeVertexBuffer(
            out.as_mut_ptr().cast(),
            out.len(),
            size,
            encoded.as_ptr(),
            encoded.len(),
        )
    };
    rc == 0
}

/// Decodes meshopt's index codec into `out` (`out.len()` a multiple of 3). Returns false
/// when meshopt refuses the bytes.
pub(crate) fn indices(encoded: &[u8], out: &mut [u32]) -> bool {
    if out.len() % 3 != 0 {
        return false;
    }
    // SAFETY: `out` is a live, exclusively borrowed buffer of `out.len()` u32s, exactly
    // what meshopt writes at most with index_size 4; `encoded` is readable for its
    // length and meshopt checks every read against `buffer_size`.
    let rc = unsafe {
        meshopt::ffi::meshopt_decodeIndexBuffer(
            out.as_mut_ptr().cast(),
            out.len(),
            4,
            encoded.as_ptr(),
            encoded.len(),
        )
    };
    rc == 0
}
