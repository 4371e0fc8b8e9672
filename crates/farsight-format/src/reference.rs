//! A plain reader written from `FORMAT.md` alone: no SIMD, no unsafe code, no
//! unchecked indexing, one simple loop per rule, and nothing shared with the fast
//! readers but the `zstd` and `meshopt` libraries (whose formats the document names
//! rather than restates) and plain output types ([`MeshData`], and the cluster
//! record's field structs, filled here field by field). It exists to be compared
//! with the fast readers (`tests/reference.rs`): on every input both must accept
//! with the same output or both refuse. Its errors only say which rule failed.
//! Section numbers (§) are `FORMAT.md`'s.

use crate::{ClusterInfo, ClusterLevelHeader, ClusterVertex, FloatVertex, MeshData};

/// A rule of `FORMAT.md` the input breaks (the reference names the rule only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefError(pub &'static str);

/// The reference reader's result.
pub type RefResult<T> = Result<T, RefError>;

fn fail<T>(rule: &'static str) -> RefResult<T> {
    Err(RefError(rule))
}

fn ensure(ok: bool, rule: &'static str) -> RefResult<()> {
    if ok {
        Ok(())
    } else {
        fail(rule)
    }
}

/// A little-endian cursor over bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    fn take(&mut self, n: usize) -> RefResult<&'a [u8]> {
        ensure(self.bytes.len() - self.at >= n, "truncated")?;
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn u8(&mut self) -> RefResult<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> RefResult<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> RefResult<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> RefResult<u64> {
        let lo = self.u32()? as u64;
        let hi = self.u32()? as u64;
        Ok(lo | hi << 32)
    }

    fn f32(&mut self) -> RefResult<f32> {
        Ok(f32::from_bits(self.u32()?))
    }

    fn f32s<const N: usize>(&mut self) -> RefResult<[f32; N]> {
        let mut out = [0.0; N];
        for v in &mut out {
            *v = self.f32()?;
        }
        Ok(out)
    }

    /// A LEB128 varint of at most 5 bytes, its value within u32, not ending in a
    /// zero byte after the first (§4).
    fn varint(&mut self) -> RefResult<u32> {
        let mut value: u64 = 0;
        for k in 0..5 {
            let b = self.u8()?;
            value |= ((b & 0x7f) as u64) << (7 * k);
            if b & 0x80 == 0 {
                ensure(k == 0 || b != 0, "overlong varint")?;
                ensure(value <= u32::MAX as u64, "varint past u32")?;
                return Ok(value as u32);
            }
        }
        fail("varint longer than 5 bytes")
    }

    fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }
}

fn align16(x: u64) -> u64 {
    x.div_ceil(16) * 16
}

fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}

// ---------------------------------------------------------------------------------
// §1 The container

/// One record of a container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefRecord {
    /// The directory entry's tag.
    pub tag: [u8; 4],
    /// The directory entry's CRC word (0 in versions 1 and 2).
    pub crc: u32,
    /// The record's bytes.
    pub bytes: Vec<u8>,
}

/// A container read by §1 (the manifest left as text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefFile {
    /// The version word.
    pub version: u32,
    /// The manifest text.
    pub manifest: String,
    /// The records in directory order.
    pub records: Vec<RefRecord>,
}

const IDENTIFIER: [u8; 12] = [
    0xAB, 0x46, 0x53, 0x49, 0x47, 0x48, 0x54, 0xBB, 0x0D, 0x0A, 0x1A, 0x0A,
];

/// Reads a container (§1), checking every byte and the checksums.
pub fn container(file: &[u8]) -> RefResult<RefFile> {
    let mut c = Cursor::new(file);
    ensure(c.take(12)? == IDENTIFIER, "identifier")?;
    let version = c.u32()?;
    ensure((1..=3).contains(&version), "version")?;
    let checksum = c.u32()?;
    ensure(c.u32()? == 0, "reserved header word")?;
    let m = c.u64()?;
    ensure(m <= file.len() as u64 - 32, "manifest length")?;
    let manifest = c.take(m as usize)?;
    let w = align16(32 + m + 8) - 8;
    ensure(all_zero(c.take((w - 32 - m) as usize)?), "manifest padding")?;
    let t = c.u64()?;
    let s = w + 8;
    ensure(t == file.len() as u64 - s, "table length")?;
    let table = c.rest();
    let mut d = Cursor::new(table);
    let n = d.u32()? as u64;
    ensure(d.u32()? == 0, "reserved table word")?;
    ensure(8 + 24 * n <= t, "directory length")?;
    if version == 3 {
        let head_end = s + align16(8 + 24 * n);
        ensure(head_end <= file.len() as u64, "head length")?;
        ensure(
            crc32fast::hash(&file[20..head_end as usize]) == checksum,
            "head checksum",
        )?;
    } else {
        ensure(crc32fast::hash(&file[20..]) == checksum, "checksum")?;
    }
    let mut records = Vec::new();
    let mut end = 8 + 24 * n;
    for _ in 0..n {
        let tag: [u8; 4] = d.take(4)?.try_into().expect("four bytes");
        let crc = d.u32()?;
        let offset = d.u64()?;
        let length = d.u64()?;
        ensure(version == 3 || crc == 0, "directory reserved word")?;
        ensure(offset == align16(end), "record offset")?;
        ensure(offset <= t && length <= t - offset, "record past the table")?;
        ensure(
            all_zero(&table[end as usize..offset as usize]),
            "gap before a record",
        )?;
        let bytes = &table[offset as usize..(offset + length) as usize];
        ensure(
            version != 3 || crc32fast::hash(bytes) == crc,
            "record checksum",
        )?;
        records.push(RefRecord {
            tag,
            crc,
            bytes: bytes.to_vec(),
        });
        end = offset + length;
    }
    ensure(align16(end) == t, "table end")?;
    ensure(
        all_zero(&table[end as usize..]),
        "padding after the last record",
    )?;
    let manifest = String::from_utf8(manifest.to_vec()).map_err(|_| RefError("manifest UTF-8"))?;
    Ok(RefFile {
        version,
        manifest,
        records,
    })
}

// ---------------------------------------------------------------------------------
// §2 Full-precision mesh

/// Reads a full-precision mesh record (§2).
pub fn full_mesh(record: &[u8]) -> RefResult<MeshData> {
    let mut c = Cursor::new(record);
    let v = c.u32()? as u64;
    let i = c.u32()? as u64;
    let flags = c.u32()?;
    let reserved = c.u32()?;
    let bounds_min: [f32; 3] = c.f32s()?;
    let bounds_max: [f32; 3] = c.f32s()?;
    let reserved2 = [c.u32()?, c.u32()?];
    ensure(flags & !7 == 0, "flags")?;
    ensure(reserved == 0 && reserved2 == [0, 0], "reserved")?;
    ensure(i % 3 == 0, "index_count")?;
    let lengths = [
        v * 12,
        if flags & 1 != 0 { v * 12 } else { 0 },
        if flags & 2 != 0 { v * 8 } else { 0 },
        i * 4,
        if flags & 4 != 0 { i / 3 * 4 } else { 0 },
    ];
    let mut starts = [0u64; 5];
    let mut at = 48u64;
    for k in 0..5 {
        at = align16(at);
        starts[k] = at;
        at += lengths[k];
    }
    ensure(at == record.len() as u64, "record length")?;
    for k in 0..4 {
        let gap = &record[(starts[k] + lengths[k]) as usize..starts[k + 1] as usize];
        ensure(all_zero(gap), "gap between arrays")?;
    }
    let array = |k: usize| &record[starts[k] as usize..(starts[k] + lengths[k]) as usize];
    let floats = |k: usize| -> Vec<f32> {
        array(k)
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    };
    let words = |k: usize| -> Vec<u32> {
        array(k)
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    };
    let mut mesh = MeshData::default();
    for (k, f) in [0, 1]
        .into_iter()
        .zip([&mut mesh.positions, &mut mesh.normals])
    {
        *f = floats(k)
            .chunks_exact(3)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
    }
    mesh.uvs = floats(2).chunks_exact(2).map(|p| [p[0], p[1]]).collect();
    mesh.indices = words(3);
    mesh.provenance = words(4);
    ensure(
        mesh.indices.iter().all(|&x| (x as u64) < v),
        "index past vertices",
    )?;
    let finite = (0..3).all(|k| floats(k).iter().all(|f| f.is_finite()));
    ensure(finite, "non-finite attribute")?;
    if v > 0 {
        for axis in 0..3 {
            let lo = mesh
                .positions
                .iter()
                .map(|p| p[axis])
                .fold(f32::INFINITY, f32::min);
            let hi = mesh
                .positions
                .iter()
                .map(|p| p[axis])
                .fold(f32::NEG_INFINITY, f32::max);
            ensure(lo == bounds_min[axis] && hi == bounds_max[axis], "bounds")?;
        }
    }
    Ok(mesh)
}

// ---------------------------------------------------------------------------------
// §3 Cooked mesh

const HAS_NORMALS: u8 = 1;
const HAS_TANGENTS: u8 = 2;
const HAS_UVS: u8 = 4;
const PREDICTED_NORMALS: u8 = 8;
const PREDICTED_POSITIONS: u8 = 16;
const PREDICTED_UVS: u8 = 32;
const PARALLELOGRAM_NORMALS: u8 = 64;
const SHARED_POSITIONS: u8 = 128;

/// A cooked header (§3.1), as read from either form.
#[derive(Clone, Copy, Debug, Default)]
struct Header {
    n: u32,
    index_count: u32,
    position_bits: u8,
    uv_bits: u8,
    normal_bits: u8,
    flags: u8,
    tangent_bits: u8,
    damping: u8,
    remap_codec: u8,
    uv_axes: u8,
    bounds_min: [f32; 3],
    bounds_max: [f32; 3],
    uv_min: [f32; 2],
    uv_max: [f32; 2],
    /// Per stream: codec, stored, coded, decoded.
    streams: [[u32; 4]; 5],
    position_count: u32,
    remap_len: u32,
}

impl Header {
    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Element count and size of each stream (§3.2).
    fn elements(&self) -> [(u64, u64); 5] {
        let n = self.n as u64;
        let count = |flag| if self.has(flag) { n } else { 0 };
        let positions = if self.has(SHARED_POSITIONS) {
            self.position_count as u64
        } else {
            n
        };
        [
            (positions, 8),
            (count(HAS_NORMALS), 4),
            (count(HAS_TANGENTS), 4),
            (count(HAS_UVS), 4),
            (self.index_count as u64, 4),
        ]
    }
}

fn parallelogram_flags_ok(flags: u8) -> bool {
    flags & PARALLELOGRAM_NORMALS == 0
        || (flags & HAS_NORMALS != 0 && flags & PREDICTED_NORMALS == 0)
}

/// The header checks of §3.1 and §3.3, and the split of `body` (what follows the
/// header) into the five streams and the remap.
fn split<'a>(h: &Header, body: &'a [u8]) -> RefResult<([&'a [u8]; 5], &'a [u8])> {
    ensure((1..=16).contains(&h.position_bits), "position_bits")?;
    ensure((1..=16).contains(&h.uv_bits), "uv_bits")?;
    ensure((2..=16).contains(&h.normal_bits), "normal_bits")?;
    ensure((2..=16).contains(&h.tangent_bits), "tangent_bits")?;
    ensure(h.damping <= 8, "position_damping")?;
    ensure(parallelogram_flags_ok(h.flags), "flags")?;
    ensure(h.index_count % 3 == 0, "index_count")?;
    ensure(h.uv_axes & 0xC0 == 0, "uv_axes")?;
    ensure(
        h.uv_axes == 0 || (h.has(HAS_UVS) && !h.has(PREDICTED_UVS)),
        "uv_axes",
    )?;
    let (n, remap_len) = (h.n as u64, h.remap_len as u64);
    if h.has(SHARED_POSITIONS) {
        ensure(h.position_count <= h.n, "position_count")?;
        ensure((h.position_count == 0) == (h.n == 0), "position_count")?;
        match h.remap_codec {
            0 => ensure(remap_len == 4 * n, "remap_len")?,
            3 => ensure(
                (remap_len > 0) == (n > 0) && 4 * n <= 1024 * remap_len + 4096,
                "remap_len",
            )?,
            _ => fail("remap_codec")?,
        }
    } else {
        ensure(
            h.remap_codec == 0 && h.position_count == 0 && h.remap_len == 0,
            "remap fields",
        )?;
    }
    let bounds = h.bounds_min.iter().chain(&h.bounds_max);
    ensure(
        bounds
            .chain(&h.uv_min)
            .chain(&h.uv_max)
            .all(|f| f.is_finite()),
        "non-finite bounds",
    )?;
    ensure(
        (0..3).all(|i| h.bounds_min[i] <= h.bounds_max[i])
            && (0..2).all(|i| h.uv_min[i] <= h.uv_max[i]),
        "bounds",
    )?;
    let elements = h.elements();
    let mut c = Cursor::new(body);
    let mut streams: [&[u8]; 5] = [&[]; 5];
    for (i, s) in streams.iter_mut().enumerate() {
        let [codec, stored, coded, decoded] = h.streams[i].map(|x| x as u64);
        ensure(decoded == elements[i].0 * elements[i].1, "decoded_len")?;
        let lengths_ok = match codec {
            0 => stored == decoded && coded == stored,
            1 => coded == stored && (stored == 0) == (decoded == 0),
            2 => stored > 0 && coded > 0 && decoded > 0,
            3 => stored > 0 && coded == decoded && decoded > 0,
            4..=7 => i != 4 && stored >= 4 && decoded > 0 && coded * 2 == decoded,
            _ => return fail("codec"),
        };
        ensure(lengths_ok, "stream lengths")?;
        let limit = 1024 * stored + 4096;
        ensure(
            decoded <= limit && coded <= limit && coded <= 2 * decoded + 4096,
            "expansion",
        )?;
        *s = c.take(stored as usize)?;
    }
    let remap = c.take(remap_len as usize)?;
    ensure(c.rest().is_empty(), "bytes after the remap")?;
    Ok((streams, remap))
}

/// Zstd data that must decode to exactly `len` bytes (§3.3).
fn unzstd(data: &[u8], len: usize) -> RefResult<Vec<u8>> {
    let out = zstd::bulk::decompress(data, len).map_err(|_| RefError("zstd"))?;
    ensure(out.len() == len, "zstd length")?;
    Ok(out)
}

/// Byte planes of `elem`-byte elements back into elements (§3.3).
fn join_planes(planes: &[u8], elem: usize) -> Vec<u8> {
    let count = planes.len() / elem;
    let mut out = vec![0u8; planes.len()];
    for i in 0..count {
        for b in 0..elem {
            out[i * elem + b] = planes[b * count + i];
        }
    }
    out
}

fn unzigzag(z: u16) -> u16 {
    (z >> 1) ^ 0u16.wrapping_sub(z & 1)
}

/// The bucket codec (§3.3.1): `m` u16 values in element order.
fn buckets(stored: &[u8], m: usize, c: usize, zigzag: bool) -> RefResult<Vec<u16>> {
    let mut cur = Cursor::new(stored);
    let l = cur.u32()? as usize;
    ensure(l <= stored.len() - 4, "bucket frame length")?;
    let ks = unzstd(cur.take(l)?, m)?;
    let packed = cur.rest();
    ensure(ks.iter().all(|&k| k <= 16), "bucket past 16")?;
    let count = m / c;
    let mut out = vec![0u16; m];
    let mut bit = 0usize;
    for comp in 0..c {
        for i in 0..count {
            let k = ks[comp * count + i];
            let mut value = k.min(1) as u16;
            if k >= 2 {
                let mut r = 0u16;
                for j in 0..(k - 1) {
                    let byte = packed.get(bit / 8).copied().unwrap_or(0);
                    r |= (((byte >> (bit % 8)) & 1) as u16) << j;
                    bit += 1;
                }
                value = (1 << (k - 1)) | r;
            }
            out[i * c + comp] = if zigzag { unzigzag(value) } else { value };
        }
    }
    ensure(bit.div_ceil(8) == packed.len(), "packed bit count")?;
    Ok(out)
}

/// The range-coded bucket codec (§3.3.2): `m` u16 values in element order.
fn ranged_buckets(stored: &[u8], m: usize, c: usize, zigzag: bool) -> RefResult<Vec<u16>> {
    let mut cur = Cursor::new(stored);
    // Frequency tables: per component, cumulative starts and frequencies.
    let mut tables = Vec::new();
    for _ in 0..c {
        let mask = cur.u32()?;
        let mut freq = [0u32; 32];
        for (s, f) in freq.iter_mut().enumerate() {
            if mask >> s & 1 == 1 {
                let b0 = cur.u8()? as u32;
                let mut v = b0 & 0x7f;
                if b0 >= 0x80 {
                    let b1 = cur.u8()? as u32;
                    ensure((1..0x80).contains(&b1), "frequency varint")?;
                    v |= b1 << 7;
                }
                *f = v + 1;
            }
        }
        ensure(freq.iter().sum::<u32>() == 4096, "frequency sum")?;
        tables.push(freq);
    }
    let r = cur.u32()? as usize;
    ensure(r >= 8, "range coder length")?;
    let coded = cur.take(r)?;
    let packed = cur.rest();
    let mut states = [0u32; 2];
    for (k, x) in states.iter_mut().enumerate() {
        let b = &coded[4 * k..4 * k + 4];
        *x = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        ensure((1 << 23..1 << 31).contains(x), "range coder state")?;
    }
    let mut at = 8;
    let mut j = 0;
    let count = m / c;
    let mut out = vec![0u16; m];
    let mut bit = 0usize;
    let read_bit = |bit: &mut usize| -> u16 {
        let byte = packed.get(*bit / 8).copied().unwrap_or(0);
        let b = (byte >> (*bit % 8)) & 1;
        *bit += 1;
        b as u16
    };
    for (comp, freq) in tables.iter().enumerate() {
        for i in 0..count {
            // Value j of the stream on state j mod 2; the symbol whose slot range
            // holds x mod 4096.
            let x = &mut states[j % 2];
            j += 1;
            let slot = *x % 4096;
            let (mut s, mut start) = (0, 0);
            while start + freq[s] <= slot {
                start += freq[s];
                s += 1;
            }
            *x = freq[s] * (*x / 4096) + slot - start;
            while *x < 1 << 23 {
                ensure(at < coded.len(), "range coder bytes")?;
                *x = (*x << 8) | coded[at] as u32;
                at += 1;
            }
            let value = if s < 2 {
                s as u16
            } else {
                let k = s / 2 + 1;
                let mut v = (1u16 << (k - 1)) | ((s as u16 & 1) << (k - 2));
                for j in 0..k - 2 {
                    v |= read_bit(&mut bit) << j;
                }
                v
            };
            out[i * c + comp] = if zigzag { unzigzag(value) } else { value };
        }
    }
    ensure(
        at == coded.len() && states == [1 << 23; 2],
        "range coder end",
    )?;
    ensure(bit.div_ceil(8) == packed.len(), "packed bit count")?;
    Ok(out)
}

fn words16(bytes: &[u8]) -> Vec<u16> {
    bytes
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect()
}

fn words32(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Vertex stream `i` decoded to its u16 components (§3.3).
fn vertex_stream(h: &Header, streams: &[&[u8]; 5], i: usize) -> RefResult<Vec<u16>> {
    let (count, size) = h.elements()[i];
    let (count, size) = (count as usize, size as usize);
    if count == 0 {
        return Ok(Vec::new());
    }
    let [codec, _, coded, _] = h.streams[i];
    let stored = streams[i];
    let meshopt = |bytes: &[u8]| -> RefResult<Vec<u16>> {
        let err = |_| RefError("meshopt vertex codec");
        Ok(if size == 8 {
            let v = meshopt::decode_vertex_buffer::<[u16; 4]>(bytes, count).map_err(err)?;
            v.iter().flatten().copied().collect()
        } else {
            let v = meshopt::decode_vertex_buffer::<[u16; 2]>(bytes, count).map_err(err)?;
            v.iter().flatten().copied().collect()
        })
    };
    match codec {
        0 => Ok(words16(stored)),
        1 => meshopt(stored),
        2 => meshopt(&unzstd(stored, coded as usize)?),
        3 => Ok(words16(&join_planes(&unzstd(stored, count * size)?, size))),
        4 | 5 => buckets(stored, count * size / 2, size / 2, codec == 5),
        _ => ranged_buckets(stored, count * size / 2, size / 2, codec == 7),
    }
}

/// The index stream (§3.3).
fn index_stream(h: &Header, streams: &[&[u8]; 5]) -> RefResult<Vec<u32>> {
    let count = h.index_count as usize;
    if count == 0 {
        return Ok(Vec::new());
    }
    let [codec, _, coded, _] = h.streams[4];
    let stored = streams[4];
    let meshopt = |bytes: &[u8]| {
        meshopt::decode_index_buffer::<u32>(bytes, count).map_err(|_| RefError("meshopt index"))
    };
    match codec {
        0 => Ok(words32(stored)),
        1 => meshopt(stored),
        2 => meshopt(&unzstd(stored, coded as usize)?),
        _ => Ok(words32(&join_planes(&unzstd(stored, count * 4)?, 4))),
    }
}

/// How the walk predicts a vertex (§3.5).
#[derive(Clone, Copy, Debug)]
enum Recipe {
    Parallelogram(usize, usize, usize),
    Midpoint(usize, usize),
    Copy(usize),
    Zero,
}

/// The walk's order and recipes over `v` vertices (§3.5).
fn walk(indices: &[u32], v: usize) -> Vec<(usize, Recipe)> {
    let mut visited = vec![false; v];
    let mut edges: Vec<Vec<(usize, usize)>> = vec![Vec::new(); v];
    let mut last = None;
    let mut out = Vec::with_capacity(v);
    for t in indices.chunks_exact(3) {
        let t = [t[0] as usize, t[1] as usize, t[2] as usize];
        for k in 0..3 {
            let x = t[k];
            if visited[x] {
                continue;
            }
            let (a, b) = (t[(k + 1) % 3], t[(k + 2) % 3]);
            let recipe = if visited[a] && visited[b] {
                match edges[b].iter().find(|e| e.0 == a) {
                    Some(&(_, c)) => Recipe::Parallelogram(a, b, c),
                    None => Recipe::Midpoint(a, b),
                }
            } else if visited[a] {
                Recipe::Copy(a)
            } else if visited[b] {
                Recipe::Copy(b)
            } else {
                match last {
                    Some(l) => Recipe::Copy(l),
                    None => Recipe::Zero,
                }
            };
            out.push((x, recipe));
            visited[x] = true;
            last = Some(x);
        }
        for (from, to, opp) in [(t[0], t[1], t[2]), (t[1], t[2], t[0]), (t[2], t[0], t[1])] {
            if edges[from].len() < 8 {
                edges[from].push((to, opp));
            }
        }
    }
    for (x, seen) in visited.iter().enumerate() {
        if !seen {
            out.push((x, Recipe::Zero));
        }
    }
    out
}

/// Restores the first `predicted` of every `stride` components of `table` (one
/// element per vertex) along the walk, parallelograms of weight `w` (§3.5).
fn restore(walk: &[(usize, Recipe)], table: &mut [u16], stride: usize, predicted: usize, w: i64) {
    for &(v, recipe) in walk {
        for k in 0..predicted {
            let get = |x: usize| table[x * stride + k] as i64;
            let prediction = match recipe {
                Recipe::Parallelogram(a, b, c) => {
                    (((get(a) + get(b)) * (8 + w) - 2 * w * get(c)) >> 4).clamp(0, 65535)
                }
                Recipe::Midpoint(a, b) => (get(a) + get(b)) >> 1,
                Recipe::Copy(a) => get(a),
                Recipe::Zero => 0,
            };
            let slot = &mut table[v * stride + k];
            *slot = (prediction as u16).wrapping_add(unzigzag(*slot));
        }
    }
}

/// The prediction of uvs from positions (§3.6): per component, the axis, the scale
/// and the reversal.
fn uv_prediction(h: &Header, p: &[u16], uv: &mut [u16], n: usize) {
    let extent = max_extent(h.bounds_min, h.bounds_max) as f64;
    let cells = 1u32 << h.uv_bits;
    let ratio = extent * cells as f64 / (1u32 << h.position_bits) as f64;
    for comp in 0..2 {
        let bits = h.uv_axes >> (3 * comp);
        let s = (bits & 3) as usize;
        let rev = bits & 4 != 0;
        let mut scale = 0u64;
        if s != 0 {
            let e = h.bounds_max[s - 1] as f64 - h.bounds_min[s - 1] as f64;
            let k = if e > 0.0 { ratio / e } else { 0.0 };
            scale = (k * 4_294_967_296.0).min((1u64 << 47) as f64) as u64;
        }
        for v in 0..n {
            let prediction = if s == 0 {
                0
            } else {
                let t = (((2 * p[v * 4 + s - 1] as u64 + 1) * scale) >> 33) as u32;
                if rev {
                    cells.wrapping_sub(1).wrapping_sub(t) as u16
                } else {
                    t as u16
                }
            };
            let slot = &mut uv[v * 2 + comp];
            *slot = unzigzag(*slot).wrapping_add(prediction);
        }
    }
}

fn max_extent(lo: [f32; 3], hi: [f32; 3]) -> f32 {
    (hi[0] - lo[0]).max(hi[1] - lo[1]).max(hi[2] - lo[2])
}

/// The geometric normal prediction's codes (§3.7).
fn predicted_normals(p: &[u16], indices: &[u32], n: usize, bits: u8) -> Vec<[i16; 2]> {
    let mut sums = vec![[0.0f32; 3]; n];
    let at = |v: u32| -> [f32; 3] {
        let v = v as usize * 4;
        [p[v] as f32, p[v + 1] as f32, p[v + 2] as f32]
    };
    for t in indices.chunks_exact(3) {
        let (a, b, c) = (at(t[0]), at(t[1]), at(t[2]));
        let e1 = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let e2 = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
        let f = [
            e1[1] * e2[2] - e1[2] * e2[1],
            e1[2] * e2[0] - e1[0] * e2[2],
            e1[0] * e2[1] - e1[1] * e2[0],
        ];
        for &v in t {
            for k in 0..3 {
                sums[v as usize][k] += f[k];
            }
        }
    }
    let scale = ((1i32 << (bits - 1)) - 1) as f32;
    let sgn = |v: f32| if v < 0.0 { -1.0 } else { 1.0 };
    sums.iter()
        .map(|s| {
            let l1 = s[0].abs() + s[1].abs() + s[2].abs();
            let d = if l1 == 0.0 { 1.0 } else { l1 };
            let (mut x, mut y) = (s[0] / d, s[1] / d);
            if s[2] < 0.0 {
                (x, y) = ((1.0 - y.abs()) * sgn(x), (1.0 - x.abs()) * sgn(y));
            }
            [(x * scale).round() as i16, (y * scale).round() as i16]
        })
        .collect()
}

/// An octahedral code to a unit vector (§3.8).
fn oct_decode(q: [i16; 2], bits: u8) -> [f32; 3] {
    let inv = 1.0 / ((1i32 << (bits - 1)) - 1) as f32;
    let mut x = (q[0] as f32 * inv).clamp(-1.0, 1.0);
    let mut y = (q[1] as f32 * inv).clamp(-1.0, 1.0);
    let z = 1.0 - x.abs() - y.abs();
    if z < 0.0 {
        (x, y) = ((1.0 - y.abs()).copysign(x), (1.0 - x.abs()).copysign(y));
    }
    let r = 1.0 / (x * x + y * y + z * z).sqrt();
    [x * r, y * r, z * r]
}

fn cell_centre(q: u16, min: f32, step: f32) -> f32 {
    min + (q as f32 + 0.5) * step
}

/// Reads the 144-byte header of a cooked record (§3.1).
fn full_header(c: &mut Cursor<'_>) -> RefResult<Header> {
    let mut h = Header {
        n: c.u32()?,
        index_count: c.u32()?,
        ..Header::default()
    };
    let b = c.take(8)?;
    (h.position_bits, h.uv_bits, h.normal_bits, h.flags) = (b[0], b[1], b[2], b[3]);
    (h.tangent_bits, h.damping, h.remap_codec, h.uv_axes) = (b[4], b[5], b[6], b[7]);
    h.bounds_min = c.f32s()?;
    h.bounds_max = c.f32s()?;
    h.uv_min = c.f32s()?;
    h.uv_max = c.f32s()?;
    for s in &mut h.streams {
        for x in s.iter_mut() {
            *x = c.u32()?;
        }
    }
    h.position_count = c.u32()?;
    h.remap_len = c.u32()?;
    Ok(h)
}

/// Reads the compact header of a record inside a set (§4).
fn compact_header(c: &mut Cursor<'_>) -> RefResult<Header> {
    let mut h = Header {
        n: c.varint()?,
        index_count: c.varint()?,
        ..Header::default()
    };
    let b = c.take(6)?;
    (h.position_bits, h.uv_bits, h.normal_bits, h.flags) = (b[0], b[1], b[2], b[3]);
    h.tangent_bits = b[4];
    h.damping = b[5] & 0x7F;
    if b[5] & 0x80 != 0 {
        h.uv_axes = c.u8()?;
        ensure(h.uv_axes != 0, "compact uv_axes")?;
    }
    h.bounds_min = c.f32s()?;
    h.bounds_max = c.f32s()?;
    if h.has(HAS_UVS) {
        h.uv_min = c.f32s()?;
        h.uv_max = c.f32s()?;
    }
    if h.has(SHARED_POSITIONS) {
        h.position_count = c.varint()?;
        h.remap_codec = c.u8()?;
        h.remap_len = c.varint()?;
    }
    let elements = h.elements();
    let present = [
        true,
        h.has(HAS_NORMALS),
        h.has(HAS_TANGENTS),
        h.has(HAS_UVS),
        true,
    ];
    for i in 0..5 {
        if !present[i] {
            continue;
        }
        let codec = c.u8()? as u32;
        let stored = c.varint()?;
        let decoded = elements[i].0 * elements[i].1;
        ensure(decoded <= u32::MAX as u64, "decoded length past u32")?;
        let decoded = decoded as u32;
        let coded = match codec {
            2 => c.varint()?,
            3 => decoded,
            4..=7 => decoded / 2,
            _ => stored,
        };
        h.streams[i] = [codec, stored, coded, decoded];
    }
    Ok(h)
}

/// Reads and decodes a cooked mesh record (§3).
pub fn cooked_mesh(record: &[u8]) -> RefResult<MeshData> {
    let mut c = Cursor::new(record);
    let h = full_header(&mut c)?;
    decode_cooked(&h, c.rest())
}

/// Decodes a cooked record whose header is `h` and whose streams and remap are
/// `body` (§3.4).
fn decode_cooked(h: &Header, body: &[u8]) -> RefResult<MeshData> {
    let (streams, remap) = split(h, body)?;
    let n = h.n as usize;
    // 1. Indices.
    let indices = index_stream(h, &streams)?;
    ensure(indices.iter().all(|&i| i < h.n), "index past vertices")?;
    // 2. Positions (four u16 words a vertex).
    let mut positions = vertex_stream(h, &streams, 0)?;
    let mut walk_positions = h.has(PREDICTED_POSITIONS);
    if h.has(SHARED_POSITIONS) {
        positions = shared_positions(h, &indices, positions, remap)?;
        walk_positions = false;
    }
    // 3. Uvs, and normals the walk restores.
    let mut uvs = vertex_stream(h, &streams, 3)?;
    let walk_normals = h.has(PARALLELOGRAM_NORMALS);
    let mut normals = if walk_normals {
        vertex_stream(h, &streams, 1)?
    } else {
        Vec::new()
    };
    // 4. The walk.
    let order = walk(&indices, n);
    if walk_positions {
        restore(&order, &mut positions, 4, 3, 8 - h.damping as i64);
    }
    if h.has(HAS_UVS) && h.has(PREDICTED_UVS) {
        restore(&order, &mut uvs, 2, 2, 8);
    }
    if walk_normals {
        restore(&order, &mut normals, 2, 2, 8);
    }
    // 5. Uvs from positions.
    if h.uv_axes != 0 {
        uv_prediction(h, &positions, &mut uvs, n);
    }
    // 6. Normals.
    if h.has(HAS_NORMALS) && !walk_normals {
        normals = vertex_stream(h, &streams, 1)?;
    }
    let mut normal_codes: Vec<[i16; 2]> = normals
        .chunks_exact(2)
        .map(|q| [q[0] as i16, q[1] as i16])
        .collect();
    if h.has(HAS_NORMALS) && h.has(PREDICTED_NORMALS) {
        let predicted = predicted_normals(&positions, &indices, n, h.normal_bits);
        for (q, p) in normal_codes.iter_mut().zip(predicted) {
            *q = [q[0].wrapping_add(p[0]), q[1].wrapping_add(p[1])];
        }
    }
    // 7. Tangents.
    let tangents = vertex_stream(h, &streams, 2)?;
    // 8. Dequantise.
    Ok(dequantise(
        h,
        indices,
        &positions,
        &normal_codes,
        &tangents,
        &uvs,
    ))
}

/// Shared positions (§3.4 step 2): the remap undone, the distinct `positions`
/// restored by the walk over the triangles of position ids (with
/// PREDICTED_POSITIONS), then each vertex's position.
fn shared_positions(
    h: &Header,
    indices: &[u32],
    positions: Vec<u16>,
    remap: &[u8],
) -> RefResult<Vec<u16>> {
    let n = h.n as usize;
    let raw = if h.remap_codec == 0 {
        remap.to_vec()
    } else {
        join_planes(&unzstd(remap, 4 * n)?, 4)
    };
    let mut ids = Vec::with_capacity(n);
    let mut next = 0u32;
    for k in words32(&raw) {
        ensure(k <= next, "remap names a later position")?;
        ids.push(next - k);
        if k == 0 {
            next += 1;
        }
    }
    ensure(next == h.position_count, "remap position count")?;
    let mut distinct = positions;
    if h.has(PREDICTED_POSITIONS) {
        let tris: Vec<u32> = indices.iter().map(|&i| ids[i as usize]).collect();
        let order = walk(&tris, h.position_count as usize);
        restore(&order, &mut distinct, 4, 3, 8 - h.damping as i64);
    }
    let mut positions = Vec::with_capacity(4 * n);
    for &id in &ids {
        positions.extend_from_slice(&distinct[4 * id as usize..4 * id as usize + 4]);
    }
    Ok(positions)
}

/// §3.8: the final codes dequantised (positions, normals, tangents with the
/// handedness bit of their vertex's position word 3, uvs) beside the indices.
fn dequantise(
    h: &Header,
    indices: Vec<u32>,
    positions: &[u16],
    normal_codes: &[[i16; 2]],
    tangents: &[u16],
    uvs: &[u16],
) -> MeshData {
    let mut out = MeshData {
        indices,
        ..MeshData::default()
    };
    let step = max_extent(h.bounds_min, h.bounds_max) / (1u32 << h.position_bits) as f32;
    for p in positions.chunks_exact(4) {
        out.positions.push(std::array::from_fn(|k| {
            cell_centre(p[k], h.bounds_min[k], step)
        }));
    }
    out.normals = normal_codes
        .iter()
        .map(|&q| oct_decode(q, h.normal_bits))
        .collect();
    for (v, q) in tangents.chunks_exact(2).enumerate() {
        let t = oct_decode([q[0] as i16, q[1] as i16], h.tangent_bits);
        let w = if positions[4 * v + 3] & 1 != 0 {
            -1.0
        } else {
            1.0
        };
        out.tangents.push([t[0], t[1], t[2], w]);
    }
    if h.has(HAS_UVS) {
        let cells = (1u32 << h.uv_bits) as f32;
        let st = [0, 1].map(|k| (h.uv_max[k] - h.uv_min[k]) / cells);
        for q in uvs.chunks_exact(2) {
            out.uvs.push(std::array::from_fn(|k| {
                cell_centre(q[k], h.uv_min[k], st[k])
            }));
        }
    }
    out
}

// ---------------------------------------------------------------------------------
// §4 Cooked mesh set

/// Where a part lies: its record, first triangle and triangle count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefSpan {
    /// The record (index into the set's records).
    pub record: usize,
    /// Its first triangle in the record.
    pub first_triangle: u32,
    /// Its triangles (real triangles of the level, for a level).
    pub triangle_count: u32,
}

/// A cooked set, every record decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct RefSet {
    /// One mesh per record.
    pub records: Vec<MeshData>,
    /// Every slot, records in turn.
    pub slots: Vec<RefSpan>,
    /// The part table as runs: (slot, parts drawing it in turn).
    pub part_runs: Vec<(u32, u32)>,
}

impl RefSet {
    /// Parts in the set.
    pub fn part_count(&self) -> u64 {
        self.part_runs.iter().map(|r| r.1 as u64).sum()
    }

    /// Where part `p` lies, or `None` past the table.
    pub fn part_span(&self, p: u64) -> Option<RefSpan> {
        let mut first = 0u64;
        for &(slot, len) in &self.part_runs {
            first += len as u64;
            if p < first {
                return Some(self.slots[slot as usize]);
            }
        }
        None
    }
}

fn entry(bytes: &[u8], width: usize, i: usize) -> u32 {
    let mut word = 0u32;
    for b in 0..width {
        word |= (bytes[i * width + b] as u32) << (8 * b);
    }
    word
}

/// Reads and decodes a cooked mesh set (§4).
pub fn cooked_set(record: &[u8]) -> RefResult<RefSet> {
    let mut c = Cursor::new(record);
    ensure(c.u8()? == 3, "set version")?;
    let part_width = c.u8()? as usize;
    let length_width = c.u8()? as usize;
    let body_codec = c.u8()?;
    ensure(matches!(part_width, 0 | 1 | 2 | 4), "part_width")?;
    ensure(matches!(length_width, 2 | 4), "length_width")?;
    ensure(body_codec <= 1, "body_codec")?;
    let parts = c.varint()?;
    let records = c.varint()?;
    let slots = c.varint()?;
    let stored = c.varint()? as u64;
    let body_len = c.varint()? as u64;
    ensure((parts == 0) == (records == 0), "record_count")?;
    ensure(records <= slots && slots <= parts, "slot_count")?;
    if body_codec == 0 {
        ensure(stored == body_len, "raw body length")?;
    } else {
        ensure(
            stored > 0 && body_len <= 1024 * stored + 4096,
            "body expansion",
        )?;
    }
    let part_runs = part_table(&mut c, part_width, parts, slots)?;
    let (spans, record_triangles) = slot_table(&mut c, records, slots)?;
    let lengths = c.take(length_width * records as usize)?;
    let body = c.rest();
    ensure(body.len() as u64 == stored, "body length")?;
    let meshes = set_records(
        body,
        body_codec,
        body_len,
        lengths,
        length_width,
        &record_triangles,
    )?;
    Ok(RefSet {
        records: meshes,
        slots: spans,
        part_runs,
    })
}

/// A set's part table (§4): the slot each part draws, as runs (one run a part
/// with a fixed `width`).
fn part_table(
    c: &mut Cursor<'_>,
    width: usize,
    parts: u32,
    slots: u32,
) -> RefResult<Vec<(u32, u32)>> {
    let mut part_runs = Vec::new();
    if width == 0 {
        let runs = c.varint()?;
        ensure(runs <= parts, "part runs")?;
        let mut covered = 0u64;
        for _ in 0..runs {
            let slot = c.varint()?;
            ensure(slot < slots, "part slot")?;
            let len = c.varint()?;
            ensure(len >= 1, "part run")?;
            covered += len as u64;
            part_runs.push((slot, len));
        }
        ensure(covered == parts as u64, "part runs")?;
    } else {
        let table = c.take(width * parts as usize)?;
        for p in 0..parts as usize {
            let slot = entry(table, width, p);
            ensure(slot < slots, "part slot")?;
            part_runs.push((slot, 1));
        }
    }
    Ok(part_runs)
}

/// A set's slot table (§4): every slot's span, and each record's triangles.
fn slot_table(c: &mut Cursor<'_>, records: u32, slots: u32) -> RefResult<(Vec<RefSpan>, Vec<u64>)> {
    let mut spans = Vec::new();
    let mut record_triangles = Vec::new();
    for r in 0..records as usize {
        let k = c.varint()?;
        ensure(k >= 1, "slots of a record")?;
        ensure(spans.len() as u64 + k as u64 <= slots as u64, "slot_count")?;
        let mut first = 0u64;
        for _ in 0..k {
            let count = c.varint()?;
            spans.push(RefSpan {
                record: r,
                first_triangle: first as u32,
                triangle_count: count,
            });
            first += count as u64;
        }
        ensure(first <= u32::MAX as u64 / 3, "slot triangles")?;
        record_triangles.push(first);
    }
    ensure(spans.len() == slots as usize, "slot_count")?;
    Ok((spans, record_triangles))
}

/// A set's records (§4): the lengths checked against the body, the body
/// unpacked, then each record's compact header read and the record decoded (§3),
/// its triangles those its slots name.
fn set_records(
    body: &[u8],
    body_codec: u8,
    body_len: u64,
    lengths: &[u8],
    length_width: usize,
    record_triangles: &[u64],
) -> RefResult<Vec<MeshData>> {
    let mut sum = 0u64;
    for r in 0..record_triangles.len() {
        let len = entry(lengths, length_width, r) as u64;
        ensure(len >= 36, "record length")?;
        sum += len;
    }
    ensure(sum == body_len, "body_len")?;
    let body = if body_codec == 0 {
        body.to_vec()
    } else {
        unzstd(body, body_len as usize)?
    };
    let mut meshes = Vec::new();
    let mut at = 0usize;
    for (r, &triangles) in record_triangles.iter().enumerate() {
        let len = entry(lengths, length_width, r) as usize;
        let mut rc = Cursor::new(&body[at..at + len]);
        let h = compact_header(&mut rc)?;
        ensure(parallelogram_flags_ok(h.flags), "flags")?;
        let mesh = decode_cooked(&h, rc.rest())?;
        ensure(triangles == h.index_count as u64 / 3, "slot triangles")?;
        meshes.push(mesh);
        at += len;
    }
    Ok(meshes)
}

// ---------------------------------------------------------------------------------
// §5 Cluster level

/// A cluster level record read by §5: its stored fields (in the crate's plain
/// record types, filled here field by field from the bytes) and its vertices
/// decoded.
#[derive(Clone, Debug, PartialEq)]
pub struct RefLevel {
    /// The header's fields.
    pub header: ClusterLevelHeader,
    /// Cluster infos.
    pub clusters: Vec<ClusterInfo>,
    /// The level's vertices as stored.
    pub vertices: Vec<ClusterVertex>,
    /// The level's vertices decoded.
    pub decoded: Vec<FloatVertex>,
    /// Every slot's indices.
    pub indices: Vec<u32>,
}

/// IEEE binary16 bits to their f32 value.
fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exponent = ((h >> 10) & 0x1F) as i32;
    let mantissa = (h & 0x3FF) as u32;
    let magnitude = match exponent {
        0 => mantissa as f32 * (2.0f32).powi(-24),
        31 if mantissa == 0 => f32::INFINITY,
        31 => f32::NAN,
        e => (1024 + mantissa) as f32 * (2.0f32).powi(e - 25),
    };
    sign * magnitude
}

/// A cluster level's 64-byte header (§5), its checks made.
fn level_header(c: &mut Cursor<'_>) -> RefResult<ClusterLevelHeader> {
    let h = ClusterLevelHeader {
        level: c.u32()?,
        cluster_count: c.u32()?,
        vertex_count: c.u32()?,
        slot_shift: c.u32()?,
        bounds_min: c.f32s()?,
        max_parent_error: c.f32()?,
        bounds_max: c.f32s()?,
        max_error: c.f32()?,
        triangle_count: c.u32()?,
        material_count: c.u32()?,
        reserved: [c.u32()?, c.u32()?],
    };
    let (lo, hi) = (h.bounds_min, h.bounds_max);
    ensure(h.slot_shift == 7, "slot_shift")?;
    ensure(h.reserved == [0, 0], "reserved")?;
    let header_floats = lo.iter().chain(&hi);
    ensure(
        header_floats
            .chain([&h.max_error, &h.max_parent_error])
            .all(|f| f.is_finite()),
        "non-finite header",
    )?;
    ensure((0..3).all(|i| lo[i] <= hi[i]), "bounds")?;
    ensure(
        h.cluster_count == 0 || h.material_count >= 1,
        "material_count",
    )?;
    ensure(h.material_count <= 65536, "material_count")?;
    Ok(h)
}

/// One 48-byte cluster info (§5), its checks made against the level's
/// `material_count`.
fn cluster_info(c: &mut Cursor<'_>, material_count: u32) -> RefResult<ClusterInfo> {
    let info = ClusterInfo {
        sphere: c.f32s()?,
        parent_sphere: c.f32s()?,
        error: c.f32()?,
        parent_error: c.f32()?,
        triangle_count: c.u16()?,
        material: c.u16()?,
        group: c.u32()?,
    };
    let floats = info.sphere.iter().chain(&info.parent_sphere);
    ensure(
        floats
            .chain([&info.error, &info.parent_error])
            .all(|f| f.is_finite()),
        "non-finite cluster",
    )?;
    ensure(
        (1..=128).contains(&info.triangle_count),
        "cluster triangle_count",
    )?;
    ensure((info.material as u32) < material_count, "cluster material")?;
    Ok(info)
}

/// One 32-byte level vertex (§5) as stored and decoded (a grid per axis over the
/// bounds `lo..hi`).
fn level_vertex(
    c: &mut Cursor<'_>,
    lo: [f32; 3],
    hi: [f32; 3],
) -> RefResult<(ClusterVertex, FloatVertex)> {
    let v = ClusterVertex {
        position: [c.u16()?, c.u16()?, c.u16()?],
        flags: c.u16()?,
        normal: [c.u16()? as i16, c.u16()? as i16],
        tangent: [c.u16()? as i16, c.u16()? as i16],
        uv: [c.u16()?, c.u16()?],
        uv1: [c.u16()?, c.u16()?],
        color: c.take(4)?.try_into().expect("four bytes"),
        reserved: c.u32()?,
    };
    ensure(v.flags & !1 == 0 && v.reserved == 0, "vertex flags")?;
    let t = oct_decode(v.tangent, 16);
    let decoded = FloatVertex {
        position: std::array::from_fn(|i| {
            cell_centre(v.position[i], lo[i], (hi[i] - lo[i]) / 65536.0)
        }),
        normal: oct_decode(v.normal, 16),
        tangent: [t[0], t[1], t[2], if v.flags & 1 != 0 { -1.0 } else { 1.0 }],
        uv: v.uv.map(f16_value),
    };
    Ok((v, decoded))
}

/// Reads a cluster level record (§5) and decodes its vertices.
pub fn cluster_level(record: &[u8]) -> RefResult<RefLevel> {
    let mut c = Cursor::new(record);
    let h = level_header(&mut c)?;
    let (cc, vc) = (h.cluster_count as u64, h.vertex_count as u64);
    let length = 64 + 48 * cc + 32 * vc + 1536 * cc;
    ensure(length == record.len() as u64, "record length")?;
    let mut clusters = Vec::new();
    for _ in 0..cc {
        clusters.push(cluster_info(&mut c, h.material_count)?);
    }
    let mut vertices = Vec::new();
    let mut decoded = Vec::new();
    for _ in 0..vc {
        let (v, d) = level_vertex(&mut c, h.bounds_min, h.bounds_max)?;
        vertices.push(v);
        decoded.push(d);
    }
    let indices = words32(c.rest());
    let mut total = 0u64;
    for (ci, info) in clusters.iter().enumerate() {
        let slot = &indices[ci * 384..(ci + 1) * 384];
        ensure(slot.iter().all(|&i| (i as u64) < vc), "index past vertices")?;
        let real = 3 * info.triangle_count as usize;
        for pad in slot[real..].chunks_exact(3) {
            ensure(pad[0] == pad[1] && pad[1] == pad[2], "padding triangle")?;
        }
        total += info.triangle_count as u64;
    }
    ensure(total == h.triangle_count as u64, "triangle_count")?;
    Ok(RefLevel {
        header: h,
        clusters,
        vertices,
        decoded,
        indices,
    })
}
