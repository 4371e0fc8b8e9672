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
    pub path: PathBuf,
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
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    #[error("unsupported file extension {found:?} (expected .gltf, .glb or .obj)")]
    UnknownExtension { found: String },
    #[error("malformed glTF: {message}")]
    Gltf { message: String },
    #[error("the file requires extension {name}, which farsight does not support")]
    UnsupportedRequiredExtension { name: String },
    /// A required extension that changes the geometry and that farsight cannot read
    /// (compressed or quantised vertex data): importing without it would be wrong.
    #[error("the file requires {name}, which changes its geometry and which farsight cannot decode; export it without that compression")]
    GeometryExtensionUnsupported { name: String },
    #[error("buffer {buffer}{} is missing: {reason}", uri.as_deref().map(|u| format!(" ({u})")).unwrap_or_default())]
    MissingBuffer {
        buffer: usize,
        uri: Option<String>,
        reason: String,
    },
    #[error("buffer {buffer} holds {available} bytes, the file declares {declared}")]
    BufferTooShort {
        buffer: usize,
        declared: u64,
        available: u64,
    },
    #[error("accessor {accessor} ({what}) reads bytes {start}..{end} past its data of {available} bytes")]
    AccessorOutOfBounds {
        accessor: usize,
        what: &'static str,
        start: u64,
        end: u64,
        available: u64,
    },
    #[error("accessor {accessor} ({what}) is sparse, which farsight does not import")]
    SparseAccessor { accessor: usize, what: &'static str },
    #[error(
        "mesh {mesh} primitive {primitive} uses mode {mode}; only triangle lists are imported"
    )]
    NonTrianglePrimitive {
        mesh: usize,
        primitive: usize,
        mode: String,
    },
    #[error("mesh {mesh} primitive {primitive} has no POSITION attribute")]
    MissingPositions { mesh: usize, primitive: usize },
    #[error("sub-mesh {submesh:?}: index {index} at position {position} is out of range for {vertex_count} vertices")]
    IndexOutOfRange {
        submesh: String,
        position: usize,
        index: u32,
        vertex_count: usize,
    },
    #[error("sub-mesh {submesh:?}: {count} indices is not a whole number of triangles")]
    IndexCountNotTriangles { submesh: String, count: usize },
    #[error("sub-mesh {submesh:?}: vertex {vertex} has a non-finite {attribute} {value:?}")]
    NonFinite {
        submesh: String,
        vertex: usize,
        attribute: &'static str,
        value: [f32; 3],
    },
    #[error("sub-mesh {submesh:?}: attribute {attribute} has {found} entries for {vertex_count} vertices")]
    AttributeCountMismatch {
        submesh: String,
        attribute: &'static str,
        found: usize,
        vertex_count: usize,
    },
    #[error("malformed OBJ: {message}")]
    Obj { message: String },
    #[error("the file holds no triangles")]
    Empty,
    #[error("skin {skin}: {message}")]
    BadSkin { skin: usize, message: String },
}

/// Something the importer or a cook step repaired or dropped on purpose. Nothing is
/// dropped without one of these.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Warning {
    /// Triangles with a repeated index or zero area were removed.
    DegenerateTrianglesRemoved { submesh: String, count: usize },
    /// Triangles repeating an earlier triangle of the same sub-mesh (the same three
    /// corner positions in the same winding) were removed: drawn twice they only
    /// z-fight, and the simplifier would see each of their edges used twice.
    DuplicateTrianglesRemoved { submesh: String, count: usize },
    /// The sub-mesh had no normals; smooth normals were generated.
    NormalsGenerated { submesh: String },
    /// The OBJ's material library could not be read; materials are named by index.
    MaterialLibraryUnreadable { message: String },
    /// A sub-mesh with no triangles left after repair was removed.
    EmptySubmeshRemoved { submesh: String },
    /// A discrete LOD level was dropped because simplification could not usefully
    /// coarsen it (fewer than the required share of triangles removed).
    LodLevelDropped {
        level: usize,
        triangles_before: usize,
        triangles_after: usize,
    },
    /// The cluster DAG had groups that could not simplify; their vertices were
    /// locked for the coarser levels (in the same build), so those levels cannot
    /// pull away from the stuck clusters they copy.
    StuckGroupsLocked {
        groups: usize,
        locked_vertices: usize,
    },
    /// The cluster DAG was cut at the configured level limit.
    LevelLimitReached { limit: usize },
    /// The glTF file requires extensions that carry no geometry (lights, material
    /// and texture extensions); the mesh was imported without them.
    RequiredExtensionsIgnored { names: Vec<String> },
    /// The DAG built with the configured simplification failed a topology check
    /// (`refused`: the check's message) and was rebuilt with topology-safe settings
    /// (`sloppy`: vertex-clustering fallback for stuck groups, `permissive`:
    /// collapses across attribute seams, each as the kept DAG used them).
    SimplificationRestricted {
        refused: String,
        sloppy: bool,
        permissive: bool,
    },
    /// A texture's image could not be read (missing file, bad URI or buffer view,
    /// not an image farsight knows): the materials using it keep their factors.
    TextureMissing { texture: String, reason: String },
    /// A texture's image is in a format farsight does not decode (KTX2, WebP): it
    /// was copied as it is, neither resized nor given mips.
    TextureCopied { texture: String, format: String },
    /// Material features the cooked materials do not keep (extensions, or textures
    /// of kept extensions), each named once.
    MaterialFeaturesDropped { names: Vec<String> },
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
    #[error(transparent)]
    Import(#[from] ImportError),
    #[error("the mesh has no triangles to cook")]
    Empty,
    #[error("bad cook configuration: {what} = {found}")]
    BadConfig { what: &'static str, found: f64 },
    #[error(
        "error not monotonic: level {level} cluster {cluster} has error {child_error} \
         above its parent group's {parent_error}"
    )]
    ErrorNotMonotonic {
        level: usize,
        cluster: usize,
        child_error: f32,
        parent_error: f32,
    },
    #[error(
        "level {level} cluster {cluster}: its own error sphere is not inside its parent group's"
    )]
    SphereNotNested { level: usize, cluster: usize },
    #[error("level {level} max parent error {found} is below level {} ({previous})", level - 1)]
    LevelErrorsNotOrdered {
        level: usize,
        previous: f32,
        found: f32,
    },
    #[error("the cut at threshold {threshold} opens a crack: {open_edges} edges are used by one triangle but were not borders of LOD0")]
    CrackInCut { threshold: f32, open_edges: usize },
    #[error(
        "level {level} is not complete alone: {open_edges} open edges that LOD0 does not have"
    )]
    LevelIncomplete { level: usize, open_edges: usize },
    #[error("cluster {cluster} has {triangles} triangles, more than a slot holds ({slot})")]
    ClusterTooLarge {
        cluster: usize,
        triangles: usize,
        slot: u32,
    },
    #[error("a cluster mixes materials: level {level} cluster {cluster} has a triangle of material {found}, the cluster's is {expected}")]
    MixedMaterials {
        level: usize,
        cluster: usize,
        expected: u32,
        found: u32,
    },
    #[error("{found} materials, more than a cluster record can name ({max})")]
    TooManyMaterials { found: usize, max: usize },
    #[error("stuck groups still open cracks after {rebuilds} rebuilds")]
    StuckGroupsUnresolved { rebuilds: usize },
    #[error("cannot write the file: {0}")]
    Format(#[from] farsight_format::FormatError),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}
