//! Writes an OBJ as a full-precision (version 1) and a cooked (version 2) farsight
//! file, for trying `farsight inspect` before the mesh crate's `farsight cook` exists.
//!
//! `cargo run -p farsight-format --example cook_obj -- IN.obj OUT_PREFIX`
//! writes `OUT_PREFIX.full.farsight` and `OUT_PREFIX.cooked.farsight`.

use farsight_format::{
    cook_mesh, encode_full, CookConfig, FileWriter, Manifest, RecordIndex, RecordTag, Version,
};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct MeshFile {
    name: String,
    source: String,
    triangles: usize,
    mesh: RecordIndex,
    cooked: bool,
}

impl Manifest for MeshFile {
    fn visit_records(&self, visit: &mut dyn FnMut(RecordIndex, RecordTag)) {
        let tag = if self.cooked {
            RecordTag::MESH_COOKED
        } else {
            RecordTag::MESH_FULL
        };
        visit(self.mesh, tag);
    }
}

#[path = "../tests/support/obj.rs"]
mod obj;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, prefix] = &args[..] else {
        return Err("usage: cook_obj IN.obj OUT_PREFIX".into());
    };
    let mut m = obj::obj_mesh(input)?;
    m.provenance = (0..m.indices.len() as u32 / 3).collect();
    let name = std::path::Path::new(input)
        .file_stem()
        .map_or("mesh".into(), |s| s.to_string_lossy().into_owned());
    for (cooked, suffix) in [(false, "full"), (true, "cooked")] {
        let (version, tag, rec) = if cooked {
            (
                Version::Cooked,
                RecordTag::MESH_COOKED,
                cook_mesh(&m, &CookConfig::default())?,
            )
        } else {
            (Version::Full, RecordTag::MESH_FULL, encode_full(&m)?)
        };
        let mut w = FileWriter::new(version);
        let mesh = w.add_record(tag, &rec);
        let manifest = MeshFile {
            name: name.clone(),
            source: input.clone(),
            triangles: m.triangle_count(),
            mesh,
            cooked,
        };
        let path = format!("{prefix}.{suffix}.farsight");
        w.write_to(&manifest, &path)?;
        println!("wrote {path}");
    }
    Ok(())
}
