//! What a 4 KiB page holds, in 16 bits: a compressibility class and where the first
//! non-zero byte is. Nothing is stored per byte. This is what the zero check
//! (memchr_inv), zram (page_same_filled, compression) and the swap zeromap
//! (is_folio_zero_filled) need, and what lets tests prove no data is ever dropped.
//!
//! ```text
//!  bits 13..15 class: 0 ZERO, 1 SAME (one repeated byte, zram same-filled),
//!                     2 SPARSE (mostly zero or constant runs: compresses to tens of bytes),
//!                     3 TEXT (compressible ~3:1), 4 RANDOM (incompressible)
//!  bits 0..11  first non-zero byte offset (for SAME: the repeated byte value)
//! ```
//! The abstraction is conservative: a partial write of zeros never makes the model
//! believe a page is all zero unless the write covers the whole page, so the model can
//! only ever over-estimate what must be kept.

use crate::consts::*;
use thplab_workload::workload::{DataKind, WriteData};

pub type Content = u16;

pub const ZERO: u16 = 0;
pub const SAME: u16 = 1;
pub const SPARSE: u16 = 2;
pub const TEXT: u16 = 3;
pub const RANDOM: u16 = 4;

pub const CLASS_NAMES: [&str; 5] = ["zero", "same", "sparse", "text", "random"];

#[inline]
pub fn class(c: Content) -> u16 {
    c >> 13
}
#[inline]
pub fn make(class: u16, low: u16) -> Content {
    (class << 13) | (low & 0xfff)
}
#[inline]
pub fn is_zero(c: Content) -> bool {
    class(c) == ZERO
}
/// zram's page_same_filled(): the page is one repeated word (zero or not).
#[inline]
pub fn is_same_filled(c: Content) -> bool {
    matches!(class(c), ZERO | SAME)
}
/// Offset of the first non-zero byte, None for an all-zero page.
#[inline]
pub fn first_nonzero(c: Content) -> Option<u16> {
    match class(c) {
        ZERO => None,
        SAME => Some(0),
        _ => Some(c & 0xfff),
    }
}
/// Bytes memchr_inv(page, 0, PAGE_SIZE) reads before it returns.
#[inline]
pub fn memchr_inv_bytes(c: Content) -> u64 {
    match first_nonzero(c) {
        None => PAGE_SIZE,
        Some(o) => (o as u64 / 8 + 1) * 8,
    }
}

/// Bytes is_folio_zero_filled() (mm/page_io.c, 6.18) reads of one page before it returns:
/// it reads the page's last word first ("in case the page is zero-filled at the start and
/// has non-zero data at the end"), then the words from the first. A page whose first
/// non-zero byte lies in the last word returns after 8 bytes; else the last word is taken
/// as zero (the content does not record it: the longer walk, as zram.rs same_check_ns
/// assumes) and the walk reads up to the first non-zero word; an all-zero page is read whole.
#[inline]
pub fn zero_filled_bytes(c: Content) -> u64 {
    match first_nonzero(c) {
        None => PAGE_SIZE,
        Some(o) if o as u64 >= PAGE_SIZE - 8 => 8,
        Some(o) => 8 + (o as u64 / 8 + 1) * 8,
    }
}

/// The content after writing `bytes` bytes of `data` at `byte` within the page.
pub fn apply_write(old: Content, byte: u32, bytes: u32, data: &WriteData) -> Content {
    debug_assert!(bytes >= 1 && byte as u64 + bytes as u64 <= PAGE_SIZE);
    let whole = byte == 0 && bytes as u64 == PAGE_SIZE;
    let oc = class(old);
    let first = |o: Content| -> u16 {
        match first_nonzero(o) {
            None => byte as u16,
            Some(f) => f.min(byte as u16),
        }
    };
    match data {
        WriteData::Byte(0) => {
            if whole {
                make(ZERO, 0)
            } else if oc == SAME {
                // a hole of zeros in a constant page: compresses well; first non-zero moves
                // past the hole only when the hole starts the page.
                let f = if byte == 0 { bytes as u16 } else { 0 };
                make(SPARSE, f)
            } else {
                old
            }
        }
        WriteData::Byte(v) => {
            if whole {
                make(SAME, *v as u16)
            } else if oc == SAME && (old & 0xfff) == *v as u16 {
                old
            } else {
                make(oc.max(SPARSE), first(old))
            }
        }
        WriteData::Kind(DataKind::Text) => make(oc.max(TEXT), first(old)),
        WriteData::Kind(DataKind::Random) => {
            let cl = if bytes >= 2048 { RANDOM } else { TEXT };
            make(oc.max(cl), first(old))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn writes() {
        let z = make(ZERO, 0);
        assert!(is_zero(z));
        assert_eq!(memchr_inv_bytes(z), 4096);
        let c = apply_write(z, 4095, 1, &WriteData::Byte(0xff));
        assert_eq!(class(c), SPARSE);
        assert_eq!(first_nonzero(c), Some(4095));
        assert_eq!(memchr_inv_bytes(c), 4096);
        assert_eq!(zero_filled_bytes(c), 8, "is_folio_zero_filled reads the last word first");
        assert_eq!(zero_filled_bytes(z), 4096);
        let c = apply_write(z, 0, 1, &WriteData::Byte(0xff));
        assert_eq!(memchr_inv_bytes(c), 8);
        assert_eq!(zero_filled_bytes(c), 16);
        let s = apply_write(z, 0, 4096, &WriteData::Byte(7));
        assert!(is_same_filled(s) && !is_zero(s));
        assert_eq!(apply_write(s, 10, 5, &WriteData::Byte(7)), s);
        assert_eq!(class(apply_write(s, 10, 5, &WriteData::Byte(9))), SPARSE);
        assert!(is_zero(apply_write(s, 0, 4096, &WriteData::Byte(0))));
        // a partial zero write never makes a non-zero page zero
        let c = apply_write(z, 100, 1, &WriteData::Byte(1));
        assert_eq!(apply_write(c, 100, 1, &WriteData::Byte(0)), c);
        let r = apply_write(c, 0, 4096, &WriteData::Kind(DataKind::Random));
        assert_eq!(class(r), RANDOM);
        assert_eq!(first_nonzero(r), Some(0));
    }
}
