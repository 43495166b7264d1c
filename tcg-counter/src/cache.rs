//! The simulated data caches: a level-1 data cache and a last-level cache,
//! set-associative with least-recently-used replacement, in Cachegrind's
//! model (an access touching two lines is two accesses; a line missed in
//! D1 is looked up in LL). Fixed sizes, the same on every machine, so that
//! counts compare across hosts: D1 32 KiB 8-way, LL 8 MiB 16-way, 64-byte
//! lines. Virtual addresses, data only (instruction fetches are not
//! simulated).

/// Which caches an access missed: none (every line in D1), D1 only (a
/// line in LL), or both (a line from memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Missed {
    Nothing,
    D1,
    D1AndLl,
}

const LINE_SHIFT: u32 = 6;

/// One set-associative cache: per set, its lines' tags, most recent first.
struct Cache {
    ways: usize,
    sets: Vec<Vec<u64>>,
}

impl Cache {
    fn new(bytes: usize, ways: usize) -> Cache {
        let sets = (bytes >> LINE_SHIFT) / ways;
        Cache { ways, sets: vec![Vec::with_capacity(ways); sets] }
    }

    /// Looks `line` up, making it the most recent of its set; false on a miss.
    fn touch(&mut self, line: u64) -> bool {
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(line % n) as usize];
        match set.iter().position(|&t| t == line) {
            Some(i) => {
                set[..=i].rotate_right(1);
                true
            }
            None => {
                if set.len() == self.ways {
                    set.pop();
                }
                set.insert(0, line);
                false
            }
        }
    }

    fn clear(&mut self) {
        self.sets.iter_mut().for_each(Vec::clear);
    }
}

/// D1 and LL of one vCPU; allocated when its first region starts.
#[derive(Default)]
pub struct Caches(Option<(Cache, Cache)>);

impl Caches {
    /// Empties both caches (a region starts cold).
    pub fn clear(&mut self) {
        match &mut self.0 {
            Some((d1, ll)) => {
                d1.clear();
                ll.clear();
            }
            None => self.0 = Some((Cache::new(32 << 10, 8), Cache::new(8 << 20, 16))),
        }
    }

    /// An access of `size` bytes at `vaddr`: which caches it missed.
    pub fn access(&mut self, vaddr: u64, size: u64) -> Missed {
        let Some((d1, ll)) = &mut self.0 else { return Missed::Nothing };
        let (first, last) = (vaddr >> LINE_SHIFT, (vaddr + size.max(1) - 1) >> LINE_SHIFT);
        let mut missed = Missed::Nothing;
        for line in first..=last {
            if !d1.touch(line) {
                missed = missed.max(Missed::D1);
                if !ll.touch(line) {
                    missed = Missed::D1AndLl;
                }
            }
        }
        missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_misses_once_then_hits_until_its_set_overflows() {
        let mut c = Caches::default();
        c.clear();
        assert_eq!(c.access(0x1000, 8), Missed::D1AndLl);
        assert_eq!(c.access(0x1008, 8), Missed::Nothing);
        // Nine lines mapping to one D1 set (64 sets): the first is evicted
        // from D1 (8 ways) but still in LL.
        for i in 1..=8u64 {
            c.access(0x1000 + i * 64 * 64, 8);
        }
        assert_eq!(c.access(0x1000, 8), Missed::D1);
        // Across a line boundary: two lines.
        assert_eq!(c.access(0x203c, 8), Missed::D1AndLl);
        assert_eq!(c.access(0x2040, 8), Missed::Nothing);
        c.clear();
        assert_eq!(c.access(0x1000, 8), Missed::D1AndLl);
    }
}
