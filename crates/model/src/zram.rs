//! zram (drivers/block/zram/zram_drv.c): a compressed RAM block device, page by page.
//! zram_write_page(): a same-filled page (page_same_filled: one repeated word, zero or
//! not) is stored as its value (ZRAM_SAME, same_pages, no zsmalloc object, no
//! compression); other pages are compressed at the cost profile's per-class time and
//! ratio, and a page that does not compress below huge_class_size is stored raw
//! (ZRAM_HUGE, huge_pages). The zsmalloc pool is real memory: it holds
//! ceil(object bytes / 4096) frames taken from the buddy allocator (objects rounded up
//! to zsmalloc's 16-byte size classes, at least 32 bytes), so zram's memory counts
//! against RAM; the frames are kernel pages (KernelOther) that compaction cannot move.
//! mm_stat: orig_data_size compr_data_size mem_used_total mem_limit mem_used_max
//! same_pages pages_compacted huge_pages huge_pages_since.

use crate::consts::*;
use crate::content::{self, Content};
use crate::kernel::Kernel;
use crate::mm_types::*;
use crate::page_alloc::*;
use crate::vmstat::NodeStat;
use serde_json::{json, Value};
use thplab_workload::costs::CompressorCosts;

/// zsmalloc's huge class: objects at least this big are stored as whole pages.
pub const HUGE_CLASS_SIZE: u64 = 3264;

#[derive(Clone)]
pub struct Zram {
    pub alg: String,
    pub c: CompressorCosts,
    /// pages stored (same-filled included)
    pub pages_stored: u64,
    pub compr_bytes: u64,
    /// zsmalloc object bytes (class-rounded)
    pub pool_bytes: u64,
    pub same_pages: u64,
    pub huge_pages: u64,
    pub huge_pages_since: u64,
    pub mem_used_max: u64,
    /// the pool's frames
    pub frames: Vec<u32>,
    /// per slot: does zram hold a page for it (the table entry's allocated state), a bitmap
    stored: Vec<u64>,
}

impl Zram {
    pub fn new(alg: String, c: CompressorCosts, nslots: usize) -> Zram {
        Zram {
            alg,
            c,
            pages_stored: 0,
            compr_bytes: 0,
            pool_bytes: 0,
            same_pages: 0,
            huge_pages: 0,
            huge_pages_since: 0,
            mem_used_max: 0,
            frames: vec![],
            stored: vec![0; nslots.div_ceil(64)],
        }
    }

    fn is_stored(&self, idx: u32) -> bool {
        self.stored[idx as usize / 64] & (1 << (idx % 64)) != 0
    }
    fn set_stored(&mut self, idx: u32, on: bool) {
        let w = &mut self.stored[idx as usize / 64];
        if on {
            *w |= 1 << (idx % 64);
        } else {
            *w &= !(1 << (idx % 64));
        }
    }

    /// zram_write_page() into slot `idx`: what the slot held before (`old`) is freed first
    /// (zram_slot_free). Returns the CPU time the store took.
    pub fn write_slot(&mut self, idx: u32, old: Content, c: Content) -> u64 {
        let freed = self.free_slot(idx, old);
        self.set_stored(idx, true);
        freed + self.write(c)
    }

    /// zram_slot_free_notify(): free what slot `idx` holds (`c`), if zram holds anything.
    /// Returns the CPU time the free took (slot_free_ns, and zs_free of the object: the
    /// class's free_ns; a same-filled page has no object).
    pub fn free_slot(&mut self, idx: u32, c: Content) -> u64 {
        if self.is_stored(idx) {
            self.set_stored(idx, false);
            self.free(c)
        } else {
            0
        }
    }

    /// zram_slot_free_notify() for a slot the swap layer frees (swap_range_free calls it for
    /// every slot of a SWP_BLKDEV device): the stored page's free, or for a slot zram holds
    /// nothing for (a zeromap page never reached it) zram_free_page()'s flag clears on the
    /// empty entry under the slot lock, charged as a same-filled slot's free (slot_free_ns).
    pub fn notify_free(&mut self, idx: u32, c: Content) -> u64 {
        if self.is_stored(idx) {
            self.free_slot(idx, c)
        } else {
            self.c.slot_free_ns
        }
    }

    /// Compressed length of a page (the compressor's per-class ratio).
    pub fn comp_len(&self, c: Content) -> u64 {
        match content::class(c) {
            content::SPARSE => self.c.sparse_bytes,
            content::TEXT => self.c.text_bytes,
            _ => self.c.random_bytes,
        }
    }
    /// (stored length, zsmalloc object bytes, huge)
    fn object(&self, c: Content) -> (u64, u64, bool) {
        let len = self.comp_len(c);
        if len >= HUGE_CLASS_SIZE {
            (PAGE_SIZE, PAGE_SIZE, true)
        } else {
            (len, len.max(32).next_multiple_of(16), false)
        }
    }

    /// zram_write_page(): store one page; returns the CPU time it took.
    fn write(&mut self, c: Content) -> u64 {
        self.pages_stored += 1;
        if content::is_same_filled(c) {
            self.same_pages += 1;
            return self.c.same_ns;
        }
        let (len, obj, huge) = self.object(c);
        self.compr_bytes += len;
        self.pool_bytes += obj;
        if huge {
            self.huge_pages += 1;
            self.huge_pages_since += 1;
        }
        // page_same_filled() reads the page first (and gives up at the first word that
        // differs), then the compressor runs
        self.same_check_ns(c)
            + match content::class(c) {
                content::SPARSE => self.c.sparse_compress_ns,
                content::TEXT => self.c.text_compress_ns,
                _ => self.c.random_compress_ns,
            }
    }

    /// page_same_filled() of a page that is not same-filled: it compares the first word
    /// with the last and returns at once when they differ (text, random data, a page whose
    /// last word was written: 16 bytes read); else it walks the words from the second until
    /// one differs from the first, which for a page whose first 8 bytes are zero is the
    /// word of its first non-zero byte (when the last word is zero too, which the content
    /// does not record: the model assumes it, the longer walk). same_ns is the walk of the
    /// whole page (a same-filled page); this is its share for the bytes read.
    fn same_check_ns(&self, c: Content) -> u64 {
        let bytes = match content::first_nonzero(c) {
            Some(f) if f >= 8 && (f as u64) < PAGE_SIZE - 8 => (f as u64 / 8 + 1) * 8 + 8,
            _ => 16,
        };
        self.c.same_ns * bytes / PAGE_SIZE
    }

    /// Object bytes a write of `c` would add to the pool.
    pub fn pool_bytes_for(&self, c: Content) -> u64 {
        if content::is_same_filled(c) {
            0
        } else {
            self.object(c).1
        }
    }

    /// zram_read_page(): the CPU time to bring one page back. A same-filled slot is a fill
    /// of the page with its value (read_same_filled_page: zram_fill_page), `fill_ns`
    /// (clear_4k_ns), not same_ns (page_same_filled's compare of a cold page at the write).
    pub fn read_ns(&self, c: Content, fill_ns: u64) -> u64 {
        if content::is_same_filled(c) {
            return fill_ns;
        }
        match content::class(c) {
            content::SPARSE => self.c.sparse_decompress_ns,
            content::TEXT => self.c.text_decompress_ns,
            _ => self.c.random_decompress_ns,
        }
    }

    /// zram_free_page() (swap slot free notify): every stored slot pays slot_free_ns, an
    /// object also its class's zs_free.
    fn free(&mut self, c: Content) -> u64 {
        self.pages_stored -= 1;
        if content::is_same_filled(c) {
            self.same_pages -= 1;
            return self.c.slot_free_ns;
        }
        let (len, obj, huge) = self.object(c);
        self.compr_bytes -= len;
        self.pool_bytes -= obj;
        if huge {
            self.huge_pages -= 1;
        }
        self.c.slot_free_ns
            + match content::class(c) {
                content::SPARSE => self.c.sparse_free_ns,
                content::TEXT => self.c.text_free_ns,
                _ => self.c.random_free_ns,
            }
    }

    pub fn mm_stat(&self) -> Value {
        let used = self.frames.len() as u64 * PAGE_SIZE;
        let v = [
            self.pages_stored * PAGE_SIZE,
            self.compr_bytes,
            used,
            0,
            self.mem_used_max,
            self.same_pages,
            0,
            self.huge_pages,
            self.huge_pages_since,
        ];
        let raw = v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ");
        json!({
            "orig_data_size": v[0], "compr_data_size": v[1], "mem_used_total": v[2], "mem_limit": v[3], "mem_used_max": v[4],
            "same_pages": v[5], "pages_compacted": v[6], "huge_pages": v[7], "huge_pages_since": v[8], "raw": raw,
        })
    }
}

impl Kernel {
    /// Grow the zsmalloc pool of device `di` so it holds `extra` more object bytes.
    /// zs_malloc allocates from reclaim context (PF_MEMALLOC): no watermarks, no reclaim.
    /// Returns false when memory is exhausted (the write then fails).
    pub fn zram_pool_reserve(&mut self, di: usize, extra: u64) -> bool {
        let (need, have) = {
            let z = self.swap.devs[di].zram.as_ref().expect("zram");
            ((z.pool_bytes + extra).div_ceil(PAGE_SIZE), z.frames.len() as u64)
        };
        for _ in have..need {
            let zl = self.pm.zonelist(0, crate::mmzone::ZONE_NORMAL, false);
            let gfp = __GFP_KSWAPD_RECLAIM | __GFP_NOWARN | __GFP_MOVABLE;
            let Some((Pfn(pfn), _)) = self.get_page_from_freelist(gfp, 0, ALLOC_NO_WATERMARKS, &zl) else {
                return false;
            };
            self.pm.frames[pfn as usize] = make_kernel(0, true);
            self.mod_node_page_state(pfn, NodeStat::NrKernelMisc, 1);
            self.charge(self.costs.page_alloc_ns);
            let z = self.swap.devs[di].zram.as_mut().unwrap();
            z.frames.push(pfn as u32);
            z.mem_used_max = z.mem_used_max.max(z.frames.len() as u64 * PAGE_SIZE);
        }
        true
    }

    /// Free pool frames the objects no longer need (zsmalloc frees empty zspages; the
    /// model's pool is always perfectly packed).
    pub fn zram_pool_fit(&mut self, di: usize) {
        // a pool frame's free, spill to the buddy lists included, is part of the entry's
        // *_free_ns, which calibrate measures whole (zs_free freeing the zspage): no
        // pcp_drain_ns on top
        let spilled = self.pm.spilled;
        loop {
            let z = self.swap.devs[di].zram.as_mut().unwrap();
            if (z.frames.len() as u64) <= z.pool_bytes.div_ceil(PAGE_SIZE) {
                break;
            }
            let pfn = z.frames.pop().unwrap();
            self.mod_node_page_state(pfn as u64, NodeStat::NrKernelMisc, -1);
            self.pm.free_pages(Pfn(pfn as u64), 0, &mut self.rec.vm);
        }
        self.pm.spilled = spilled;
    }

    /// mm_stat of every zram device: (device name, mm_stat object).
    pub fn zram_mm_stats(&self) -> Vec<(String, Value)> {
        self.swap
            .devs
            .iter()
            .filter_map(|d| d.zram.as_ref().map(|z| (d.name.trim_start_matches("/dev/").to_string(), z.mm_stat())))
            .collect()
    }
}
