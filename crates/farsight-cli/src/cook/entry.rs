//! The check a content-cache entry passes before `cook --manifest` counts it as
//! cached. An entry is a file like any other: a disk, a copy or a merge of caches
//! can leave it empty, cut short, with flipped bits or in another format version,
//! and a hit that only looked at the file's name would keep such an entry forever.
//! So every hit reads the entry whole: the container (identifier, version, lengths,
//! every checksum), the version the item's kind is written in, the manifest of that
//! kind, and every record the manifest names, parsed or decoded.

use std::path::Path;

use farsight_format::{AlignedBytes, ClusterMeshManifest, Container, FormatError, Version};
use farsight_mesh::{decode_lod_entry, read_lod_chain, ChainRecords, CookKind};

/// Why a cache entry is not trusted. The entry's path is the caller's to say.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// The file could not be read.
    #[error("cannot be read: {0}")]
    Io(std::io::Error),
    /// The file has no bytes.
    #[error("it is empty")]
    Empty,
    /// The container or a record is damaged (cut short, a checksum that does not
    /// match, an unknown version, a field out of range).
    #[error("{0}")]
    Format(#[from] FormatError),
    /// A valid file, but not in the version this item's kind is written in.
    #[error("it is a version {found} file; this item is written as version {expected}")]
    WrongVersion { found: u32, expected: u32 },
}

/// The file version `kind` writes.
fn version_of(kind: &CookKind) -> Version {
    match kind {
        CookKind::Clusters(_) => Version::Streamed,
        CookKind::LodChain(_, ChainRecords::Full) => Version::Full,
        CookKind::LodChain(_, ChainRecords::Cooked(_)) => Version::Cooked,
    }
}

/// Reads the entry at `path` whole and checks it is a sound file of `kind`.
pub(crate) fn check_entry(path: &Path, kind: &CookKind) -> Result<(), EntryError> {
    let bytes = AlignedBytes::read_file(path).map_err(|e| match e {
        FormatError::Io { source, .. } => EntryError::Io(source),
        e => EntryError::Format(e),
    })?;
    check_bytes(&bytes, kind)
}

/// [`check_entry`] on bytes already read.
pub(crate) fn check_bytes(bytes: &AlignedBytes, kind: &CookKind) -> Result<(), EntryError> {
    if bytes.is_empty() {
        return Err(EntryError::Empty);
    }
    // Every checksum of the container first: the cheapest test that covers every byte.
    let raw = farsight_format::RawFile::read(bytes)?;
    let expected = version_of(kind);
    if raw.version() != expected {
        return Err(EntryError::WrongVersion {
            found: raw.version() as u32,
            expected: expected as u32,
        });
    }
    match kind {
        CookKind::Clusters(_) => {
            let file = Container::<ClusterMeshManifest>::read(bytes)?;
            let m = file.manifest();
            m.check_error_bounds()?;
            m.check_placements()?;
            for g in m.all_geometries() {
                for (li, level) in g.levels.iter().enumerate() {
                    let record = file.record(level.record)?;
                    level.check_record(li as u32, record.bytes, g.error_bounds)?;
                }
            }
        }
        CookKind::LodChain(..) => {
            let file = read_lod_chain(bytes)?;
            for level in file.manifest().all_levels() {
                for sub in &level.submeshes {
                    decode_lod_entry(&file.record(sub.record)?, sub)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use farsight_mesh::{cook_file, ClusterConfig, LodChainConfig};

    /// A sound entry of each kind passes; every damage a sweep makes to it (cut at
    /// many lengths, one bit flipped at many places, any other version word) is
    /// refused with an error, never a panic; an entry read as the other kind is
    /// refused for its version.
    #[test]
    fn every_cut_flip_and_version_of_an_entry_is_refused() {
        let input = farsight_testkit::mesh("alien.glb");
        let clusters = CookKind::Clusters(ClusterConfig::default());
        let chain = CookKind::LodChain(
            LodChainConfig::default(),
            ChainRecords::Cooked(farsight_format::CookConfig::default()),
        );
        for (kind, other) in [(clusters, chain), (chain, clusters)] {
            let good = cook_file(&input, &kind).unwrap().bytes;
            check_bytes(&AlignedBytes::from(&good[..]), &kind).unwrap();
            assert!(matches!(
                check_bytes(&AlignedBytes::from(&good[..]), &other),
                Err(EntryError::WrongVersion { .. })
            ));
            let step = good.len() / 400 + 1;
            for len in (0..good.len()).step_by(step) {
                let cut = AlignedBytes::from(&good[..len]);
                assert!(check_bytes(&cut, &kind).is_err(), "cut at {len}");
            }
            for at in (0..good.len()).step_by(step) {
                let mut flipped = good.clone();
                flipped[at] ^= 1 << (at % 8);
                let flipped = AlignedBytes::from(&flipped[..]);
                assert!(check_bytes(&flipped, &kind).is_err(), "bit flipped at {at}");
            }
            for word in [0u32, 1, 2, 3, 4, 255] {
                let mut v = good.clone();
                if v[12..16] == word.to_le_bytes() {
                    continue;
                }
                v[12..16].copy_from_slice(&word.to_le_bytes());
                let v = AlignedBytes::from(&v[..]);
                assert!(check_bytes(&v, &kind).is_err(), "version word {word}");
            }
        }
    }
}
