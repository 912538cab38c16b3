//! The block layer's per-task plug (block/blk-core.c: struct blk_plug, blk_start_plug,
//! blk_finish_plug): its state. The swap writes that go through it, and the back merge of
//! contiguous bios into its last request (block/blk-merge.c), are in page_io.rs.

/// The request a plug holds that later bios may still merge into (blk_plug's last request).
#[derive(Clone, Debug, Default)]
pub struct PlugRq {
    pub dev: usize,
    /// first global slot and pages
    pub slot: u32,
    pub nr: u32,
    /// segments (one per folio merged in)
    pub segs: u64,
    /// the folios (heads) written by this request, with the completion of any earlier
    /// request their bio was split into
    pub heads: Vec<(u32, u64)>,
}

/// struct blk_plug of the task writing swap: `depth` > 0 while plugged (blk_start_plug
/// nests: only the outermost one plugs), the request that can still take a back merge.
#[derive(Clone, Debug, Default)]
pub struct BlkPlug {
    pub depth: u32,
    pub rq: Option<PlugRq>,
    /// requests issued and bios merged under a plug (for tests and traces)
    pub requests: u64,
    pub merges: u64,
}
