//! The layer order `src/lib.rs` states holds in the code: every `crate::`
//! path of a module names a module of a lower layer (or its own), and only
//! `kernel` uses `libbpf_sys`. Reads the sources as text; runs nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Module → layer, from lib.rs's numbered list ("//! 3. `kernel`: ...").
fn layers() -> BTreeMap<String, usize> {
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).unwrap();
    let mut layers = BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//! ")) {
        let Some((number, rest)) = line.split_once(". ") else { continue };
        let Ok(layer) = number.trim().parse::<usize>() else { continue };
        let names = rest.split(':').next().unwrap_or("");
        for name in names.split(',').map(|n| n.trim().trim_matches('`')).filter(|n| !n.is_empty()) {
            layers.insert(name.to_string(), layer);
        }
    }
    layers
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules a file's code names as `crate::NAME`.
fn crate_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        // Not `bpfbench_crate::` or the like.
        if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[i + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if rest.starts_with('{') {
            // `crate::{a, b::c}`: each first segment.
            let group = &rest[1..rest.find('}').unwrap_or(rest.len())];
            found.extend(group.split(',').filter_map(|p| p.trim().split("::").next()).map(str::to_string));
        } else if !name.is_empty() {
            found.push(name);
        }
    }
    found
}

/// The text without comments (a doc comment may name any module).
fn code_of(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The top-level module a file of `src/` belongs to (None: lib.rs, the binary).
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(SRC).unwrap();
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    match first.as_str() {
        "lib.rs" | "bin" => None,
        f => Some(f.trim_end_matches(".rs").to_string()),
    }
}

#[test]
fn every_import_points_down_the_layers_lib_rs_states() {
    let layers = layers();
    assert!(layers.len() >= 10 && layers["record"] < layers["kernel"], "lib.rs's list was not read: {layers:?}");
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut against = Vec::new();
    for file in &files {
        let Some(module) = module_of(file) else { continue };
        let Some(&own) = layers.get(&module) else {
            against.push(format!("src/{module} is in no layer of lib.rs's list"));
            continue;
        };
        let text = code_of(&std::fs::read_to_string(file).unwrap());
        for used in crate_paths(&text) {
            // Macros lib.rs defines (bpf_skeleton!, ...) belong to no layer.
            let Some(&theirs) = layers.get(&used) else { continue };
            if used != module && theirs >= own {
                against.push(format!("{} (layer {own}) uses crate::{used} (layer {theirs})", file.display()));
            }
        }
        if module != "kernel" && text.contains("libbpf_sys") {
            against.push(format!("{} uses libbpf_sys outside src/kernel", file.display()));
        }
    }
    assert!(against.is_empty(), "imports against the layers of src/lib.rs:\n{}", against.join("\n"));
}

#[test]
fn the_reader_sees_grouped_and_plain_paths() {
    let text = "use crate::{record::X, stats};\nlet a = crate::kernel::load::f();\nuse my_crate::x;";
    assert_eq!(crate_paths(text), ["record", "stats", "kernel"]);
    assert!(crate_paths(&code_of("/// see crate::workloads\nlet x = 1; // crate::uvm")).is_empty());
}

#[test]
fn reports_render_records_and_statistics_only() {
    let mut files = Vec::new();
    rust_files(&Path::new(SRC).join("report"), &mut files);
    assert!(files.len() > 10, "src/report was not read");
    let mut against = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(SRC).unwrap().to_string_lossy().into_owned();
        let text = code_of(&std::fs::read_to_string(file).unwrap());
        for used in crate_paths(&text) {
            if !["record", "stats", "report"].contains(&used.as_str()) {
                against.push(format!("src/{rel} uses crate::{used}"));
            }
        }
    }
    assert!(against.is_empty(), "reports that read below records:\n{}", against.join("\n"));
}

/// BPF opcodes are known in `src/insn.rs` only: no other file of the
/// tree, its tests or benches, spells an opcode, a class or an operation
/// field in hex, or takes libbpf's `BPF_*` opcode constants.
#[test]
fn opcodes_live_in_the_instruction_module_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    // Spellings of an opcode or one of its fields (the JIT's x86 encodings are not BPF's).
    let shapes = [
        "code == 0x",
        "code: 0x",
        "Insn::new(0x",
        "insn(0x",
        "i(0x",
        "& 0xf0",
        "& 0xe0",
        "code & 0x",
        "BPF_LD",
        "BPF_LDX",
        "BPF_ST",
        "BPF_STX",
        "BPF_ALU",
        "BPF_ALU64",
        "BPF_JMP",
        "BPF_JMP32",
        "BPF_MOV",
        "BPF_EXIT",
        "BPF_CALL",
        "BPF_K",
        "BPF_X",
        "BPF_DW",
        "BPF_W",
        "BPF_MEM",
        "BPF_IMM",
        "BPF_PSEUDO_CALL",
        "BPF_PSEUDO_MAP_FD",
        "BPF_PSEUDO_MAP_VALUE",
    ];
    // A whole word: BPF_ST, not BPF_STATS_RUN_TIME.
    let spelled = |line: &str, shape: &str| {
        line.match_indices(shape).any(|(i, _)| {
            !shape.starts_with("BPF_")
                || !line[i + shape.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        })
    };
    let mut against = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if rel == "src/insn.rs" || rel == "src/uvm/jit/asm.rs" || rel == "tests/cli/layers.rs" {
            continue;
        }
        let text = code_of(&std::fs::read_to_string(file).unwrap());
        for (n, line) in text.lines().enumerate() {
            if let Some(shape) = shapes.iter().find(|s| spelled(line, s)) {
                against.push(format!("{rel}:{}: {shape}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 100, "the tree was not read");
    assert!(against.is_empty(), "opcodes outside src/insn.rs:\n{}", against.join("\n"));
}

/// The binary only parses, calls the library and prints: under 900 lines
/// (what decides, checks or reads a history belongs to the library).
#[test]
fn the_binary_stays_thin() {
    let mut files = Vec::new();
    rust_files(&Path::new(SRC).join("bin"), &mut files);
    let lines: usize = files.iter().map(|f| std::fs::read_to_string(f).unwrap().lines().count()).sum();
    assert!(files.len() >= 5, "src/bin was not read");
    assert!(lines < 900, "src/bin has {lines} lines: move what is not parsing or printing into the library");
}

/// Files under 800 lines, functions under 150, but for the two switches
/// over every BPF instruction (the JIT's translate, the interpreter's
/// execute): a function is counted from its `fn` line to the `}` at its
/// own indentation, as rustfmt writes it.
#[test]
fn files_and_functions_stay_readable() {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let switches = ["translate", "execute"];
    let mut long = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() >= 800 {
            long.push(format!("{}: {} lines", f.display(), lines.len()));
        }
        for (i, line) in lines.iter().enumerate() {
            let code = line.trim_start();
            let indent = &line[..line.len() - code.len()];
            let after_fn =
                ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn ", "const fn ", "pub const fn ", "unsafe fn "]
                    .iter()
                    .find_map(|p| code.strip_prefix(p));
            let Some(after_fn) = after_fn.filter(|_| !code.ends_with(';')) else { continue };
            let name: String = after_fn.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let closing = format!("{indent}}}");
            let Some(len) = lines[i + 1..].iter().position(|l| *l == closing).map(|n| n + 2) else { continue };
            if len > 150 && !switches.contains(&name.as_str()) {
                long.push(format!("{}:{}: fn {name} is {len} lines", f.display(), i + 1));
            }
        }
    }
    assert!(files.len() > 100, "the tree was not read");
    assert!(long.is_empty(), "split these where their parts have names of their own:\n{}", long.join("\n"));
}

/// The plain layers know no command line: no clap in `stats`, `packet`,
/// `insn` or `record` (the command lines spell record's enums themselves).
#[test]
fn the_plain_layers_know_no_command_line() {
    let mut against = Vec::new();
    for module in ["stats", "packet", "insn.rs", "record"] {
        let path = Path::new(SRC).join(module);
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(&path, &mut files);
        } else {
            files.push(path);
        }
        for file in files {
            if code_of(&std::fs::read_to_string(&file).unwrap()).contains("clap") {
                against.push(file.strip_prefix(SRC).unwrap().display().to_string());
            }
        }
    }
    assert!(against.is_empty(), "command-line code in the plain layers: {against:?}");
}

/// The arms at the top level of each `match` in `code` whose arms name
/// `ty::` variants, with the line each stands on: (line, arm pattern).
fn match_arms_over(code: &str, ty: &str) -> Vec<Vec<(usize, String)>> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    for (at, _) in code.match_indices("match ") {
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let Some(open) = code[at..].find('{').map(|o| at + o) else { continue };
        // The arms: text at depth 1 between `{`/`,`/`}` and `=>`.
        let (mut depth, mut arms, mut start) = (0usize, Vec::new(), open + 1);
        let mut i = open;
        while i < bytes.len() {
            match bytes[i] {
                b'{' | b'(' | b'[' => depth += 1,
                b'}' | b')' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                    if depth == 1 && bytes[i] == b'}' {
                        start = i + 1;
                    }
                }
                b',' if depth == 1 => start = i + 1,
                b'=' if depth == 1 && bytes.get(i + 1) == Some(&b'>') => {
                    let pattern = code[start..i].trim().to_string();
                    arms.push((code[..start].lines().count() + 1, pattern));
                    start = i + 2;
                }
                _ => {}
            }
            i += 1;
        }
        if arms.iter().any(|(_, p)| p.contains(&format!("{ty}::"))) {
            found.push(arms);
        }
    }
    found
}

/// A `match` over program types, output formats or metrics names every
/// variant: a new one then fails to compile wherever it needs a decision,
/// instead of silently taking a default (`_ =>`, `other =>`).
#[test]
fn matches_over_types_formats_and_metrics_name_every_variant() {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut against = Vec::new();
    let mut seen = 0;
    for file in &files {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for ty in ["ProgKind", "Format", "Metric", "Takes", "Gives", "BatchLoop", "Hook", "AttachPoint", "TriggerKind"]
        {
            for arms in match_arms_over(&code, ty) {
                seen += 1;
                for (line, p) in arms {
                    let binding = p.split(" if ").next().unwrap_or("").trim();
                    let wild = binding == "_"
                        || (!binding.is_empty() && binding.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
                    if wild {
                        against
                            .push(format!("{}:{line}: `{p} =>` over {ty}", file.strip_prefix(SRC).unwrap().display()));
                    }
                }
            }
        }
    }
    assert!(seen > 10, "only {seen} matches over the enums were read");
    assert!(against.is_empty(), "wildcard arms:\n{}", against.join("\n"));
}

/// Program types are described in `kernel/prog_type.rs` alone: no other
/// file spells a kernel program type (beyond "none yet", UNSPEC).
#[test]
fn program_types_are_described_in_one_table() {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut against = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(SRC).unwrap().to_string_lossy().into_owned();
        if rel == "kernel/prog_type.rs" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for (n, line) in code.lines().enumerate() {
            let spelled =
                line.match_indices("BPF_PROG_TYPE_").any(|(i, _)| !line[i..].starts_with("BPF_PROG_TYPE_UNSPEC"));
            if spelled {
                against.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(against.is_empty(), "program types spelled outside kernel/prog_type.rs:\n{}", against.join("\n"));
}

/// The TCG plugin's protocol is written once, in tcg-protocol, which the
/// plugin and the host both build; the attribution of its counts is
/// analysis, not the machine's (`src/system` only marks and reads).
#[test]
fn the_plugins_protocol_is_shared_and_its_attribution_is_analysis() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for manifest in ["Cargo.toml", "tcg-counter/Cargo.toml"] {
        let text = std::fs::read_to_string(root.join(manifest)).unwrap();
        assert!(text.contains("bpfbench-tcg-protocol"), "{manifest} does not build tcg-protocol");
    }
    // What only the protocol may spell: the markers' tag bytes, the kernel's
    // address ranges, the file's words.
    let spelled_once = ["b'B', b'P', b'F'", "0xffff_8000_0000_0000", "0xffff800000000000", "\"region \"", "\"out=\""];
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tcg-counter/src"), &mut files);
    let mut against = Vec::new();
    for file in &files {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for s in spelled_once.iter().filter(|s| code.contains(*s)) {
            against.push(format!("{} spells {s}", file.strip_prefix(root).unwrap().display()));
        }
        let rel = file.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if rel.starts_with("src/system/") && (code.contains("fn attribute") || code.contains("struct Tally")) {
            against.push(format!("{rel} attributes counts: that is src/analysis's"));
        }
    }
    let analysis = std::fs::read_to_string(root.join("src/analysis/kernel_counts.rs")).unwrap();
    assert!(analysis.contains("pub fn attribute("), "the attribution is not in src/analysis");
    assert!(against.is_empty(), "the plugin's protocol or its attribution out of place:\n{}", against.join("\n"));
}

/// One timing engine: the timers of any loaded program (spliced, chain,
/// per call) and the one prepared scenario around them live in
/// `src/engine`; its clients (the own-object workload, the test runner)
/// bring at most a timer of their own (`impl BatchTimer`), never another
/// prepared scenario, timer enum or driver, and no overhead key is a
/// string built by hand.
#[test]
fn programs_are_timed_by_one_engine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/workloads/object"), &mut files);
    rust_files(&root.join("src/workloads/bpf_tests"), &mut files);
    assert!(files.len() > 8, "the engine's clients were not read: {files:?}");
    let mut against = Vec::new();
    for file in &files {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let rel = file.strip_prefix(root).unwrap().display().to_string();
        for shape in
            ["impl PreparedScenario for", "enum Timer", "struct Spliced", "struct ChainTimer", "bpf_skeleton!(\"driver"]
        {
            if code.contains(shape) {
                against.push(format!("{rel} has its own `{shape}`: the engine's (src/engine) serves"));
            }
        }
    }
    let mut all = Vec::new();
    rust_files(&root.join("src"), &mut all);
    for file in &all {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        if code.contains("fn overhead_key(&self) -> String") || code.contains("overhead_key: String") {
            against.push(format!("{}: an overhead key is an OverheadKey", file.strip_prefix(root).unwrap().display()));
        }
    }
    let engine = std::fs::read_to_string(root.join("src/engine/mod.rs")).unwrap();
    for shape in ["pub trait BatchTimer", "pub struct Timed<'a>", "pub struct PerCallBecause"] {
        assert!(engine.contains(shape), "src/engine/mod.rs lacks `{shape}`");
    }
    assert!(against.is_empty(), "timing outside the one engine:\n{}", against.join("\n"));
}

/// Errors reach a reader through `record::error_line` alone, which never
/// ends in an empty reason: no code of `src/` outside its tests writes an
/// error's causes itself with anyhow's alternate form (`{e:#}`).
#[test]
fn errors_are_written_by_error_line_only() {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut against = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // A file's tests, at its end, may write errors as they like.
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (i, line) in code.lines().enumerate() {
            let shapes = ["{e:#}", "{err:#}", "{error:#}", "\"{:#}\""];
            if shapes.iter().any(|s| line.contains(s)) && !line.trim_start().starts_with("//") {
                against.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 100, "src was not read");
    assert!(against.is_empty(), "write errors with record::error_line:\n{}", against.join("\n"));
}
