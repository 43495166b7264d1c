//! Watching the empty slots of prog arrays during validation. A tail call
//! into an empty slot does not fail the program: it falls through to the
//! caller's next instruction, so a chain missing a program validates and
//! times a path its author never meant. Each empty slot gets a trap, a
//! program of the caller's type that writes its number into a one-word
//! array and returns; after a run, a nonzero word names the slot reached.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result};
use libbpf_rs::libbpf_sys as sys;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use super::AttachType;
use super::load::{LoadSpec, load_program};
use super::object::ObjectFile;
use super::prog_type::ProgKind;
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

/// A trap in every slot of an object's prog arrays, installed only while a
/// run is captured: a test framework's setup program ends in a tail call
/// into the program under test, and the trap it reaches instead names the
/// slot, while the run's output packet and context are what that program
/// would have been given. The slots' own programs are put back after.
pub struct SlotRecorder {
    reached: MapHandle,
    /// Each trap's slot, its array's descriptor (one an array) and the trap program.
    slots: Vec<(Slot, std::rc::Rc<OwnedFd>, OwnedFd)>,
}

/// What a captured run reached: the slot and the id of the program that
/// held it (None: the slot was empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    pub slot: Slot,
    pub program_id: Option<u32>,
}

impl SlotRecorder {
    /// Loads a trap of `kind` for every slot of the prog arrays of
    /// `object` that the programs `runs` use (at most
    /// [`MAX_WATCHED_SLOTS`] each), loaded with `attach` and `flags`.
    pub fn new(
        object: &ObjectFile,
        runs: &[BorrowedFd<'_>],
        kind: ProgKind,
        attach: AttachType,
        flags: u32,
    ) -> Result<SlotRecorder> {
        let reached = super::maps::create(MapType::Array, "bench_slot_hit", 4, 4, 1)?;
        let mut recorder = SlotRecorder { reached, slots: Vec::new() };
        let mut used = std::collections::HashSet::new();
        for prog in runs {
            used.extend(super::prog_info::map_ids(*prog)?);
        }
        for (map, entries) in object.prog_arrays() {
            let id = libbpf_rs::MapInfo::new(object.map_fd(&map)?).context("reading a map's info")?.info.id;
            if !used.contains(&id) {
                continue;
            }
            let fd = std::rc::Rc::new(
                object.map_fd(&map)?.try_clone_to_owned().context("duplicating a prog array's descriptor")?,
            );
            for index in 0..entries.min(MAX_WATCHED_SLOTS) {
                let number = recorder.slots.len() as i32 + 1;
                let spec = LoadSpec { kind, name: "bench_recorder", license: "GPL", attach, flags, funcs: None };
                let trap = load_program(&spec, &trap_insns(recorder.reached.as_fd().as_raw_fd(), number, kind))
                    .context("loading the program that records which prog array slot a run reaches")?;
                let slot = Slot { map: map.clone(), index };
                recorder.slots.push((slot, fd.clone(), trap));
            }
        }
        Ok(recorder)
    }

    /// Runs `run` with a trap in every slot, then puts each slot's program
    /// back: what `run` returned, and the slot it reached, if any.
    pub fn capture<T>(&self, run: impl FnOnce() -> Result<T>) -> Result<(T, Option<Reached>)> {
        let mut held = Vec::with_capacity(self.slots.len());
        for (slot, array, _) in &self.slots {
            held.push(slot_program(array, slot.index)?);
        }
        let zero = 0u32.to_ne_bytes();
        self.reached.update(&zero, &zero, MapFlags::ANY).context("clearing the slot record")?;
        let installed = self.slots.iter().try_for_each(|(slot, array, trap)| {
            let fd = trap.as_raw_fd() as u32;
            super::maps::update(array.as_fd(), &slot.index.to_ne_bytes(), &fd.to_ne_bytes())
                .with_context(|| format!("recording slot {} of prog array '{}'", slot.index, slot.map))
        });
        let ran = installed.and_then(|()| run());
        // Put back whatever happened.
        for ((slot, array, _), id) in self.slots.iter().zip(&held) {
            put_back(array, slot.index, *id).with_context(|| {
                format!("putting the program of slot {} of prog array '{}' back", slot.index, slot.map)
            })?;
        }
        let out = ran?;
        let value = self.reached.lookup(&zero, MapFlags::ANY).context("reading which slot was reached")?;
        let number = value.map(|v| u32::from_ne_bytes(v[..4].try_into().expect("4-byte value"))).unwrap_or(0);
        let reached = (number > 0).then(|| {
            let i = number as usize - 1;
            Reached { slot: self.slots[i].0.clone(), program_id: held[i] }
        });
        Ok((out, reached))
    }
}

/// The id of the program in slot `index` of `array`, if one is there.
fn slot_program(array: &OwnedFd, index: u32) -> Result<Option<u32>> {
    let mut id = 0u32;
    // SAFETY: key and value buffers of the array's sizes (4 and 4).
    let rc = unsafe { sys::bpf_map_lookup_elem(array.as_raw_fd(), (&raw const index).cast(), (&raw mut id).cast()) };
    if rc == 0 {
        return Ok(Some(id));
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOENT) => Ok(None),
        _ => Err(err).context("reading a prog array slot"),
    }
}

/// Puts the program of id `id` (None: none) back in slot `index` of `array`.
fn put_back(array: &OwnedFd, index: u32, id: Option<u32>) -> Result<()> {
    let Some(id) = id else {
        // SAFETY: a prog array descriptor and a key of its size.
        if unsafe { sys::bpf_map_delete_elem(array.as_raw_fd(), (&raw const index).cast()) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::ENOENT) {
                return Err(err.into());
            }
        }
        return Ok(());
    };
    // SAFETY: a plain syscall wrapper; a negative result is an error.
    let fd = unsafe { sys::bpf_prog_get_fd_by_id(id) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("the program is gone");
    }
    // SAFETY: a new descriptor we own.
    let prog = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    super::maps::update(array.as_fd(), &index.to_ne_bytes(), &(prog.as_raw_fd() as u32).to_ne_bytes())?;
    Ok(())
}
