//! Chooses the decoder's instruction-set path once for the whole crate: the x86_64
//! SIMD forms (`cfg(simd_x86)`) on x86_64, unless the `portable` feature asks for
//! the portable loops every other target compiles (so an x86_64 machine builds and
//! tests the non-x86 code too).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(simd_x86)");
    println!("cargo::rerun-if-changed=build.rs");
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");
    let portable = std::env::var_os("CARGO_FEATURE_PORTABLE").is_some();
    if x86_64 && !portable {
        println!("cargo::rustc-cfg=simd_x86");
    }
}
