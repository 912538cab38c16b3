//! A hierarchical bitmap: set/clear in O(levels), first/last set bit in O(levels)
//! (levels = log64 n, at most 5 for 2^30 bits). Used for buddy free lists, where a
//! set bit means "a free block of this order and migratetype starts here".

#[derive(Clone, Debug)]
pub struct BitTree {
    /// levels[0] is the leaf level; levels[k+1] has a bit per non-zero word of levels[k].
    levels: Vec<Vec<u64>>,
    len: u64,
}

impl BitTree {
    pub fn new(len: u64) -> BitTree {
        let mut levels = vec![];
        let mut n = len.max(1);
        loop {
            let words = n.div_ceil(64);
            levels.push(vec![0u64; words as usize]);
            if words == 1 {
                break;
            }
            n = words;
        }
        BitTree { levels, len }
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.levels.last().unwrap()[0] == 0
    }
    #[inline]
    pub fn get(&self, i: u64) -> bool {
        self.levels[0][(i >> 6) as usize] >> (i & 63) & 1 == 1
    }
    pub fn set(&mut self, i: u64) {
        debug_assert!(i < self.len);
        let mut i = i;
        for lvl in self.levels.iter_mut() {
            let w = &mut lvl[(i >> 6) as usize];
            let was_zero = *w == 0;
            *w |= 1 << (i & 63);
            if !was_zero {
                return;
            }
            i >>= 6;
        }
    }
    pub fn clear(&mut self, i: u64) {
        let mut i = i;
        for lvl in self.levels.iter_mut() {
            let w = &mut lvl[(i >> 6) as usize];
            *w &= !(1 << (i & 63));
            if *w != 0 {
                return;
            }
            i >>= 6;
        }
    }
    pub fn first(&self) -> Option<u64> {
        let top = self.levels.len() - 1;
        if self.levels[top][0] == 0 {
            return None;
        }
        let mut idx = 0u64;
        for l in (0..=top).rev() {
            let w = self.levels[l][idx as usize];
            idx = idx * 64 + w.trailing_zeros() as u64;
        }
        Some(idx)
    }
    pub fn last(&self) -> Option<u64> {
        let top = self.levels.len() - 1;
        if self.levels[top][0] == 0 {
            return None;
        }
        let mut idx = 0u64;
        for l in (0..=top).rev() {
            let w = self.levels[l][idx as usize];
            idx = idx * 64 + (63 - w.leading_zeros() as u64);
        }
        Some(idx)
    }
    /// First set bit at index >= from.
    pub fn next_from(&self, from: u64) -> Option<u64> {
        if from >= self.len {
            return None;
        }
        // walk up until a word with a set bit at/after the position, then descend
        let mut pos = from;
        let mut l = 0;
        loop {
            let wi = (pos >> 6) as usize;
            let lvl = &self.levels[l];
            if wi < lvl.len() {
                let w = lvl[wi] & (!0u64 << (pos & 63));
                if w != 0 {
                    let mut idx = (wi as u64) * 64 + w.trailing_zeros() as u64;
                    for ll in (0..l).rev() {
                        let w = self.levels[ll][idx as usize];
                        idx = idx * 64 + w.trailing_zeros() as u64;
                    }
                    return Some(idx);
                }
            }
            if l + 1 == self.levels.len() {
                return None;
            }
            pos = (pos >> 6) + 1;
            l += 1;
        }
    }
    /// Last set bit at index <= upto.
    pub fn prev_from(&self, upto: u64) -> Option<u64> {
        let mut pos = upto.min(self.len.saturating_sub(1)) as i64;
        let mut l = 0;
        loop {
            if pos < 0 {
                return None;
            }
            let wi = (pos as u64 >> 6) as usize;
            let sh = 63 - (pos as u64 & 63);
            let w = self.levels[l][wi] & (!0u64 >> sh);
            if w != 0 {
                let mut idx = (wi as u64) * 64 + (63 - w.leading_zeros() as u64);
                for ll in (0..l).rev() {
                    let w = self.levels[ll][idx as usize];
                    idx = idx * 64 + (63 - w.leading_zeros() as u64);
                }
                return Some(idx);
            }
            if l + 1 == self.levels.len() {
                return None;
            }
            pos = (pos >> 6) - 1;
            l += 1;
        }
    }
    pub fn heap_bytes(&self) -> usize {
        self.levels.iter().map(|l| l.len() * 8).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn basic() {
        let mut b = BitTree::new(100_000);
        assert_eq!(b.first(), None);
        b.set(70_000);
        b.set(5);
        assert_eq!(b.first(), Some(5));
        assert_eq!(b.last(), Some(70_000));
        assert_eq!(b.next_from(6), Some(70_000));
        assert_eq!(b.prev_from(69_999), Some(5));
        b.clear(5);
        assert_eq!(b.first(), Some(70_000));
        b.clear(70_000);
        assert!(b.is_empty());
    }

    proptest! {
        #[test]
        fn matches_a_set(ops in prop::collection::vec((0u64..5000, any::<bool>()), 1..200), q in 0u64..5000) {
            let mut b = BitTree::new(5000);
            let mut s = std::collections::BTreeSet::new();
            for (i, set) in ops {
                if set { b.set(i); s.insert(i); } else { b.clear(i); s.remove(&i); }
            }
            prop_assert_eq!(b.first(), s.iter().next().copied());
            prop_assert_eq!(b.last(), s.iter().next_back().copied());
            prop_assert_eq!(b.next_from(q), s.range(q..).next().copied());
            prop_assert_eq!(b.prev_from(q), s.range(..=q).next_back().copied());
        }
    }
}
