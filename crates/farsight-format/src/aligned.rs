//! An owned byte buffer whose start is 16-byte aligned, so records can be cast in place.

use std::path::Path;

use crate::FormatError;

#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(16))]
struct Block([u8; 16]);

/// File bytes in a 16-byte aligned allocation: every record of a container read from
/// it starts aligned, so Pod arrays in records can be borrowed without copying.
#[derive(Clone, Default)]
pub struct AlignedBytes {
    blocks: Vec<Block>,
    len: usize,
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBytes({} bytes)", self.len)
    }
}

impl AlignedBytes {
    /// Reads a whole file. Allocates the file's size, nothing more.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self, FormatError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| FormatError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self::from(&bytes[..]))
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.blocks)[..self.len]
    }
}

impl From<&[u8]> for AlignedBytes {
    fn from(bytes: &[u8]) -> Self {
        let mut blocks = vec![Block::default(); bytes.len().div_ceil(16)];
        bytemuck::cast_slice_mut::<Block, u8>(&mut blocks)[..bytes.len()].copy_from_slice(bytes);
        Self {
            blocks,
            len: bytes.len(),
        }
    }
}

impl std::ops::Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}
