//! The per-frame decision hash: FNV-1a over the decisions' plain numbers, fed in a
//! fixed order, so equal decisions give equal hashes on every machine.

/// A 64-bit FNV-1a hasher over little-endian words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecisionHash(u64);

impl Default for DecisionHash {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl DecisionHash {
    /// Feeds `b`, byte by byte.
    pub fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    /// Feeds `v` as its 8 little-endian bytes.
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    /// Feeds `v` as its 4 little-endian bytes.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    /// Feeds `v`'s bit pattern as 4 little-endian bytes (so -0.0 and 0.0 differ).
    pub fn f32(&mut self, v: f32) {
        self.bytes(&v.to_bits().to_le_bytes());
    }
    /// The hash of everything fed so far.
    pub fn value(self) -> u64 {
        self.0
    }
}

/// Fixed-width integers go in little-endian, whatever the machine: a derived `Hash`
/// of plain numbers gives the same hash everywhere.
impl std::hash::Hasher for DecisionHash {
    fn write(&mut self, bytes: &[u8]) {
        self.bytes(bytes);
    }
    fn write_u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    fn write_u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    fn write_u32(&mut self, v: u32) {
        self.u32(v);
    }
    fn write_u64(&mut self, v: u64) {
        self.u64(v);
    }
    fn write_usize(&mut self, v: usize) {
        self.u64(v as u64);
    }
    fn write_isize(&mut self, v: isize) {
        self.u64(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_values_change_the_hash() {
        let h = |v: &[u32]| {
            let mut h = DecisionHash::default();
            v.iter().for_each(|&x| h.u32(x));
            h.value()
        };
        assert_eq!(h(&[1, 2]), h(&[1, 2]));
        assert_ne!(h(&[1, 2]), h(&[2, 1]));
        assert_ne!(h(&[1, 2]), h(&[1, 3]));
    }
}
