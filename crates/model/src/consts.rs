//! The one home of the model's size and order constants, under the kernel's names
//! (x86-64, 4 KiB pages): arch/x86/include/asm/page_types.h (PAGE_*),
//! pgtable_64_types.h (PMD_*, PTRS_PER_PTE), include/linux/huge_mm.h (HPAGE_PMD_*),
//! include/linux/mmzone.h (MAX_PAGE_ORDER, NR_PAGE_ORDERS, PAGE_ALLOC_COSTLY_ORDER) and
//! include/linux/pageblock-flags.h (pageblock_order, pageblock_nr_pages).
//! No other file writes 4096, 512, 511, 21 or 9 for these meanings.

/// PAGE_SHIFT: a base page is 4 KiB.
pub const PAGE_SHIFT: u32 = 12;
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
/// PAGE_MASK: clears the offset within a page.
pub const PAGE_MASK: u64 = !(PAGE_SIZE - 1);

/// PMD_SHIFT: one PMD entry maps 2 MiB.
pub const PMD_SHIFT: u32 = 21;
pub const PMD_SIZE: u64 = 1 << PMD_SHIFT;
pub const PMD_MASK: u64 = !(PMD_SIZE - 1);
/// PTRS_PER_PTE: entries of a PTE table (one page-table page).
pub const PTRS_PER_PTE: usize = 1 << (PMD_SHIFT - PAGE_SHIFT);

/// HPAGE_PMD_ORDER / HPAGE_PMD_NR / HPAGE_PMD_SIZE: a PMD-mapped THP.
pub const HPAGE_PMD_ORDER: u32 = PMD_SHIFT - PAGE_SHIFT;
pub const HPAGE_PMD_NR: u64 = 1 << HPAGE_PMD_ORDER;
pub const HPAGE_PMD_SIZE: u64 = PMD_SIZE;
pub const HPAGE_PMD_MASK: u64 = PMD_MASK;

/// MAX_PAGE_ORDER: the buddy allocator's largest block (4 MiB).
pub const MAX_PAGE_ORDER: u32 = 10;
pub const NR_PAGE_ORDERS: usize = MAX_PAGE_ORDER as usize + 1;
/// pageblock_order (= HPAGE_PMD_ORDER on x86-64 with THP) and pageblock_nr_pages.
pub const PAGEBLOCK_ORDER: u32 = HPAGE_PMD_ORDER;
pub const PAGEBLOCK_NR_PAGES: u64 = 1 << PAGEBLOCK_ORDER;
/// PAGE_ALLOC_COSTLY_ORDER
pub const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;

/// The khugepaged/max_ptes_none value that means "any number of none PTEs"
/// (HPAGE_PMD_NR - 1, the default; thp_underused() never fires at it).
pub const MAX_PTES_NONE_ANY: u32 = HPAGE_PMD_NR as u32 - 1;

/// The first pfn of the PMD-sized (pageblock-sized) aligned block holding `pfn`:
/// the head of the PMD THP a tail page belongs to.
#[inline]
pub const fn hpage_pfn_align(pfn: u64) -> u64 {
    pfn & !(HPAGE_PMD_NR - 1)
}

/// pte_index(): the PTE slot of `addr` within its PTE table.
#[inline]
pub const fn pte_index(addr: u64) -> usize {
    ((addr >> PAGE_SHIFT) as usize) & (PTRS_PER_PTE - 1)
}

/// The address of PTE slot `i` of the PTE table of PMD range `pmd` (the inverse of pmd_nr
/// and pte_index).
#[inline]
pub const fn pte_addr(pmd: u64, i: u64) -> u64 {
    (pmd << PMD_SHIFT) + (i << PAGE_SHIFT)
}

/// The model's PMD number of an address (addr >> PMD_SHIFT): which 2 MiB range.
#[inline]
pub const fn pmd_nr(addr: u64) -> u64 {
    addr >> PMD_SHIFT
}
