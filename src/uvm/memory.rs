//! The memory a program may touch: regions the runtime handed out (stack,
//! context, packet, map values), each checked on every access. Programs
//! see real host addresses, so their pointer arithmetic needs no
//! translation; an address outside every region is an error, not a crash.

use std::collections::BTreeMap;
use std::fmt;

/// What a region holds, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionKind {
    Stack,
    Context,
    Packet,
    MapValue,
}

impl fmt::Display for RegionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RegionKind::Stack => "stack",
            RegionKind::Context => "context",
            RegionKind::Packet => "packet",
            RegionKind::MapValue => "map value",
        })
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Region {
    pub start: u64,
    pub len: u64,
    pub writable: bool,
    pub kind: RegionKind,
}

/// Why an access was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessError {
    /// No region holds these bytes.
    Outside { addr: u64, size: usize },
    /// The region is read-only.
    ReadOnly { addr: u64, kind: RegionKind },
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessError::Outside { addr, size } => {
                write!(f, "{size}-byte access at {addr:#x} is outside the stack, context, packet and map values")
            }
            AccessError::ReadOnly { addr, kind } => write!(f, "write at {addr:#x} into the read-only {kind}"),
        }
    }
}

/// The regions of one run: a few fixed ones (context, packet, stack) and
/// the map values handed out, by address. A timed batch looks values up
/// thousands of times: each is kept once and found in log time, so a
/// batch's cost stays proportional to its iterations.
#[derive(Debug, Default)]
pub struct Memory {
    regions: Vec<Region>,
    values: BTreeMap<u64, Region>,
}

impl Memory {
    /// Hands out `len` bytes at `start` (a pointer from `as_mut_ptr` when
    /// writable: the program writes through it).
    pub fn add(&mut self, start: *const u8, len: usize, writable: bool, kind: RegionKind) {
        let r = Region { start: start as u64, len: len as u64, writable, kind };
        if kind == RegionKind::MapValue {
            // Values live until the run ends (see maps.rs): an address is never reused within it.
            self.values.insert(r.start, r);
        } else {
            self.regions.push(r);
        }
    }

    /// Moves the (first) region of `kind`: a packet whose head or tail moved.
    pub fn reset(&mut self, kind: RegionKind, start: u64, len: u64) {
        if let Some(r) = self.regions.iter_mut().find(|r| r.kind == kind) {
            r.start = start;
            r.len = len;
        }
    }

    /// Forgets the fixed regions from `len` on (a run's stack).
    pub fn truncate(&mut self, len: usize) {
        self.regions.truncate(len);
    }

    pub fn len(&self) -> usize {
        self.regions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// The region holding all of [addr, addr + size).
    pub fn check(&self, addr: u64, size: usize, write: bool) -> Result<&Region, AccessError> {
        let end = addr.checked_add(size as u64).ok_or(AccessError::Outside { addr, size })?;
        let holds = |r: &&Region| addr >= r.start && end <= r.start + r.len;
        let r = match self.regions.iter().rev().find(holds) {
            Some(r) => r,
            None => self
                .values
                .range(..=addr)
                .next_back()
                .map(|(_, r)| r)
                .filter(holds)
                .ok_or(AccessError::Outside { addr, size })?,
        };
        if write && !r.writable {
            return Err(AccessError::ReadOnly { addr, kind: r.kind });
        }
        Ok(r)
    }

    /// Reads `size` (1, 2, 4 or 8) bytes, little-endian, zero-extended.
    pub fn load(&self, addr: u64, size: usize) -> Result<u64, AccessError> {
        self.load_from(addr, size).map(|(v, _)| v)
    }

    /// As [`Memory::load`], with the region the bytes came from.
    pub fn load_from(&self, addr: u64, size: usize) -> Result<(u64, &Region), AccessError> {
        let region = self.check(addr, size, false)?;
        // SAFETY: the bytes lie inside a region the runtime owns for this run.
        let value = unsafe {
            let p = addr as *const u8;
            match size {
                1 => u64::from(p.read()),
                2 => u64::from((p as *const u16).read_unaligned()),
                4 => u64::from((p as *const u32).read_unaligned()),
                _ => (p as *const u64).read_unaligned(),
            }
        };
        Ok((value, region))
    }

    pub fn store(&self, addr: u64, size: usize, value: u64) -> Result<(), AccessError> {
        self.check(addr, size, true)?;
        // SAFETY: as in load; the region is writable.
        unsafe {
            let p = addr as *mut u8;
            match size {
                1 => p.write(value as u8),
                2 => (p as *mut u16).write_unaligned(value as u16),
                4 => (p as *mut u32).write_unaligned(value as u32),
                _ => (p as *mut u64).write_unaligned(value),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_must_lie_wholly_inside_a_region() {
        let mut stack = vec![0u8; 16];
        let ro = [7u8; 4];
        let mut m = Memory::default();
        m.add(stack.as_mut_ptr(), stack.len(), true, RegionKind::Stack);
        m.add(ro.as_ptr(), ro.len(), false, RegionKind::Context);
        let s = stack.as_ptr() as u64;
        m.store(s + 8, 8, 0x0102_0304_0506_0708).unwrap();
        assert_eq!(m.load(s + 8, 4).unwrap(), 0x0506_0708);
        assert!(matches!(m.load(s + 9, 8), Err(AccessError::Outside { .. })));
        assert!(matches!(m.load(u64::MAX - 2, 8), Err(AccessError::Outside { .. })));
        let r = ro.as_ptr() as u64;
        assert_eq!(m.load(r, 1).unwrap(), 7);
        assert!(matches!(m.store(r, 1, 0), Err(AccessError::ReadOnly { kind: RegionKind::Context, .. })));
    }

    #[test]
    fn a_map_value_is_found_by_address_and_bounds_its_accesses() {
        // Two values side by side in one allocation, as array slots may sit.
        let mut values = vec![0u8; 32];
        let base = values.as_mut_ptr();
        let mut m = Memory::default();
        // SAFETY: both halves lie inside `values`.
        m.add(unsafe { base.add(16) }, 16, true, RegionKind::MapValue);
        m.add(base, 16, false, RegionKind::MapValue);
        m.add(base, 16, false, RegionKind::MapValue); // handed out again: kept once
        let b = base as u64;
        assert_eq!(m.check(b + 8, 8, false).unwrap().start, b);
        assert_eq!(m.check(b + 16, 8, true).unwrap().start, b + 16);
        assert!(matches!(m.store(b, 1, 0), Err(AccessError::ReadOnly { kind: RegionKind::MapValue, .. })));
        // Straddling the two values, before the first, past the last: refused.
        assert!(matches!(m.load(b + 12, 8), Err(AccessError::Outside { .. })));
        assert!(matches!(m.load(b - 1, 1), Err(AccessError::Outside { .. })));
        assert!(matches!(m.load(b + 28, 8), Err(AccessError::Outside { .. })));
        assert_eq!(m.len(), 0, "values are not fixed regions: a run's truncate keeps them");
    }
}
