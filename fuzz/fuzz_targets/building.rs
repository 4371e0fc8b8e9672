//! The building file readers (full and cooked, chosen by version word): any bytes give
//! a building or a typed error, never a panic or an allocation beyond the file.
#![no_main]

use farsight_building::BakedBuilding;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = BakedBuilding::read(data) {
        for n in 0..b.level_count() {
            let level = b.level(n).unwrap();
            let _ = level.pieces().count();
        }
        let _ = farsight_building::bands(&b, farsight_building::DEFAULT_CROSSFADE);
    }
});
