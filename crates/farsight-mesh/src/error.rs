//! Errors and warnings of the bake pipeline.
//!
//! Every import error names the file and says what was found; every cook error says
//! which invariant of the result failed. A step that could continue reports a
//! [`Warning`] instead and keeps going.

use std::path::PathBuf;

/// Why an import failed. Always carries the file it came from.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct ImportError {
    /// The file being imported (or the one it referenced that failed).
    pub path: PathBuf,
    /// What was wrong with it.
    pub kind: ImportErrorKind,
}

impl ImportError {
    pub(crate) fn new(path: impl Into<PathBuf>, kind: ImportErrorKind) -> Self {
        Self {
            path: path.into(),
            kind,
        }
    }
}

/// What was wrong with an imported file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportErrorKind {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    /// The file name ends in an extension no importer reads.
    #[error("unsupported file extension {found:?} (expected .gltf, .glb or .obj)")]
    UnknownExtension {
        /// The extension found (empty when the name has none).
        found: String,
    },
    /// The glTF parser refused the file.
    #[error("malformed glTF: {message}")]
    Gltf {
        /// The parser's message.
        message: String,
    },
    /// The file lists, as required, an extension farsight does not read.
    #[error("the file requires extension {name}, which farsight does not support")]
    UnsupportedRequiredExtension {
        /// The extension's name.
        name: String,
    },
    /// A required extension that changes the geometry and that farsight cannot read
    /// (compressed or quantised vertex data): importing without it would be wrong.
    #[error("the file requires {name}, which changes its geometry and which farsight cannot decode; export it without that compression")]
    GeometryExtensionUnsupported {
        /// The extension's name.
        name: String,
    },
    /// A buffer the file names could not be loaded.
    #[error("buffer {buffer}{} is missing: {reason}", uri.as_deref().map(|u| format!(" ({u})")).unwrap_or_default())]
    MissingBuffer {
        /// The buffer's index in the file.
        buffer: usize,
        /// Where the file says its bytes are, when it says.
        uri: Option<String>,
        /// Why loading failed.
        reason: String,
    },
    /// A buffer holds fewer bytes than the file declares for it.
    #[error("buffer {buffer} holds {available} bytes, the file declares {declared}")]
    BufferTooShort {
        /// The buffer's index in the file.
        buffer: usize,
        /// The length the file declares, bytes.
        declared: u64,
        /// The bytes actually there.
        available: u64,
    },
    /// An accessor reads past the end of its buffer view or buffer.
    #[error("accessor {accessor} ({what}) reads bytes {start}..{end} past its data of {available} bytes")]
    AccessorOutOfBounds {
        /// The accessor's index in the file.
        accessor: usize,
        /// What it was read for (an attribute name, or indices).
        what: &'static str,
        /// First byte it would read.
        start: u64,
        /// One past the last byte it would read.
        end: u64,
        /// Bytes its data holds.
        available: u64,
    },
    /// A sparse accessor, which the importer does not read.
    #[error("accessor {accessor} ({what}) is sparse, which farsight does not import")]
    SparseAccessor {
        /// The accessor's index in the file.
        accessor: usize,
        /// What it was read for (an attribute name, or indices).
        what: &'static str,
    },
    /// A primitive drawn as points, lines or strips: only triangle lists are imported.
    #[error(
        "mesh {mesh} primitive {primitive} uses mode {mode}; only triangle lists are imported"
    )]
    NonTrianglePrimitive {
        /// The glTF mesh's index.
        mesh: usize,
        /// The primitive's index in that mesh.
        primitive: usize,
        /// The primitive's mode, as glTF names it.
        mode: String,
    },
    /// A primitive without positions.
    #[error("mesh {mesh} primitive {primitive} has no POSITION attribute")]
    MissingPositions {
        /// The glTF mesh's index.
        mesh: usize,
        /// The primitive's index in that mesh.
        primitive: usize,
    },
    /// An index names a vertex the sub-mesh does not have.
    #[error("sub-mesh {submesh:?}: index {index} at position {position} is out of range for {vertex_count} vertices")]
    IndexOutOfRange {
        /// The sub-mesh's name.
        submesh: String,
        /// Where the index sits in the index list.
        position: usize,
        /// The index found.
        index: u32,
        /// Vertices the sub-mesh has.
        vertex_count: usize,
    },
    /// An index list whose length is not a multiple of three.
    #[error("sub-mesh {submesh:?}: {count} indices is not a whole number of triangles")]
    IndexCountNotTriangles {
        /// The sub-mesh's name.
        submesh: String,
        /// The number of indices found.
        count: usize,
    },
    /// A position, normal or other attribute holds NaN or an infinity.
    #[error("sub-mesh {submesh:?}: vertex {vertex} has a non-finite {attribute} {value:?}")]
    NonFinite {
        /// The sub-mesh's name.
        submesh: String,
        /// The vertex's index in the sub-mesh.
        vertex: usize,
        /// The attribute holding the value.
        attribute: &'static str,
        /// The value found (its first three components).
        value: [f32; 3],
    },
    /// An attribute with a different number of entries than the positions.
    #[error("sub-mesh {submesh:?}: attribute {attribute} has {found} entries for {vertex_count} vertices")]
    AttributeCountMismatch {
        /// The sub-mesh's name.
        submesh: String,
        /// The attribute's name.
        attribute: &'static str,
        /// Entries it has.
        found: usize,
        /// Vertices the positions give.
        vertex_count: usize,
    },
    /// The OBJ reader refused the file.
    #[error("malformed OBJ: {message}")]
    Obj {
        /// The reader's message.
        message: String,
    },
    /// The file holds no triangles at all.
    #[error("the file holds no triangles")]
    Empty,
    /// A skin the posed bounds need is malformed.
    #[error("skin {skin}: {message}")]
    BadSkin {
        /// The skin's index in the file.
        skin: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// Something the importer or a cook step repaired or dropped on purpose. Nothing is
/// dropped without one of these.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Warning {
    /// Triangles with a repeated index or zero area were removed.
    DegenerateTrianglesRemoved {
        /// The sub-mesh's name.
        submesh: String,
        /// Triangles removed.
        count: usize,
    },
    /// Triangles repeating an earlier triangle of the same sub-mesh (the same three
    /// corner positions in the same winding) were removed: drawn twice they only
    /// z-fight, and the simplifier would see each of their edges used twice.
    DuplicateTrianglesRemoved {
        /// The sub-mesh's name.
        submesh: String,
        /// Triangles removed.
        count: usize,
    },
    /// The sub-mesh had no normals; smooth normals were generated.
    NormalsGenerated {
        /// The sub-mesh's name.
        submesh: String,
    },
    /// The OBJ's material library could not be read; materials are named by index.
    MaterialLibraryUnreadable {
        /// Why it could not be read.
        message: String,
    },
    /// A sub-mesh with no triangles left after repair was removed.
    EmptySubmeshRemoved {
        /// The sub-mesh's name.
        submesh: String,
    },
    /// A discrete LOD level was dropped because simplification could not usefully
    /// coarsen it (fewer than the required share of triangles removed).
    LodLevelDropped {
        /// The level that would have been made.
        level: usize,
        /// Triangles of the level it was simplified from.
        triangles_before: usize,
        /// Triangles simplification reached.
        triangles_after: usize,
    },
    /// The cluster DAG had groups that could not simplify; their vertices were
    /// locked for the coarser levels (in the same build), so those levels cannot
    /// pull away from the stuck clusters they copy.
    StuckGroupsLocked {
        /// Groups that could not simplify.
        groups: usize,
        /// Vertices locked for the coarser levels.
        locked_vertices: usize,
    },
    /// The cluster DAG was cut at the configured level limit.
    LevelLimitReached {
        /// The level limit (`max_levels`).
        limit: usize,
    },
    /// The glTF file requires extensions that carry no geometry (lights, material
    /// and texture extensions); the mesh was imported without them.
    RequiredExtensionsIgnored {
        /// The extensions' names.
        names: Vec<String>,
    },
    /// The DAG built with the configured simplification failed a topology check
    /// (`refused`: the check's message) and was rebuilt with topology-safe settings
    /// (`sloppy`: vertex-clustering fallback for stuck groups, `permissive`:
    /// collapses across attribute seams, each as the kept DAG used them).
    SimplificationRestricted {
        /// The refused DAG's failed check.
        refused: String,
        /// The kept DAG used the vertex-clustering fallback.
        sloppy: bool,
        /// The kept DAG used collapses across attribute seams.
        permissive: bool,
    },
    /// A texture's image could not be read (missing file, bad URI or buffer view,
    /// not an image farsight knows): the materials using it keep their factors.
    TextureMissing {
        /// The texture as the source names it.
        texture: String,
        /// Why it could not be read.
        reason: String,
    },
    /// A texture's image is in a format farsight does not decode (KTX2, WebP): it
    /// was copied as it is, neither resized nor given mips.
    TextureCopied {
        /// The texture as the source names it.
        texture: String,
        /// Its image format.
        format: String,
    },
    /// Material features the cooked materials do not keep (extensions, or textures
    /// of kept extensions), each named once.
    MaterialFeaturesDropped {
        /// The features' names (extensions, or a texture slot of one).
        names: Vec<String>,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::TextureMissing { texture, reason } => write!(
                f,
                "texture {texture} could not be read ({reason}): its materials keep their factors"
            ),
            Warning::TextureCopied { texture, format } => write!(
                f,
                "texture {texture} is {format}, which farsight does not decode: copied as it is"
            ),
            Warning::MaterialFeaturesDropped { names } => {
                write!(f, "material features not kept: {}", names.join(", "))
            }
            Warning::DegenerateTrianglesRemoved { submesh, count } => {
                write!(f, "sub-mesh {submesh}: removed {count} degenerate triangles")
            }
            Warning::NormalsGenerated { submesh } => {
                write!(f, "sub-mesh {submesh} had no normals: smooth normals generated")
            }
            Warning::MaterialLibraryUnreadable { message } => write!(
                f,
                "the OBJ's material library is unreadable ({message}): materials named by index"
            ),
            Warning::EmptySubmeshRemoved { submesh } => {
                write!(f, "sub-mesh {submesh} had no triangles left after repair: removed")
            }
            Warning::LodLevelDropped {
                level,
                triangles_before,
                triangles_after,
            } => write!(
                f,
                "LOD level {level} dropped: simplifying only went from {triangles_before} to {triangles_after} triangles"
            ),
            Warning::StuckGroupsLocked {
                groups,
                locked_vertices,
            } => write!(
                f,
                "{groups} cluster groups could not simplify: their {locked_vertices} vertices locked for the coarser levels"
            ),
            Warning::LevelLimitReached { limit } => {
                write!(f, "the cluster DAG stopped at the level limit ({limit})")
            }
            Warning::DuplicateTrianglesRemoved { submesh, count } => {
                write!(f, "sub-mesh {submesh}: removed {count} duplicate triangles")
            }
            Warning::SimplificationRestricted {
                refused,
                sloppy,
                permissive,
            } => write!(
                f,
                "the first cluster DAG was refused ({refused}): rebuilt with {}",
                match (sloppy, permissive) {
                    (false, false) => "neither the vertex-clustering fallback nor collapses across seams",
                    (false, true) => "no vertex-clustering fallback",
                    (true, false) => "no collapses across attribute seams",
                    (true, true) => "the same settings",
                }
            ),
            Warning::RequiredExtensionsIgnored { names } => write!(
                f,
                "ignored required glTF extensions that carry no geometry: {}",
                names.join(", ")
            ),
        }
    }
}

/// Why a cook refused to write a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CookError {
    /// The source could not be imported.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The mesh has no triangles.
    #[error("the mesh has no triangles to cook")]
    Empty,
    /// A configuration value out of its range.
    #[error("bad cook configuration: {what} = {found}")]
    BadConfig {
        /// The setting's name.
        what: &'static str,
        /// The value given.
        found: f64,
    },
    /// A cluster's error above its parent group's.
    #[error(
        "error not monotonic: level {level} cluster {cluster} has error {child_error} \
         above its parent group's {parent_error}"
    )]
    ErrorNotMonotonic {
        /// The cluster's level.
        level: usize,
        /// The cluster's index in its level.
        cluster: usize,
        /// The cluster's own error.
        child_error: f32,
        /// Its parent group's error.
        parent_error: f32,
    },
    /// A cluster's error sphere outside its parent group's.
    #[error(
        "level {level} cluster {cluster}: its own error sphere is not inside its parent group's"
    )]
    SphereNotNested {
        /// The cluster's level.
        level: usize,
        /// The cluster's index in its level.
        cluster: usize,
    },
    /// A level's largest parent error below the finer level's.
    #[error("level {level} max parent error {found} is below level {} ({previous})", level - 1)]
    LevelErrorsNotOrdered {
        /// The level.
        level: usize,
        /// The previous level's largest parent error.
        previous: f32,
        /// This level's largest parent error.
        found: f32,
    },
    /// A uniform cut opens a crack.
    #[error("the cut at threshold {threshold} opens a crack: {open_edges} edges are used by one triangle but were not borders of LOD0")]
    CrackInCut {
        /// The error threshold the cut was made at.
        threshold: f32,
        /// Edges used by one triangle that LOD0 does not have open.
        open_edges: usize,
    },
    /// A level is not a whole model on its own.
    #[error(
        "level {level} is not complete alone: {open_edges} open edges that LOD0 does not have"
    )]
    LevelIncomplete {
        /// The level.
        level: usize,
        /// Its open edges that LOD0 does not have.
        open_edges: usize,
    },
    /// A cluster larger than its 128-triangle slot.
    #[error("cluster {cluster} has {triangles} triangles, more than a slot holds ({slot})")]
    ClusterTooLarge {
        /// The cluster's index.
        cluster: usize,
        /// Its triangles.
        triangles: usize,
        /// Triangles a slot holds.
        slot: u32,
    },
    /// A cluster holds triangles of two materials.
    #[error("a cluster mixes materials: level {level} cluster {cluster} has a triangle of material {found}, the cluster's is {expected}")]
    MixedMaterials {
        /// The cluster's level.
        level: usize,
        /// The cluster's index in its level.
        cluster: usize,
        /// The cluster's material.
        expected: u32,
        /// The material of the triangle that differs.
        found: u32,
    },
    /// More materials than a cluster record can name.
    #[error("{found} materials, more than a cluster record can name ({max})")]
    TooManyMaterials {
        /// Materials the mesh has.
        found: usize,
        /// Most a cluster record can name.
        max: usize,
    },
    /// Stuck groups still open cracks after the rebuilds.
    #[error("stuck groups still open cracks after {rebuilds} rebuilds")]
    StuckGroupsUnresolved {
        /// Rebuilds tried.
        rebuilds: usize,
    },
    /// The output could not be encoded.
    #[error("cannot write the file: {0}")]
    Format(#[from] farsight_format::FormatError),
    /// The output could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The output path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
