//! Compiles every BPF program under `src/` (each `NAME.bpf.c`) with Debian's
//! clang-19 into `NAME.bpf.o` and generates a libbpf-rs skeleton
//! `NAME.skel.rs` next to the other build outputs. A workload includes its
//! skeleton with `bpf_skeleton!("NAME")` (or the object's bytes with
//! `bpf_object_bytes!("NAME")`); nothing here lists programs or headers.
//!
//! Cargo reruns this script whenever anything under `src/` changes: a new
//! `.bpf.c` file is found on the next build, and the commit a result
//! records (`git describe --dirty`) says `-dirty` for a binary built from
//! an edited tree, which a rerun only on BPF inputs would leave stale. A
//! rerun costs the script's own run: objects whose inputs did not change
//! are not recompiled (an object depends on its source, on every header
//! beside the sources and on the compiler and flags).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use libbpf_cargo::SkeletonBuilder;

const BPF_SUFFIX: &str = ".bpf.c";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let clang = env::var("BPF_CLANG").unwrap_or_else(|_| "clang-19".to_string());
    let extra_cflags = env::var("BPF_EXTRA_CFLAGS").unwrap_or_default();

    let mut sources = Vec::new();
    let mut headers = Vec::new();
    walk(Path::new("src"), &mut |p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(BPF_SUFFIX) {
            sources.push(p.to_path_buf());
        } else if name.ends_with(".h") {
            headers.push(p.to_path_buf());
        }
    });
    sources.sort();
    let newest_header = headers.iter().filter_map(|h| mtime(h)).max();

    let mut names: Vec<String> = Vec::new();
    let mut stale = Vec::new();
    for src in &sources {
        let file = src.file_name().and_then(|n| n.to_str()).expect("UTF-8 file name");
        let name = file.trim_end_matches(BPF_SUFFIX).to_string();
        assert!(!names.contains(&name), "two BPF sources are named {file}; skeleton names must be unique");
        names.push(name.clone());

        let skel = out.join(format!("{name}.skel.rs"));
        let object = out.join(format!("{name}.bpf.o"));
        let stamp = out.join(format!("{name}.flags"));
        let flags = format!("{clang}\n{extra_cflags}\n");
        let inputs_newest = mtime(src).into_iter().chain(newest_header).max();
        let fresh = fs::read_to_string(&stamp).ok().as_deref() == Some(flags.as_str())
            && object.exists()
            && matches!((mtime(&skel), inputs_newest), (Some(built), Some(input)) if built >= input);
        if !fresh {
            stale.push((src.clone(), skel, object, stamp, flags));
        }
    }
    let mut args = vec![
        "-I/usr/include/x86_64-linux-gnu".to_string(),
        "-Isrc/bpf".to_string(),
        "-Wall".to_string(),
        "-Werror".to_string(),
        "-mcpu=v3".to_string(),
    ];
    args.extend(extra_cflags.split_whitespace().map(str::to_string));
    on_every_cpu(stale, |(src, skel, object, stamp, flags)| {
        SkeletonBuilder::new()
            .source(&src)
            .clang(&clang)
            .clang_args(&args)
            .obj(&object)
            .build_and_generate(&skel)
            .unwrap_or_else(|e| panic!("building {} with {clang} failed: {e:#}", src.display()));
        fs::write(&stamp, flags).expect("writing the flags stamp");
    });
    compile_test_objects(&out, &clang);
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=tests/objects");
    println!("cargo:rerun-if-changed=examples");
    println!("cargo:rerun-if-env-changed=BPF_EXTRA_CFLAGS");
    println!("cargo:rerun-if-env-changed=BPF_CLANG");
    record_build_facts(&clang, &extra_cflags);
}

/// Compiles the integration tests' BPF objects (`tests/objects/*.bpf.c`,
/// and the README's `examples/**/*.bpf.c`) into `OUT_DIR/test-objects/`,
/// as a user would: plain objects, no skeleton, default CPU version.
fn compile_test_objects(out: &Path, clang: &str) {
    let dir = out.join("test-objects");
    fs::create_dir_all(&dir).expect("creating test-objects");
    let (mut sources, mut headers) = (Vec::new(), Vec::new());
    for dir in ["tests/objects", "examples"] {
        walk(Path::new(dir), &mut |p| {
            let name = p.to_string_lossy();
            if name.ends_with(BPF_SUFFIX) {
                sources.push(p.to_path_buf());
            } else if name.ends_with(".h") {
                headers.push(p.to_path_buf());
            }
        });
    }
    // An object depends on its source and on the headers beside the test objects.
    let newest_header = headers.iter().filter_map(|h| mtime(h)).max();
    let stale: Vec<(PathBuf, PathBuf)> = sources
        .into_iter()
        .filter_map(|src| {
            let file = src.file_name().and_then(|n| n.to_str()).expect("UTF-8 file name");
            let object = dir.join(file.replace(".bpf.c", ".bpf.o"));
            let inputs_newest = mtime(&src).into_iter().chain(newest_header).max();
            let fresh = matches!((mtime(&object), inputs_newest), (Some(built), Some(input)) if built >= input);
            (!fresh).then_some((src, object))
        })
        .collect();
    on_every_cpu(stale, |(src, object)| {
        SkeletonBuilder::new()
            .source(&src)
            .clang(clang)
            .clang_args(["-I/usr/include/x86_64-linux-gnu", "-Wall", "-Werror"])
            .obj(&object)
            .build()
            .unwrap_or_else(|e| panic!("building {} with {clang} failed: {e:#}", src.display()));
    });
}

/// Runs `build` on every item, on as many threads as there are CPUs: the
/// compiles are independent, and the script's run sits on the library's
/// critical path (9.6 s one after another on this project's two CPUs).
fn on_every_cpu<T: Send>(items: Vec<T>, build: impl Fn(T) + Sync) {
    let queue = std::sync::Mutex::new(items);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let Some(item) = queue.lock().expect("no builder panicked holding it").pop() else { break };
                    build(item);
                }
            });
        }
    });
}

/// Calls `visit` for every file under `dir`, recursively.
fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, visit);
        } else {
            visit(&path);
        }
    }
}

fn mtime(p: &Path) -> Option<SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Facts a result records about its build: git commit, clang, BPF flags.
fn record_build_facts(clang: &str, extra_cflags: &str) {
    let run = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    let commit = run("git", &["describe", "--always", "--dirty", "--abbrev=12"]).unwrap_or_else(|| "unknown".into());
    let clang_version =
        run(clang, &["--version"]).and_then(|v| v.lines().next().map(str::to_string)).unwrap_or_default();
    println!("cargo:rustc-env=BPFBENCH_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=BPFBENCH_CLANG_VERSION={clang_version}");
    println!("cargo:rustc-env=BPFBENCH_BPF_CFLAGS={extra_cflags}");
    // A new commit or a change of the working tree changes the recorded commit.
    if Path::new(".git/HEAD").exists() {
        println!("cargo:rerun-if-changed=.git/HEAD");
        println!("cargo:rerun-if-changed=.git/index");
    }
}
