//! The LPM trie's semantics (longest-prefix match) on one hash table: a
//! value is stored under its prefix length and its data with the bits past
//! that length cleared, and a lookup probes only the lengths some entry
//! has, longest first. A routing table has a handful of lengths, so a
//! lookup is a few hash probes and no allocation; an empty table, none.

use super::Table;
use crate::uvm::uapi::{BPF_EXIST, BPF_NOEXIST, EEXIST, EINVAL, ENOENT, ENOSPC};

/// The kernel's limit on an LPM trie's data (LPM_DATA_SIZE_MAX).
pub const MAX_DATA: usize = 256;
const PLEN: usize = size_of::<u32>();

pub struct Lpm {
    data_len: usize,
    max_entries: usize,
    /// Values by stored key: prefix length (native-endian u32), then the
    /// data with the bits past it cleared.
    values: Table<Box<[u8]>, Box<[u8]>>,
    /// Entries per prefix length (index: the length).
    per_len: Vec<u32>,
    /// The lengths some entry has, longest first.
    lengths: Vec<u32>,
}

/// A key as the map stores it, built in `buf`: None unless `key` is a
/// prefix length and `data_len` bytes of data with the length in range.
fn stored<'b>(key: &[u8], data_len: usize, plen: u32, buf: &'b mut [u8; PLEN + MAX_DATA]) -> &'b [u8] {
    let data = &key[PLEN..PLEN + data_len];
    buf[..PLEN].copy_from_slice(&plen.to_ne_bytes());
    let out = &mut buf[PLEN..PLEN + data_len];
    let whole = plen as usize / 8;
    out[..whole].copy_from_slice(&data[..whole]);
    if whole < data_len {
        let bits = plen % 8;
        out[whole] = if bits == 0 { 0 } else { data[whole] & (0xffu8 << (8 - bits)) };
        out[whole + 1..].fill(0);
    }
    &buf[..PLEN + data_len]
}

impl Lpm {
    /// An empty trie of keys holding `data_len` bytes after the prefix length.
    pub fn new(data_len: usize, max_entries: u32) -> Lpm {
        Lpm {
            data_len,
            max_entries: max_entries as usize,
            values: Table::default(),
            per_len: vec![0; 8 * data_len + 1],
            lengths: Vec::new(),
        }
    }

    /// The key's prefix length, if `key` is a key of this trie.
    fn plen(&self, key: &[u8]) -> Option<u32> {
        (key.len() == PLEN + self.data_len).then(|| u32::from_ne_bytes(key[..PLEN].try_into().expect("4 bytes")))
    }

    fn max_plen(&self) -> u32 {
        (8 * self.data_len) as u32
    }

    /// The stored key of the longest prefix that matches `key`'s data
    /// within its prefix length, as the kernel's lookup finds it.
    fn longest<'b>(&self, key: &[u8], buf: &'b mut [u8; PLEN + MAX_DATA]) -> Option<&'b [u8]> {
        let limit = self.plen(key)?.min(self.max_plen());
        let found = self
            .lengths
            .iter()
            .copied()
            .filter(|&p| p <= limit)
            .find(|&p| self.values.contains_key(stored(key, self.data_len, p, buf)))?;
        Some(stored(key, self.data_len, found, buf))
    }

    /// A program's lookup.
    pub fn lookup(&mut self, key: &[u8]) -> Option<&mut [u8]> {
        let mut buf = [0u8; PLEN + MAX_DATA];
        let k = self.longest(key, &mut buf)?;
        self.values.get_mut(k).map(|v| &mut **v)
    }

    /// Userspace's lookup: the kernel's syscall also gives the longest match.
    pub fn peek(&self, key: &[u8]) -> Option<&[u8]> {
        let mut buf = [0u8; PLEN + MAX_DATA];
        let k = self.longest(key, &mut buf)?;
        self.values.get(k).map(|v| &**v)
    }

    /// Stores `value` under `key`'s prefix; returns the value it replaced,
    /// or -errno as the kernel's update does.
    pub fn update(&mut self, key: &[u8], value: &[u8], flags: u64) -> Result<Option<Box<[u8]>>, i64> {
        let plen = self.plen(key).ok_or(-EINVAL)?;
        if plen > self.max_plen() {
            return Err(-EINVAL);
        }
        let mut buf = [0u8; PLEN + MAX_DATA];
        let k = stored(key, self.data_len, plen, &mut buf);
        let exists = self.values.contains_key(k);
        match (flags, exists) {
            (BPF_NOEXIST, true) => return Err(-EEXIST),
            (BPF_EXIST, false) => return Err(-ENOENT),
            (_, false) if self.values.len() >= self.max_entries => return Err(-ENOSPC),
            _ => {}
        }
        let old = self.values.insert(k.into(), value.into());
        if old.is_none() {
            self.count(plen, 1);
        }
        Ok(old)
    }

    /// Removes exactly `key`'s prefix; returns its value, or -errno.
    pub fn delete(&mut self, key: &[u8]) -> Result<Box<[u8]>, i64> {
        let plen = self.plen(key).ok_or(-EINVAL)?;
        if plen > self.max_plen() {
            return Err(-EINVAL);
        }
        let mut buf = [0u8; PLEN + MAX_DATA];
        let old = self.values.remove(stored(key, self.data_len, plen, &mut buf)).ok_or(-ENOENT)?;
        self.count(plen, -1);
        Ok(old)
    }

    /// Keeps the per-length counts, and the list of lengths in use when a
    /// length comes into use or goes out of it.
    fn count(&mut self, plen: u32, delta: i32) {
        let n = &mut self.per_len[plen as usize];
        let was = *n;
        *n = n.checked_add_signed(delta).expect("a count never below zero");
        if (was == 0) != (*n == 0) {
            self.lengths = (0..=self.max_plen()).rev().filter(|&p| self.per_len[p as usize] > 0).collect();
        }
    }

    /// Prefixes held.
    pub fn key_count(&self) -> usize {
        self.values.len()
    }

    /// Every (stored key, value).
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.values.iter().map(|(k, v)| (&**k, &**v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(plen: u32, addr: [u8; 4]) -> Vec<u8> {
        [plen.to_ne_bytes().as_slice(), &addr].concat()
    }

    #[test]
    fn the_longest_stored_prefix_within_the_keys_length_wins() {
        let mut t = Lpm::new(4, 16);
        for (plen, addr, v) in
            [(8, [10, 0, 0, 0], 8u8), (16, [10, 1, 0, 0], 16), (24, [10, 1, 2, 0], 24), (0, [0; 4], 0)]
        {
            assert_eq!(t.update(&key(plen, addr), &[v], 0), Ok(None));
        }
        let at = |t: &mut Lpm, plen, addr| t.lookup(&key(plen, addr)).map(|v| v[0]);
        assert_eq!(at(&mut t, 32, [10, 1, 2, 3]), Some(24));
        assert_eq!(at(&mut t, 32, [10, 1, 3, 3]), Some(16));
        assert_eq!(at(&mut t, 32, [10, 2, 3, 3]), Some(8));
        assert_eq!(at(&mut t, 32, [11, 2, 3, 3]), Some(0));
        // A key's own length bounds the match: /20 cannot reach the /24.
        assert_eq!(at(&mut t, 20, [10, 1, 2, 3]), Some(16));
        // Bits past a stored prefix do not matter to update and delete.
        assert_eq!(t.update(&key(16, [10, 1, 99, 99]), &[17], BPF_EXIST).map(|o| o.map(|v| v[0])), Ok(Some(16)));
        assert_eq!(t.delete(&key(24, [10, 1, 2, 255])).map(|v| v[0]), Ok(24));
        assert_eq!(at(&mut t, 32, [10, 1, 2, 3]), Some(17));
        assert_eq!(t.delete(&key(24, [10, 1, 2, 0])), Err(-ENOENT));
        assert_eq!(t.update(&key(33, [0; 4]), &[1], 0), Err(-EINVAL));
        assert_eq!(t.update(&key(8, [10, 0, 0, 0]), &[1], BPF_NOEXIST), Err(-EEXIST));
        assert_eq!(t.update(&key(9, [10, 0, 0, 0]), &[1], BPF_EXIST), Err(-ENOENT));
        assert_eq!(t.lengths, vec![16, 8, 0]);
    }

    #[test]
    fn a_full_trie_refuses_a_new_prefix_but_replaces_an_old_one() {
        let mut t = Lpm::new(4, 2);
        t.update(&key(8, [1, 0, 0, 0]), &[1], 0).unwrap();
        t.update(&key(8, [2, 0, 0, 0]), &[2], 0).unwrap();
        assert_eq!(t.update(&key(8, [3, 0, 0, 0]), &[3], 0), Err(-ENOSPC));
        assert!(t.update(&key(8, [2, 0, 0, 0]), &[4], 0).is_ok());
    }
}
