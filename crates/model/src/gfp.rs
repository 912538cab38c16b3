//! Allocation flags: the GFP bits (include/linux/gfp_types.h) and the allocator's
//! internal ALLOC_* flags (mm/internal.h), for every caller of the allocator.

use crate::mmzone::*;

pub type Gfp = u32;
pub const __GFP_DIRECT_RECLAIM: Gfp = 1 << 0;
pub const __GFP_KSWAPD_RECLAIM: Gfp = 1 << 1;
pub const __GFP_NORETRY: Gfp = 1 << 2;
pub const __GFP_THISNODE: Gfp = 1 << 3;
pub const __GFP_MOVABLE: Gfp = 1 << 4;
pub const __GFP_RECLAIMABLE: Gfp = 1 << 5;
pub const __GFP_COMP: Gfp = 1 << 6;
pub const __GFP_ZERO: Gfp = 1 << 7;
pub const __GFP_HIGH: Gfp = 1 << 8;
pub const __GFP_NOWARN: Gfp = 1 << 9;
pub const __GFP_NOMEMALLOC: Gfp = 1 << 10;
pub const __GFP_RETRY_MAYFAIL: Gfp = 1 << 11;
pub const __GFP_IO: Gfp = 1 << 12;
pub const __GFP_FS: Gfp = 1 << 13;
pub const __GFP_RECLAIM: Gfp = __GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM;
pub const GFP_KERNEL: Gfp = __GFP_RECLAIM | __GFP_IO | __GFP_FS;
pub const GFP_HIGHUSER_MOVABLE: Gfp = GFP_KERNEL | __GFP_MOVABLE;
/// GFP_TRANSHUGE_LIGHT = (GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_NOMEMALLOC | __GFP_NOWARN) & ~__GFP_RECLAIM
pub const GFP_TRANSHUGE_LIGHT: Gfp =
    (GFP_HIGHUSER_MOVABLE | __GFP_COMP | __GFP_NOMEMALLOC | __GFP_NOWARN) & !__GFP_RECLAIM;
pub const GFP_TRANSHUGE: Gfp = GFP_TRANSHUGE_LIGHT | __GFP_DIRECT_RECLAIM;

pub fn gfp_migratetype(gfp: Gfp) -> u8 {
    if gfp & __GFP_MOVABLE != 0 {
        MIGRATE_MOVABLE
    } else if gfp & __GFP_RECLAIMABLE != 0 {
        MIGRATE_RECLAIMABLE
    } else {
        MIGRATE_UNMOVABLE
    }
}

pub type AllocFlags = u32;
pub const ALLOC_WMARK_MIN: AllocFlags = WMARK_MIN as u32;
pub const ALLOC_WMARK_LOW: AllocFlags = WMARK_LOW as u32;
pub const ALLOC_WMARK_HIGH: AllocFlags = WMARK_HIGH as u32;
pub const ALLOC_WMARK_MASK: AllocFlags = 3;
pub const ALLOC_NO_WATERMARKS: AllocFlags = 1 << 2;
pub const ALLOC_MIN_RESERVE: AllocFlags = 1 << 3;
pub const ALLOC_NOFRAGMENT: AllocFlags = 1 << 4;
pub const ALLOC_KSWAPD: AllocFlags = 1 << 5;
