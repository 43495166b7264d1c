//! What a file must be before libbpf sees it: present, readable, an ELF
//! object, and one for the BPF machine. Each refusal names the problem.

use std::path::Path;

use anyhow::{Context, Result, bail};
use object::{Architecture, Object, ObjectSection};

/// Facts the ELF holds that libbpf does not hand out.
#[derive(Debug, Clone)]
pub struct ElfFacts {
    /// The `license` section's string ("" when absent).
    pub license: String,
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
        bail!("{name} is an ELF file for {:?}, not a BPF object: compile it with clang -target bpf", file.architecture());
    }
    let license = file
        .section_by_name("license")
        .and_then(|s| s.data().ok())
        .map(|d| String::from_utf8_lossy(d).trim_end_matches('\0').to_string())
        .unwrap_or_default();
    Ok(ElfFacts { license })
}
