//! The container reader, with the checksum off so mutations reach the structural
//! checks, then every record through the describer (which parses known kinds).
#![no_main]

use farsight_format::{describe_record, Container, Manifest, RawFile, ReadConfig, RecordIndex, RecordTag};
use libfuzzer_sys::fuzz_target;

#[derive(serde::Serialize, serde::Deserialize)]
struct Levels {
    name: String,
    levels: Vec<RecordIndex>,
}

impl Manifest for Levels {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        for &l in &self.levels {
            visit(l, RecordTag::MESH_COOKED);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let opts = ReadConfig { verify_checksum: false };
    if let Ok(raw) = RawFile::read_with(data, opts) {
        for r in raw.records() {
            let _ = describe_record(&r);
        }
    }
    let _ = Container::<Levels>::read_with(data, opts);
    let _ = RawFile::read(data);
});
