//! /proc/PID/smaps and /proc/PID/status as the census reads them: the VMAs with their smaps
//! fields (kB) and `VmFlags` mnemonics (fs/proc/task_mmu.c show_smap_vma_flags(): `hg`
//! VM_HUGEPAGE, `nh` VM_NOHUGEPAGE, `lo` VM_LOCKED, `io`/`pf`/`de`/`mm` the VM_SPECIAL bits,
//! `ht` hugetlb), and `THP_enabled` of the status file (0 when MMF_DISABLE_THP_COMPLETELY is
//! set, i.e. prctl(PR_SET_THP_DISABLE)).

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub perms: String,
    pub offset: u64,
    pub inode: u64,
    pub name: String,
    /// smaps fields in kB (Rss, Anonymous, AnonHugePages, Swap, ...) and THPeligible (0/1).
    pub fields: BTreeMap<String, u64>,
    pub flags: Vec<String>,
}

impl Vma {
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
    pub fn kb(&self, field: &str) -> u64 {
        self.fields.get(field).copied().unwrap_or(0)
    }
    pub fn private(&self) -> bool {
        self.perms.as_bytes().get(3) == Some(&b'p')
    }
    /// vma_is_anonymous(): private memory without a file (heap, stack, anonymous mmap,
    /// `[anon:name]`). Special mappings ([vdso], [vvar], [vsyscall], ...) are not.
    pub fn anonymous(&self) -> bool {
        self.inode == 0
            && self.private()
            && (self.name.is_empty()
                || self.name == "[heap]"
                || self.name == "[stack]"
                || self.name.starts_with("[anon:"))
    }
    /// Mappings whose pages are never anonymous folios of ours to look at: hugetlb, PFN/IO maps.
    pub fn special(&self) -> bool {
        self.has("ht") || self.has("pf") || self.has("io") || self.name == "[vsyscall]" || self.name == "[vvar]"
    }
    /// VM_NO_KHUGEPAGED = VM_SPECIAL (VM_IO | VM_DONTEXPAND | VM_PFNMAP | VM_MIXEDMAP) | VM_HUGETLB.
    pub fn no_khugepaged(&self) -> bool {
        ["io", "de", "pf", "mm", "ht"].iter().any(|f| self.has(f))
    }
}

fn parse_header(line: &str) -> Option<Vma> {
    let mut it = line.split_whitespace();
    let range = it.next()?;
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    let perms = it.next()?.to_string();
    if perms.len() != 4 {
        return None;
    }
    let offset = u64::from_str_radix(it.next()?, 16).ok()?;
    let _dev = it.next()?;
    let inode = it.next()?.parse::<u64>().ok()?;
    let name = it.collect::<Vec<_>>().join(" ");
    Some(Vma { start, end, perms, offset, inode, name, ..Default::default() })
}

/// Parse /proc/PID/smaps text.
pub fn parse_smaps(text: &str) -> Vec<Vma> {
    let mut out: Vec<Vma> = vec![];
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("VmFlags:") {
            if let Some(v) = out.last_mut() {
                v.flags = rest.split_whitespace().map(str::to_string).collect();
            }
            continue;
        }
        if let Some((k, rest)) = line.split_once(':') {
            if !k.contains(char::is_whitespace) && !k.contains('-') {
                if let (Some(v), Some(n)) =
                    (out.last_mut(), rest.split_whitespace().next().and_then(|x| x.parse::<u64>().ok()))
                {
                    v.fields.insert(k.to_string(), n);
                }
                continue;
            }
        }
        if let Some(v) = parse_header(line) {
            out.push(v);
        }
    }
    out
}

#[derive(Clone, Debug, Default)]
pub struct Status {
    pub name: String,
    pub tgid: i32,
    pub ppid: i32,
    pub state: String,
    /// `THP_enabled:` (v6.x); None when the kernel does not print it.
    pub thp_enabled: Option<bool>,
    pub fields: BTreeMap<String, String>,
}

pub fn parse_status(text: &str) -> Status {
    let mut s = Status::default();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim();
            match k {
                "Name" => s.name = v.to_string(),
                "Tgid" => s.tgid = v.parse().unwrap_or(0),
                "PPid" => s.ppid = v.parse().unwrap_or(0),
                "State" => s.state = v.to_string(),
                "THP_enabled" => s.thp_enabled = v.parse::<u8>().ok().map(|x| x != 0),
                _ => {}
            }
            s.fields.insert(k.to_string(), v.to_string());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps() {
        let t = "\
7f0000000000-7f0000400000 rw-p 00000000 00:00 0 
Size:               4096 kB
Rss:                2052 kB
Anonymous:          2052 kB
AnonHugePages:      2048 kB
Swap:                  8 kB
THPeligible:           1
VmFlags: rd wr mr mw me ac hg 
55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]
Rss:                   4 kB
VmFlags: rd wr mr mw me ac 
7f1000000000-7f1000001000 r--p 00002000 08:01 1234                       /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             4 kB
VmFlags: rd mr mw me ac 
";
        let v = parse_smaps(t);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].start, 0x7f0000000000);
        assert_eq!(v[0].kb("AnonHugePages"), 2048);
        assert_eq!(v[0].kb("THPeligible"), 1);
        assert!(v[0].has("hg") && v[0].anonymous());
        assert_eq!(v[1].name, "[heap]");
        assert!(v[1].anonymous());
        assert!(!v[2].anonymous() && v[2].inode == 1234 && v[2].offset == 0x2000);
        let s = parse_status("Name:\tcat\nTgid:\t12\nPPid:\t1\nTHP_enabled:\t0\n");
        assert_eq!((s.name.as_str(), s.tgid, s.thp_enabled), ("cat", 12, Some(false)));
    }
}
