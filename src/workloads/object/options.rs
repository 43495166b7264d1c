//! What a user says about their object: on the command line
//! (`bpfbench run FILE.bpf.o --packet ... --expect ...`) or in a spec file
//! (`bpfbench run bench.toml`) bundling object, program, maps and named
//! cases. Both become one [`ObjectSetup`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use clap::Args;
use serde::Deserialize;

use super::cases::CaseSpec;
pub use super::globals::GlobalValue;
use super::map_state::MapExpectation;
use crate::harness::timing::{BodyArgs, BodyChoice};
use crate::kernel::prog_type::ProgKind;

// Options for a user's own object. A plain comment: a doc comment here
// would become the help text of the `run` command it joins.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Your own object (bpfbench run FILE.bpf.o)")]
pub struct ObjectArgs {
    #[command(flatten)]
    pub load: LoadArgs,
    /// A test packet in the packet language, e.g. eth/ipv4(dst=10.0.0.10)/tcp(dport=80)/payload(64);
    /// ranges (src=10.0.0.1-10.0.0.255) make several flows, cycled per iteration (repeatable).
    #[arg(long = "packet", value_name = "SPEC")]
    pub packets: Vec<String>,
    /// Test packets from a capture file (pcap or pcapng, Ethernet).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// The verdict every packet must get: XDP_PASS, XDP_DROP, XDP_TX, XDP_REDIRECT, XDP_ABORTED, TC_ACT_OK, TC_ACT_SHOT, ...
    #[arg(long, value_name = "VERDICT")]
    pub expect: Option<String>,
    /// The packet the program must output, byte for byte: one for all inputs, or one per input (repeatable).
    #[arg(long = "expect-packet", value_name = "SPEC")]
    pub expect_packets: Vec<String>,
    /// The packets the program must output, from a capture file.
    #[arg(long, value_name = "FILE")]
    pub expect_pcap: Option<PathBuf>,
    /// Write the packets the program output to FILE.pcap (to bootstrap expectations).
    #[arg(long, value_name = "FILE.pcap")]
    pub record: Option<PathBuf>,
    /// __sk_buff fields the test runs set, for tc, socket filter and cgroup_skb programs, as JSON: '{"mark": 7, "cb": [1, 2, 3, 4, 5]}'.
    #[arg(long = "skb", value_name = "JSON")]
    pub skb: Option<String>,
    /// The context of a raw tracepoint or syscall program, as JSON: its arguments '[1, 2, 3]' (u64 each) or bytes '"0a0b0c0d"'.
    #[arg(long = "ctx", value_name = "JSON")]
    pub ctx: Option<String>,
    /// Leave FIELD out of every comparison of output packets, for fields a program fills from the clock or a counter: tcp.seq, tcp.ack, tcp.csum, ts.val, ts.ecr, ip.id, ip.csum, udp.csum, ... (every header field: see the docs), a byte range START..END, or `packet` (compare the verdict alone) (repeatable).
    #[arg(long = "ignore", value_name = "FIELD")]
    pub ignore: Vec<String>,
    /// What map NAME must hold after each packet ran once from the maps as set up: a JSON file of {"key": K, "value": V} (fields left out are not compared) or {"key": K, "absent": true} (repeatable).
    #[arg(long = "expect-map", value_name = "NAME=FILE.json")]
    pub expect_maps: Vec<String>,
    /// The flow keys a flow dissector must fill for every packet, as JSON of struct bpf_flow_keys' fields (those left out are not compared): '{"ip_proto": 6, "dport": 80, "ipv4_dst": "10.0.0.2"}'.
    #[arg(long = "expect-flow-keys", value_name = "JSON")]
    pub expect_flow_keys: Option<String>,
    /// The flags a flow dissector's test runs pass in its flow keys: PARSE_1ST_FRAG, STOP_AT_FLOW_LABEL, STOP_AT_ENCAP (comma-separated), or a number.
    #[arg(long = "flow-flags", value_name = "FLAGS")]
    pub flow_flags: Option<String>,
    /// Time each packet with its own BPF_PROG_TEST_RUN instead of in BPF.
    #[arg(long)]
    pub per_call: bool,
    #[command(flatten)]
    pub body: BodyArgs,
}

// How a user's object is loaded: shared by `run` and `live`.
#[derive(Debug, Args, Clone, Default)]
pub struct LoadArgs {
    /// The program to use, when the object holds several.
    #[arg(long, value_name = "NAME")]
    pub program: Option<String>,
    /// Fill the object's map NAME from a JSON file first (repeatable).
    #[arg(long = "map", value_name = "NAME=FILE.json")]
    pub maps: Vec<String>,
    /// Set the object's global variable NAME before load: `volatile const` configuration in .rodata, or .data, .bss, .rodata.NAME, .data.NAME; VALUE is a number, an IPv4/IPv6/MAC address, an enumerator, or JSON for arrays and structs (repeatable).
    #[arg(long = "global", value_name = "NAME=VALUE")]
    pub globals: Vec<String>,
    /// Use the map pinned at PATH (by your control plane) as the object's map NAME (repeatable).
    #[arg(long = "map-pin", value_name = "NAME=PATH")]
    pub pins: Vec<String>,
    /// Put program PROG (of this object, or of OBJECT) in slot SLOT of prog array MAP, for tail calls; PROG `none` leaves the slot empty on purpose (repeatable).
    #[arg(long = "tail-call", value_name = "MAP:SLOT=PROG[@OBJECT]")]
    pub tail_calls: Vec<String>,
    /// The type of programs whose section names libbpf does not know (objects built for their own loader, such as Cilium's xdp/entry): libbpf's name of the type or its section prefix (xdp, tc, sched_cls, socket, ...).
    #[arg(long = "program-type", value_name = "TYPE", value_parser = ProgKind::parse)]
    pub program_type: Option<ProgKind>,
}

impl LoadArgs {
    /// --map's (map, JSON file) pairs.
    pub fn map_files(&self) -> Result<Vec<(String, PathBuf)>> {
        self.maps.iter().map(|m| name_value("--map", m)).collect()
    }

    /// --map-pin's (map, pinned path) pairs.
    pub fn map_pins(&self) -> Result<Vec<(String, PathBuf)>> {
        self.pins.iter().map(|m| name_value("--map-pin", m)).collect()
    }

    /// --global's values.
    pub fn global_values(&self) -> Result<Vec<GlobalValue>> {
        self.globals.iter().map(|g| GlobalValue::parse(g)).collect()
    }
}

// How `bpfbench verifier` opens objects: as `run` would.
#[derive(Debug, Args, Clone, Default)]
pub struct VerifierArgs {
    /// The type of programs whose section names libbpf does not know (objects built for their own loader): libbpf's name of the type or its section prefix (xdp, tc, sched_cls, socket, ...).
    #[arg(long = "program-type", value_name = "TYPE", value_parser = ProgKind::parse)]
    pub program_type: Option<ProgKind>,
    /// Set the objects' global variable NAME before load, as `run --global` does: .rodata values the verifier then sees as constants (repeatable).
    #[arg(long = "global", value_name = "NAME=VALUE")]
    pub globals: Vec<String>,
}

impl VerifierArgs {
    /// What the verifier makes of each program of `objects`, opened with
    /// these programs' type and globals (set in each object that has them).
    pub fn report(&self, objects: &[&Path]) -> Result<crate::record::verifier::VerifierReport> {
        let globals = self.globals.iter().map(|g| GlobalValue::parse(g)).collect::<Result<Vec<_>>>()?;
        let open = |path: &Path| -> Result<crate::kernel::object::ObjectFile> {
            let mut object = crate::kernel::object::ObjectFile::open(path)?;
            if let Some(kind) = self.program_type {
                object.assume_type(kind)?;
            }
            super::globals::set(&mut object, &globals)?;
            Ok(object)
        };
        crate::kernel::object::verify::report(objects, &open)
    }
}

/// A prog array slot to fill: `MAP:SLOT=PROG[@OBJECT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotFill {
    pub map: String,
    pub slot: u32,
    pub program: String,
    /// Another object the program is loaded from; `None`: the user's own.
    pub object: Option<PathBuf>,
}

impl SlotFill {
    /// Parses `MAP:SLOT=PROG[@OBJECT]` or `MAP:SLOT=none`; a relative
    /// OBJECT is taken from `dir`.
    pub fn parse(s: &str, dir: &Path) -> Result<SlotFill> {
        let bad =
            || anyhow::anyhow!("--tail-call expects MAP:SLOT=PROG, MAP:SLOT=PROG@OBJECT or MAP:SLOT=none, got '{s}'");
        let (target, source) = s.split_once('=').ok_or_else(bad)?;
        let (map, slot) = target.split_once(':').ok_or_else(bad)?;
        let slot: u32 = slot.trim().parse().map_err(|_| bad())?;
        let (program, object) = match source.split_once('@') {
            Some((p, o)) if !o.is_empty() => (p, Some(if Path::new(o).is_absolute() { o.into() } else { dir.join(o) })),
            Some(_) => return Err(bad()),
            None => (source, None),
        };
        ensure!(!map.is_empty() && !program.is_empty(), bad());
        Ok(SlotFill { map: map.to_string(), slot, program: program.to_string(), object })
    }

    /// `MAP:SLOT=none`: the slot is meant to be empty, and a path may reach
    /// it (a program named none: `none@OBJECT`).
    pub fn left_empty(&self) -> bool {
        self.program == EMPTY_SLOT && self.object.is_none()
    }
}

/// The program name that leaves a slot empty on purpose.
pub const EMPTY_SLOT: &str = "none";

/// The user's object as its test-run and its attached workloads both load
/// it: where it is and comes from, which program, and what is set before
/// load.
#[derive(Debug, Clone)]
pub struct UserObject {
    /// The workload's name in results: the object's or the spec file's.
    pub name: String,
    pub object: PathBuf,
    /// The project the program comes from (a spec's `project`): the
    /// corpus groups its table by it.
    pub project: Option<String>,
    /// The command that builds the object (a spec's `build`), said when
    /// the object is missing.
    pub build: Option<String>,
    pub program: Option<String>,
    /// (map, JSON file) to fill before validation.
    pub maps: Vec<(String, PathBuf)>,
    /// (map, pinned path) to use instead of the object's own map.
    pub pins: Vec<(String, PathBuf)>,
    /// The object's global variables to set before load.
    pub globals: Vec<GlobalValue>,
    /// The type of programs whose section libbpf does not know.
    pub program_type: Option<ProgKind>,
}

impl UserObject {
    /// `object` as the command line's load options say.
    pub fn from_args(object: &Path, load: &LoadArgs) -> Result<UserObject> {
        Ok(UserObject {
            name: stem(object),
            object: object.to_path_buf(),
            project: None,
            build: None,
            program: load.program.clone(),
            maps: load.map_files()?,
            pins: load.map_pins()?,
            globals: load.global_values()?,
            program_type: load.program_type,
        })
    }

    /// Opens `path` (the user's object, or one a --tail-call names), its
    /// programs of unknown sections typed as --program-type says, the
    /// user's object with its globals set.
    pub fn open(&self, path: &Path) -> Result<crate::kernel::object::ObjectFile> {
        let mut object = crate::kernel::object::ObjectFile::open(path)?;
        if let Some(kind) = self.program_type {
            object.assume_type(kind)?;
        }
        if path == self.object {
            super::globals::set(&mut object, &self.globals)?;
        }
        Ok(object)
    }
}

/// Everything bpfbench needs to know about a user's object.
#[derive(Debug, Clone)]
pub struct ObjectSetup {
    pub user: UserObject,
    /// Prog array slots to fill before validation.
    pub tail_calls: Vec<SlotFill>,
    pub cases: Vec<CaseSpec>,
    pub record: Option<PathBuf>,
    pub per_call: bool,
    /// Inline, called, or inline where the verifier accepts it.
    pub body: BodyChoice,
}

/// `NAME=VALUE` of option `flag`.
fn name_value(flag: &str, s: &str) -> Result<(String, PathBuf)> {
    match s.split_once('=') {
        Some((n, v)) if !n.is_empty() && !v.is_empty() => Ok((n.to_string(), PathBuf::from(v))),
        _ => bail!("{flag} expects NAME={}, got '{s}'", if flag == "--map" { "FILE.json" } else { "PATH" }),
    }
}

/// The object's file name without `.o` or `.bpf.o`.
fn stem(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.trim_end_matches(".toml").trim_end_matches(".o").trim_end_matches(".bpf").to_string()
}

impl ObjectSetup {
    /// The set-up `target` names: a spec file (FILE.toml) with `args` on
    /// top, or an object file with `args` alone.
    pub fn from_target(target: &Path, args: &ObjectArgs) -> Result<ObjectSetup> {
        if target.extension().is_some_and(|e| e == "toml") {
            ObjectSetup::from_spec_file(target, args)
        } else {
            ObjectSetup::from_args(target, args)
        }
    }

    /// `bpfbench run FILE.bpf.o` with options: one case, named after the
    /// program (or "default" until the object says which program it is).
    pub fn from_args(object: &Path, args: &ObjectArgs) -> Result<ObjectSetup> {
        let case = CaseSpec {
            name: args.load.program.clone().unwrap_or_else(|| "default".into()),
            packets: args.packets.clone(),
            pcap: args.pcap.clone(),
            expect: args.expect.clone(),
            expect_packets: args.expect_packets.clone(),
            expect_pcap: args.expect_pcap.clone(),
            skb: args
                .skb
                .as_deref()
                .map(|s| serde_json::from_str(s).map_err(|e| anyhow::anyhow!("--skb {s}: not a JSON object ({e})")))
                .transpose()?,
            ctx: args
                .ctx
                .as_deref()
                .map(|s| serde_json::from_str(s).map_err(|e| anyhow::anyhow!("--ctx {s}: not JSON ({e})")))
                .transpose()?,
            ignore: args.ignore.clone(),
            expect_maps: args.expect_maps.iter().map(|m| MapExpectation::parse_flag(m)).collect::<Result<_>>()?,
            expect_flow_keys: args
                .expect_flow_keys
                .as_deref()
                .map(|s| {
                    serde_json::from_str(s)
                        .map_err(|e| anyhow::anyhow!("--expect-flow-keys {s}: not a JSON object ({e})"))
                })
                .transpose()?,
            flow_flags: args.flow_flags.clone(),
        };
        Ok(ObjectSetup {
            user: UserObject::from_args(object, &args.load)?,
            tail_calls: args
                .load
                .tail_calls
                .iter()
                .map(|t| SlotFill::parse(t, Path::new("")))
                .collect::<Result<_>>()?,
            cases: vec![case],
            record: args.record.clone(),
            per_call: args.per_call,
            body: args.body.body,
        })
    }

    /// `bpfbench run bench.toml`: the spec file says what the options would.
    pub fn from_spec_file(path: &Path, args: &ObjectArgs) -> Result<ObjectSetup> {
        let given: Vec<&str> = [
            ("--program", args.load.program.is_some()),
            ("--packet", !args.packets.is_empty()),
            ("--pcap", args.pcap.is_some()),
            ("--expect", args.expect.is_some()),
            ("--expect-packet", !args.expect_packets.is_empty()),
            ("--expect-pcap", args.expect_pcap.is_some()),
            ("--map", !args.load.maps.is_empty()),
            ("--map-pin", !args.load.pins.is_empty()),
            ("--global", !args.load.globals.is_empty()),
            ("--tail-call", !args.load.tail_calls.is_empty()),
            ("--program-type", args.load.program_type.is_some()),
            ("--skb", args.skb.is_some()),
            ("--ctx", args.ctx.is_some()),
            ("--ignore", !args.ignore.is_empty()),
            ("--expect-map", !args.expect_maps.is_empty()),
            ("--expect-flow-keys", args.expect_flow_keys.is_some()),
            ("--flow-flags", args.flow_flags.is_some()),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(flag, _)| *flag)
        .collect();
        ensure!(given.is_empty(), "{} are set in {}, not on the command line", given.join(", "), path.display());
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let file: SpecFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start].lines().count().max(1));
            anyhow::anyhow!(
                "{}{}: {}",
                path.display(),
                line.map(|l| format!(" line {l}")).unwrap_or_default(),
                e.message().trim()
            )
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let at = |p: &PathBuf| if p.is_absolute() { p.clone() } else { dir.join(p) };
        ensure!(!file.cases.is_empty(), "{} has no [[case]]; give at least one", path.display());
        let mut cases: Vec<CaseSpec> = Vec::new();
        for c in file.cases {
            ensure!(
                !c.name.trim().is_empty() && !c.name.contains('/'),
                "{}: a case needs a name without '/' (got '{}')",
                path.display(),
                c.name
            );
            ensure!(!cases.iter().any(|x| x.name == c.name), "{}: two cases are named '{}'", path.display(), c.name);
            let skb = c
                .skb
                .map(serde_json::to_value)
                .transpose()
                .with_context(|| format!("{}: case '{}': skb", path.display(), c.name))?;
            let ctx = c
                .ctx
                .map(serde_json::to_value)
                .transpose()
                .with_context(|| format!("{}: case '{}': ctx", path.display(), c.name))?;
            let expect_maps = c
                .expect_maps
                .into_iter()
                .map(|(map, v)| match v {
                    toml::Value::String(file) => MapExpectation::from_file(&map, &at(&PathBuf::from(file))),
                    entries => {
                        let json = serde_json::to_value(entries)
                            .with_context(|| format!("{}: case '{}': expect-maps.{map}", path.display(), c.name))?;
                        MapExpectation::from_value(&map, &path.display().to_string(), json)
                    }
                })
                .collect::<Result<_>>()?;
            let expect_flow_keys = c
                .expect_flow_keys
                .map(serde_json::to_value)
                .transpose()
                .with_context(|| format!("{}: case '{}': expect-flow-keys", path.display(), c.name))?;
            cases.push(CaseSpec {
                ctx,
                name: c.name,
                packets: c.packet.into_vec(),
                pcap: c.pcap.as_ref().map(at),
                expect: c.expect,
                expect_packets: c.expect_packet.into_vec(),
                expect_pcap: c.expect_pcap.as_ref().map(at),
                skb,
                ignore: c.ignore.into_vec(),
                expect_maps,
                expect_flow_keys,
                flow_flags: c.flow_flags,
            });
        }
        let user = UserObject {
            name: file.name.unwrap_or_else(|| stem(path)),
            object: at(&file.object),
            project: file.project,
            build: file.build,
            program: file.program,
            maps: file.maps.iter().map(|(n, p)| (n.clone(), at(p))).collect(),
            pins: file.pinned.into_iter().collect(),
            globals: file
                .globals
                .into_iter()
                .map(|(name, value)| {
                    let value =
                        serde_json::to_value(value).with_context(|| format!("{}: globals: {name}", path.display()))?;
                    Ok(GlobalValue { name, value })
                })
                .collect::<Result<_>>()?,
            program_type: file
                .program_type
                .as_deref()
                .map(ProgKind::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("{}: program-type {e}", path.display()))?,
        };
        Ok(ObjectSetup {
            user,
            tail_calls: file.tail_calls.iter().map(|t| SlotFill::parse(t, dir)).collect::<Result<_>>()?,
            cases,
            record: args.record.clone(),
            per_call: args.per_call || file.per_call.unwrap_or(false),
            // The command line's choice, unless it left the default and the file makes one.
            body: match (args.body.body, file.body) {
                (BodyChoice::Auto, Some(b)) => b,
                (b, _) => b,
            },
        })
    }
}

/// A spec file, e.g.
///
/// ```toml
/// object = "xdp_encap.bpf.o"        # relative to this file
/// program = "xdp_encap"             # when the object holds several
/// project = "encap"                 # the corpus's group
/// build = "make -C encap"           # said when the object is missing
/// [maps]
/// services = "services.json"        # filled before validation
/// [globals]
/// vip = "10.0.0.10"                 # .rodata, set before load
/// [[case]]
/// name = "to-service"
/// packet = "eth/ipv4(dst=10.0.0.10)/tcp(dport=80)/payload(32)"
/// expect = "XDP_TX"
/// ```
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct SpecFile {
    name: Option<String>,
    object: PathBuf,
    /// Where the program comes from: "katran", "linux selftests".
    project: Option<String>,
    /// The command that builds `object`, for when it is missing.
    build: Option<String>,
    program: Option<String>,
    #[serde(default)]
    maps: BTreeMap<String, PathBuf>,
    /// Maps pinned by the user's control plane, as --map-pin: NAME = PATH.
    #[serde(default)]
    pinned: BTreeMap<String, PathBuf>,
    /// The object's global variables, as --global: NAME = VALUE.
    #[serde(default)]
    globals: BTreeMap<String, toml::Value>,
    /// Prog array slots, as --tail-call: "MAP:SLOT=PROG[@OBJECT]".
    #[serde(default)]
    tail_calls: Vec<String>,
    /// As --program-type: "xdp" or "tc".
    program_type: Option<String>,
    per_call: Option<bool>,
    /// "auto", "inline" or "call", as --body.
    body: Option<BodyChoice>,
    #[serde(default, rename = "case")]
    cases: Vec<SpecCase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct SpecCase {
    name: String,
    #[serde(default)]
    packet: OneOrMany,
    pcap: Option<PathBuf>,
    expect: Option<String>,
    #[serde(default)]
    expect_packet: OneOrMany,
    expect_pcap: Option<PathBuf>,
    /// `__sk_buff` fields, as `--skb` takes them: `skb = { mark = 7 }`.
    skb: Option<toml::Table>,
    /// A raw tracepoint's or syscall program's context, as `--ctx`:
    /// `ctx = [1, 2]` or `ctx = "0a0b"`.
    ctx: Option<toml::Value>,
    /// As --ignore: `ignore = ["tcp.seq", "ts.val"]`.
    #[serde(default)]
    ignore: OneOrMany,
    /// As --expect-map: `expect-maps = { flows = "after.json" }`, or the
    /// entries inline: `flows = [{ key = 1, value = { packets = 1 } }]`.
    #[serde(default)]
    expect_maps: BTreeMap<String, toml::Value>,
    /// As --expect-flow-keys: `expect-flow-keys = { ip_proto = 6, dport = 80 }`.
    expect_flow_keys: Option<toml::Table>,
    /// As --flow-flags: `flow-flags = "PARSE_1ST_FRAG"`.
    flow_flags: Option<String>,
}

/// A string or a list of strings.
#[derive(Debug, Default, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}
