//! An object prepared by libbpf for loading (`bpf_object__prepare`: maps
//! created, CO-RE, subprogram and map relocations done) and what the
//! userspace runtime needs of it: each program's final instructions, the
//! maps their descriptors name, and their source lines.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use anyhow::{Result, bail};
use libbpf_rs::AsRawLibbpf;
use libbpf_rs::libbpf_sys as sys;

use super::FuncInfo;
use super::lines::LineTable;
use crate::insn::{self, Insn};

/// Has libbpf prepare an opened object for loading (maps created,
/// relocations done) without loading its programs.
pub fn prepare(open: &mut libbpf_rs::OpenObject) -> Result<()> {
    // SAFETY: a valid open object; prepare is allowed once, before load.
    let rc = unsafe { sys::bpf_object__prepare(open.as_libbpf_object().as_ptr()) };
    if rc != 0 {
        bail!("libbpf could not prepare the object: {}", std::io::Error::from_raw_os_error(-rc));
    }
    Ok(())
}

/// What userspace needs of a prepared object once it is loaded: each
/// program's instructions, and which map each instruction's fd names (by
/// id: the fds may be closed by the time the maps are copied).
#[derive(Debug, Clone, Default)]
pub struct PreparedCode {
    /// Each program's instructions, relocated as the kernel gets them.
    pub programs: BTreeMap<String, Vec<Insn>>,
    /// (fd in the instructions, map id, map name).
    pub maps: Vec<(i32, u32, String)>,
    /// The programs the kernel's verifier accepted on this machine: the
    /// only ones the userspace JIT runs.
    pub verified: BTreeSet<String>,
    /// The kernel's id of each loaded program a prog array may hold: where
    /// the userspace runtime's tail calls land.
    pub prog_ids: BTreeMap<String, u32>,
    /// Each program's source lines, where the object has line records.
    pub lines: BTreeMap<String, LineTable>,
    /// Each program's function records with the functions' names (empty
    /// without BTF): where a body to inline starts.
    pub functions: BTreeMap<String, Vec<(FuncInfo, String)>>,
    /// The loaded object's BTF, which hand-loaded variants of its programs
    /// name in their function records (None until loaded, or without BTF);
    /// owned by the object.
    pub btf_fd: Option<i32>,
}

/// A prepared program's instructions, relocated as the kernel would get them.
pub fn insns_of(prog: &libbpf_rs::OpenProgram<'_>) -> Vec<Insn> {
    super::from_kernel(prog.insns())
}

impl PreparedCode {
    /// Points every instruction that loads map `old` (its descriptor, or
    /// the address of its value) at map `new` instead, in every program;
    /// returns how many were changed. A variant loaded after this uses
    /// `new` where the object's programs use `old`.
    pub fn replace_map(&mut self, old: i32, new: i32, new_id: u32) -> usize {
        let pseudo = [insn::PSEUDO_MAP_FD, insn::PSEUDO_MAP_VALUE];
        let mut changed = 0;
        for insns in self.programs.values_mut() {
            let mut i = 0;
            while i < insns.len() {
                let at = &mut insns[i];
                if at.code == insn::LD_IMM64 {
                    if pseudo.contains(&at.src) && at.imm == old {
                        at.imm = new;
                        changed += 1;
                    }
                    i += 1; // the second half of the wide instruction
                }
                i += 1;
            }
        }
        for (fd, id, _) in &mut self.maps {
            if *fd == old {
                (*fd, *id) = (new, new_id);
            }
        }
        changed
    }

    /// Prepares `open` and takes its programs' instructions and maps.
    pub fn capture(open: &mut libbpf_rs::OpenObject) -> Result<PreparedCode> {
        prepare(open)?;
        // Programs left unloaded on purpose (loop constructs the kernel lacks) are not taken.
        let programs = open
            .progs()
            .filter(|p| p.autoload())
            .map(|p| (p.name().to_string_lossy().into_owned(), super::from_kernel(p.insns())))
            .collect();
        // SAFETY: the open object's BTF (NULL without one), alive while it is.
        let btf = unsafe { sys::bpf_object__btf(open.as_libbpf_object().as_ptr()) };
        // SAFETY: prepared programs of the object whose BTF that is.
        let lines = open
            .progs()
            .filter(|p| p.autoload())
            .map(|p| {
                (p.name().to_string_lossy().into_owned(), unsafe {
                    LineTable::of_program(p.as_libbpf_object().as_ptr(), btf)
                })
            })
            .collect();
        let functions = open
            .progs()
            .filter(|p| p.autoload())
            .map(|p| {
                let ptr = p.as_libbpf_object().as_ptr();
                // SAFETY: a prepared program; NULL (or an error pointer) without records.
                let (recs, n) = unsafe { (sys::bpf_program__func_info(ptr), sys::bpf_program__func_info_cnt(ptr)) };
                let recs = if recs.is_null() || (recs as isize) < 0 || btf.is_null() {
                    &[][..]
                } else {
                    // SAFETY: libbpf's array of n records, alive while the object is.
                    unsafe { std::slice::from_raw_parts(recs, n as usize) }
                };
                // SAFETY: type ids of this object's BTF.
                let named = recs.iter().map(|f| (*f, unsafe { super::lines::type_name(btf, f.type_id) })).collect();
                (p.name().to_string_lossy().into_owned(), named)
            })
            .collect();
        let mut maps = Vec::new();
        for m in open.maps() {
            // SAFETY: a prepared object's map has its fd (or -1 if it was not created).
            let fd = unsafe { sys::bpf_map__fd(m.as_libbpf_object().as_ptr()) };
            if fd < 0 {
                continue;
            }
            // SAFETY: a valid fd owned by the object for as long as it lives.
            let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
            let id = libbpf_rs::MapInfo::new(borrowed.as_fd())?.info.id;
            maps.push((borrowed.as_raw_fd(), id, m.name().to_string_lossy().into_owned()));
        }
        Ok(PreparedCode {
            programs,
            maps,
            verified: Default::default(),
            prog_ids: Default::default(),
            lines,
            functions,
            btf_fd: None,
        })
    }

    /// Adds another object's code (its programs may be tail calls'
    /// targets); its maps whose names this code has are renamed
    /// "`label`:name". Two programs of one name are refused.
    pub fn merge(&mut self, other: PreparedCode, label: &str) -> Result<()> {
        for (name, insns) in other.programs {
            if self.programs.insert(name.clone(), insns).is_some() {
                bail!(
                    "two programs are named '{name}' ({label}'s and another's); the userspace runtime needs distinct names"
                );
            }
        }
        for (fd, id, name) in other.maps {
            let name = if self.maps.iter().any(|(_, _, n)| *n == name) { format!("{label}:{name}") } else { name };
            self.maps.push((fd, id, name));
        }
        self.verified.extend(other.verified);
        self.prog_ids.extend(other.prog_ids);
        self.lines.extend(other.lines);
        self.functions.extend(other.functions);
        Ok(())
    }

    /// Notes which programs `obj` (this code's object, now loaded) has in the kernel.
    pub fn mark_verified(&mut self, obj: &libbpf_rs::Object) {
        // SAFETY: a loaded object; -1 when it has no BTF in the kernel.
        let fd = unsafe { sys::bpf_object__btf_fd(obj.as_libbpf_object().as_ptr()) };
        self.btf_fd = (fd >= 0).then_some(fd);
        for p in obj.progs() {
            // SAFETY: a loaded object's program; its fd is -1 unless the kernel accepted it.
            let fd = unsafe { sys::bpf_program__fd(p.as_libbpf_object().as_ptr()) };
            if fd >= 0 {
                self.verified.insert(p.name().to_string_lossy().into_owned());
            }
        }
    }
}
