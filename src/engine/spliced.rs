//! A case timed in BPF: the user's program spliced into the driver's batch
//! loop (see splice.rs), the case's packets cycled per iteration. After
//! every batch the last iteration's verdict and packet must equal what the
//! program itself returned for that packet, so a restore that missed a byte
//! stops the measurement instead of skewing it.
//!
//! In the userspace runtime the same spliced program (as the kernel
//! verified it) runs in the runtime's JIT, with copies of the driver's and
//! the user's maps; the user's program alone must first give the kernel's
//! output for every packet.

use libbpf_rs::{MapCore, MapFlags, MapHandle};

use anyhow::{Context, Result, bail};

use super::splice::{self, DRIVER, DRIVER_OVERHEAD, PreparedProgram, driver_object};
use super::{BatchTimer, DriverState, Rodata, outputs_differ, write_variants};
use crate::packet::mask::Mask;

/// driver.h's BENCH_RESTORE_DROP_META, beside the bytes written back.
pub(super) fn drop_meta(drop: bool) -> u32 {
    if drop { 1 << 31 } else { 0 }
}
use crate::harness::inline::Scrub;
use crate::harness::timing::{BodyChoice, cannot_inline, place};
use crate::harness::timing::{RestoreMode, SharedRuntime, TimedProgram};
use crate::harness::{BatchTiming, Profile, Variant};
use crate::insn::Insn;
use crate::kernel::AttachType;
use crate::kernel::lines::LineTable;
use crate::kernel::object::ObjectFile;
use crate::kernel::prepared::PreparedCode;
use crate::kernel::prog_type::ProgKind;
use crate::kernel::skeleton::map_handle_from_fd;
use crate::kernel::test_run::RunOutput;
use crate::record::{Body, InstructionCount, LoopConstruct, Runtime};
use crate::uvm::UserRuntime;

/// Iterations of the check batch of a tc program that changes the packet's
/// length. The loop puts the length back at the tail; a program that
/// shrinks at the front (a decapsulation) walks the data forward by what it
/// removed, every iteration, and its own helper fails once the walk nears
/// 64 KiB (an skb's 16-bit offsets): a 20-byte decap passed 1,000 and
/// failed by 3,300 (64 KiB / 20 B = 3,277); a 1-byte one would by 65,535.
/// A batch this long meets that before timing.
pub(super) const WALK_CHECK_ITERATIONS: u32 = 70_000;

/// Iteration counts of the batches that check a spliced program: each
/// packet in turn, more than one pass over them, and for a tc program that
/// resizes the packet one batch longer than any walk of its data.
fn check_sizes(variants: usize, tc_resizes: bool) -> Vec<u32> {
    let k = variants as u32;
    let mut v = vec![1, 2, 3, k + 1, 2 * k + 3, 64];
    if tc_resizes {
        v.push(WALK_CHECK_ITERATIONS);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// A program of `driver`'s loop, driven through the driver's timing maps.
fn timed(driver: &ObjectFile, prog: std::os::fd::OwnedFd) -> Result<TimedProgram> {
    let handle = |name| map_handle_from_fd(driver.map_fd(name)?);
    TimedProgram::new(prog, handle("bench_ctl")?, handle("bench_result")?)
}

pub struct Spliced {
    body: TimedProgram,
    /// The driver's loop around an empty call, loaded on first use: a
    /// paired comparison never asks for it, and loading it took as long
    /// as loading the body (~15 ms here).
    overhead: Option<TimedProgram>,
    driver: ObjectFile,
    load_attrs: (AttachType, u32),
    state: MapHandle,
    /// The first packet: it gives the length and the bytes no packet changes.
    packet: Vec<u8>,
    /// The program's own output for each packet.
    references: Vec<RunOutput>,
    /// What comparisons with them leave out.
    mask: Mask,
    kind: ProgKind,
    cpu: usize,
    /// The driver's overhead program for the loop construct in use.
    overhead_name: String,
    /// The loop construct the driver times in.
    pub construct: LoopConstruct,
    /// The driver's timed entry (for an inline body's overhead program).
    entry: String,
    /// Bytes of the inline body's stack zeroed after each iteration (0: none).
    pub scrubbed: i64,
    /// Whether the program runs inline in the loop, or is called.
    pub placement: Body,
    /// What an inline body zeroes after each iteration.
    scrub: Option<Scrub>,
    /// Whether the placement was an earlier build's (not tried again).
    pub placement_known: bool,
    /// Why it is called, where inline was asked for or possible.
    pub why_called: Option<String>,
    /// The helper the loop puts a changed length back with.
    pub length_reset: &'static str,
    /// The userspace runtime the batches run in, when they do.
    in_user_runtime: Option<SharedRuntime>,
    /// The test runs' context (an skb program's `__sk_buff`), if any.
    ctx: Option<Vec<u8>>,
}

/// What a spliced case is built from: the user's program, its packets
/// (`restore` bytes of each written back per iteration) and its own
/// outputs, and where and how it is timed.
#[derive(Clone)]
pub struct SpliceRequest<'a> {
    pub program: &'a PreparedProgram<'a>,
    pub variants: &'a [Vec<u8>],
    pub restore: u32,
    pub references: Vec<RunOutput>,
    /// What comparisons with the references leave out (the case's --ignore).
    pub mask: Mask,
    pub cpu: usize,
    pub runtime: Runtime,
    /// The test runs' context (an skb program's `__sk_buff`), if any.
    pub ctx: Option<Vec<u8>>,
    pub construct: LoopConstruct,
    pub body: BodyChoice,
    /// tc: put a changed length back at the MAC header (driver_tc_mac)
    /// rather than at the tail.
    pub reset_at_mac: bool,
    /// Where an earlier build of the same driver (the same program,
    /// construct, runtime, packet count, bytes written back and length
    /// reset; other packets) placed the body.
    pub known: Option<Placement>,
    /// Told why, when the verifier refuses every inline form: the same
    /// program in the same loop is refused whatever the packets, bytes
    /// written back or length reset (they change only the reset block).
    pub inline_refused: Option<&'a dyn Fn(String)>,
}

/// Where a build placed the body: inline (and what it zeroes), or called
/// (and why, where inline was possible).
#[derive(Debug, Clone)]
pub enum Placement {
    Inline(Scrub),
    Called(Option<String>),
}

/// How many instructions the verifier may walk over the refused inline
/// forms of one driver before the build calls the body instead. Counted in
/// instructions, not seconds, so a slower machine places the body as this
/// one does: one form refused at the verifier's own limit of a million
/// leaves room for the next (xdp_flow_count: the first form refused, the
/// second taken); test_cls_redirect's first two (8,193 jumps too complex
/// after 360,181 instructions, then a million) leave none for the third.
pub const INLINE_BUDGET_INSNS: u64 = 1_200_000;

impl Spliced {
    /// Builds and checks the driver around the user's program, its body
    /// inline where `body` asks for that and the verifier accepts it (for
    /// `auto`, the call otherwise, with the reason kept). An error is the
    /// reason to time the case per call instead.
    ///
    /// Where an earlier build of the same driver found the placement
    /// (`req.known`), this one takes it at once: a large program's refused
    /// inline forms cost the verifier seconds each (test_cls_redirect: 3.6 s
    /// a build), and each case builds its driver again every sweep.
    pub fn build(req: SpliceRequest<'_>) -> Result<Spliced> {
        if let Some(known) = &req.known {
            let (body, scrub, why_called) = match known {
                Placement::Inline(scrub) => (Body::Inline, Some(*scrub), None),
                Placement::Called(why) => (Body::Call, None, why.clone()),
            };
            let s = Self::build_as(&req, body, scrub)?;
            return Ok(Spliced { why_called, placement_known: true, ..s });
        }
        let placed = place(
            req.body,
            cannot_inline(req.construct, req.runtime),
            || Self::build_as(&req, Body::Inline, None),
            || Self::build_as(&req, Body::Call, None),
        )?;
        Ok(Spliced { why_called: placed.why_called, ..placed.value })
    }

    /// Where this build placed the body, for the next build of the same driver.
    pub fn placement(&self) -> Placement {
        match (self.placement, self.scrub) {
            (Body::Inline, Some(scrub)) => Placement::Inline(scrub),
            _ => Placement::Called(self.why_called.clone()),
        }
    }

    /// Builds the driver for `variants` around the user's program with the
    /// body placed as `body`, in `runtime`, and checks it; inline, with
    /// `scrub` where it is known, else the cheapest form the verifier
    /// takes within [`INLINE_BUDGET_INSNS`]. The refusal is remembered per
    /// loop (`req.inline_refused`), so a large program pays for it once
    /// (test_cls_redirect: 0.7 and 1.7 s; its called form 0.1 s).
    fn build_as(req: &SpliceRequest<'_>, body: Body, scrub: Option<Scrub>) -> Result<Spliced> {
        let SpliceRequest { program, variants, restore, cpu, runtime, construct, .. } = *req;
        let references = req.references.clone();
        let (entry, overhead_name) = splice::driver_programs(construct)?;
        let reset_at_mac = req.reset_at_mac;
        let mut driver = driver_object(program.kind, reset_at_mac)?;
        let cfg_skb_fields = match program.kind.has_skb() {
            true => splice::skb_fields_written(program.insns),
            false => 0,
        };
        driver.set_rodata(&Rodata {
            cfg_variants: variants.len() as u32,
            cfg_restore_bytes: restore
                | drop_meta(
                    program.kind == ProgKind::Xdp
                        && splice::calls_helper(program.insns, crate::insn::helper::XDP_ADJUST_META),
                ),
            cfg_skb_fields,
        })?;
        driver.set_max_entries("bench_variants", variants.len() as u32)?;
        // Only the bytes written back: thousands of packets then stay in cache.
        driver.set_value_size("bench_variants", restore.max(8))?;
        driver.prepare()?;
        write_variants(&map_handle_from_fd(driver.map_fd("bench_variants")?)?, variants, restore)?;
        let verify = |inline: Option<Scrub>| splice::splice(&driver, &entry, program, inline);
        let (loaded, scrub) = match (body, scrub) {
            (Body::Call, _) => {
                (verify(None).context("the kernel refused the program spliced into the batch loop")?, None)
            }
            (Body::Inline, Some(scrub)) => {
                (verify(Some(scrub)).context("the body could not be inlined in the batch loop")?, Some(scrub))
            }
            // The cheapest inline loop first; where the verifier's states do
            // not converge at the loop head, each exit zeroes the stack slots
            // its paths wrote (in the body's figure); failing that, the whole
            // frame after each iteration (and the overhead's the same). Past
            // the budget, no further form is tried.
            (Body::Inline, None) => {
                let mut walked = 0u64;
                let mut refused: Option<anyhow::Error> = None;
                let mut found = None;
                for scrub in [Scrub::None, Scrub::Written, Scrub::Frame] {
                    if walked > INLINE_BUDGET_INSNS {
                        let why = refused.take().expect("refused above");
                        refused = Some(why.context(format!(
                            "the verifier walked {walked} instructions over the inline forms, past bpfbench's budget of {INLINE_BUDGET_INSNS}"
                        )));
                        break;
                    }
                    match verify(Some(scrub)) {
                        Ok(l) => {
                            found = Some((l, scrub));
                            break;
                        }
                        Err(e) => {
                            walked += e
                                .downcast_ref::<crate::kernel::load::Refusal>()
                                .and_then(|r| r.processed_insns)
                                .unwrap_or(0);
                            refused = Some(e)
                        }
                    }
                }
                match found {
                    Some((l, scrub)) => (l, Some(scrub)),
                    None => {
                        let why =
                            refused.expect("a form tried").context("the body could not be inlined in the batch loop");
                        if let Some(tell) = req.inline_refused {
                            tell(crate::harness::timing::why_not_inline(&why));
                        }
                        return Err(why);
                    }
                }
            }
        };
        let splice::Loaded { fd: body_fd, insns: body_insns, lines: body_lines, scrubbed } = loaded;
        let mut s = Spliced {
            body: timed(&driver, body_fd)?,
            overhead: None,
            state: map_handle_from_fd(driver.map_fd("bench_driver_state")?)?,
            load_attrs: program.object.load_attrs(program.name)?,
            packet: variants[0].clone(),
            references,
            mask: req.mask.clone(),
            kind: program.kind,
            cpu,
            driver,
            overhead_name,
            construct,
            entry,
            scrubbed,
            placement: body,
            scrub,
            placement_known: false,
            why_called: None,
            length_reset: match (program.kind.has_skb(), reset_at_mac) {
                (true, true) => "bpf_skb_adjust_room at the MAC header",
                (true, false) => "bpf_skb_change_tail",
                (false, _) => "bpf_xdp_adjust_head/tail",
            },
            in_user_runtime: None,
            ctx: req.ctx.clone(),
        };
        s.body.set_context(s.ctx.clone());
        if runtime == Runtime::User {
            s.move_to_user_runtime(program, (&body_insns, body_lines), variants)?;
        }
        let tc_resizes = super::restore::resizes_skb(program.kind, variants, &req.references);
        for n in check_sizes(variants.len(), tc_resizes) {
            s.run(n).with_context(|| format!("in a check batch of {n} iteration(s) before timing"))?;
        }
        Ok(s)
    }

    /// Runs the batches in the userspace runtime from now on: the spliced
    /// program and the overhead loop (both verified by the kernel first)
    /// with copies of the driver's and the user's maps. The user's program
    /// alone must give the kernel's output for every packet there first.
    fn move_to_user_runtime(
        &mut self,
        program: &PreparedProgram<'_>,
        spliced: (&[Insn], LineTable),
        variants: &[Vec<u8>],
    ) -> Result<()> {
        let (mut overhead, overhead_insns, overhead_lines) = self.load_overhead()?;
        let mut code = PreparedCode::default();
        let program_lines = program.object.line_table(program.name)?;
        for (name, insns, lines) in [
            (program.name, program.insns, program_lines),
            (DRIVER, spliced.0, spliced.1),
            (DRIVER_OVERHEAD, &overhead_insns, overhead_lines),
        ] {
            if code.programs.insert(name.to_string(), insns.to_vec()).is_some() {
                bail!(
                    "program '{name}' has the name of bpfbench's driver; rename it to run it in the userspace runtime"
                );
            }
            // The kernel's verifier accepted all three: the JIT may run them.
            code.verified.insert(name.to_string());
            code.lines.insert(name.to_string(), lines);
        }
        code.maps = self.driver.created_maps()?;
        for (fd, id, name) in program.object.created_maps()? {
            // The harness finds the driver's maps by name: a user's map of the same name is renamed.
            let name = if code.maps.iter().any(|(_, _, n)| *n == name) { format!("user:{name}") } else { name };
            code.maps.push((fd, id, name));
        }
        let rt = std::rc::Rc::new(std::cell::RefCell::new(UserRuntime::new(&code, self.cpu)?));
        super::user_context::give_contexts(&mut rt.borrow_mut(), self.kind, variants, self.ctx.as_deref())?;
        for (i, (packet, want)) in variants.iter().zip(&self.references).enumerate() {
            let got: RunOutput = rt.borrow_mut().run(program.name, packet)?.into();
            if let Some(diff) = outputs_differ(self.kind, &self.mask, want, &got) {
                bail!("packet {i}: the userspace runtime gave another output than the kernel: {diff}");
            }
        }
        self.body.run_in_user(rt.clone(), DRIVER)?;
        overhead.run_in_user(rt.clone(), DRIVER_OVERHEAD)?;
        self.overhead = Some(overhead);
        self.in_user_runtime = Some(rt);
        Ok(())
    }

    /// The driver's loop around an empty call, loaded into the kernel, its
    /// instructions and their source lines.
    fn load_overhead(&self) -> Result<(TimedProgram, Vec<Insn>, LineTable)> {
        let (attach, flags) = self.load_attrs;
        let prog = match self.placement {
            Body::Call => splice::overhead(&self.driver, &self.overhead_name, self.kind, attach, flags)?,
            Body::Inline => {
                splice::inline_overhead(&self.driver, &self.entry, self.kind, (attach, flags), self.scrubbed)?
            }
        };
        let mut overhead = timed(&self.driver, prog.fd)?;
        overhead.set_context(self.ctx.clone());
        Ok((overhead, prog.insns, prog.lines))
    }

    /// The userspace runtime the batches run in, if they do.
    pub fn user_runtime(&self) -> Option<&SharedRuntime> {
        self.in_user_runtime.as_ref()
    }

    /// This CPU's driver state.
    fn state(&self) -> Result<DriverState> {
        let key = 0u32.to_ne_bytes();
        let all = match &self.in_user_runtime {
            Some(rt) => rt.borrow().map("bench_driver_state")?.peek_all(&key),
            None => self.state.lookup_percpu(&key, MapFlags::ANY)?,
        }
        .context("the driver has no state slot")?;
        let raw = all.get(self.cpu).context("no driver state for this CPU")?;
        Ok(bytemuck::pod_read_unaligned(raw))
    }

    /// One batch of the body, its last iteration checked.
    fn run(&mut self, iters: u32) -> Result<BatchTiming> {
        let (timing, out) = self.body.run_batch(&self.packet, iters, RestoreMode::BENCH_RESTORE_NONE, self.cpu)?;
        let i = self.state()?.idx as usize;
        if let Some(diff) = outputs_differ(self.kind, &self.mask, &self.references[i], &out) {
            let cure = super::ignore_hint(&self.mask, &self.references[i], &out).map(|c| format!("\n{c}"));
            bail!("gave another output than the program itself for packet {i}: {diff}{}", cure.unwrap_or_default());
        }
        Ok(timing)
    }

    /// How many iterations had their packet length put back.
    pub fn resized(&self) -> Result<u64> {
        Ok(self.state()?.resized)
    }

    /// How many iterations had the skb's protocol, type or hash put back by a helper.
    pub fn helper_resets(&self) -> Result<u64> {
        Ok(self.state()?.rehelped)
    }
}

impl BatchTimer for Spliced {
    fn run_batch(&mut self, body: bool, iters: u32) -> Result<BatchTiming> {
        if body {
            return self.run(iters);
        }
        if self.overhead.is_none() {
            self.overhead = Some(self.load_overhead()?.0);
        }
        let overhead = self.overhead.as_mut().expect("loaded above");
        Ok(overhead.run_batch(&self.packet, iters, RestoreMode::BENCH_RESTORE_NONE, self.cpu)?.0)
    }

    fn batch_cap(&self) -> Option<u32> {
        crate::harness::timing::batch_cap(self.construct)
    }

    fn count_instructions(&mut self, iters: u32, profile: Profile) -> Result<Option<InstructionCount>> {
        let Some(rt) = self.user_runtime().cloned() else { return Ok(None) };
        crate::harness::count_instructions(&rt, iters, profile, |variant, n| {
            self.run_batch(variant == Variant::Body, n)
        })
        .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::test_run::run;

    /// A wrong reference output stops a spliced build in either runtime:
    /// in userspace already where the program runs alone.
    /// A test object's program `name` prepared and loaded, its prepared
    /// instructions and function records, and the CPU this thread is pinned to.
    fn loaded(name: &str) -> (usize, ObjectFile, Vec<Insn>, Vec<crate::kernel::FuncInfo>) {
        crate::system::check_privileges().unwrap();
        let cpu = crate::system::cpu::default_cpu().unwrap();
        crate::system::cpu::pin_to_cpu(cpu).unwrap();
        let path = std::path::PathBuf::from(concat!(env!("OUT_DIR"), "/test-objects")).join(format!("{name}.bpf.o"));
        let mut object = ObjectFile::open(&path).unwrap();
        object.configure(name, &[]).unwrap();
        object.prepare().unwrap();
        let (insns, funcs) = (object.insns(name).unwrap(), object.func_info(name).unwrap());
        object.load(name).unwrap();
        (cpu, object, insns, funcs)
    }

    #[test]
    fn an_output_unlike_the_programs_own_stops_the_build_in_both_runtimes() {
        let (cpu, object, insns, funcs) = loaded("xdp_swap");
        let packet: Vec<u8> = (0..64u8).collect();
        let reference = run(object.prog_fd("xdp_swap").unwrap(), &packet).unwrap();
        let user =
            PreparedProgram { object: &object, name: "xdp_swap", kind: ProgKind::Xdp, insns: &insns, funcs: &funcs };
        let variants = [packet.clone()];
        let super::super::restore::Restore::Bytes(restore) =
            super::super::restore::plan(ProgKind::Xdp, &variants, std::slice::from_ref(&reference.packet))
        else {
            panic!("a MAC swap is written back in the loop")
        };
        let builds = [
            (Runtime::Kernel, LoopConstruct::MayGoto),
            (Runtime::Kernel, LoopConstruct::Bounded),
            (Runtime::User, LoopConstruct::MayGoto),
        ];
        let request = |references: Vec<RunOutput>, runtime, construct, body| SpliceRequest {
            program: &user,
            variants: &variants,
            restore,
            references,
            mask: Mask::default(),
            cpu,
            runtime,
            ctx: None,
            construct,
            body,
            reset_at_mac: false,
            known: None,
            inline_refused: None,
        };
        for (runtime, construct) in builds {
            let s = Spliced::build(request(vec![reference.clone()], runtime, construct, BodyChoice::Auto))
                .unwrap_or_else(|e| panic!("{runtime:?} {construct:?}: {e:#}"));
            let inline = (runtime, construct) == (Runtime::Kernel, LoopConstruct::MayGoto);
            assert_eq!(s.placement == Body::Inline, inline, "{runtime:?} {construct:?}: {:?}", s.why_called);
        }
        let mut wrong = reference.clone();
        wrong.packet[3] ^= 1;
        let err = |(runtime, construct)| {
            format!(
                "{:#}",
                Spliced::build(request(vec![wrong.clone()], runtime, construct, BodyChoice::Call))
                    .err()
                    .expect("refused")
            )
        };
        let e = format!(
            "{:#}",
            Spliced::build(request(vec![wrong.clone()], Runtime::Kernel, LoopConstruct::MayGoto, BodyChoice::Inline))
                .err()
                .expect("refused")
        );
        assert!(e.contains("gave another output than the program itself for packet 0"), "inline: {e}");
        for build in &builds[..2] {
            let e = err(*build);
            assert!(e.contains("gave another output than the program itself for packet 0"), "{build:?}: {e}");
        }
        let e = err(builds[2]);
        assert!(e.contains("packet 0: the userspace runtime gave another output than the kernel"), "{e}");
    }

    /// The same batches, body inline and body called, leave the same map
    /// state and give the same output: a program that counts every frame
    /// per flow and in totals (xdp_flow_count), over three flows cycled.
    #[test]
    fn inline_and_called_bodies_leave_the_same_maps_and_outputs() {
        let (cpu, object, insns, funcs) = loaded("xdp_flow_count");
        let spec = crate::packet::PacketSpec::parse_flows("eth/ipv4(src=10.0.0.1-10.0.0.3)/udp(dport=53)/payload(20)");
        let variants = spec.unwrap().packets().unwrap();
        assert_eq!(variants.len(), 3);
        let prog = object.prog_fd("xdp_flow_count").unwrap();
        let references: Vec<RunOutput> = variants.iter().map(|p| run(prog, p).unwrap()).collect();
        let user = PreparedProgram {
            object: &object,
            name: "xdp_flow_count",
            kind: ProgKind::Xdp,
            insns: &insns,
            funcs: &funcs,
        };
        let outputs: Vec<Vec<u8>> = references.iter().map(|r| r.packet.clone()).collect();
        let super::super::restore::Restore::Bytes(restore) =
            super::super::restore::plan(ProgKind::Xdp, &variants, &outputs)
        else {
            panic!("three flows of one length are written back in the loop")
        };
        assert!(restore > 0);
        let maps = ["totals", "flows"].map(|m| map_handle_from_fd(object.map_fd(m).unwrap()).unwrap());
        // Every key and value of both maps, sorted.
        let snapshot = || -> Vec<(Vec<u8>, Vec<u8>)> {
            let mut all: Vec<_> = maps
                .iter()
                .flat_map(|m| m.keys().map(|k| (k.clone(), m.lookup(&k, MapFlags::ANY).unwrap().unwrap())))
                .collect();
            all.sort();
            all
        };
        let clear = || {
            maps[0].update(&0u32.to_ne_bytes(), &vec![0u8; maps[0].value_size() as usize], MapFlags::ANY).unwrap();
            for k in maps[1].keys().collect::<Vec<_>>() {
                maps[1].delete(&k).unwrap();
            }
        };
        let mut seen = Vec::new();
        for (choice, placement) in [(BodyChoice::Call, Body::Call), (BodyChoice::Inline, Body::Inline)] {
            let request = SpliceRequest {
                program: &user,
                variants: &variants,
                restore,
                references: references.clone(),
                mask: Mask::default(),
                cpu,
                runtime: Runtime::Kernel,
                ctx: None,
                construct: LoopConstruct::MayGoto,
                body: choice,
                reset_at_mac: false,
                known: None,
                inline_refused: None,
            };
            let mut s = Spliced::build(request).unwrap_or_else(|e| panic!("{choice:?}: {e:#}"));
            assert_eq!(s.placement, placement);
            clear();
            // The driver's variant index persists across batches: start each placement at the same packet.
            let start = s.state().unwrap().idx;
            for n in [1, 7, 1000] {
                s.run(n).unwrap_or_else(|e| panic!("{choice:?}, {n} iterations: {e:#}"));
            }
            let state = snapshot();
            let frames =
                u64::from_ne_bytes(state.iter().find(|(k, _)| k.len() == 4).unwrap().1[..8].try_into().unwrap());
            // Each batch: its timed iterations and the untimed one.
            assert_eq!(frames, 1 + 7 + 1000 + 3, "{choice:?}");
            seen.push((start, state));
        }
        assert_eq!(seen[0], seen[1], "the called and the inline body left different maps");
    }
}
