//! The terrain file reader (`farsight_terrain::load_grid_with`), checksum off so
//! mutations reach the manifest, record and cell checks; a grid that loads must
//! pass its own validator.
#![no_main]

use farsight_format::ReadConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = ReadConfig { verify_checksum: false };
    if let Ok(grid) = farsight_terrain::load_grid_with(data, opts) {
        if let Err(e) = grid.validate() {
            panic!("a loaded grid fails validation: {e}");
        }
    }
    let _ = farsight_terrain::load_grid(data);
});
