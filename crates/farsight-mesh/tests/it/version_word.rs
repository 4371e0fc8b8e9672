//! A LOD chain file whose version word was swapped (the checksum does not cover it)
//! is refused with the version found and the one its manifest is written with.

use crate::common;

use farsight_format::{AlignedBytes, CookConfig, FormatError, Version};
use farsight_mesh::{
    encode_lod_chain_as, generate_lod_chain, read_lod_chain, ChainRecords, LodChainConfig,
};

/// `bytes` with the version word (offset 12) set to `word`.
fn with_version(bytes: &[u8], word: u32) -> AlignedBytes {
    let mut b = bytes.to_vec();
    b[12..16].copy_from_slice(&word.to_le_bytes());
    AlignedBytes::from(&b[..])
}

#[test]
fn chains_refuse_a_version_word_other_than_their_records() {
    let chain = generate_lod_chain(&common::sphere(6), &LodChainConfig::default());
    let cases = [
        (ChainRecords::Full, Version::Full),
        (ChainRecords::Cooked(CookConfig::default()), Version::Cooked),
    ];
    for (records, written) in cases {
        let bytes = encode_lod_chain_as("sphere", &chain, &records).unwrap();
        assert!(read_lod_chain(&with_version(&bytes, written as u32)).is_ok());
        for other in [Version::Full, Version::Cooked, Version::Streamed] {
            if other == written {
                continue;
            }
            match read_lod_chain(&with_version(&bytes, other as u32)) {
                // A streamed word also moves what the checksum covers.
                Err(FormatError::ChecksumMismatch { .. }) if other == Version::Streamed => {}
                Err(FormatError::WrongVersion { found, expected }) => {
                    assert_eq!((found, expected), (other as u32, written as u32));
                }
                r => panic!("{written:?} chain read as {other:?}: {r:?}"),
            }
        }
        assert!(matches!(
            read_lod_chain(&with_version(&bytes, 7)),
            Err(FormatError::UnknownVersion { found: 7 })
        ));
    }
}
