//! The parts of an ELF64 little-endian file (the BPF objects clang and
//! bpf-linker write) that bpfbench reads and mends in memory: section
//! headers, symbols, relocations. Nothing here writes; `mend` and
//! `legacy_maps` build their images from these.

use anyhow::{Context, Result, ensure};

pub(super) const SHT_SYMTAB: u32 = 2;
pub(super) const SHT_REL: u32 = 9;
pub(super) const SHT_PROGBITS: u32 = 1;
pub(super) const SHF_EXECINSTR: u64 = 4;
pub(super) const SHF_ALLOC: u64 = 2;
pub(super) const SHF_INFO_LINK: u64 = 0x40;
pub(super) const STT_FUNC: u8 = 2;
pub(super) const STB_LOCAL: u8 = 0;
pub(super) const STB_GLOBAL: u8 = 1;
pub(super) const R_BPF_64_32: u32 = 10;
/// BPF_JMP | BPF_CALL, and a call's src_reg for a BPF-to-BPF call.
pub(super) const CALL: u8 = 0x85;
pub(super) const PSEUDO_CALL: u8 = 1;
pub(super) const SHDR_SIZE: usize = 64;
pub(super) const SYM_SIZE: usize = 24;
pub(super) const REL_SIZE: usize = 16;
/// .BTF and .BTF.ext start with this magic.
pub(super) const BTF_MAGIC: u16 = 0xeb9f;

pub(super) fn u16_at(d: &[u8], at: usize) -> Result<u16> {
    Ok(u16::from_le_bytes(slice(d, at as u64, 2)?.try_into().expect("2 bytes")))
}

pub(super) fn u32_at(d: &[u8], at: usize) -> Result<u32> {
    Ok(u32::from_le_bytes(slice(d, at as u64, 4)?.try_into().expect("4 bytes")))
}

pub(super) fn u64_at(d: &[u8], at: usize) -> Result<u64> {
    Ok(u64::from_le_bytes(slice(d, at as u64, 8)?.try_into().expect("8 bytes")))
}

pub(super) fn slice(d: &[u8], at: u64, len: u64) -> Result<&[u8]> {
    let (at, len) = (at as usize, len as usize);
    d.get(at..at.checked_add(len).context("an offset past the end")?).context("a part of the file past its end")
}

/// A NUL-terminated string at `at`.
pub(super) fn c_str(d: &[u8], at: usize) -> Result<String> {
    let rest = d.get(at..).context("a name past the end of the file")?;
    let end = rest.iter().position(|b| *b == 0).context("a name without its end")?;
    Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Section {
    pub(super) name: u32,
    pub(super) kind: u32,
    pub(super) flags: u64,
    pub(super) offset: u64,
    pub(super) size: u64,
    pub(super) link: u32,
    pub(super) info: u32,
    pub(super) align: u64,
    pub(super) entsize: u64,
}

impl Section {
    pub(super) fn executable(&self) -> bool {
        self.flags & SHF_EXECINSTR != 0
    }

    pub(super) fn bytes(&self) -> [u8; SHDR_SIZE] {
        let mut b = [0u8; SHDR_SIZE];
        b[0..4].copy_from_slice(&self.name.to_le_bytes());
        b[4..8].copy_from_slice(&self.kind.to_le_bytes());
        b[8..16].copy_from_slice(&self.flags.to_le_bytes());
        b[24..32].copy_from_slice(&self.offset.to_le_bytes());
        b[32..40].copy_from_slice(&self.size.to_le_bytes());
        b[40..44].copy_from_slice(&self.link.to_le_bytes());
        b[44..48].copy_from_slice(&self.info.to_le_bytes());
        b[48..56].copy_from_slice(&self.align.to_le_bytes());
        b[56..64].copy_from_slice(&self.entsize.to_le_bytes());
        b
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Sym {
    pub(super) name: u32,
    pub(super) info: u8,
    pub(super) other: u8,
    pub(super) shndx: u16,
    pub(super) value: u64,
    pub(super) size: u64,
}

impl Sym {
    pub(super) fn kind(&self) -> u8 {
        self.info & 0xf
    }

    pub(super) fn bind(&self) -> u8 {
        self.info >> 4
    }

    pub(super) fn bytes(&self) -> [u8; SYM_SIZE] {
        let mut b = [0u8; SYM_SIZE];
        b[0..4].copy_from_slice(&self.name.to_le_bytes());
        b[4] = self.info;
        b[5] = self.other;
        b[6..8].copy_from_slice(&self.shndx.to_le_bytes());
        b[8..16].copy_from_slice(&self.value.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Rel {
    pub(super) offset: u64,
    pub(super) info: u64,
}

impl Rel {
    pub(super) fn symbol(&self) -> usize {
        (self.info >> 32) as usize
    }

    pub(super) fn kind(&self) -> u32 {
        self.info as u32
    }

    pub(super) fn set_symbol(&mut self, sym: usize) {
        self.info = ((sym as u64) << 32) | u64::from(self.kind());
    }

    pub(super) fn bytes(&self) -> [u8; REL_SIZE] {
        let mut b = [0u8; REL_SIZE];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.info.to_le_bytes());
        b
    }
}

/// The headers of an ELF64 little-endian file.
pub(super) struct Elf {
    pub(super) sections: Vec<Section>,
    pub(super) shstrndx: usize,
    pub(super) symtab: Option<usize>,
}

impl Elf {
    pub(super) fn parse(d: &[u8]) -> Result<Elf> {
        ensure!(d.len() >= 64 && &d[..4] == b"\x7fELF", "not an ELF file");
        ensure!(d[4] == 2 && d[5] == 1, "not a 64-bit little-endian ELF file");
        let (shoff, shentsize) = (u64_at(d, 0x28)? as usize, usize::from(u16_at(d, 0x3a)?));
        let (shnum, shstrndx) = (usize::from(u16_at(d, 0x3c)?), usize::from(u16_at(d, 0x3e)?));
        ensure!(shentsize == SHDR_SIZE, "section headers of {shentsize} bytes");
        let mut sections = Vec::with_capacity(shnum);
        for i in 0..shnum {
            let at = shoff + i * SHDR_SIZE;
            sections.push(Section {
                name: u32_at(d, at)?,
                kind: u32_at(d, at + 4)?,
                flags: u64_at(d, at + 8)?,
                offset: u64_at(d, at + 24)?,
                size: u64_at(d, at + 32)?,
                link: u32_at(d, at + 40)?,
                info: u32_at(d, at + 44)?,
                align: u64_at(d, at + 48)?,
                entsize: u64_at(d, at + 56)?,
            });
        }
        ensure!(shstrndx < sections.len(), "no section-name table");
        let symtab = sections.iter().position(|s| s.kind == SHT_SYMTAB);
        Ok(Elf { sections, shstrndx, symtab })
    }

    pub(super) fn name(&self, d: &[u8], s: &Section) -> Result<String> {
        c_str(d, (self.sections[self.shstrndx].offset + u64::from(s.name)) as usize)
    }

    pub(super) fn section_named(&self, d: &[u8], name: &str) -> Result<Option<usize>> {
        for (i, s) in self.sections.iter().enumerate() {
            if self.name(d, s)? == name {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    pub(super) fn symbols(&self, d: &[u8]) -> Result<Vec<Sym>> {
        let Some(t) = self.symtab else { return Ok(Vec::new()) };
        let t = self.sections[t];
        (0..t.size as usize / SYM_SIZE)
            .map(|i| {
                let at = t.offset as usize + i * SYM_SIZE;
                Ok(Sym {
                    name: u32_at(d, at)?,
                    info: d[at + 4],
                    other: d[at + 5],
                    shndx: u16_at(d, at + 6)?,
                    value: u64_at(d, at + 8)?,
                    size: u64_at(d, at + 16)?,
                })
            })
            .collect()
    }

    pub(super) fn symbol_name(&self, d: &[u8], sym: &Sym) -> Result<String> {
        let strtab = self.sections[self.symtab.context("no symbol table")?].link as usize;
        let strtab = self.sections.get(strtab).context("no string table")?;
        c_str(d, (strtab.offset + u64::from(sym.name)) as usize)
    }

    pub(super) fn relocations(&self, d: &[u8], rel: &Section) -> Result<Vec<Rel>> {
        (0..rel.size as usize / REL_SIZE)
            .map(|i| {
                let at = rel.offset as usize + i * REL_SIZE;
                Ok(Rel { offset: u64_at(d, at)?, info: u64_at(d, at + 8)? })
            })
            .collect()
    }
}

/// Puts `bytes` at the end of `out` as section `at`, or, where there is
/// none, as the section `new` describes (its offset and size filled in);
/// returns the section's index.
pub(super) fn put_section(
    out: &mut Vec<u8>,
    sections: &mut Vec<Section>,
    at: Option<usize>,
    new: impl FnOnce() -> Section,
    bytes: &[u8],
) -> usize {
    let i = at.unwrap_or_else(|| {
        sections.push(new());
        sections.len() - 1
    });
    sections[i].offset = append_aligned(out, bytes);
    sections[i].size = bytes.len() as u64;
    i
}

/// `bytes` appended to a mended image at the next 8-byte boundary; where they start.
pub(super) fn append_aligned(out: &mut Vec<u8>, bytes: &[u8]) -> u64 {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let at = out.len() as u64;
    out.extend_from_slice(bytes);
    at
}

/// Every section header appended to a mended image (its sections already
/// placed), and the file header pointed at them.
pub(super) fn append_section_headers(out: &mut Vec<u8>, sections: &[Section]) -> Result<()> {
    let shoff = append_aligned(out, &[]);
    for s in sections {
        out.extend_from_slice(&s.bytes());
    }
    out[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    out[0x3c..0x3e].copy_from_slice(&u16::try_from(sections.len()).context("too many sections")?.to_le_bytes());
    Ok(())
}
