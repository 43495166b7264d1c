//! What a file must be before libbpf sees it: present, readable, an ELF
//! object, and one for the BPF machine. Each refusal names the problem.

use std::path::Path;

use anyhow::{Context, Result, bail};
use object::{Architecture, Object, ObjectSection, ObjectSymbol, RelocationTarget, SymbolKind};

/// Facts the ELF holds that libbpf does not hand out.
#[derive(Debug, Clone)]
pub struct ElfFacts {
    /// The `license` section's string ("" when absent), or the license
    /// bpfbench loads the object under where it has none (`rust_license`).
    pub license: String,
    /// No `license` section: the object loads under Aya's default ("GPL").
    pub license_by_default: bool,
    /// Functions the object's maps point at: programs a prog array is
    /// declared with (`.values = { [1] = &prog }`), which libbpf puts in
    /// their slots only if they are loaded too.
    pub prog_array_targets: Vec<String>,
}

/// Fails unless `path` is an ELF object for BPF.
pub fn check_bpf_elf(path: &Path) -> Result<ElfFacts> {
    let name = path.display();
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!("{name} does not exist"),
        Err(e) => bail!("cannot read {name}: {e}"),
    };
    if data.len() < 4 || &data[..4] != b"\x7fELF" {
        bail!("{name} is not an ELF file: give a BPF object compiled with clang -target bpf");
    }
    let file = object::File::parse(&*data).with_context(|| format!("{name} is a damaged ELF file"))?;
    if file.architecture() != Architecture::Bpf {
        bail!(
            "{name} is an ELF file for {:?}, not a BPF object: compile it with clang -target bpf",
            file.architecture()
        );
    }
    let calls = compiler_library_calls(&file);
    if !calls.is_empty() {
        bail!(
            "{name} calls {}: compiler support functions (libgcc's), which no BPF program can call; its compiler emitted them where it had no BPF instruction (GCC 12's BPF backend for a byte swap); build it with clang, or with a compiler that has the instruction",
            calls.join(", ")
        );
    }
    let license = file
        .section_by_name("license")
        .and_then(|s| s.data().ok())
        .map(|d| String::from_utf8_lossy(d).trim_end_matches('\0').to_string())
        .unwrap_or_default();
    let prog_array_targets = file
        .section_by_name(".maps")
        .map(|maps| {
            maps.relocations()
                .filter_map(|(_, r)| match r.target() {
                    RelocationTarget::Symbol(i) => file.symbol_by_index(i).ok(),
                    _ => None,
                })
                .filter(|sym| sym.kind() == SymbolKind::Text)
                .filter_map(|sym| sym.name().ok().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    Ok(ElfFacts { license, license_by_default: false, prog_array_targets })
}

/// The undefined functions `file` calls that a compiler's support library
/// defines: `__` then letters, a mode (si, di, ti) and the operand count
/// (`__bswapsi2`, `__divdi3`, `__popcountdi2`), as libgcc names them.
fn compiler_library_calls(file: &object::File<'_>) -> Vec<String> {
    let is_support = |n: &str| {
        let Some(body) = n.strip_prefix("__") else { return false };
        let Some(stem) = body.strip_suffix(['2', '3']) else { return false };
        let Some(op) = ["si", "di", "ti"].iter().find_map(|m| stem.strip_suffix(m)) else { return false };
        !op.is_empty() && op.bytes().all(|b| b.is_ascii_lowercase())
    };
    let mut calls: Vec<String> = file
        .symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().filter(|n| is_support(n)).map(String::from))
        .collect();
    calls.sort();
    calls.dedup();
    calls
}

/// ELF's machine number for BPF (EM_BPF).
const EM_BPF: u16 = 247;

/// Whether `path` is an ELF file for the BPF machine, judged by its header
/// alone (cheap enough to tell a BPF object from an executable).
pub fn is_bpf_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 20];
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    if f.read_exact(&mut head).is_err() || &head[..4] != b"\x7fELF" {
        return false;
    }
    // e_machine follows e_ident (16 bytes) and e_type, in the file's byte order.
    let machine = [head[18], head[19]];
    let machine = if head[5] == 2 { u16::from_be_bytes(machine) } else { u16::from_le_bytes(machine) };
    machine == EM_BPF
}
