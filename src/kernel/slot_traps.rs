//! Watching the empty slots of prog arrays during validation. A tail call
//! into an empty slot does not fail the program: it falls through to the
//! caller's next instruction, so a chain missing a program validates and
//! times a path its author never meant. Each empty slot gets a trap, a
//! program of the caller's type that writes its number into a one-word
//! array and returns; after a run, a nonzero word names the slot reached.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use anyhow::{Context, Result};
use libbpf_rs::libbpf_sys as sys;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use super::AttachType;
use super::load::{LoadSpec, load_program};
use super::object::{ObjectFile, ProgKind};
use crate::insn::{self, Insn};

/// Slots watched per prog array at most: a trap is a program load (tens of
/// microseconds), and arrays of 64 Ki slots exist (Cilium's policy calls).
pub const MAX_WATCHED_SLOTS: u32 = 1024;

/// A prog array slot: the map's name and the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub map: String,
    pub index: u32,
}

/// Traps in the empty slots of an object's prog arrays, removed on drop.
pub struct SlotTraps {
    /// The word a trap writes its number (1-based index into `slots`) into.
    reached: MapHandle,
    /// Each trap's slot, its array's descriptor and the trap program.
    slots: Vec<(Slot, OwnedFd, OwnedFd)>,
    /// Arrays of more slots than are watched: (name, slots).
    pub unwatched: Vec<(String, u32)>,
}

impl SlotTraps {
    /// Puts a trap of `kind` (loaded with `attach` and `flags`, as the
    /// program that makes the calls) in every empty slot of `object`'s prog
    /// arrays, but for the arrays in `skip` (pinned: not ours to change)
    /// and the slots in `leave` (meant to be empty).
    pub fn install(
        object: &ObjectFile,
        kind: ProgKind,
        attach: AttachType,
        flags: u32,
        skip: &[String],
        leave: &[Slot],
    ) -> Result<SlotTraps> {
        let reached = super::maps::create(MapType::Array, "bench_slot_hit", 4, 4, 1)?;
        let mut traps = SlotTraps { reached, slots: Vec::new(), unwatched: Vec::new() };
        for (map, entries) in object.prog_arrays() {
            if skip.contains(&map) {
                continue;
            }
            let fd = object.map_fd(&map)?.try_clone_to_owned().context("duplicating a prog array's descriptor")?;
            if entries > MAX_WATCHED_SLOTS {
                traps.unwatched.push((map.clone(), entries));
            }
            for index in 0..entries.min(MAX_WATCHED_SLOTS) {
                let slot = Slot { map: map.clone(), index };
                if leave.contains(&slot) || !slot_is_empty(&fd, index)? {
                    continue;
                }
                let number = traps.slots.len() as i32 + 1;
                let spec = LoadSpec { kind, name: "bench_slot_trap", license: "GPL", attach, flags, funcs: None };
                let trap = load_program(&spec, &trap_insns(traps.reached.as_fd().as_raw_fd(), number, kind))
                    .context("loading the program that watches an empty prog array slot")?;
                let trap_fd = trap.as_raw_fd() as u32;
                super::maps::update(fd.as_fd(), &index.to_ne_bytes(), &trap_fd.to_ne_bytes())
                    .with_context(|| format!("watching slot {index} of prog array '{map}'"))?;
                traps.slots.push((slot, fd.try_clone().context("duplicating a descriptor")?, trap));
            }
        }
        Ok(traps)
    }

    /// The empty slot the last runs reached, if any; clears the record.
    pub fn take_reached(&self) -> Result<Option<Slot>> {
        let key = 0u32.to_ne_bytes();
        let value = self.reached.lookup(&key, MapFlags::ANY).context("reading which empty slot was reached")?;
        let number = value.map(|v| u32::from_ne_bytes(v[..4].try_into().expect("4-byte value"))).unwrap_or(0);
        if number == 0 {
            return Ok(None);
        }
        self.reached.update(&key, &0u32.to_ne_bytes(), MapFlags::ANY).context("clearing the empty-slot record")?;
        Ok(self.slots.get(number as usize - 1).map(|(slot, _, _)| slot.clone()))
    }

    /// How many slots are watched.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

impl Drop for SlotTraps {
    /// Empties the watched slots again (the arrays die with their object
    /// anyway; a removed trap is freed at once).
    fn drop(&mut self) {
        for (slot, array, _) in &self.slots {
            // SAFETY: a prog array descriptor and a key of its size.
            unsafe { sys::bpf_map_delete_elem(array.as_raw_fd(), (&raw const slot.index).cast()) };
        }
    }
}

/// Whether slot `index` of the prog array `array` holds no program (a
/// lookup from user space answers the program's id, or ENOENT).
fn slot_is_empty(array: &OwnedFd, index: u32) -> Result<bool> {
    let mut id = 0u32;
    // SAFETY: key and value buffers of the array's sizes (4 and 4).
    let rc = unsafe { sys::bpf_map_lookup_elem(array.as_raw_fd(), (&raw const index).cast(), (&raw mut id).cast()) };
    if rc == 0 {
        return Ok(false);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOENT) => Ok(true),
        _ => Err(err).context("reading a prog array slot"),
    }
}

/// `r1 = &reached[0]; *(u32 *)r1 = number; r0 = verdict; exit`, where the
/// verdict drops the packet: a path that reaches a trap has failed anyway.
fn trap_insns(reached_fd: i32, number: i32, kind: ProgKind) -> Vec<Insn> {
    // ld_imm64 of a map value: the address of the value at offset 0 (the second slot's imm).
    let [ld, offset] = insn::ld_imm64(1, insn::PSEUDO_MAP_VALUE, reached_fd as u32 as u64);
    let store = insn::st_imm(4, 1, 0, number);
    let [mov, exit] = insn::returning(kind.drop_verdict());
    vec![ld, offset, store, mov, exit]
}
