//! Sizes and durations as kernel people write them: `10G`, `512K`, `2M`, `4096`;
//! `500ms`, `10s`, `2min`, `1us`. Binary multiples (a "G" is 2^30, as in the
//! seeds' `SIZE in MB`), nanoseconds for time.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

pub const PAGE_SIZE: u64 = 4096;
pub const PAGE_SHIFT: u32 = 12;
pub const HPAGE_PMD_ORDER: u32 = 9;
pub const HPAGE_PMD_NR: u64 = 1 << HPAGE_PMD_ORDER;
pub const HPAGE_PMD_SIZE: u64 = PAGE_SIZE << HPAGE_PMD_ORDER;

/// A byte count. Deserialises from an integer or a string with a binary suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(pub u64);

/// A duration in nanoseconds. Deserialises from a string with a unit, or an integer of ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub u64);

pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty size".into());
    }
    if t.starts_with('-') {
        return Err(format!("negative size `{s}`"));
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (num, suf) = t.split_at(split);
    let num = num.replace('_', "");
    let mult: u64 = match suf.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pages" | "page" => PAGE_SIZE,
        other => return Err(format!("unknown size suffix `{other}` in `{s}` (use K, M, G, T or p for 4 KiB pages)")),
    };
    if num.contains('.') {
        let v: f64 = num.parse().map_err(|_| format!("bad size `{s}`"))?;
        let b = v * mult as f64;
        if !(b.is_finite()) || b > u64::MAX as f64 / 2.0 {
            return Err(format!("size `{s}` too large"));
        }
        if b.fract() != 0.0 {
            return Err(format!("size `{s}` is not a whole number of bytes"));
        }
        return Ok(b as u64);
    }
    let v: u64 = num.parse().map_err(|_| {
        if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) {
            format!("size `{s}` too large")
        } else {
            format!("bad size `{s}`")
        }
    })?;
    v.checked_mul(mult).ok_or_else(|| format!("size `{s}` too large"))
}

pub fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("negative duration `{s}`"));
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (num, suf) = t.split_at(split);
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(format!("bad duration `{s}`"));
    }
    let mult: f64 = match suf.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "" => 1e9,
        "min" | "m" => 60e9,
        "h" => 3600e9,
        other => return Err(format!("unknown duration unit `{other}` in `{s}` (use ns, us, ms, s, min, h)")),
    };
    let v: f64 = num.parse().map_err(|_| format!("bad duration `{s}`"))?;
    let ns = v * mult;
    if !ns.is_finite() || ns > 1e19 {
        return Err(format!("duration `{s}` too large"));
    }
    Ok(ns.round() as u64)
}

pub fn fmt_size(b: u64) -> String {
    const U: [(u64, &str); 4] = [(1 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (m, s) in U {
        if b >= m && b.is_multiple_of(m) {
            return format!("{}{}", b / m, s);
        }
    }
    format!("{b}")
}

pub fn fmt_duration(ns: u64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    for (m, s) in
        [(3_600_000_000_000u64, "h"), (60_000_000_000, "min"), (1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
    {
        if ns.is_multiple_of(m) {
            return format!("{}{}", ns / m, s);
        }
    }
    format!("{ns}ns")
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&fmt_size(self.0))
    }
}
impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&fmt_duration(self.0))
    }
}

struct SizeVisitor;
impl<'de> de::Visitor<'de> for SizeVisitor {
    type Value = Size;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a size: a non-negative integer of bytes or a string such as \"2M\" or \"10G\"")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
        Ok(Size(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
        if v < 0 {
            Err(E::custom(format!("negative size {v}")))
        } else {
            Ok(Size(v as u64))
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Size, E> {
        if v < 0.0 {
            Err(E::custom(format!("negative size {v}")))
        } else if v.fract() != 0.0 || !v.is_finite() || v > 9.0e18 {
            Err(E::custom(format!("size {v} is not a whole number of bytes")))
        } else {
            Ok(Size(v as u64))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
        parse_size(v).map(Size).map_err(E::custom)
    }
}
impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SizeVisitor)
    }
}

struct DurVisitor;
impl<'de> de::Visitor<'de> for DurVisitor {
    type Value = Duration;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration: a string such as \"500ms\" or \"10s\", or an integer of nanoseconds")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        Ok(Duration(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        if v < 0 {
            Err(E::custom(format!("negative duration {v}")))
        } else {
            Ok(Duration(v as u64))
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
        if v < 0.0 || !v.is_finite() {
            Err(E::custom(format!("bad duration {v}")))
        } else {
            Ok(Duration(v.round() as u64))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        parse_duration(v).map(Duration).map_err(E::custom)
    }
}
impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DurVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes() {
        assert_eq!(parse_size("10G").unwrap(), 10 << 30);
        assert_eq!(parse_size("512K").unwrap(), 512 << 10);
        assert_eq!(parse_size("128MB").unwrap(), 128 << 20);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("3p").unwrap(), 3 * 4096);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("1X").is_err());
        assert!(parse_size("99999999999999999999T").is_err());
        assert_eq!(fmt_size(10 << 30), "10G");
        assert_eq!(fmt_size(4097), "4097");
    }
    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration("10s").unwrap(), 10_000_000_000);
        assert_eq!(parse_duration("2min").unwrap(), 120_000_000_000);
        assert_eq!(parse_duration("1.5us").unwrap(), 1500);
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("3 parsecs").is_err());
        assert_eq!(fmt_duration(1_500_000_000), "1500ms");
    }
}
