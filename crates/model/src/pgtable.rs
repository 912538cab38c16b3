//! Page tables. Each mapped 2 MiB range of an mm has a "slot": the PMD entry and,
//! when it points to a PTE table, the 512 PTEs (u32 each). Every slot owns one real
//! page-table page frame (the PTE page, or the table deposited under a huge PMD by
//! pgtable_trans_huge_deposit), so PageTables memory and its fragmentation are real.
//!
//! PTE encoding (u32): bits 29..31 kind, bits 0..28 payload.
//!   NONE 0 | PRESENT (pfn) | ZERO (the shared zero page) | SWAP (global swap slot) | MIGRATION (pfn)

use crate::consts::*;
pub const PTE_NONE: u32 = 0;
pub const K_PRESENT: u32 = 1;
pub const K_ZERO: u32 = 2;
pub const K_SWAP: u32 = 3;
pub const K_MIGRATION: u32 = 4;
const KIND_SHIFT: u32 = 29;
const PAYLOAD: u32 = (1 << KIND_SHIFT) - 1;

#[inline]
pub fn pte_kind(p: u32) -> u32 {
    p >> KIND_SHIFT
}
#[inline]
pub fn pte_payload(p: u32) -> u32 {
    p & PAYLOAD
}
#[inline]
pub fn mk_pte(kind: u32, payload: u32) -> u32 {
    debug_assert!(payload <= PAYLOAD);
    (kind << KIND_SHIFT) | payload
}
pub const PTE_ZERO: u32 = K_ZERO << KIND_SHIFT;

#[derive(Clone, Debug)]
pub enum Pmd {
    /// A huge mapping of a THP (head pfn).
    Huge(u32),
    /// The huge zero page, read-only.
    HugeZero,
    /// A PTE table.
    Table(Box<[u32; PTRS_PER_PTE]>),
    /// seed 003: one swap entry for a whole swapped-out THP (first of 512 swap slots).
    SwapPmd(u32),
}

#[derive(Clone, Debug)]
pub struct Slot {
    pub mm: crate::mm_types::MmId,
    /// virtual address >> PMD_SHIFT
    pub index: u64,
    pub pmd: Pmd,
    /// the page-table page frame this slot owns
    pub table_pfn: u32,
}

#[derive(Clone, Default)]
pub struct SlotTable {
    pub slots: Vec<Option<Slot>>,
    free: Vec<u32>,
    pub live: u64,
}

impl SlotTable {
    pub fn insert(&mut self, s: Slot) -> u32 {
        self.live += 1;
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = Some(s);
            id
        } else {
            self.slots.push(Some(s));
            (self.slots.len() - 1) as u32
        }
    }
    pub fn remove(&mut self, id: u32) -> Slot {
        self.live -= 1;
        self.free.push(id);
        self.slots[id as usize].take().expect("live slot")
    }
    #[inline]
    pub fn get(&self, id: u32) -> &Slot {
        self.slots[id as usize].as_ref().expect("live slot")
    }
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Slot {
        self.slots[id as usize].as_mut().expect("live slot")
    }
    pub fn heap_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Option<Slot>>()
            + self.slots.iter().flatten().filter(|s| matches!(s.pmd, Pmd::Table(_))).count() * 2048
    }
}
