//! Legacy map definitions, read as BTF-defined maps. aya-ebpf's `#[map]`
//! (every Aya template's) and old samples declare maps as `struct
//! bpf_map_def` values in a section named `maps`; libbpf 1.x refuses any
//! object with that section, Aya's own loader takes it. So, in memory
//! before libbpf opens the image (the file is untouched):
//!
//! - the `maps` section becomes `.maps`, its bytes zeros laid out as
//!   BTF-defined maps are (one pointer a field), and each map's symbol
//!   points at its new place (made global, as libbpf matches `.maps`
//!   variables to global symbols);
//! - `.BTF` gains each map's definition as libbpf reads `__uint(type, N)`
//!   (`int (*type)[N]`: a pointer to an array of N), and the map's
//!   variable takes it; the `maps` DATASEC clang writes becomes `.maps`,
//!   or one is added (bpf-linker writes none; an object without BTF gets
//!   a `.BTF` of these types alone).
//!
//! The definition's fields are read in `bpf_map_def`'s order: type, key
//! size, value size, max entries, flags, then Aya's id (unused) and
//! pinning (1: by name, as libbpf's `LIBBPF_PIN_BY_NAME`).

use anyhow::{Context, Result, bail, ensure};

use super::elf::*;

/// The section libbpf refuses, and the one it reads maps from.
const LEGACY: &str = "maps";
const BTF_MAPS: &str = ".maps";
const STT_OBJECT: u8 = 1;
const BTF_HEADER: usize = 24;

/// `data` with its legacy map definitions read as BTF-defined maps (see
/// the module's comment), and the maps' names; None without a `maps` section.
pub fn mend(data: &[u8]) -> Result<Option<(Vec<u8>, Vec<String>)>> {
    let elf = Elf::parse(data)?;
    let Some(legacy) = elf.section_named(data, LEGACY)? else { return Ok(None) };
    let symtab = elf.symtab.context("a 'maps' section but no symbol table")?;
    if elf.sections.iter().any(|s| s.kind == SHT_REL && s.info as usize == legacy) {
        bail!(
            "its 'maps' section has relocations (a map of maps' initial values?), which bpfbench cannot carry to '.maps'"
        );
    }
    let maps = read_definitions(data, &elf, legacy)?;
    ensure!(!maps.is_empty(), "its 'maps' section defines no map (no symbol points into it)");
    let btf_at = elf.section_named(data, ".BTF")?;
    let old_btf = match btf_at {
        Some(i) => slice(data, elf.sections[i].offset, elf.sections[i].size)?.to_vec(),
        None => Vec::new(),
    };
    let btf = Btf::parse(&old_btf)?.with_maps(&maps)?;

    let mut out = data.to_vec();
    // Each map's symbol: global, at its place in `.maps`, of its definition's size.
    let symbols_at = elf.sections[symtab].offset as usize;
    for m in &maps {
        let at = symbols_at + m.symbol * SYM_SIZE;
        out[at + 4] = (STB_GLOBAL << 4) | STT_OBJECT;
        out[at + 8..at + 16].copy_from_slice(&m.offset.to_le_bytes());
        out[at + 16..at + 24].copy_from_slice(&m.size().to_le_bytes());
    }
    let mut sections = elf.sections.clone();
    let shstrtab = elf.shstrndx;
    let mut names = slice(data, sections[shstrtab].offset, sections[shstrtab].size)?.to_vec();
    let mut name = |n: &str| {
        let at = names.len() as u32;
        names.extend_from_slice(n.as_bytes());
        names.push(0);
        at
    };
    let maps_name = name(BTF_MAPS);
    let btf_name = match btf_at {
        Some(_) => None,
        None => Some(name(".BTF")),
    };
    let size: u64 = maps.iter().map(MapDef::size).sum();
    let s = &mut sections[legacy];
    s.name = maps_name;
    s.kind = SHT_PROGBITS;
    s.offset = append_aligned(&mut out, &vec![0u8; size as usize]);
    s.size = size;
    s.align = 8;
    let btf_section =
        || Section { name: btf_name.expect("named above"), kind: SHT_PROGBITS, align: 4, ..Section::default() };
    put_section(&mut out, &mut sections, btf_at, btf_section, &btf);
    sections[shstrtab].offset = append_aligned(&mut out, &names);
    sections[shstrtab].size = names.len() as u64;
    append_section_headers(&mut out, &sections)?;
    Ok(Some((out, maps.into_iter().map(|m| m.name).collect())))
}

/// One map as `bpf_map_def` defined it, and where it goes in `.maps`.
#[derive(Debug, Clone)]
struct MapDef {
    name: String,
    symbol: usize,
    /// (field name as libbpf reads it, value), the non-zero ones but type.
    fields: Vec<(&'static str, u32)>,
    offset: u64,
}

impl MapDef {
    /// One pointer a field.
    fn size(&self) -> u64 {
        8 * self.fields.len() as u64
    }
}

/// The maps the `maps` section's symbols define, in the section's order.
fn read_definitions(data: &[u8], elf: &Elf, legacy: usize) -> Result<Vec<MapDef>> {
    let section = elf.sections[legacy];
    let symbols = elf.symbols(data)?;
    let mut ours: Vec<(usize, Sym)> = symbols
        .iter()
        .enumerate()
        .filter(|(_, s)| usize::from(s.shndx) == legacy && s.kind() != STT_SECTION)
        .map(|(i, s)| (i, *s))
        .collect();
    ours.sort_by_key(|(_, s)| s.value);
    let mut maps = Vec::new();
    let mut offset = 0;
    for (k, (i, sym)) in ours.iter().enumerate() {
        let end = ours.get(k + 1).map_or(section.size, |(_, next)| next.value);
        let size = match sym.size {
            0 => end.saturating_sub(sym.value),
            n => n,
        };
        let name = elf.symbol_name(data, sym)?;
        ensure!(size >= 16, "map '{name}' in the 'maps' section is {size} bytes, less than a bpf_map_def's 16");
        let word = |n: u64| -> Result<u32> {
            match n * 4 + 4 <= size {
                true => u32_at(data, (section.offset + sym.value + n * 4) as usize),
                false => Ok(0),
            }
        };
        const NAMES: [(&str, u64); 5] =
            [("key_size", 1), ("value_size", 2), ("max_entries", 3), ("map_flags", 4), ("pinning", 6)];
        let mut fields = vec![("type", word(0)?)];
        for (field, at) in NAMES {
            let v = word(at)?;
            // Zero is libbpf's default for each (a ring buffer has no key size).
            if v != 0 {
                fields.push((field, v));
            }
        }
        let map = MapDef { name, symbol: *i, fields, offset };
        offset += map.size();
        maps.push(map);
    }
    Ok(maps)
}

const STT_SECTION: u8 = 3;

const BTF_KIND_INT: u32 = 1;
const BTF_KIND_PTR: u32 = 2;
const BTF_KIND_ARRAY: u32 = 3;
const BTF_KIND_STRUCT: u32 = 4;
const BTF_KIND_VAR: u32 = 14;
const BTF_KIND_DATASEC: u32 = 15;
/// A VAR's linkage that libbpf takes for a map.
const BTF_VAR_GLOBAL_ALLOCATED: u32 = 1;

/// A `.BTF` blob: its types and strings, kept as bytes, with where each
/// type starts (type id `i` at `starts[i - 1]`).
struct Btf {
    types: Vec<u8>,
    strings: Vec<u8>,
    starts: Vec<usize>,
}

impl Btf {
    fn parse(blob: &[u8]) -> Result<Btf> {
        if blob.is_empty() {
            return Ok(Btf { types: Vec::new(), strings: vec![0], starts: Vec::new() });
        }
        ensure!(u16_at(blob, 0)? == BTF_MAGIC, ".BTF does not start with BTF's magic");
        let hdr = u32_at(blob, 4)? as usize;
        let (type_off, type_len) = (u32_at(blob, 8)? as usize, u32_at(blob, 12)? as usize);
        let (str_off, str_len) = (u32_at(blob, 16)? as usize, u32_at(blob, 20)? as usize);
        let types = slice(blob, (hdr + type_off) as u64, type_len as u64)?.to_vec();
        let strings = slice(blob, (hdr + str_off) as u64, str_len as u64)?.to_vec();
        let mut starts = Vec::new();
        let mut at = 0;
        while at < types.len() {
            starts.push(at);
            let info = u32_at(&types, at + 4)?;
            let vlen = (info & 0xffff) as usize;
            at += 12
                + match (info >> 24) & 0x1f {
                    1 | 14 | 17 => 4,
                    3 => 12,
                    4 | 5 | 15 | 19 => 12 * vlen,
                    6 | 13 => 8 * vlen,
                    2 | 7..=12 | 16 | 18 => 0,
                    kind => bail!(".BTF holds a type of kind {kind}, which bpfbench does not know"),
                };
        }
        Ok(Btf { types, strings, starts })
    }

    fn kind(&self, id: usize) -> Result<(u32, usize)> {
        let at = *self.starts.get(id - 1).context("a BTF type id past the last type")?;
        Ok(((u32_at(&self.types, at + 4)? >> 24) & 0x1f, at))
    }

    fn name(&self, at: usize) -> Result<String> {
        c_str(&self.strings, u32_at(&self.types, at)? as usize)
    }

    fn string(&mut self, s: &str) -> u32 {
        let at = self.strings.len() as u32;
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        at
    }

    /// Appends a type: its common part and what follows; returns its id.
    fn push(&mut self, name: u32, kind: u32, vlen: usize, size_or_type: u32, rest: &[u32]) -> u32 {
        self.starts.push(self.types.len());
        for w in [name, (kind << 24) | vlen as u32, size_or_type].iter().chain(rest) {
            self.types.extend_from_slice(&w.to_le_bytes());
        }
        self.starts.len() as u32
    }

    fn set(&mut self, at: usize, value: u32) {
        self.types[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }

    /// The blob with each map's definition as BTF-defined maps are, its
    /// variable of that type, and a `.maps` DATASEC (see the module's comment).
    fn with_maps(mut self, maps: &[MapDef]) -> Result<Vec<u8>> {
        let int = {
            let name = self.string("int");
            // Signed, 32 bits.
            self.push(name, BTF_KIND_INT, 0, 4, &[(1 << 24) | 32])
        };
        let mut pointers: Vec<(u32, u32)> = Vec::new();
        let mut definitions = Vec::new();
        for m in maps {
            let mut members = Vec::new();
            for (k, (field, value)) in m.fields.iter().enumerate() {
                let ptr = match pointers.iter().find(|(v, _)| v == value) {
                    Some((_, p)) => *p,
                    None => {
                        let array = self.push(0, BTF_KIND_ARRAY, 0, 0, &[int, int, *value]);
                        let p = self.push(0, BTF_KIND_PTR, 0, array, &[]);
                        pointers.push((*value, p));
                        p
                    }
                };
                let name = self.string(field);
                members.extend([name, ptr, 64 * k as u32]);
            }
            definitions.push(self.push(0, BTF_KIND_STRUCT, m.fields.len(), m.size() as u32, &members));
        }
        // The variables clang wrote for the maps, by name, and its DATASEC.
        let (mut vars, mut datasec) = (vec![None; maps.len()], None);
        for id in 1..=self.starts.len() {
            let (kind, at) = self.kind(id)?;
            match kind {
                BTF_KIND_VAR => {
                    let name = self.name(at)?;
                    if let Some(i) = maps.iter().position(|m| m.name == name) {
                        vars[i] = Some(id as u32);
                    }
                }
                BTF_KIND_DATASEC if self.name(at)? == LEGACY => datasec = Some(at),
                _ => {}
            }
        }
        for (i, m) in maps.iter().enumerate() {
            let var = match vars[i] {
                Some(id) => id,
                None => {
                    let name = self.string(&m.name);
                    self.push(name, BTF_KIND_VAR, 0, definitions[i], &[BTF_VAR_GLOBAL_ALLOCATED])
                }
            };
            let at = self.starts[var as usize - 1];
            self.set(at + 8, definitions[i]);
            self.set(at + 12, BTF_VAR_GLOBAL_ALLOCATED);
            vars[i] = Some(var);
        }
        let name = self.string(BTF_MAPS);
        // Size zero: libbpf takes the section's size and each variable's
        // offset from the ELF file.
        let entries = |vars: &[Option<u32>]| -> Vec<u32> {
            maps.iter().zip(vars).flat_map(|(m, v)| [v.expect("set above"), m.offset as u32, m.size() as u32]).collect()
        };
        match datasec {
            Some(at) => {
                let vlen = (u32_at(&self.types, at + 4)? & 0xffff) as usize;
                ensure!(vlen == maps.len(), "its 'maps' BTF section lists {vlen} variables for {} maps", maps.len());
                self.set(at, name);
                self.set(at + 8, 0);
                for (k, w) in entries(&vars).into_iter().enumerate() {
                    self.set(at + 12 + 4 * k, w);
                }
            }
            None => {
                let entries = entries(&vars);
                self.push(name, BTF_KIND_DATASEC, maps.len(), 0, &entries);
            }
        }
        let mut blob = Vec::with_capacity(BTF_HEADER + self.types.len() + self.strings.len());
        blob.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        blob.extend_from_slice(&[1, 0]);
        for w in [BTF_HEADER as u32, 0, self.types.len() as u32, self.types.len() as u32, self.strings.len() as u32] {
            blob.extend_from_slice(&w.to_le_bytes());
        }
        blob.extend_from_slice(&self.types);
        blob.extend_from_slice(&self.strings);
        Ok(blob)
    }
}
