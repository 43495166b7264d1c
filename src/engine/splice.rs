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
use crate::kernel::object::ObjectFile;
use crate::kernel::prog_type::{BatchLoop, ProgKind};

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
    let BatchLoop::Spliced { driver, .. } = kind.batch_loop() else {
        anyhow::bail!("no driver splices {}", kind.desc().plural)
    };
    let name = match reset_at_mac {
        true => format!("{driver}_mac"),
        false => driver.to_string(),
    };
    let (name, bytes) = DRIVERS
        .iter()
        .find(|(n, _)| *n == name)
        .with_context(|| format!("bpfbench was built without the driver {name}"))?;
    ObjectFile::open_memory(name, bytes)
}

/// The spliced drivers bpfbench compiled in, by the names the program
/// types' [`BatchLoop::Spliced`] give (with `_mac`: the tc driver that
/// resets the length at the MAC header).
static DRIVERS: [(&str, &[u8]); 3] = [
    ("driver_xdp", crate::bpf_object_bytes!("driver_xdp")),
    ("driver_tc", crate::bpf_object_bytes!("driver_tc")),
    ("driver_tc_mac", crate::bpf_object_bytes!("driver_tc_mac")),
];

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

/// The skb state a tc program may change, as the bits of driver.h's `enum
/// bench_skb_field`: the `__sk_buff` fields at whose offset it has a store
/// of the field's width (the only width the kernel lets a program write
/// them with), through any register, and the state the helpers it calls
/// change. A store to a packet or map at the same offset counts too: a
/// field put back needlessly costs ~0.15 ns, a field missed would hand the
/// next iteration another input.
pub fn skb_fields_written(insns: &[Insn]) -> u32 {
    use insn::helper::*;
    // (offset in struct __sk_buff, width, bit): mark, queue_mapping,
    // priority, tc_index, cb[0..5], tc_classid, tstamp.
    const FIELDS: [(i16, usize, u32); 11] = [
        (8, 4, 1),
        (12, 4, 32),
        (32, 4, 2),
        (44, 4, 4),
        (48, 4, 16),
        (52, 4, 16),
        (56, 4, 16),
        (60, 4, 16),
        (64, 4, 16),
        (72, 4, 8),
        (152, 8, 64),
    ];
    // Helpers and the state they change: the L3 protocol (bpf_skb_adjust_room
    // changes it with its encapsulation flags), the packet type, the hash
    // (each of the protocol's changes clears it too).
    const HELPERS: [(i32, u32); 6] = [
        (SKB_CHANGE_PROTO, 128 | 512),
        (SKB_ADJUST_ROOM, 128 | 512),
        (SKB_CHANGE_TYPE, 256),
        (GET_HASH_RECALC, 512),
        (SET_HASH, 512),
        (SET_HASH_INVALID, 512),
    ];
    let stores = insns
        .iter()
        .filter(|i| matches!(i.class(), insn::ST | insn::STX) && i.dst != insn::FP)
        .flat_map(|i| FIELDS.iter().filter(move |(off, width, _)| i.off == *off && i.access_bytes() == *width))
        .fold(0, |m, (_, _, bit)| m | bit);
    HELPERS.iter().filter(|(id, _)| calls_helper(insns, *id)).fold(stores, |m, (_, bits)| m | bits)
}

/// Whether `insns` call bpf_skb_adjust_room with one of its encapsulation
/// flags (BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 or _IPV6, a constant in r4). The
/// kernel then marks the skb encapsulated and no helper takes that back:
/// the same flags on the same skb again are refused (-EALREADY), so a
/// loop of passes over one test run's skb cannot hold such a path.
pub fn encapsulates_for_good(insns: &[Insn]) -> bool {
    const ENCAP_L3: i64 = (1 << 1) | (1 << 2);
    insns.iter().enumerate().filter(|(_, i)| i.calls_helper(insn::helper::SKB_ADJUST_ROOM)).any(|(at, _)| {
        // The nearest write of r4 before the call, if it is a constant.
        let mut j = at;
        while j > 0 && at - j < 16 {
            j -= 1;
            let w = insns[j];
            let second_half = j > 0 && insns[j - 1].code == insn::LD_IMM64;
            if second_half || w.dst != 4 || !matches!(w.class(), insn::ALU | insn::ALU64 | insn::LD | insn::LDX) {
                continue;
            }
            return match w.code {
                insn::MOV64_IMM => i64::from(w.imm) & ENCAP_L3 != 0,
                insn::LD_IMM64 => i64::from(w.imm) & ENCAP_L3 != 0,
                _ => false,
            };
        }
        false
    })
}

/// Whether any program of `object` (prepared or loaded) calls
/// bpf_skb_adjust_room with an encapsulation flag (see
/// [`encapsulates_for_good`]): what a chain's later programs may do.
pub fn object_encapsulates_for_good(object: &ObjectFile) -> bool {
    object.programs().iter().any(|p| object.insns(&p.name).is_ok_and(|insns| encapsulates_for_good(&insns)))
}

/// Why a loop of passes over one skb gives another output than the
/// program where it encapsulates for good, to follow the failure's reason.
pub const ENCAPSULATED_FOR_GOOD: &str = "its code calls bpf_skb_adjust_room with an encapsulation flag, which marks the skb encapsulated for good: the kernel refuses the same flags on that skb again (-EALREADY), and a test run gives each call a new skb";

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

    use crate::insn::{call_helper, st_imm, stx};

    #[test]
    fn the_skb_state_put_back_is_what_the_programs_stores_and_helpers_change() {
        // mark (8) through r1, tc_classid (72) through r6 as an immediate.
        assert_eq!(skb_fields_written(&[stx(4, 1, 2, 8), st_imm(4, 6, 72, 0)]), 1 | 8);
        // priority (32) and tc_index (44): every 4-byte store there counts, whatever the base.
        assert_eq!(skb_fields_written(&[stx(4, 2, 1, 32), stx(4, 3, 1, 44)]), 2 | 4);
        // cb[0] (48) and cb[4] (64): the five words of cb[] are put back together.
        assert_eq!(skb_fields_written(&[stx(4, 1, 2, 48), st_imm(4, 1, 64, 0)]), 16);
        // queue_mapping (12) and tstamp (152, the one 8-byte field).
        assert_eq!(skb_fields_written(&[stx(4, 1, 2, 12), stx(8, 1, 2, 152)]), 32 | 64);
        // Not: the program's own stack, other widths, other offsets (16:
        // protocol, which no store can change).
        assert_eq!(skb_fields_written(&[stx(4, 10, 1, 8), stx(2, 1, 2, 8), stx(4, 1, 2, 16), stx(4, 1, 2, 152)]), 0);
        // Helpers: a change of L3 protocol (bpf_skb_change_proto, or
        // bpf_skb_adjust_room's encapsulation flags) also clears the hash;
        // the packet type; the hash computed and cached.
        use crate::insn::helper::*;
        for (id, bits) in [
            (SKB_CHANGE_PROTO, 128 | 512),
            (SKB_ADJUST_ROOM, 128 | 512),
            (SKB_CHANGE_TYPE, 256),
            (GET_HASH_RECALC, 512),
            (REDIRECT, 0),
        ] {
            assert_eq!(skb_fields_written(&[call_helper(id)]), bits, "helper {id}");
        }
    }

    #[test]
    fn an_adjust_room_with_constant_encapsulation_flags_is_found() {
        use crate::insn::helper::SKB_ADJUST_ROOM;
        use crate::insn::{LD_IMM64, mov64_imm};
        let call = call_helper(SKB_ADJUST_ROOM);
        // BPF_F_ADJ_ROOM_ENCAP_L3_IPV6 (1 << 2) in r4, as a 32-bit move or a 64-bit load.
        assert!(encapsulates_for_good(&[mov64_imm(4, 4), mov64_imm(3, 0), call]));
        let wide = [Insn::new(LD_IMM64, 4, 0, 0, 2), Insn::new(0, 0, 0, 0, 0), call];
        assert!(encapsulates_for_good(&wide));
        // Without the flags (a decapsulation, a plain resize), or r4 unknown.
        assert!(!encapsulates_for_good(&[mov64_imm(4, 1), call]));
        assert!(!encapsulates_for_good(&[crate::insn::mov64_reg(4, 6), call]));
        assert!(!encapsulates_for_good(&[mov64_imm(4, 4)]));
    }
}
