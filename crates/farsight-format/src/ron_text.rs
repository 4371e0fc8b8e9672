//! The manifest's RON writer.
//!
//! The manifest as indented RON: exactly the text of `ron::ser::to_string_pretty`
//! with `PrettyConfig::default()` (so files and readers are unchanged), written by
//! [`PrettyWriter`] without ron's per-value configuration checks, identifier
//! validation through Unicode tables and `fmt` calls for every integer (at 12
//! triangles ron's writer took 25k instructions, more than half of a cluster file's
//! encoding). What that writer does not cover goes to ron itself, which then
//! writes it or reports the error as before.

use std::fmt;

use serde::Serialize;

use crate::FormatError;

/// The manifest as indented RON, byte for byte ron's pretty text (the module doc
/// says how and why).
#[cfg(test)]
pub(crate) fn manifest_text<M: Serialize>(manifest: &M) -> Result<String, FormatError> {
    let mut out = Vec::new();
    write_manifest(manifest, &mut out)?;
    String::from_utf8(out).map_err(|e| FormatError::ManifestWrite {
        message: e.to_string(),
    })
}

/// Appends the manifest's text ([`manifest_text`]) to `out` (the file being
/// written: no text of its own copied in afterwards).
pub(crate) fn write_manifest<M: Serialize>(
    manifest: &M,
    out: &mut Vec<u8>,
) -> Result<(), FormatError> {
    let start = out.len();
    let mut w = PrettyWriter {
        out: Out(std::mem::take(out)),
        indent: 0,
        is_empty: None,
        depth: 0,
    };
    let written = manifest.serialize(&mut w);
    *out = w.out.0;
    if written.is_ok() {
        return Ok(());
    }
    out.truncate(start);
    let text =
        ron::ser::to_string_pretty(manifest, ron::ser::PrettyConfig::default()).map_err(|e| {
            FormatError::ManifestWrite {
                message: e.to_string(),
            }
        })?;
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

/// [`PrettyWriter`]'s text, or `None` for a value it leaves to ron.
#[cfg(test)]
fn pretty_text<M: Serialize>(manifest: &M) -> Option<String> {
    let mut w = PrettyWriter {
        out: Out(Vec::new()),
        indent: 0,
        is_empty: None,
        depth: 0,
    };
    manifest.serialize(&mut w).ok()?;
    String::from_utf8(w.out.0).ok()
}

/// UTF-8 text as bytes, appended to the file's own buffer.
struct Out(Vec<u8>);

impl Out {
    #[inline]
    fn push_str(&mut self, s: &str) {
        self.0.extend_from_slice(s.as_bytes());
    }

    #[inline]
    fn push(&mut self, c: char) {
        if c.is_ascii() {
            self.0.push(c as u8);
        } else {
            self.push_str(c.encode_utf8(&mut [0; 4]));
        }
    }
}

impl fmt::Write for Out {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

impl Extend<char> for Out {
    fn extend<I: IntoIterator<Item = char>>(&mut self, chars: I) {
        for c in chars {
            self.push(c);
        }
    }
}

/// ron 0.10's pretty serializer with the default configuration, state for state
/// (`indent` and `is_empty` are its `Pretty::indent` and `Serializer::is_empty`),
/// for the shapes manifests use. It refuses ([`LeftToRon`]) byte strings, 128-bit
/// integers, identifiers ron would write raw (`r#name`) or check against Unicode
/// tables (anything not ASCII), its raw values (their token is not an identifier)
/// and nesting deeper than [`MAX_DEPTH`] (ron refuses past 128).
struct PrettyWriter {
    out: Out,
    indent: usize,
    /// Set when a sequence, map or struct opens (whether it has no members),
    /// cleared when one closes.
    is_empty: Option<bool>,
    depth: usize,
}

/// A value [`PrettyWriter`] does not write; ron does.
#[derive(Debug)]
struct LeftToRon;

impl fmt::Display for LeftToRon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to ron")
    }
}

impl std::error::Error for LeftToRon {}

impl serde::ser::Error for LeftToRon {
    fn custom<T: fmt::Display>(_: T) -> Self {
        LeftToRon
    }
}

const NEW_LINE: &str = if cfg!(target_os = "windows") {
    "\r\n"
} else {
    "\n"
};
const INDENTOR: &str = "    ";
/// ron's text of `f32::MAX` (a cluster level's `NO_PARENT_ERROR`).
const F32_MAX_TEXT: &str = "340282350000000000000000000000000000000.0";
/// Nesting [`PrettyWriter`] writes; deeper values go to ron (whose limit is 128).
const MAX_DEPTH: usize = 64;

type Written = Result<(), LeftToRon>;

impl PrettyWriter {
    fn start_indent(&mut self) {
        self.indent += 1;
        if !self.is_empty.unwrap_or(false) {
            self.out.push_str(NEW_LINE);
        }
    }

    fn write_indent(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str(INDENTOR);
        }
    }

    fn end_indent(&mut self) {
        if !self.is_empty.unwrap_or(false) {
            for _ in 1..self.indent {
                self.out.push_str(INDENTOR);
            }
        }
        self.indent -= 1;
        self.is_empty = None;
    }

    /// A member after the first: ron's `,` and new line.
    fn next_line(&mut self, first: &mut bool) {
        if !std::mem::take(first) {
            self.out.push(',');
            self.out.push_str(NEW_LINE);
        }
    }

    fn identifier(&mut self, name: &str) -> Written {
        check_identifier(name)?;
        self.out.push_str(name);
        Ok(())
    }

    fn nested<T: ?Sized + Serialize>(&mut self, value: &T) -> Written {
        if self.depth >= MAX_DEPTH {
            return Err(LeftToRon);
        }
        self.depth += 1;
        value.serialize(&mut *self)?;
        self.depth -= 1;
        Ok(())
    }

    /// An enum's variant: its name alone (ron checks the enum's).
    fn variant(&mut self, name: &str, variant: &str) -> Written {
        check_identifier(name)?;
        self.identifier(variant)
    }

    /// `open`, the value, `)`.
    fn wrapped<T: ?Sized + Serialize>(&mut self, open: &str, value: &T) -> Written {
        self.out.push_str(open);
        self.nested(value)?;
        self.out.push(')');
        Ok(())
    }

    /// Opens a compound with `bracket`: members on their own lines (`lined`: a
    /// sequence, map or struct of `len` members when known) or a tuple's.
    fn open(&mut self, bracket: char, len: Option<usize>, lined: bool) -> Members<'_> {
        self.out.push(bracket);
        if lined {
            if let Some(len) = len {
                self.is_empty = Some(len == 0);
            }
            self.start_indent();
        }
        Members {
            w: self,
            first: true,
            lined,
        }
    }

    fn uint(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.out.0.extend_from_slice(&digits[at..]);
    }

    fn sint(&mut self, v: i64) {
        if v < 0 {
            self.out.push('-');
        }
        self.uint(v.unsigned_abs());
    }

    /// ron's float `v` (an `f32` or `f64`, exact as `f64` but for a NaN's sign,
    /// given apart; `text` its own `Display`): `-` before a negative NaN, the
    /// shortest text that reads back,
    /// `.0` after an integral value. An integral value of magnitude below `2^24`
    /// is that text as an integer's digits: every integer there has a float of its
    /// own in either width, so no shorter text reads back to it (`-0` keeps its
    /// sign).
    fn float(&mut self, v: f64, negative_nan: bool, text: Text) -> Written {
        use std::fmt::Write as _;
        // `v.fract() == 0.0` without its libm `trunc`: below 2^52 the truncating
        // cast is exact for an integral value and changes any other; from there
        // every finite f64 is integral (infinities and NaN are not).
        const EXACT: f64 = 4_503_599_627_370_496.0;
        let integral = if v.abs() < EXACT {
            v as i64 as f64 == v
        } else {
            v.is_finite()
        };
        if integral && v.abs() < 16_777_216.0 {
            if v.is_sign_negative() {
                self.out.push('-');
            }
            self.uint(v.abs() as u64);
        } else {
            if negative_nan {
                self.out.push('-');
            }
            match text {
                Text::Single(v) if v.is_finite() => display_f32(v, &mut self.out),
                Text::Single(v) => write!(self.out, "{v}").map_err(|_| LeftToRon)?,
                Text::Double(v) => write!(self.out, "{v}").map_err(|_| LeftToRon)?,
            }
        }
        if integral {
            self.out.push_str(".0");
        }
        Ok(())
    }
}

/// What a byte may be in an identifier ron writes as it stands: bit 0 anywhere
/// (ASCII letters, digits, `_`), bit 1 first (letters, `_`).
const IDENTIFIER_BYTES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphabetic() || c == b'_' {
            t[b] = 3;
        } else if c.is_ascii_digit() {
            t[b] = 1;
        }
        b += 1;
    }
    t
};

/// Whether ron writes `name` as it stands: ASCII, a letter or `_` first, then
/// letters, digits and `_`, and none of ron's reserved words. Anything else is
/// left to ron (which writes `r#name` or refuses it). One table lookup a byte
/// (every field name of a manifest passes here).
fn check_identifier(name: &str) -> Written {
    let b = name.as_bytes();
    let first = b.first().map_or(0, |&c| IDENTIFIER_BYTES[c as usize]);
    let rest = b
        .iter()
        .fold(1, |all, &c| all & IDENTIFIER_BYTES[c as usize]);
    // Every reserved word is 3 to 6 bytes and starts with one of these.
    let reserved = b.len() <= 6
        && matches!(b.first(), Some(b't' | b'f' | b'S' | b'N' | b'i'))
        && matches!(
            name,
            "true"
                | "false"
                | "Some"
                | "None"
                | "inf"
                | "inff32"
                | "inff64"
                | "NaN"
                | "NaNf32"
                | "NaNf64"
        );
    if first & 2 != 0 && rest != 0 && !reserved {
        Ok(())
    } else {
        Err(LeftToRon)
    }
}

/// A float's own text for [`PrettyWriter::float`]: an `f32`'s (written without
/// `fmt` when finite, see [`display_f32`]) or an `f64`'s.
#[derive(Clone, Copy)]
enum Text {
    Single(f32),
    Double(f64),
}

/// Appends `v`'s `Display` text (finite `v`), byte for byte what `{}` writes:
/// the shortest digits that read back to `v`, laid out without an exponent as
/// the standard library lays them out (`0.000123`, `12.5`, `1200`), `-` before a
/// negative value. The digits are zmij's (Schubfach) but where two shortest
/// strings lie equally near `v` ([`exact_decimal`]): zmij takes the even one,
/// the standard library the one further from zero. Checked against `{}` on
/// every finite `f32` (an ignored test) and on random ones (a test that runs).
/// About a tenth of `fmt`'s instructions.
fn display_f32(v: f32, out: &mut Out) {
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    if v.is_sign_negative() {
        out.push('-');
    }
    let mut buffer = zmij::Buffer::new();
    let written = buffer.format_finite(v.abs()).as_bytes();
    // zmij writes `d.ddde-7`, `1e20`, `123.45` or `1200.0`: the significant
    // digits (a point anywhere among them) and a power of ten. Read as
    // `digits x 10^exponent`.
    let (mantissa, mut exponent) = match written.iter().position(|&c| c == b'e' || c == b'E') {
        Some(at) => (&written[..at], parse_exponent(&written[at + 1..])),
        None => (written, 0),
    };
    let mut digits = 0u64;
    let mut seen_point = false;
    for &c in mantissa {
        if c == b'.' {
            seen_point = true;
        } else {
            digits = digits * 10 + u64::from(c.wrapping_sub(b'0'));
            exponent -= i32::from(seen_point);
        }
    }
    while digits % 10 == 0 {
        digits /= 10;
        exponent += 1;
    }
    // A tie: `v` is exactly halfway between `digits` and the next string of as
    // many digits (its exact decimal one digit longer, ending in 5), where zmij
    // took the even one.
    if digits % 2 == 0 {
        if let Some((exact, at)) = exact_decimal(v.abs()) {
            if exact % 10 == 5 && at + 1 == exponent && exact / 10 == digits {
                digits += 1;
            }
        }
    }
    while digits % 10 == 0 {
        digits /= 10;
        exponent += 1;
    }
    let mut text = [0u8; 20];
    let mut len = 0;
    let mut rest = digits;
    while rest > 0 {
        text[len] = b'0' + (rest % 10) as u8;
        rest /= 10;
        len += 1;
    }
    text[..len].reverse();
    let digits = &text[..len];
    let out = &mut out.0;
    // The value is 0.DIGITS x 10^point.
    let point = len as i32 + exponent;
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-point) as usize, b'0');
        out.extend_from_slice(digits);
    } else if (point as usize) < len {
        let (int, frac) = digits.split_at(point as usize);
        out.extend_from_slice(int);
        out.push(b'.');
        out.extend_from_slice(frac);
    } else {
        out.extend_from_slice(digits);
        out.resize(out.len() + (point as usize - len), b'0');
    }
}

/// `v` (positive, finite) as `digits x 10^exponent` exactly, `digits` not a
/// multiple of ten, when that takes at most ten digits (else `None`): only such a
/// value can lie halfway between two shortest strings of nine digits or fewer.
fn exact_decimal(v: f32) -> Option<(u64, i32)> {
    let bits = v.to_bits();
    let (raw_exp, fraction) = ((bits >> 23) as i32, bits & 0x7F_FFFF);
    let (mut m, mut e) = if raw_exp == 0 {
        (fraction, -149)
    } else {
        (fraction | 0x80_0000, raw_exp - 150)
    };
    let zeros = m.trailing_zeros() as i32;
    m >>= zeros;
    e += zeros;
    const TEN_DIGITS: u64 = 10_000_000_000;
    if e >= 0 {
        // The integer m * 2^e: each factor of five of m (m < 2^24: at most ten)
        // with a two of 2^e makes a trailing zero. What is left has over ten
        // digits past e = 40.
        let mut exponent = 0;
        while e > 0 && m % 5 == 0 {
            m /= 5;
            e -= 1;
            exponent += 1;
        }
        if e > 40 {
            return None;
        }
        let n = u64::from(m) << e;
        (n < TEN_DIGITS).then_some((n, exponent))
    } else {
        // m / 2^-e = m * 5^-e / 10^-e, m odd: no trailing zero, and 5^-e alone
        // has over ten digits past -e = 14.
        if -e > 14 {
            return None;
        }
        let n = u64::from(m) * 5u64.pow((-e) as u32);
        (n < TEN_DIGITS).then_some((n, e))
    }
}

/// The power of ten after zmij's `e`: an optional sign, then digits.
fn parse_exponent(text: &[u8]) -> i32 {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = digits
        .iter()
        .fold(0i32, |e, &c| e * 10 + i32::from(c.wrapping_sub(b'0')));
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// One open sequence, tuple, map or struct of a [`PrettyWriter`].
struct Members<'a> {
    w: &'a mut PrettyWriter,
    first: bool,
    /// Members on their own lines (a sequence, map or struct), not a tuple's.
    lined: bool,
}

/// The serializer's integer methods, each widening to 64 bits for
/// [`PrettyWriter::sint`] or [`PrettyWriter::uint`].
macro_rules! integers {
    ($($name:ident($ty:ty) => $how:ident,)*) => {$(
        fn $name(self, v: $ty) -> Written {
            self.$how(v.into());
            Ok(())
        }
    )*};
}

impl<'a> serde::Serializer for &'a mut PrettyWriter {
    type Ok = ();
    type Error = LeftToRon;
    type SerializeSeq = Members<'a>;
    type SerializeTuple = Members<'a>;
    type SerializeTupleStruct = Members<'a>;
    type SerializeTupleVariant = Members<'a>;
    type SerializeMap = Members<'a>;
    type SerializeStruct = Members<'a>;
    type SerializeStructVariant = Members<'a>;

    fn serialize_bool(self, v: bool) -> Written {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    integers! {
        serialize_i8(i8) => sint,
        serialize_i16(i16) => sint,
        serialize_i32(i32) => sint,
        serialize_i64(i64) => sint,
        serialize_u8(u8) => uint,
        serialize_u16(u16) => uint,
        serialize_u32(u32) => uint,
        serialize_u64(u64) => uint,
    }
    fn serialize_f32(self, v: f32) -> Written {
        if v == f32::MAX {
            // Every cluster file's coarsest level has no parent (`NO_PARENT_ERROR`).
            self.out.push_str(F32_MAX_TEXT);
            return Ok(());
        }
        self.float(
            v.into(),
            v.is_nan() && v.is_sign_negative(),
            Text::Single(v),
        )
    }
    fn serialize_f64(self, v: f64) -> Written {
        self.float(v, v.is_nan() && v.is_sign_negative(), Text::Double(v))
    }
    fn serialize_char(self, v: char) -> Written {
        self.out.push('\'');
        if v == '\\' || v == '\'' {
            self.out.push('\\');
        }
        self.out.push(v);
        self.out.push('\'');
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Written {
        self.out.push('"');
        let plain = |b: &u8| (0x20..0x7f).contains(b) && !matches!(b, b'"' | b'\'' | b'\\');
        if v.as_bytes().iter().all(plain) {
            self.out.push_str(v);
        } else {
            // ron escapes char by char (`char::escape_debug`, both quotes).
            self.out.extend(v.chars().flat_map(char::escape_debug));
        }
        self.out.push('"');
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Written {
        Err(LeftToRon)
    }
    fn serialize_none(self) -> Written {
        self.out.push_str("None");
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Written {
        self.wrapped("Some(", value)
    }
    fn serialize_unit(self) -> Written {
        self.out.push_str("()");
        Ok(())
    }
    fn serialize_unit_struct(self, name: &'static str) -> Written {
        check_identifier(name)?;
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, name: &'static str, _: u32, variant: &'static str) -> Written {
        self.variant(name, variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Written {
        check_identifier(name)?;
        self.wrapped("(", value)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Written {
        self.variant(name, variant)?;
        self.wrapped("(", value)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Members<'a>, LeftToRon> {
        Ok(self.open('[', len, true))
    }
    fn serialize_tuple(self, _: usize) -> Result<Members<'a>, LeftToRon> {
        Ok(self.open('(', None, false))
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Members<'a>, LeftToRon> {
        check_identifier(name)?;
        self.serialize_tuple(len)
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Members<'a>, LeftToRon> {
        self.variant(name, variant)?;
        self.serialize_tuple(len)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Members<'a>, LeftToRon> {
        Ok(self.open('{', len, true))
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Members<'a>, LeftToRon> {
        check_identifier(name)?;
        Ok(self.open('(', Some(len), true))
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Members<'a>, LeftToRon> {
        self.variant(name, variant)?;
        Ok(self.open('(', Some(len), true))
    }
}

impl Members<'_> {
    /// A sequence's element or a map's key: on its own indented line.
    fn line<T: ?Sized + Serialize>(&mut self, value: &T) -> Written {
        self.w.next_line(&mut self.first);
        self.w.write_indent();
        self.w.nested(value)
    }

    /// A tuple's element: after `, ` on the same line.
    fn inline<T: ?Sized + Serialize>(&mut self, value: &T) -> Written {
        if !std::mem::take(&mut self.first) {
            self.w.out.push_str(", ");
        }
        self.w.nested(value)
    }

    fn field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Written {
        self.w.next_line(&mut self.first);
        self.w.write_indent();
        self.w.identifier(key)?;
        self.w.out.push_str(": ");
        self.w.nested(value)
    }

    /// Closes the compound: for a sequence, map or struct (members on their own
    /// lines) the last member's `,` and new line, then the closing bracket at the
    /// opening line's indent; a tuple's bracket follows its last member.
    fn close(mut self, bracket: char) -> Written {
        if self.lined {
            if !self.first {
                self.w.next_line(&mut self.first);
            }
            self.w.end_indent();
        }
        self.w.out.push(bracket);
        Ok(())
    }
}

/// The serde member traits but the map's, each adding through one [`Members`]
/// method and closing with its bracket.
macro_rules! members {
    ($($trait:ident: $add:ident($($key:ident)?) => $how:ident, $bracket:literal;)*) => {$(
        impl serde::ser::$trait for Members<'_> {
            type Ok = ();
            type Error = LeftToRon;
            fn $add<T: ?Sized + Serialize>(
                &mut self,
                $($key: &'static str,)?
                value: &T,
            ) -> Written {
                self.$how($($key,)? value)
            }
            fn end(self) -> Written {
                self.close($bracket)
            }
        }
    )*};
}

members! {
    SerializeSeq: serialize_element() => line, ']';
    SerializeTuple: serialize_element() => inline, ')';
    SerializeTupleStruct: serialize_field() => inline, ')';
    SerializeTupleVariant: serialize_field() => inline, ')';
    SerializeStruct: serialize_field(key) => field, ')';
    SerializeStructVariant: serialize_field(key) => field, ')';
}

impl serde::ser::SerializeMap for Members<'_> {
    type Ok = ();
    type Error = LeftToRon;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Written {
        self.line(key)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Written {
        self.w.out.push_str(": ");
        self.w.nested(value)
    }
    fn end(self) -> Written {
        self.close('}')
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RecordIndex;

    /// ron's own pretty text, the reference [`manifest_text`] must equal.
    fn ron_pretty<T: Serialize>(value: &T) -> String {
        ron::ser::to_string_pretty(value, ron::ser::PrettyConfig::default()).unwrap()
    }

    #[derive(Serialize)]
    struct UnitStruct;

    #[derive(Serialize)]
    struct Newtype(String);

    #[derive(Serialize)]
    struct Pair(i16, char);

    #[derive(Serialize)]
    struct NoFields {}

    #[derive(Serialize)]
    enum Shape {
        Unit,
        New(f32),
        Tuple(u8, i64),
        Struct { a: Option<u32>, b: Vec<()> },
        Empty {},
    }

    #[derive(Serialize)]
    struct Everything {
        flag: bool,
        small: i8,
        big: u64,
        neg: i64,
        floats: Vec<f32>,
        doubles: Vec<f64>,
        text: Vec<String>,
        chars: Vec<char>,
        none: Option<u8>,
        some: Option<Option<f32>>,
        unit: (),
        unit_struct: UnitStruct,
        newtype: Newtype,
        pair: Pair,
        no_fields: NoFields,
        shapes: Vec<Shape>,
        map: std::collections::BTreeMap<String, Vec<u16>>,
        empty_map: std::collections::BTreeMap<u8, u8>,
        nested: Vec<Vec<[f32; 3]>>,
        empty_vec: Vec<u32>,
        record: RecordIndex,
        tuple: (u8, (String, bool), Vec<i8>),
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        _underscore: Vec<Vec<u8>>,
    }

    #[test]
    fn the_manifest_writer_writes_rons_pretty_text_byte_for_byte() {
        let value = Everything {
            flag: true,
            small: i8::MIN,
            big: u64::MAX,
            neg: i64::MIN,
            floats: vec![
                0.0,
                -0.0,
                1.0,
                -2.5,
                0.1,
                1e-40,
                f32::MIN_POSITIVE,
                f32::MAX,
                f32::MIN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                -f32::NAN,
                16_777_216.0,
                16_777_215.0,
                -8_388_607.0,
                1e7,
                -3.0,
                65_536.0,
                3.402_823_5e38,
            ],
            doubles: vec![
                f64::MAX,
                1e300,
                -1e-300,
                f64::NAN,
                -0.0,
                16_777_215.0,
                16_777_216.0,
                9_007_199_254_740_993.0,
                // Around 2^52, where the integral test changes method.
                4_503_599_627_370_495.5,
                -4_503_599_627_370_495.5,
                4_503_599_627_370_496.0,
                4_503_599_627_370_497.0,
                -4_503_599_627_370_496.0,
                9.5e15,
                123_456.75,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN_POSITIVE,
            ],
            text: [
                "plain",
                "",
                "quote\"s",
                "back\\slash",
                "apostrophe's",
                "tab\tnew\nline\r",
                "unicode é ✓ 🎉",
                "e\u{301} combining",
                "\u{7f}\u{0}\u{1b}",
                "{[(,:)]} #r\"x\"#",
            ]
            .map(String::from)
            .to_vec(),
            chars: vec!['a', '\'', '\\', '"', '\n', 'é', '\u{301}', '🎉'],
            none: None,
            some: Some(Some(f32::EPSILON)),
            unit: (),
            unit_struct: UnitStruct,
            newtype: Newtype("n".into()),
            pair: Pair(-7, 'x'),
            no_fields: NoFields {},
            shapes: vec![
                Shape::Unit,
                Shape::New(0.5),
                Shape::Tuple(9, -9),
                Shape::Struct {
                    a: Some(3),
                    b: vec![(), ()],
                },
                Shape::Struct { a: None, b: vec![] },
                Shape::Empty {},
            ],
            map: [("k".to_string(), vec![1, 2]), ("".to_string(), vec![])]
                .into_iter()
                .collect(),
            empty_map: Default::default(),
            nested: vec![vec![], vec![[1.0, 2.0, 3.0]], vec![[0.0; 3], [-1.5; 3]]],
            empty_vec: vec![],
            record: RecordIndex(42),
            tuple: (1, ("t".into(), false), vec![-1, 0, 1]),
            skipped: None,
            _underscore: vec![vec![0], vec![]],
        };
        let text = pretty_text(&value).expect("written without ron");
        assert_eq!(text, ron_pretty(&value));
        // Bit patterns across the whole range, both widths.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let floats: Vec<(f32, f64, u32, i64)> = (0..4000)
            .map(|_| {
                let r = next();
                (
                    f32::from_bits(r as u32),
                    f64::from_bits(r),
                    (r >> 40) as u32,
                    r as i64,
                )
            })
            .collect();
        assert_eq!(pretty_text(&floats).unwrap(), ron_pretty(&floats));
        // Integral values around the integer fast path's bound, both widths.
        let integral: Vec<(f32, f64)> = (-3000..3000)
            .map(|i: i32| i * 5591)
            .chain((16_777_200..16_777_230).flat_map(|i: i32| [i, -i]))
            .map(|i| (i as f32, i as f64))
            .collect();
        assert_eq!(pretty_text(&integral).unwrap(), ron_pretty(&integral));
        // A real manifest.
        let manifest = crate::ClusterMeshManifest {
            name: "mesh".into(),
            bounds_min: [-1.0, 0.0, 0.25],
            bounds_max: [1.0, 2.0, 3.5],
            materials: vec!["a".into(), "b".into()],
            instances: vec![[1.0; 16]],
            error_bounds: Some([0.0, 1.0, 2.0, 3.0]),
            material_table: material_table(),
            ..Default::default()
        };
        assert_eq!(pretty_text(&manifest).unwrap(), ron_pretty(&manifest));
    }

    /// A material table using every kind of value it holds (options, enums,
    /// newtype variants, nested structs).
    fn material_table() -> crate::MaterialTable {
        let mut m = crate::Material::named("a");
        m.base_color_texture = Some(crate::TextureSlot {
            texture: 0,
            texcoord: 1,
            transform: Some(crate::UvTransform::IDENTITY),
        });
        m.alpha_mode = crate::AlphaMode::Mask;
        m.extras.ior = Some(1.5);
        m.extras.specular_color = Some([1.0, 0.5, 0.25]);
        let texture = crate::Texture {
            name: "t".into(),
            format: crate::ImageFormat::Png,
            width: 2,
            height: 2,
            data: crate::TextureData::Embedded(crate::RecordIndex(3)),
            mips: vec![crate::TextureData::File("x.png".into())],
            wrap_u: crate::Wrap::ClampToEdge,
            wrap_v: crate::Wrap::Repeat,
        };
        crate::MaterialTable {
            materials: vec![m, crate::Material::named("b")],
            textures: vec![texture],
        }
    }

    /// Serialises as a byte string.
    struct Bytes;

    impl Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(b"raw\x00")
        }
    }

    #[derive(Serialize)]
    struct Reserved {
        #[serde(rename = "inf")]
        inf: u8,
    }

    #[derive(Serialize)]
    struct NotAscii {
        #[serde(rename = "größe")]
        size: u8,
    }

    #[derive(Serialize)]
    struct Deep(Option<Box<Deep>>);

    #[test]
    fn what_the_manifest_writer_leaves_to_ron_is_written_by_ron() {
        // Two levels each (newtype, Some): 80 past the writer's 64, under ron's 128.
        let deep = (0..40).fold(Deep(None), |d, _| Deep(Some(Box::new(d))));
        let too_deep = (0..100).fold(Deep(None), |d, _| Deep(Some(Box::new(d))));
        assert!(pretty_text(&(Bytes, 1u8)).is_none());
        assert!(pretty_text(&Reserved { inf: 1 }).is_none());
        assert!(pretty_text(&NotAscii { size: 1 }).is_none());
        assert!(pretty_text(&deep).is_none());
        assert!(pretty_text(&1u128).is_none());
        assert_eq!(
            manifest_text(&(Bytes, 1u8)).unwrap(),
            ron_pretty(&(Bytes, 1u8))
        );
        assert_eq!(
            manifest_text(&Reserved { inf: 1 }).unwrap(),
            ron_pretty(&Reserved { inf: 1 })
        );
        assert_eq!(
            manifest_text(&NotAscii { size: 1 }).unwrap(),
            ron_pretty(&NotAscii { size: 1 })
        );
        assert_eq!(manifest_text(&deep).unwrap(), ron_pretty(&deep));
        // Past ron's recursion limit: ron's error, as before.
        assert!(matches!(
            manifest_text(&too_deep),
            Err(FormatError::ManifestWrite { .. })
        ));
    }

    fn f32_text(v: f32) -> String {
        let mut out = Out(Vec::new());
        display_f32(v, &mut out);
        String::from_utf8(out.0).unwrap()
    }

    /// `display_f32` against `{}`: every finite bit pattern of `f32` from `start`
    /// in steps of `step`.
    fn check_display_f32(start: u32, step: u32) {
        let mut bits = start as u64;
        let mut texts = (String::new(), String::new());
        while bits <= u32::MAX as u64 {
            assert_text_is_std(bits as u32, &mut texts);
            bits += step as u64;
        }
    }

    /// `f32_text` of the finite `f32` with these bits is `{}`'s (`texts`: reused
    /// buffers, ours and the standard library's).
    fn assert_text_is_std(bits: u32, (ours, std): &mut (String, String)) {
        let v = f32::from_bits(bits);
        if v.is_finite() {
            ours.clear();
            std.clear();
            ours.push_str(&f32_text(v));
            use std::fmt::Write as _;
            write!(std, "{v}").unwrap();
            assert_eq!(ours, std, "bits {bits:#010x}");
        }
    }

    /// The manifest's `f32` text without `fmt` is `{}`'s: random bit patterns
    /// (every exponent, subnormals, both signs), values around every power of
    /// ten (where the layout changes) and short decimals.
    #[test]
    fn f32_text_is_the_standard_librarys() {
        use rand::{Rng, SeedableRng};
        check_display_f32(0, 65_521);
        check_display_f32(12_345, 1_000_003);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5EED_F32D);
        let mut out = String::new();
        let mut std = String::new();
        let mut check = |v: f32| {
            if !v.is_finite() {
                return;
            }
            out.clear();
            std.clear();
            out.push_str(&f32_text(v));
            use std::fmt::Write as _;
            write!(std, "{v}").unwrap();
            assert_eq!(out, std, "bits {:#010x}", v.to_bits());
        };
        for _ in 0..200_000 {
            check(f32::from_bits(rng.random()));
        }
        for e in -45..=38 {
            let p = 10f64.powi(e) as f32;
            for k in -3i32..=3 {
                let near = f32::from_bits((p.to_bits() as i32 + k) as u32);
                check(near);
                check(-near);
            }
        }
        for n in 0..100_000u32 {
            check(n as f32 / 1000.0);
            check(n as f32 * 0.1);
            check(rng.random::<f32>() * 10f32.powi(rng.random_range(-12..12)));
        }
        check(f32::MIN_POSITIVE);
        check(f32::from_bits(1));
        check(f32::MAX);
        check(f32::MIN);
        check(-0.0);
        check(0.0);
    }

    /// [`f32_text_is_the_standard_librarys`] on every finite `f32` (minutes:
    /// `cargo test --release -p farsight-format every_f32 -- --ignored`).
    #[test]
    #[ignore]
    fn every_f32_text_is_the_standard_librarys() {
        use rayon::prelude::*;
        (0u32..256).into_par_iter().for_each(|high| {
            let start = high << 24;
            let mut bits = start;
            let mut texts = (String::new(), String::new());
            loop {
                assert_text_is_std(bits, &mut texts);
                if bits == start | 0x00FF_FFFF {
                    break;
                }
                bits += 1;
            }
        });
    }
}
