//! What a file must be before libbpf sees it: present, readable, an ELF
//! object, and one for the BPF machine. Each refusal names the problem.

use std::path::Path;

use anyhow::{Context, Result, bail};
use object::{Architecture, Object, ObjectSection, ObjectSymbol, RelocationTarget, SymbolKind};

/// Facts the ELF holds that libbpf does not hand out.
#[derive(Debug, Clone)]
pub struct ElfFacts {
    /// The `license` section's string ("" when absent).
    pub license: String,
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
    Ok(ElfFacts { license, prog_array_targets })
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

/// Makes the static functions of `data`'s program sections (every
/// executable section but `.text`) global, in place, and returns their
/// names. libbpf loads no static program ("program 'X' is static and not
/// supported"), and Cilium declares its tail-call programs static: its own
/// loader takes them. The symbol's binding is the only byte changed, as
/// `llvm-objcopy --globalize-symbol` changes it.
pub fn globalize_static_programs(data: &mut [u8]) -> Result<Vec<String>> {
    use object::elf;
    use object::read::elf::{FileHeader, SectionHeader, Sym};
    let endian = object::LittleEndian;
    let (symtab_offset, fix) = {
        let header = elf::FileHeader64::<object::LittleEndian>::parse(&*data).context("a damaged ELF header")?;
        let sections = header.sections(endian, &*data).context("a damaged ELF section table")?;
        let Some((_, symtab_header)) = sections.iter().enumerate().find(|(_, s)| s.sh_type(endian) == elf::SHT_SYMTAB)
        else {
            return Ok(Vec::new());
        };
        let symbols = sections.symbols(endian, &*data, elf::SHT_SYMTAB).context("a damaged ELF symbol table")?;
        let mut fix = Vec::new();
        for (i, sym) in symbols.iter().enumerate() {
            if sym.st_type() != elf::STT_FUNC || sym.st_bind() != elf::STB_LOCAL {
                continue;
            }
            let Some(index) = sym.st_shndx(endian).index() else { continue };
            let Ok(section) = sections.section(object::SectionIndex(usize::from(index))) else { continue };
            let executable = section.sh_flags(endian).0 & elf::SHF_EXECINSTR.0 != 0;
            let section_name = sections.section_name(endian, section).unwrap_or_default();
            if !executable || section_name == b".text" {
                continue;
            }
            let name = String::from_utf8_lossy(symbols.symbol_name(endian, sym).unwrap_or_default()).into_owned();
            fix.push((i, name));
        }
        (symtab_header.sh_offset(endian) as usize, fix)
    };
    let entry = size_of::<elf::Sym64<object::LittleEndian>>();
    // st_info follows the 4-byte st_name.
    let info = elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_FUNC).0;
    for (i, _) in &fix {
        let at = symtab_offset + i * entry + 4;
        *data.get_mut(at).context("a symbol past the end of the file")? = info;
    }
    Ok(fix.into_iter().map(|(_, name)| name).collect())
}
