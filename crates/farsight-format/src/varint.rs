//! LEB128 unsigned varints (7 bits a byte, low first, high bit: more follow) for the
//! compact headers of cooked sets. A reader takes at most 5 bytes for a u32 and
//! refuses a value past `u32::MAX` or an overlong encoding, so every value has one
//! encoding and the bytes stay a pure function of the values.

use crate::{FormatError, Section};

/// Appends `v`.
#[cfg(feature = "encode")]
pub(crate) fn put(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads sequentially from a byte slice, each error naming `section`.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
    pub section: Section,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], section: Section) -> Self {
        Self {
            bytes,
            at: 0,
            section,
        }
    }

    fn truncated(&self, needed: usize) -> FormatError {
        FormatError::Truncated {
            section: self.section,
            needed: (self.at + needed) as u64,
            available: self.bytes.len() as u64,
        }
    }

    /// One varint; `field` names it in an error.
    pub fn varint(&mut self, field: &'static str) -> Result<u32, FormatError> {
        let mut v: u64 = 0;
        for k in 0..5 {
            let &b = self.bytes.get(self.at).ok_or_else(|| self.truncated(1))?;
            self.at += 1;
            v |= ((b & 0x7f) as u64) << (7 * k);
            if b & 0x80 == 0 {
                // Overlong: a last byte of zero after the first.
                if (k > 0 && b == 0) || v > u32::MAX as u64 {
                    return Err(FormatError::BadField {
                        section: self.section,
                        field,
                        found: v,
                    });
                }
                return Ok(v as u32);
            }
        }
        Err(FormatError::BadField {
            section: self.section,
            field,
            found: v,
        })
    }

    pub fn byte(&mut self) -> Result<u8, FormatError> {
        let &b = self.bytes.get(self.at).ok_or_else(|| self.truncated(1))?;
        self.at += 1;
        Ok(b)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        if self.bytes.len() - self.at < n {
            return Err(self.truncated(n));
        }
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    pub fn f32(&mut self) -> Result<f32, FormatError> {
        let b = self.take(4)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }
}
