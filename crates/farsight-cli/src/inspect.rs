//! `farsight inspect FILE`: what a farsight container holds, without knowing its
//! asset kind: identifier, version, the manifest as written (indented RON), and per
//! record its kind, streams, sizes and bytes per triangle. Every record kind the
//! project writes is described (meshes full and cooked, cluster levels, LOD chain
//! sub-meshes, terrain chunks, region entity tables, tile payloads); a kind it does
//! not know is listed with its size alone.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use farsight_format::{
    describe_record, AlignedBytes, FormatError, RawFile, Record, RecordSummary, RecordTag,
    StreamSummary, IDENTIFIER,
};

#[derive(clap::Args)]
pub struct InspectArgs {
    /// The file to inspect.
    pub file: PathBuf,
    /// Leave the manifest out (for files whose manifest is long).
    #[arg(long)]
    pub no_manifest: bool,
    /// Print only the manifest, as indented RON. For a building file that is its whole
    /// structure (recipe, ladder, placements, every level's parts and groups, meshes
    /// by record number), which the file stores compressed: two bakes can be diffed.
    #[arg(long, conflicts_with = "no_manifest")]
    pub manifest: bool,
}

pub fn run(args: InspectArgs) -> Result<(), Box<dyn std::error::Error>> {
    let bytes = AlignedBytes::read_file(&args.file).map_err(|e| match e {
        FormatError::Io { path, source } => crate::output::io_error(&path, &source),
        e => format!("{}: {e}", args.file.display()),
    })?;
    let (report, building) = if args.manifest {
        let text = manifest(&bytes).map_err(|e| format!("{}: {e}", args.file.display()))?;
        (text, String::new())
    } else {
        let report = report(&bytes, !args.no_manifest)
            .map_err(|e| format!("{}: {e}", args.file.display()))?;
        let building = crate::bake_buildings::describe(&bytes).unwrap_or_default();
        (report, building)
    };
    // A reader that stops early (`farsight inspect F | head`) closes the pipe: that
    // ends the report, it is not an error.
    let mut out = std::io::stdout().lock();
    match out
        .write_all(report.as_bytes())
        .and_then(|()| out.write_all(building.as_bytes()))
        .and_then(|()| out.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("writing the report: {e}").into())
        }
        _ => Ok(()),
    }
}

/// The manifest as indented RON, ending in a newline: a building file's structure
/// record spelled out (it is stored compact and compressed), any other file's
/// container manifest as written.
pub fn manifest(bytes: &[u8]) -> Result<String, Box<dyn std::error::Error>> {
    let file = RawFile::read(bytes)?;
    let mut text = if file.manifest_text().contains(farsight_building::file::KIND) {
        farsight_building::file::manifest_ron(bytes)?
    } else {
        file.manifest_text().to_string()
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// Escapes the identifier the way a hex dump would show its non-ASCII bytes.
fn identifier_text(id: &[u8]) -> String {
    id.iter()
        .map(|&b| {
            if b.is_ascii_graphic() {
                (b as char).to_string()
            } else {
                format!("\\x{b:02X}")
            }
        })
        .collect()
}

/// The whole report as text (kept apart from printing so a test can read it).
pub fn report(bytes: &[u8], with_manifest: bool) -> Result<String, farsight_format::FormatError> {
    let file = RawFile::read(bytes)?;
    kind_version(bytes)?;
    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(w, "identifier  {}", identifier_text(&IDENTIFIER));
    let _ = writeln!(
        w,
        "version     {} ({:?})",
        file.version() as u32,
        file.version()
    );
    let _ = writeln!(
        w,
        "size        {} bytes: manifest {} bytes, table {} bytes, {} records",
        bytes.len(),
        file.manifest_text().len(),
        file.table_len(),
        file.record_count()
    );
    if let Some(text) = instances_text(bytes) {
        let _ = writeln!(w, "{text}");
    }
    if let Some(text) = materials_text(bytes) {
        let _ = writeln!(w, "{text}");
    }
    if with_manifest {
        let _ = writeln!(w, "\nmanifest:\n{}", file.manifest_text());
    }
    let _ = writeln!(w, "\nrecords:");
    let (mut total_bytes, mut total_tris) = (0u64, 0u64);
    for record in file.records() {
        let Some(s) = describe(&record)? else {
            let what = match record.tag {
                farsight_building::file::STRUCTURE_TAG => {
                    "building structure: levels, groups, placements, rooms, hulls; compact RON in zstd"
                }
                farsight_building::file::SOURCES_TAG => {
                    "building face sources: per cooked triangle, the elements it came from"
                }
                farsight_format::TEXTURE_TAG => "an embedded texture image",
                _ => "a kind this tool does not describe",
            };
            let _ = writeln!(
                w,
                "  #{:<3} {}  {} bytes  ({what})",
                record.index.0,
                record.tag,
                record.bytes.len()
            );
            total_bytes += record.bytes.len() as u64;
            continue;
        };
        total_bytes += s.bytes;
        total_tris += s.triangles;
        if s.triangles > 0 || s.vertices > 0 {
            let per_tri = s
                .bytes_per_triangle()
                .map_or("-".to_string(), |b| format!("{b:.2}"));
            let _ = writeln!(
                w,
                "  #{:<3} {}  {} bytes  {} vertices  {} triangles  {} bytes/triangle",
                record.index.0, s.tag, s.bytes, s.vertices, s.triangles, per_tri
            );
        } else {
            let _ = writeln!(w, "  #{:<3} {}  {} bytes", record.index.0, s.tag, s.bytes);
        }
        if !s.detail.is_empty() {
            let _ = writeln!(w, "        {}", s.detail);
        }
        for st in &s.streams {
            let per = if s.triangles > 0 {
                format!("{:.2} B/tri", st.stored_bytes as f64 / s.triangles as f64)
            } else {
                String::new()
            };
            let _ = writeln!(
                w,
                "        {:<11} {:<20} {:>10} stored {:>10} decoded  {}",
                st.name, st.codec, st.stored_bytes, st.decoded_bytes, per
            );
        }
    }
    if total_tris > 0 {
        let _ = writeln!(
            w,
            "\ntotal: {total_tris} triangles in {total_bytes} record bytes, {:.2} bytes/triangle ({:.2} counting the whole file)",
            total_bytes as f64 / total_tris as f64,
            bytes.len() as f64 / total_tris as f64
        );
    }
    Ok(out)
}

/// `WrongVersion` where the manifest is of a kind this project writes (LOD chain,
/// cluster file, terrain save, scene index, region file, tile manifest or level)
/// and the version word is not the one that kind is written with: the checksum does
/// not cover the version word, so only the kind's own reader can tell.
fn kind_version(bytes: &[u8]) -> Result<(), FormatError> {
    use farsight_format::{ClusterMeshManifest, Container, Manifest};
    use farsight_stream::region::scene::{RegionManifest, SceneManifest};
    fn refused<M: Manifest>(bytes: &[u8]) -> Result<(), FormatError> {
        match Container::<M>::read(bytes) {
            Err(e @ FormatError::WrongVersion { .. }) => Err(e),
            _ => Ok(()),
        }
    }
    refused::<farsight_mesh::LodChainManifest>(bytes)?;
    refused::<ClusterMeshManifest>(bytes)?;
    refused::<farsight_terrain::TerrainManifest>(bytes)?;
    refused::<SceneManifest>(bytes)?;
    refused::<RegionManifest>(bytes)?;
    refused::<farsight_stream::tile::TileManifest>(bytes)?;
    refused::<farsight_stream::tile::TileLevelManifest>(bytes)
}

/// The material table of a mesh file (cluster DAG, cooked scene or LOD chain):
/// each material's factors and texture slots, then each texture and where its
/// image is.
fn materials_text(bytes: &[u8]) -> Option<String> {
    use farsight_format::{ClusterMeshManifest, Container, TextureData};
    let aligned = AlignedBytes::from(bytes);
    let table = if let Ok(f) = Container::<ClusterMeshManifest>::read(&aligned) {
        f.manifest().material_table.clone()
    } else if let Ok(f) = farsight_mesh::read_lod_chain(&aligned) {
        f.manifest().material_table.clone()
    } else {
        return None;
    };
    if table.is_empty() {
        return None;
    }
    let mut out = format!(
        "materials   {} ({} textures)",
        table.materials.len(),
        table.textures.len()
    );
    for (i, m) in table.materials.iter().enumerate() {
        let c = m.base_color;
        let _ = write!(
            out,
            "\n  material {i:<3} {:<24} base ({:.3}, {:.3}, {:.3}, {:.3}) metallic {:.3} roughness {:.3} {:?}{}{}",
            m.name,
            c[0],
            c[1],
            c[2],
            c[3],
            m.metallic,
            m.roughness,
            m.alpha_mode,
            if m.double_sided { " double-sided" } else { "" },
            if m.unlit { " unlit" } else { "" }
        );
        if m.emissive != [0.0; 3] {
            let e = m.emissive;
            let _ = write!(
                out,
                " emissive ({:.3}, {:.3}, {:.3}) x{}",
                e[0], e[1], e[2], m.emissive_strength
            );
        }
        for (field, slot) in m.texture_slots() {
            if let Some(slot) = slot {
                let name = field.trim_end_matches("_texture");
                let _ = write!(out, "\n      {name:<20} texture {}", slot.texture);
                if slot.texcoord != 0 {
                    let _ = write!(out, " (uv set {})", slot.texcoord);
                }
                if slot.transform.is_some() {
                    let _ = write!(out, " (transformed)");
                }
            }
        }
    }
    for (i, t) in table.textures.iter().enumerate() {
        let place = |d: &TextureData| match d {
            TextureData::File(name) => name.clone(),
            TextureData::Embedded(r) => format!("record #{}", r.0),
        };
        let _ = write!(
            out,
            "\n  texture {i:<4} {:?} {}x{} {}{} ({})",
            t.format,
            t.width,
            t.height,
            place(&t.data),
            if t.mips.is_empty() {
                String::new()
            } else {
                format!(" + {} mips", t.mips.len())
            },
            t.name
        );
    }
    Some(out)
}

/// The instance table of a mesh file whose source drew a mesh more than once (a
/// cluster DAG or LOD chain manifest with instances): how many geometries and
/// instances, then each instance's geometry and translation.
fn instances_text(bytes: &[u8]) -> Option<String> {
    use farsight_format::{ClusterMeshManifest, Container};
    let aligned = AlignedBytes::from(bytes);
    let mut geometries_text = String::new();
    let table: Vec<(u32, [f32; 16])> = if let Ok(f) =
        Container::<ClusterMeshManifest>::read(&aligned)
    {
        let m = f.manifest();
        if m.geometry_count() > 1 {
            for (g, geo) in m.all_geometries().enumerate() {
                let first = geo.levels.first().map_or(0, |l| l.triangles);
                let bytes: u64 = geo.levels.iter().map(|l| l.bytes).sum();
                let _ = write!(
                        geometries_text,
                        "\n  geometry {g:<3} {:<24} {} level{}, {first} triangles at level 0, {bytes} bytes",
                        geo.name,
                        geo.levels.len(),
                        if geo.levels.len() == 1 { "" } else { "s" }
                    );
            }
        }
        m.all_placements()
            .iter()
            .map(|i| (i.geometry, i.transform))
            .collect()
    } else if let Ok(f) = farsight_mesh::read_lod_chain(&aligned) {
        let m = f.manifest();
        m.instances
            .iter()
            .map(|i| (i.geometry, i.transform))
            .collect()
    } else {
        return None;
    };
    if table.is_empty() {
        return None;
    }
    let geometries = table.iter().map(|i| i.0).max().unwrap_or(0) + 1;
    let mut out = format!(
        "instances   {} of {geometries} geometries (each stored once, in its own space)",
        table.len()
    );
    out.push_str(&geometries_text);
    for (i, (g, t)) in table.iter().enumerate() {
        let _ = write!(
            out,
            "\n  instance {i:<4} geometry {g:<3} at ({:.4}, {:.4}, {:.4})",
            t[12], t[13], t[14]
        );
    }
    Some(out)
}

/// The record described, or `None` for a kind nobody here writes. Kinds of other
/// crates (LOD chain sub-meshes, terrain chunks, streaming records) are read here;
/// the container's own mesh and cluster kinds by farsight-format.
fn describe(record: &Record<'_>) -> Result<Option<RecordSummary>, FormatError> {
    let summary = |detail: String| RecordSummary {
        tag: record.tag,
        bytes: record.bytes.len() as u64,
        vertices: 0,
        triangles: 0,
        detail,
        streams: Vec::new(),
    };
    match record.tag {
        RecordTag::MESH_FULL
        | RecordTag::MESH_COOKED
        | RecordTag::MESH_COOKED_SET
        | RecordTag::CLUSTER_LEVEL => {
            describe_record(record).map(Some)
        }
        t if t == farsight_mesh::LOD_SUBMESH_TAG => {
            let m = farsight_mesh::decode_lod_submesh(record.bytes, "")?;
            let mut s = summary("one sub-mesh of a discrete LOD level, full precision".into());
            s.vertices = m.vertices.len() as u64;
            s.triangles = m.indices.len() as u64 / 3;
            let (vb, ib) = (s.vertices * 48, m.indices.len() as u64 * 4);
            s.streams = vec![
                StreamSummary {
                    name: "vertices",
                    codec: "f32 x12",
                    stored_bytes: vb,
                    decoded_bytes: vb,
                },
                StreamSummary {
                    name: "indices",
                    codec: "u32",
                    stored_bytes: ib,
                    decoded_bytes: ib,
                },
            ];
            Ok(Some(s))
        }
        t if t == farsight_terrain::CHUNK_TAG => Ok(Some(summary(format!(
            "a dense terrain chunk: {} cells (material, occupancy) LZ4-compressed to {} bytes, {:.1}% of {} bytes",
            farsight_terrain::CHUNK_CELLS.pow(3),
            record.bytes.len(),
            record.bytes.len() as f64 * 100.0 / (2 * farsight_terrain::CHUNK_CELLS.pow(3)) as f64,
            2 * farsight_terrain::CHUNK_CELLS.pow(3)
        )))),
        t if t == farsight_stream::region::scene::ENTITY_TABLE => Ok(Some(summary(
            "a region's entity table (what the region places; its manifest lists the entities)"
                .into(),
        ))),
        t if t == farsight_stream::tile::TILE_PAYLOAD => Ok(Some(summary(
            "a tile level's payload, opaque bytes handed to the engine".into(),
        ))),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use farsight_format::{
        cook_mesh, encode_full, CookConfig, FileWriter, Manifest, MeshData, RecordIndex, RecordTag,
        Version,
    };

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Chain {
        name: String,
        levels: Vec<RecordIndex>,
    }
    impl Manifest for Chain {
        fn visit_records(&self, _: &mut dyn FnMut(RecordIndex, RecordTag)) {}
    }

    fn quad() -> MeshData {
        MeshData {
            positions: vec![
                [0.0, 0.0, 0.0],
                [1.0, 0.0, 0.0],
                [1.0, 1.0, 0.0],
                [0.0, 1.0, 0.0],
            ],
            normals: vec![[0.0, 0.0, 1.0]; 4],
            uvs: vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]],
            indices: vec![0, 1, 2, 0, 2, 3],
            ..Default::default()
        }
    }

    /// A small grid mesh as a farsight-mesh source mesh.
    fn grid_mesh() -> farsight_mesh::Mesh {
        let n = 8u32;
        let mut vertices = Vec::new();
        for y in 0..=n {
            for x in 0..=n {
                let (u, v) = (x as f32 / n as f32, y as f32 / n as f32);
                vertices.push(farsight_mesh::Vertex {
                    position: [u, 0.1 * (7.0 * u).sin() * v, v],
                    normal: [0.0, 1.0, 0.0],
                    uv: [u, v],
                    ..Default::default()
                });
            }
        }
        let mut indices = Vec::new();
        for y in 0..n {
            for x in 0..n {
                let i = y * (n + 1) + x;
                indices.extend_from_slice(&[i, i + n + 1, i + 1, i + 1, i + n + 1, i + n + 2]);
            }
        }
        farsight_mesh::Mesh {
            name: "grid".into(),
            submeshes: vec![farsight_mesh::SubMesh {
                name: "grid/0".into(),
                material: "m".into(),
                vertices,
                indices,
                has_tangents: false,
            }],
        }
    }

    #[test]
    fn report_refuses_a_version_word_its_kind_is_not_written_with() {
        use farsight_stream::region::scene::{write_scene, RegionSpec};
        use farsight_stream::region::RegionState;
        use farsight_stream::tile::{write_tile_level, write_tile_manifest, TileManifest};
        let chain = farsight_mesh::generate_lod_chain(&grid_mesh(), &Default::default());
        let cooked = farsight_mesh::ChainRecords::Cooked(CookConfig::default());
        let dir =
            std::env::temp_dir().join(format!("farsight-inspect-version-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let index = write_scene(
            &dir,
            &[RegionSpec {
                name: "r".into(),
                bounds: farsight_geom::Aabb::new(glam::Vec3::ZERO, glam::Vec3::ONE),
                authored: RegionState::Unloaded,
                entities: Vec::new(),
            }],
        )
        .unwrap();
        write_tile_level(&dir.join("level.farsight"), &[1, 2, 3]).unwrap();
        write_tile_manifest(
            &dir.join("tiles.farsight"),
            &TileManifest { tiles: Vec::new() },
        )
        .unwrap();
        let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
        let files: Vec<(&str, Vec<u8>, u32)> = vec![
            (
                "full chain",
                farsight_mesh::encode_lod_chain("grid", &chain).unwrap(),
                1,
            ),
            (
                "cooked chain",
                farsight_mesh::encode_lod_chain_as("grid", &chain, &cooked).unwrap(),
                2,
            ),
            (
                "terrain save",
                farsight_terrain::save_grid(&farsight_terrain::VoxelGrid::new()).unwrap(),
                1,
            ),
            ("scene index", std::fs::read(&index).unwrap(), 1),
            ("region file", read("region-0.farsight"), 1),
            ("tile level", read("level.farsight"), 1),
            ("tile manifest", read("tiles.farsight"), 1),
        ];
        let _ = std::fs::remove_dir_all(&dir);
        for (what, bytes, written) in files {
            assert!(
                report(&AlignedBytes::from(&bytes[..]), true).is_ok(),
                "{what}"
            );
            let swapped = 3 - written;
            let mut b = bytes.clone();
            b[12..16].copy_from_slice(&swapped.to_le_bytes());
            match report(&AlignedBytes::from(&b[..]), true) {
                Err(FormatError::WrongVersion { found, expected }) => {
                    assert_eq!((found, expected), (swapped, written), "{what}")
                }
                r => panic!("{what} with version word {swapped}: {r:?}"),
            }
        }
    }

    /// `--manifest` prints a building's structure as indented RON that reads back;
    /// two bakes of one recipe print the same text, line for line, and a changed
    /// recipe shows as changed lines.
    #[test]
    fn a_buildings_manifest_is_indented_ron_and_two_bakes_diff_clean() {
        use farsight_building::bake::{bake, ManifoldKernel};
        use farsight_building::{Kit, LodCell, LodPolicy};
        let recipe = Kit::builtin("corporate").unwrap().building(0, 0, 7);
        let mut ladder = LodPolicy::ladder();
        ladder[2].cell = Some(LodCell::Side(35.0));
        let print = |b: &farsight_building::Building| {
            let baked = bake(b, &ladder, &ManifoldKernel).unwrap();
            manifest(&baked.write_full().unwrap()).unwrap()
        };
        let (a, b) = (print(&recipe), print(&recipe));
        let diff: Vec<(usize, &str, &str)> = a
            .lines()
            .zip(b.lines())
            .enumerate()
            .filter(|(_, (x, y))| x != y)
            .map(|(i, (x, y))| (i + 1, x, y))
            .collect();
        assert!(diff.is_empty(), "{diff:?}");
        assert_eq!(a.lines().count(), b.lines().count());
        // Readable: one field a line, indented by depth, the recipe and the levels in
        // words, meshes by record number.
        let lines: Vec<&str> = a.lines().collect();
        assert!(lines.len() > 1000, "{} lines", lines.len());
        let long: Vec<&&str> = lines.iter().filter(|l| l.len() >= 400).take(3).collect();
        assert!(long.is_empty(), "{long:?}");
        assert!(
            lines.iter().any(|l| l.starts_with("    recipe: Some(")),
            "{a}"
        );
        assert!(lines.iter().any(|l| l.starts_with("    levels: [")), "{a}");
        assert!(
            lines.iter().any(|l| l.trim_start().starts_with("mesh: ")),
            "{a}"
        );
        assert!(a.contains(&format!("id: \"{}\"", recipe.id)), "{a}");
        assert!(a.contains("cell:35m:"), "{a}");
        // It reads back as RON, into the recipe it carries among the rest.
        let value: ron::Value = ron::from_str(&a).unwrap();
        assert!(matches!(value, ron::Value::Map(_)), "{value:?}");
        // Another recipe differs in some lines, not in the layout of the rest.
        let mut other = recipe.clone();
        other.instances[0].pose.translation[1] += 1.0;
        let c = print(&other);
        let changed = a.lines().zip(c.lines()).filter(|(x, y)| x != y).count();
        assert!(changed > 0 && changed < lines.len() / 10, "{changed}");
        // Other files print their container manifest; a cut file is refused.
        let bytes = farsight_building::bake::bake(&recipe, &ladder, &ManifoldKernel)
            .unwrap()
            .write_full()
            .unwrap();
        assert!(manifest(&bytes[..bytes.len() / 2]).is_err());
    }

    #[test]
    fn report_names_every_part_and_refuses_corruption() {
        let mut w = FileWriter::new(Version::Cooked);
        let a = w.add_record(
            RecordTag::MESH_COOKED,
            &cook_mesh(&quad(), &CookConfig::default()).unwrap(),
        );
        let b = w.add_record(RecordTag::MESH_FULL, &encode_full(&quad()).unwrap());
        let bytes = w
            .finish(&Chain {
                name: "quad".into(),
                levels: vec![a, b],
            })
            .unwrap();
        let aligned = AlignedBytes::from(&bytes[..]);
        let text = report(&aligned, true).unwrap();
        assert!(
            text.contains("identifier  \\xABFSIGHT\\xBB\\x0D\\x0A\\x1A\\x0A"),
            "{text}"
        );
        assert!(text.contains("version     2 (Cooked)"), "{text}");
        assert!(text.contains("name: \"quad\""), "{text}");
        assert!(text.contains("MSH2") && text.contains("MSH1"), "{text}");
        assert!(text.contains("2 triangles"), "{text}");
        assert!(
            text.contains("positions") && text.contains("bytes/triangle"),
            "{text}"
        );
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 20] ^= 1;
        assert!(report(&AlignedBytes::from(&bad[..]), true).is_err());
    }
}
