//! The kernel's LRU hash (BPF_MAP_TYPE_LRU_HASH, common LRU), rebuilt so
//! that the same operations on the same CPUs evict the same keys.
//!
//! The kernel does not evict the least recently used entry; it keeps an
//! approximation that is cheap under concurrency, and programs (a load
//! balancer's connection table) see its behaviour, so this follows it:
//! - every element is preallocated; free nodes start on a global free list;
//! - each CPU takes free nodes in batches (`target_free`) into a local free
//!   list, and a new element waits on that CPU's pending list;
//! - when a CPU's local free list runs dry, its pending nodes go to the
//!   global active list (if referenced since) or inactive list, the lists
//!   are rotated by their reference bits, and free nodes are taken from
//!   the global free list, then by shrinking the inactive list's tail
//!   (unreferenced first), then by force;
//! - failing all that, a node is stolen from another CPU's local lists;
//! - a lookup sets the node's reference bit; an update allocates before
//!   it checks its flags (so a refused BPF_NOEXIST can still evict).

use std::collections::HashMap;

use crate::uvm::uapi::{BPF_EXIST, BPF_NOEXIST, EEXIST, EINVAL, ENOENT, ENOMEM};

/// Nodes moved per refill at most, and scanned per rotation or shrink.
const LOCAL_FREE_TARGET: usize = 128;
const NR_SCANS: usize = LOCAL_FREE_TARGET;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Active,
    Inactive,
    Free,
    LocalFree,
    LocalPending,
}

/// An LRU hash of `n` preallocated elements over `cpus` CPUs.
pub struct LruHash {
    n: usize,
    cpus: usize,
    /// prev/next per node, then per list head (see the `*_head` methods).
    links: Vec<(usize, usize)>,
    kind: Vec<Kind>,
    referenced: Vec<bool>,
    /// The CPU whose pending list a node joined.
    cpu_of: Vec<usize>,
    keys: Vec<Option<Vec<u8>>>,
    pub values: Vec<Box<[u8]>>,
    /// foldhash, as the other maps' tables (see maps.rs).
    table: HashMap<Vec<u8>, usize, foldhash::fast::FixedState>,
    counts: [usize; 2],
    /// Where the next inactive rotation starts: a node or the inactive head.
    next_inactive_rotation: usize,
    next_steal: Vec<usize>,
    target_free: usize,
}

/// The kernel's `check_flags`: an update's error for `flags` when the key
/// is `present` or not.
fn check_flags(flags: u64, present: bool) -> Option<i64> {
    match (flags, present) {
        (BPF_NOEXIST, true) => Some(-EEXIST),
        (BPF_EXIST, false) => Some(-ENOENT),
        _ => None,
    }
}

impl LruHash {
    pub fn new(max_entries: usize, value_size: usize, cpus: usize) -> LruHash {
        let n = max_entries;
        let heads = 4 + 2 * cpus;
        let mut l = LruHash {
            n,
            cpus,
            links: (0..n + heads).map(|i| (i, i)).collect(),
            kind: vec![Kind::Free; n],
            referenced: vec![false; n],
            cpu_of: vec![0; n],
            keys: vec![None; n],
            values: (0..n).map(|_| vec![0u8; value_size].into_boxed_slice()).collect(),
            table: HashMap::default(),
            counts: [0, 0],
            next_inactive_rotation: n + 1,
            next_steal: (0..cpus).collect(),
            target_free: ((n / cpus.max(1)) / 2).clamp(1, LOCAL_FREE_TARGET),
        };
        for i in 0..n {
            l.add(i, l.free_head());
        }
        l
    }

    // List heads, after the nodes.
    fn active_head(&self) -> usize {
        self.n
    }
    fn inactive_head(&self) -> usize {
        self.n + 1
    }
    fn free_head(&self) -> usize {
        self.n + 2
    }
    /// A scratch list for a refill.
    fn tmp_head(&self) -> usize {
        self.n + 3
    }
    fn pending_head(&self, cpu: usize) -> usize {
        self.n + 4 + 2 * cpu
    }
    fn local_free_head(&self, cpu: usize) -> usize {
        self.n + 5 + 2 * cpu
    }
    fn head_of(&self, k: Kind) -> usize {
        match k {
            Kind::Active => self.active_head(),
            Kind::Inactive => self.inactive_head(),
            _ => self.free_head(),
        }
    }

    // Circular doubly linked lists, as the kernel's list_head.
    fn next(&self, x: usize) -> usize {
        self.links[x].1
    }
    fn prev(&self, x: usize) -> usize {
        self.links[x].0
    }
    fn unlink(&mut self, x: usize) {
        let (p, nx) = self.links[x];
        self.links[p].1 = nx;
        self.links[nx].0 = p;
        self.links[x] = (x, x);
    }
    /// Inserts `x` right after `head` (at the front).
    fn add(&mut self, x: usize, head: usize) {
        let nx = self.next(head);
        self.links[x] = (head, nx);
        self.links[nx].0 = x;
        self.links[head].1 = x;
    }
    fn move_to(&mut self, x: usize, head: usize) {
        self.unlink(x);
        self.add(x, head);
    }
    fn is_empty(&self, head: usize) -> bool {
        self.next(head) == head
    }

    fn count(&mut self, k: Kind, delta: isize) {
        let i = match k {
            Kind::Active => 0,
            Kind::Inactive => 1,
            _ => return,
        };
        self.counts[i] = self.counts[i].wrapping_add_signed(delta);
    }

    /// Keeps the rotation's starting point valid when `x` leaves its place.
    fn step_rotation_past(&mut self, x: usize) {
        if self.next_inactive_rotation == x {
            self.next_inactive_rotation = self.prev(x);
        }
    }

    /// Between or within the active and inactive lists, or to the free list.
    fn node_move(&mut self, x: usize, to: Kind) {
        if self.kind[x] != to {
            self.count(self.kind[x], -1);
            self.count(to, 1);
            self.kind[x] = to;
        }
        self.referenced[x] = false;
        self.step_rotation_past(x);
        self.move_to(x, self.head_of(to));
    }

    /// From a CPU's pending list into the global lists.
    fn move_in(&mut self, x: usize, to: Kind) {
        self.count(to, 1);
        self.kind[x] = to;
        self.referenced[x] = false;
        self.move_to(x, self.head_of(to));
    }

    fn move_to_free(&mut self, x: usize, list: usize, as_kind: Kind) {
        self.step_rotation_past(x);
        self.count(self.kind[x], -1);
        self.kind[x] = as_kind;
        self.move_to(x, list);
    }

    /// Removes the node's element from the table, if it holds one.
    fn del_from_table(&mut self, x: usize) -> bool {
        use std::collections::hash_map::Entry;
        let Some(k) = self.keys[x].take() else { return false };
        // One hash: the entry either is this node's (removed) or a newer node's.
        match self.table.entry(k) {
            Entry::Occupied(e) if *e.get() == x => {
                e.remove();
                true
            }
            Entry::Occupied(e) => {
                self.keys[x] = Some(e.key().clone());
                false
            }
            Entry::Vacant(e) => {
                self.keys[x] = Some(e.into_key());
                false
            }
        }
    }

    fn rotate_active(&mut self) {
        let head = self.active_head();
        let first = self.next(head);
        let mut x = self.prev(head);
        let mut scanned = 0;
        while x != head {
            let before = self.prev(x);
            let to = if self.referenced[x] { Kind::Active } else { Kind::Inactive };
            self.node_move(x, to);
            scanned += 1;
            if scanned == NR_SCANS || x == first {
                break;
            }
            x = before;
        }
    }

    fn rotate_inactive(&mut self) {
        let head = self.inactive_head();
        if self.is_empty(head) {
            return;
        }
        let mut last = self.next(self.next_inactive_rotation);
        if last == head {
            last = self.next(last);
        }
        let mut cur = self.next_inactive_rotation;
        let mut next = head;
        let mut scanned = 0;
        while scanned < NR_SCANS {
            if cur == head {
                cur = self.prev(cur);
                continue;
            }
            next = self.prev(cur);
            if self.referenced[cur] {
                self.node_move(cur, Kind::Active);
            }
            if cur == last {
                break;
            }
            cur = next;
            scanned += 1;
        }
        self.next_inactive_rotation = next;
    }

    fn rotate(&mut self) {
        if self.counts[1] < self.counts[0] {
            self.rotate_active();
        }
        self.rotate_inactive();
    }

    /// Frees up to `want` unreferenced inactive nodes from the tail into `list`.
    fn shrink_inactive(&mut self, want: usize, list: usize, as_kind: Kind) -> usize {
        let head = self.inactive_head();
        let (mut freed, mut scanned) = (0, 0);
        let mut x = self.prev(head);
        while x != head {
            let before = self.prev(x);
            if self.referenced[x] {
                self.node_move(x, Kind::Active);
            } else if self.del_from_table(x) {
                self.move_to_free(x, list, as_kind);
                freed += 1;
                if freed == want {
                    break;
                }
            }
            scanned += 1;
            if scanned == NR_SCANS {
                break;
            }
            x = before;
        }
        freed
    }

    fn shrink(&mut self, want: usize, list: usize, as_kind: Kind) -> usize {
        let freed = self.shrink_inactive(want, list, as_kind);
        if freed > 0 {
            return freed;
        }
        // By force, references or not: the inactive list first.
        let head = if self.is_empty(self.inactive_head()) { self.active_head() } else { self.inactive_head() };
        let mut x = self.prev(head);
        while x != head {
            let before = self.prev(x);
            if self.del_from_table(x) {
                self.move_to_free(x, list, as_kind);
                return 1;
            }
            x = before;
        }
        0
    }

    /// Refills `cpu`'s local free list from the global lists.
    fn refill_local(&mut self, cpu: usize) {
        // The CPU's pending nodes join the global lists, oldest last.
        let pending = self.pending_head(cpu);
        let mut x = self.prev(pending);
        while x != pending {
            let before = self.prev(x);
            let to = if self.referenced[x] { Kind::Active } else { Kind::Inactive };
            self.move_in(x, to);
            x = before;
        }
        self.rotate();
        let tmp = self.tmp_head();
        let mut taken = 0;
        let free = self.free_head();
        let mut x = self.next(free);
        while x != free {
            let after = self.next(x);
            self.move_to_free(x, tmp, Kind::LocalFree);
            taken += 1;
            if taken == self.target_free {
                break;
            }
            x = after;
        }
        if taken < self.target_free {
            self.shrink(self.target_free - taken, tmp, Kind::LocalFree);
        }
        // Onto the local free list one by one, each in front (an llist).
        let local = self.local_free_head(cpu);
        while !self.is_empty(tmp) {
            let x = self.next(tmp);
            self.unlink(x);
            self.add(x, local);
        }
    }

    fn pop_local_free(&mut self, cpu: usize) -> Option<usize> {
        let head = self.local_free_head(cpu);
        let x = self.next(head);
        (x != head).then(|| {
            self.unlink(x);
            x
        })
    }

    /// The oldest pending node of `cpu` whose element can go (unreferenced first).
    fn pop_pending(&mut self, cpu: usize) -> Option<usize> {
        let head = self.pending_head(cpu);
        for force in [false, true] {
            let mut x = self.prev(head);
            while x != head {
                if (!self.referenced[x] || force) && self.del_from_table(x) {
                    self.unlink(x);
                    return Some(x);
                }
                x = self.prev(x);
            }
        }
        None
    }

    fn add_pending(&mut self, cpu: usize, x: usize) {
        self.cpu_of[x] = cpu;
        self.kind[x] = Kind::LocalPending;
        self.referenced[x] = false;
        self.add(x, self.pending_head(cpu));
    }

    /// A free node for a new element on `cpu`, evicting if need be.
    fn pop_free(&mut self, cpu: usize) -> Option<usize> {
        let mut node = self.pop_local_free(cpu);
        if node.is_none() {
            self.refill_local(cpu);
            node = self.pop_local_free(cpu);
        }
        if let Some(x) = node {
            self.add_pending(cpu, x);
            return Some(x);
        }
        // Steal from the CPUs' local lists in turn, starting where it stopped last.
        let first = self.next_steal[cpu];
        let mut steal = first;
        loop {
            node = self.pop_local_free(steal).or_else(|| self.pop_pending(steal));
            steal = (steal + 1) % self.cpus;
            if node.is_some() || steal == first {
                break;
            }
        }
        self.next_steal[cpu] = steal;
        let x = node?;
        self.add_pending(cpu, x);
        Some(x)
    }

    /// Gives a node back: to its CPU's local free list if still pending.
    fn push_free(&mut self, x: usize) {
        self.keys[x] = None;
        if self.kind[x] == Kind::LocalPending {
            self.kind[x] = Kind::LocalFree;
            self.referenced[x] = false;
            self.unlink(x);
            self.add(x, self.local_free_head(self.cpu_of[x]));
        } else {
            self.node_move(x, Kind::Free);
        }
    }

    /// A program's lookup: marks the element referenced.
    pub fn lookup(&mut self, key: &[u8]) -> Option<&mut [u8]> {
        let x = *self.table.get(key)?;
        self.referenced[x] = true;
        Some(&mut self.values[x])
    }

    /// Userspace's lookup (the syscall): no reference bit.
    pub fn peek(&self, key: &[u8]) -> Option<&[u8]> {
        self.table.get(key).map(|&x| &*self.values[x])
    }

    pub fn update(&mut self, key: &[u8], value: &[u8], flags: u64, cpu: usize) -> i64 {
        if flags > BPF_EXIST {
            return -EINVAL;
        }
        let Some(x) = self.pop_free(cpu.min(self.cpus - 1)) else { return -ENOMEM };
        self.values[x].copy_from_slice(value);
        let old = self.table.get(key).copied();
        let refused = check_flags(flags, old.is_some());
        if let Some(err) = refused {
            self.push_free(x);
            return err;
        }
        self.keys[x] = Some(key.to_vec());
        self.table.insert(key.to_vec(), x);
        if let Some(o) = old {
            self.referenced[x] = true;
            self.push_free(o);
        }
        0
    }

    /// A per-CPU LRU hash's update (the kernel's
    /// `__htab_lru_percpu_map_update_elem`): a node is taken from the free
    /// lists first unless BPF_EXIST (so it may evict), then an existing
    /// element is marked referenced and written in place and the node goes
    /// back; a new key gets the node. `write(value, is_new)` fills the value.
    pub fn update_in_place(&mut self, key: &[u8], flags: u64, cpu: usize, write: impl FnOnce(&mut [u8], bool)) -> i64 {
        if flags > BPF_EXIST {
            return -EINVAL;
        }
        let fresh = if flags == BPF_EXIST {
            None
        } else {
            let Some(x) = self.pop_free(cpu.min(self.cpus - 1)) else { return -ENOMEM };
            Some(x)
        };
        let old = self.table.get(key).copied();
        let refused = check_flags(flags, old.is_some());
        if let Some(err) = refused {
            if let Some(x) = fresh {
                self.push_free(x);
            }
            return err;
        }
        match (old, fresh) {
            (Some(o), fresh) => {
                self.referenced[o] = true;
                write(&mut self.values[o], false);
                if let Some(x) = fresh {
                    self.push_free(x);
                }
            }
            (None, Some(x)) => {
                write(&mut self.values[x], true);
                self.keys[x] = Some(key.to_vec());
                self.table.insert(key.to_vec(), x);
            }
            (None, None) => unreachable!("BPF_EXIST without the key was refused"),
        }
        0
    }

    pub fn delete(&mut self, key: &[u8]) -> i64 {
        match self.table.remove(key) {
            Some(x) => {
                self.push_free(x);
                0
            }
            None => -ENOENT,
        }
    }

    /// Keys held.
    pub fn key_count(&self) -> usize {
        self.table.len()
    }

    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.table.iter().map(|(k, &x)| (k.clone(), self.values[x].to_vec())).collect()
    }
}
