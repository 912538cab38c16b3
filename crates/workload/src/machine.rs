//! The machine description: NUMA nodes with memory and CPUs, the TLB, swap devices.
//!
//! Shorthand (`--machine`): `24G`, `2x512G`, `1T,cpus=80`, `2x512G,cpus=80,swap=zram:8G`.
//! The full form is a JSON/YAML object (see `MachineSpec`). Zones are laid out the way
//! x86-64 firmware does: node 0 has ZONE_DMA below 16 MiB, ZONE_DMA32 up to 3 GiB (a PCI
//! hole follows up to 4 GiB) and ZONE_NORMAL above 4 GiB; other nodes have ZONE_NORMAL only.

use crate::units::{parse_size, Size};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub mem: Size,
    #[serde(default = "one")]
    pub cpus: u32,
}
fn one() -> u32 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum SwapKind {
    /// Compressed RAM block device (drivers/block/zram): synchronous, non-rotational.
    Zram,
    /// A rotational disk partition.
    Disk,
    /// A non-rotational SSD partition.
    Ssd,
    /// RAM-backed persistent memory (the seed-003 device): synchronous, non-rotational.
    Pmem,
    /// A swap file on a filesystem (not a block device: no large swap allocations).
    File,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwapSpec {
    #[serde(rename = "type")]
    pub kind: SwapKind,
    pub size: Size,
    /// swapon priority; higher is used first (default: -2, -3, ... in order, as swapon without -p).
    #[serde(default)]
    pub priority: Option<i32>,
    /// zram compressor (lzo-rle, lzo, lz4, zstd).
    #[serde(default)]
    pub comp_algorithm: Option<String>,
    /// Override: does the device report itself rotational?
    #[serde(default)]
    pub rotational: Option<bool>,
    /// For `file`: where the live backend creates it.
    #[serde(default)]
    pub path: Option<String>,
}

/// The CPU's data TLB (Intel-style two levels). Defaults follow a Skylake-class core.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TlbSpec {
    pub l1_4k_entries: u32,
    pub l1_4k_ways: u32,
    pub l1_2m_entries: u32,
    pub l1_2m_ways: u32,
    /// Unified second-level TLB, shared by 4 KiB and 2 MiB translations.
    pub stlb_entries: u32,
    pub stlb_ways: u32,
}
impl Default for TlbSpec {
    fn default() -> Self {
        TlbSpec {
            l1_4k_entries: 64,
            l1_4k_ways: 4,
            l1_2m_entries: 32,
            l1_2m_ways: 4,
            stlb_entries: 1536,
            stlb_ways: 12,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub swap: Vec<SwapSpec>,
    #[serde(default)]
    pub tlb: TlbSpec,
    /// Memory the firmware and kernel keep for themselves beyond the struct-page array
    /// (kernel image, early allocations). Default 32M.
    #[serde(default)]
    pub kernel_reserve: Option<Size>,
    /// Human-readable origin (the shorthand it came from).
    #[serde(default)]
    pub name: Option<String>,
    /// The machine has been running a while: its free lists are in no address order
    /// (a just-booted kernel hands out memory lowest address first, because boot frees
    /// every block to the tail of its list in address order). The model shuffles the
    /// boot free lists (seeded by the run's seed), as `page_alloc.shuffle=1` would;
    /// the live runner describes the machine it finds as aged. Shorthand: `aged`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aged: bool,
    /// The /proc/buddyinfo of the machine as found (the live run's `buddyinfo_before`).
    /// An aged model machine starts with as many free blocks below pageblock_order in
    /// each zone as it lists; their buddies are held by the kernel's and the other
    /// tenants' memory (`Kernel::hold_small_free_blocks`, aged.rs). The blocks of
    /// pageblock_order and above are the model's own: it boots with its free memory in
    /// those.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buddyinfo: Option<String>,
    /// The free blocks the guest had reported to its host as the live run found them, per
    /// zone and order in /proc/buddyinfo's layout (the live run's `reported_prefill`, read
    /// with `buddyinfo_prefill` before the runner's probe and back-fill). With
    /// thplab.free_page_reporting_start=found the model marks as many of its own free
    /// blocks reported, in proportion to `buddyinfo` order by order
    /// (`Kernel::page_reporting_found`, page_reporting.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<String>,
    /// The /proc/pagetypeinfo of the same moment as `buddyinfo`: where given, the small
    /// free blocks are laid out per migratetype (aged.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pagetypeinfo: Option<String>,
    /// The pages in use as found, page by page (the live run's `kernel.in_use_prefill`,
    /// from /proc/kpageflags): `start len kind` lines, kind `m` (on an LRU), `u` (other
    /// flagged pages) or `p` (no flags: per-CPU-list pages, blocks being reported, bare
    /// kernel pages; `pcp` goes on them, the rest is free: aged.rs `InUse::Flagless`). Where
    /// given, an aged model machine holds exactly those pages as the kernel's and the
    /// other tenants' instead of laying out `buddyinfo`'s small free blocks
    /// (`Kernel::hold_in_use`, aged.rs): its free blocks then lie where the live
    /// machine's lie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_use: Option<String>,
    /// The per-CPU lists as found (the live run's `kernel.pcp_before`, from /proc/zoneinfo's
    /// pagesets): the free pages each CPU's list of each zone held and its auto-tuned high.
    /// After a run that freed a lot, the CPU it ran on keeps up to pcp->high_max (1/8 of
    /// the zone) on its list, draining ~2,000 pages a second (decay_pcp_high): pages the
    /// next run's small allocations take first. The model starts its lists so
    /// (`PhysMem::hold_pcp_as_found`, page_alloc.rs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pcp: Vec<PcpFound>,
}

/// One CPU's per-CPU list of one zone as found (MachineSpec::pcp).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcpFound {
    pub node: u32,
    pub zone: String,
    pub cpu: u32,
    /// pages on the lists (`count:`)
    pub count: u64,
    /// pcp->high (`high:`)
    pub high: u64,
}

/// The free block counts per order of `node`'s `zone` in a /proc/buddyinfo text (or one
/// laid out like it), if it has that zone's row.
pub fn buddyinfo_row(text: &str, node: u32, zone: &str) -> Option<Vec<u64>> {
    parse_buddyinfo(text).into_iter().find(|(n, z, _)| *n == node && z == zone).map(|(_, _, c)| c)
}

/// /proc/buddyinfo rows: (node, zone, free blocks per order).
pub fn parse_buddyinfo(text: &str) -> Vec<(u32, String, Vec<u64>)> {
    let mut v = vec![];
    for l in text.lines() {
        let toks: Vec<&str> = l.split_whitespace().collect();
        if toks.len() < 5 || toks[0] != "Node" {
            continue;
        }
        let node = toks[1].trim_end_matches(',').parse().unwrap_or(0);
        let zone = toks[3].to_string();
        let counts = toks[4..].iter().filter_map(|x| x.parse().ok()).collect();
        v.push((node, zone, counts));
    }
    v
}

pub const MIN_NODE_MEM: u64 = 64 << 20;
pub const MAX_MACHINE_MEM: u64 = 2 << 40;

impl MachineSpec {
    pub fn total_mem(&self) -> u64 {
        self.nodes.iter().map(|n| n.mem.0).sum()
    }
    pub fn total_cpus(&self) -> u32 {
        self.nodes.iter().map(|n| n.cpus).sum()
    }

    /// Check the description; errors name the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("machine.nodes: at least one node is needed".into());
        }
        if self.nodes.len() > 64 {
            return Err("machine.nodes: at most 64 nodes".into());
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if n.mem.0 < MIN_NODE_MEM {
                return Err(format!(
                    "machine.nodes[{i}].mem: {} is too small for the kernel's own reserve (at least 64M per node)",
                    crate::units::fmt_size(n.mem.0)
                ));
            }
            if n.mem.0 % (2 << 20) != 0 {
                return Err(format!("machine.nodes[{i}].mem: must be a multiple of 2M"));
            }
            if n.cpus == 0 || n.cpus > 1024 {
                return Err(format!("machine.nodes[{i}].cpus: must be 1..=1024"));
            }
        }
        if self.total_mem() > MAX_MACHINE_MEM {
            return Err("machine: at most 2T of memory in total".into());
        }
        for (i, s) in self.swap.iter().enumerate() {
            if s.size.0 < (1 << 20) || s.size.0 % 4096 != 0 {
                return Err(format!("machine.swap[{i}].size: must be at least 1M and a multiple of 4K"));
            }
            if s.size.0 > (16u64 << 40) {
                return Err(format!("machine.swap[{i}].size: at most 16T"));
            }
            if let Some(a) = &s.comp_algorithm {
                if s.kind != SwapKind::Zram {
                    return Err(format!("machine.swap[{i}].comp_algorithm: only for type zram"));
                }
                if !["lzo-rle", "lzo", "lz4", "lz4hc", "zstd", "deflate", "842"].contains(&a.as_str()) {
                    return Err(format!("machine.swap[{i}].comp_algorithm: unknown compressor `{a}` (lzo-rle, lzo, lz4, lz4hc, zstd, deflate, 842)"));
                }
            }
        }
        let t = &self.tlb;
        for (name, e, w) in [
            ("l1_4k", t.l1_4k_entries, t.l1_4k_ways),
            ("l1_2m", t.l1_2m_entries, t.l1_2m_ways),
            ("stlb", t.stlb_entries, t.stlb_ways),
        ] {
            if e == 0 || w == 0 || e % w != 0 || e > 1 << 20 {
                return Err(format!("machine.tlb.{name}: entries must be a non-zero multiple of ways"));
            }
        }
        Ok(())
    }

    /// Parse `24G`, `2x512G`, `1T,cpus=80`, `2x512G,cpus=80,swap=zram:8G,swap=disk:16G`.
    pub fn parse_shorthand(s: &str) -> Result<MachineSpec, String> {
        let mut parts = s.split(',').map(str::trim);
        let head = parts.next().unwrap_or("");
        let (n, mem) = match head.split_once(['x', 'X']) {
            Some((n, m)) => (n.parse::<u32>().map_err(|_| format!("machine `{s}`: bad node count `{n}`"))?, m),
            None => (1, head),
        };
        if n == 0 || n > 64 {
            return Err(format!("machine `{s}`: node count must be 1..=64"));
        }
        let per_node = parse_size(mem).map_err(|e| format!("machine `{s}`: {e}"))?;
        let mut cpus_total: Option<u32> = None;
        let mut swap = vec![];
        let mut aged = false;
        for p in parts {
            if p == "aged" {
                aged = true;
                continue;
            }
            let (k, v) = p.split_once('=').ok_or_else(|| format!("machine `{s}`: expected key=value, got `{p}`"))?;
            match k {
                "cpus" => cpus_total = Some(v.parse().map_err(|_| format!("machine `{s}`: bad cpus `{v}`"))?),
                "swap" => {
                    let (t, sz) =
                        v.split_once(':').ok_or_else(|| format!("machine `{s}`: swap is TYPE:SIZE, got `{v}`"))?;
                    let kind: SwapKind = serde_json::from_value(serde_json::Value::String(t.to_string()))
                        .map_err(|_| format!("machine `{s}`: unknown swap type `{t}` (zram, disk, ssd, pmem, file)"))?;
                    swap.push(SwapSpec {
                        kind,
                        size: Size(parse_size(sz).map_err(|e| format!("machine `{s}`: {e}"))?),
                        priority: None,
                        comp_algorithm: None,
                        rotational: None,
                        path: None,
                    });
                }
                _ => return Err(format!("machine `{s}`: unknown key `{k}` (cpus, swap, aged)")),
            }
        }
        let cpus_total = cpus_total.unwrap_or(2 * n);
        if cpus_total < n {
            return Err(format!("machine `{s}`: need at least one cpu per node"));
        }
        let nodes = (0..n)
            .map(|i| NodeSpec { mem: Size(per_node), cpus: cpus_total / n + u32::from(i < cpus_total % n) })
            .collect();
        let m = MachineSpec {
            nodes,
            swap,
            tlb: TlbSpec::default(),
            kernel_reserve: None,
            name: Some(s.to_string()),
            aged,
            buddyinfo: None,
            reported: None,
            pagetypeinfo: None,
            in_use: None,
            pcp: vec![],
        };
        m.validate()?;
        Ok(m)
    }

    /// Parse a machine argument: shorthand, or a JSON object text.
    pub fn parse_any(s: &str) -> Result<MachineSpec, String> {
        let t = s.trim();
        if t.starts_with('{') {
            let m: MachineSpec = serde_json::from_str(t).map_err(|e| format!("machine: {e}"))?;
            m.validate()?;
            Ok(m)
        } else {
            Self::parse_shorthand(t)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn shorthand() {
        let m = MachineSpec::parse_shorthand("2x512G,cpus=80").unwrap();
        assert_eq!(m.nodes.len(), 2);
        assert_eq!(m.total_mem(), 1 << 40);
        assert_eq!(m.total_cpus(), 80);
        let m = MachineSpec::parse_shorthand("24G,swap=zram:8G").unwrap();
        assert_eq!(m.swap[0].kind, SwapKind::Zram);
        assert!(MachineSpec::parse_shorthand("16M").unwrap_err().contains("too small"));
        assert!(MachineSpec::parse_shorthand("0x1G").is_err());
        // found by the parse_workload fuzz target: a huge node count allocated before validation
        assert!(MachineSpec::parse_shorthand("221111111X11").unwrap_err().contains("1..=64"));
        assert!(MachineSpec::parse_shorthand("4G,gpus=2").is_err());
        assert!(MachineSpec::parse_shorthand("4G,aged").unwrap().aged);
        assert!(!MachineSpec::parse_shorthand("4G").unwrap().aged);
        assert!(MachineSpec::parse_any(r#"{"nodes":[{"mem":"1G","cpus":2}],"bogus":1}"#)
            .unwrap_err()
            .contains("bogus"));
    }
}
