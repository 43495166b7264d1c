//! Splicing a user's program into a timing driver.
//!
//! libbpf prepares the user's object (maps created, CO-RE and map
//! relocations done); the program's final instructions, subprograms
//! appended, are a self-contained block: calls inside it are relative and
//! its maps are file descriptors. The driver (driver_xdp.bpf.c or
//! driver_tc.bpf.c) is prepared the same way; its stand-in bench_target()
//! is the last function in its instructions, so the driver up to there,
//! followed by the user's block, is the driver calling the user's program.
//!
//! The user's functions keep their BTF records, so the kernel verifies the
//! user's entry as a global function, once, whatever the driver's loop
//! does (as bpfbench's own workloads do with their bodies): the copy of the
//! user's BTF gets one more function, the driver's entry.

use std::os::fd::OwnedFd;

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::btf::{BtfType, TypeId};

use crate::harness::inline::{self, NotInlined, Scrub};
use crate::insn::{self, Insn};
use crate::kernel::load::{LoadSpec, btf_with_funcs, load_program};
use crate::kernel::{AttachType, FuncInfo};
use crate::record::LoopConstruct;

use crate::kernel::lines::LineTable;
use crate::kernel::object::{ObjectFile, ProgKind};

/// The stand-in the driver calls.
const TARGET: &str = "bench_target";
/// The driver's timed entry and its empty twin (may_goto's; in the
/// userspace runtime the spliced program goes by these names whatever the loop).
pub const DRIVER: &str = "bench_driver";
pub const DRIVER_OVERHEAD: &str = "bench_driver_overhead";

/// The loops the drivers are built with, best first.
pub const DRIVER_LOOPS: [LoopConstruct; 2] = [LoopConstruct::MayGoto, LoopConstruct::Bounded];

/// The driver's timed entry and overhead twin built with `construct`
/// (there is no bpf_loop driver: its callback would need the spliced
/// program's context through the stack).
pub fn driver_programs(construct: LoopConstruct) -> Result<(String, String)> {
    ensure!(
        construct != LoopConstruct::BpfLoop,
        "your own objects are timed in may_goto or bounded loops, not bpf_loop"
    );
    let sfx = construct.program_suffix();
    Ok((format!("{DRIVER}{sfx}"), format!("{DRIVER_OVERHEAD}{sfx}")))
}

/// The driver object for a program kind, as bpfbench compiled it; for tc,
/// `reset_at_mac` takes the one that puts the packet's length back at the
/// MAC header (driver_tc_mac.bpf.c) rather than at the tail.
pub fn driver_object(kind: ProgKind, reset_at_mac: bool) -> Result<ObjectFile> {
    match kind {
        ProgKind::Xdp => ObjectFile::open_memory("driver_xdp", crate::bpf_object_bytes!("driver_xdp")),
        ProgKind::Tc if reset_at_mac => {
            ObjectFile::open_memory("driver_tc_mac", crate::bpf_object_bytes!("driver_tc_mac"))
        }
        ProgKind::Tc => ObjectFile::open_memory("driver_tc", crate::bpf_object_bytes!("driver_tc")),
        other => anyhow::bail!("no batch loop runs {other:?} programs"),
    }
}

fn func_name(obj: &ObjectFile, type_id: u32) -> Option<String> {
    let btf = obj.typed_btf()?;
    let t: BtfType<'_> = btf.type_by_id(TypeId::from(type_id))?;
    t.name().map(|n| n.to_string_lossy().into_owned())
}

/// Where bench_target starts in the driver program `prog`, checked to be
/// the last function, with every call before it reaching it or another of
/// the driver's functions (the bounded loop's step).
fn target_offset(driver: &ObjectFile, prog: &str, insns: &[Insn]) -> Result<usize> {
    let funcs = driver.func_info(prog)?;
    let target = funcs
        .iter()
        .find(|f| func_name(driver, f.type_id).as_deref() == Some(TARGET))
        .with_context(|| format!("the {prog} driver has no {TARGET} function record"))?
        .insn_off as usize;
    ensure!(funcs.iter().all(|f| (f.insn_off as usize) <= target), "{TARGET} is not the driver's last function");
    let starts: Vec<i64> = funcs.iter().map(|f| i64::from(f.insn_off)).collect();
    let reaches = insns[..target]
        .iter()
        .enumerate()
        .filter(|(_, i)| i.is_pseudo_call())
        .all(|(at, i)| starts.contains(&i.call_target(at)));
    ensure!(reaches, "the {prog} driver calls into the middle of a function");
    Ok(target)
}

/// A program bpfbench loaded, the instructions it loaded (what the
/// userspace runtime runs) and their source lines (`--profile`; empty for
/// an inline body, which runs in the kernel only).
pub struct Loaded {
    pub fd: OwnedFd,
    pub insns: Vec<Insn>,
    pub lines: LineTable,
    /// Bytes of the body's stack zeroed after each inline copy (0: none).
    pub scrubbed: i64,
}

/// The driver's instructions up to the stand-in followed by `body`'s, with
/// the function records that go with them; `target` is where the body starts.
struct Code {
    insns: Vec<Insn>,
    funcs: Vec<FuncInfo>,
    target: usize,
}

impl Code {
    /// The same program with every call to the body inlined in the
    /// driver's loop, and the bytes zeroed after each copy.
    fn inline(&self, scrub: Scrub) -> Result<(Code, i64), NotInlined> {
        let inlined = inline::inline_calls(&self.insns, &self.funcs, self.target, scrub)?;
        Ok((Code { insns: inlined.insns, funcs: inlined.funcs, target: self.target }, inlined.scrubbed))
    }
}

/// The `__sk_buff` fields a tc program may write, as the bits of driver.h's
/// `enum bench_skb_field`: those at whose offset it has a 4-byte store
/// (the only width the kernel lets a program write them with), through any
/// register. A store to a packet or map at the same offset counts too: a
/// field put back needlessly costs ~0.15 ns, a field missed would hand the
/// next iteration another input.
pub fn skb_fields_written(insns: &[Insn]) -> u32 {
    // (offset in struct __sk_buff, bit): mark, priority, tc_index, cb[0..5], tc_classid.
    const FIELDS: [(i16, u32); 9] =
        [(8, 1), (32, 2), (44, 4), (48, 16), (52, 16), (56, 16), (60, 16), (64, 16), (72, 8)];
    insns
        .iter()
        .filter(|i| matches!(i.class(), insn::ST | insn::STX) && i.access_bytes() == 4 && i.dst != insn::FP)
        .flat_map(|i| FIELDS.iter().filter(move |(off, _)| i.off == *off).map(|(_, bit)| bit))
        .fold(0, |m, bit| m | bit)
}

/// Whether `insns` call helper `id`.
pub fn calls_helper(insns: &[Insn], id: i32) -> bool {
    insns.iter().any(|i| i.calls_helper(id))
}

/// The user's program as the body of the prepared `driver`'s timed entry,
/// called from the loop or, with `inline` (what to zero after each copy),
/// inline in it (an error of type [`NotInlined`] when it cannot be). `insns` and `funcs` are the user
/// program's instructions and function records after `prepare`.
pub fn splice(
    driver: &ObjectFile,
    entry_name: &str,
    user: &PreparedProgram<'_>,
    inline: Option<Scrub>,
) -> Result<Loaded> {
    let PreparedProgram { object: user, name: program, kind, insns, funcs } = *user;
    if insns.iter().any(|i| i.code == insn::CALL_OP && i.src == insn::KFUNC_CALL && i.off != 0) {
        bail!("program '{program}' calls kfuncs of a kernel module, which a spliced program cannot reach");
    }
    let driver_insns = driver.insns(entry_name)?;
    let target = target_offset(driver, entry_name, &driver_insns)?;
    let mut code = Code { insns: driver_insns[..target].to_vec(), funcs: Vec::new(), target };
    code.insns.extend_from_slice(insns);
    let (attach, flags) = user.load_attrs(program)?;
    let mut btf = None;
    if let Some(entry) = funcs.first().filter(|e| e.insn_off == 0) {
        // The user's BTF gets the driver's functions before the target
        // (its entry, the bounded loop's step), of the user entry's
        // prototype: each takes the context and returns an int.
        let own: Vec<(u32, String)> = driver
            .func_info(entry_name)?
            .iter()
            .filter(|f| (f.insn_off as usize) < target)
            .map(|f| (f.insn_off, func_name(driver, f.type_id).unwrap_or_else(|| DRIVER.to_string())))
            .collect();
        let names: Vec<&str> = own.iter().map(|(off, n)| if *off == 0 { DRIVER } else { n.as_str() }).collect();
        let (b, ids) = btf_with_funcs(user, entry.type_id, &names)?;
        btf = Some(b);
        code.funcs.extend(own.iter().zip(ids).map(|((off, _), id)| FuncInfo { insn_off: *off, type_id: id }));
        code.funcs.extend(funcs.iter().map(|f| FuncInfo { insn_off: f.insn_off + target as u32, type_id: f.type_id }));
    }
    // Without BTF every function is verified where it is called.
    let lines = driver.line_table(entry_name)?.with_spliced(target, &user.line_table(program)?);
    let (code, lines, scrubbed) = match inline {
        Some(scrub) => {
            let (code, scrubbed) = code.inline(scrub)?;
            (code, LineTable::default(), scrubbed)
        }
        None => (code, lines, 0),
    };
    let funcs_arg = btf.as_ref().map(|b| (b.fd(), code.funcs.as_slice()));
    let spec = LoadSpec { kind, name: DRIVER, license: user.license(), attach, flags, funcs: funcs_arg };
    Ok(Loaded { fd: load_program(&spec, &code.insns)?, insns: code.insns, lines, scrubbed })
}

/// The user's program as libbpf prepared it: its object, name, type,
/// instructions and function records.
#[derive(Clone, Copy)]
pub struct PreparedProgram<'a> {
    pub object: &'a ObjectFile,
    pub name: &'a str,
    pub kind: ProgKind,
    pub insns: &'a [Insn],
    pub funcs: &'a [FuncInfo],
}

/// The driver's overhead twin: the same loop around an empty call.
pub fn overhead(driver: &ObjectFile, name: &str, kind: ProgKind, attach: AttachType, flags: u32) -> Result<Loaded> {
    let insns = driver.insns(name)?;
    let spec = LoadSpec { kind, name: "bench_overhead", license: "Dual BSD/GPL", attach, flags, funcs: None };
    let fd = load_program(&spec, &insns).context("loading the driver's overhead loop")?;
    Ok(Loaded { fd, insns, lines: driver.line_table(name)?, scrubbed: 0 })
}

/// The overhead of an inline body: the timed entry `entry_name` itself
/// with an empty body (`r0 = verdict; exit`) inlined where the program's
/// is, so the loop, the saved registers, the moved stack and the `scrubbed`
/// bytes zeroed are the ones the program's figure paid for.
pub fn inline_overhead(
    driver: &ObjectFile,
    entry_name: &str,
    kind: ProgKind,
    load_attrs: (AttachType, u32),
    scrubbed: i64,
) -> Result<Loaded> {
    let (attach, flags) = load_attrs;
    let driver_insns = driver.insns(entry_name)?;
    let target = target_offset(driver, entry_name, &driver_insns)?;
    let mut insns = driver_insns[..target].to_vec();
    // The verdict the driver's own empty body returns (XDP_PASS, TC_ACT_OK).
    insns.extend(insn::returning(kind.pass_verdict()));
    let scrub = if scrubbed > 0 { Scrub::Bytes(scrubbed) } else { Scrub::None };
    let (code, scrubbed) = Code { insns, funcs: Vec::new(), target }.inline(scrub)?;
    let spec = LoadSpec { kind, name: "bench_overhead", license: "Dual BSD/GPL", attach, flags, funcs: None };
    let fd = load_program(&spec, &code.insns).context("loading the driver's overhead loop, its empty body inline")?;
    Ok(Loaded { fd, insns: code.insns, lines: LineTable::default(), scrubbed })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::insn::{st_imm, stx};

    #[test]
    fn the_skb_fields_put_back_are_those_with_a_4_byte_store_at_their_offset() {
        // mark (8) through r1, tc_classid (72) through r6 as an immediate.
        assert_eq!(skb_fields_written(&[stx(4, 1, 2, 8), st_imm(4, 6, 72, 0)]), 1 | 8);
        // priority (32) and tc_index (44): every 4-byte store there counts, whatever the base.
        assert_eq!(skb_fields_written(&[stx(4, 2, 1, 32), stx(4, 3, 1, 44)]), 2 | 4);
        // cb[0] (48) and cb[4] (64): the five words of cb[] are put back together.
        assert_eq!(skb_fields_written(&[stx(4, 1, 2, 48), st_imm(4, 1, 64, 0)]), 16);
        // Not: the program's own stack, other widths, other offsets.
        assert_eq!(skb_fields_written(&[stx(4, 10, 1, 8), stx(2, 1, 2, 8), stx(4, 1, 2, 12)]), 0);
    }
}
