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
//!
//! Key and value types, where the object's BTF has them: aya-ebpf's map
//! types carry them only as `PhantomData<K>` members (`_k`, `_v`, an
//! array's `_t`), empty structs whose names say the type
//! (`PhantomData<u32>`, written by bpf-linker as `PhantomData_3C_u32_3E_`).
//! Where a type of that name and of the definition's size is in the BTF
//! (`u32`, or a struct the program uses), the map's definition names it as
//! `__type(key, T)` does, so `--map` and `--expect-map` JSON lay keys and
//! values out by it; otherwise the size alone, and hex.

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
const BTF_KIND_UNION: u32 = 5;
const BTF_KIND_ENUM: u32 = 6;
const BTF_KIND_TYPEDEF: u32 = 8;
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

    /// The BTF ids of map `m`'s key and value types, as its variable's
    /// `PhantomData` members name them (see the module's comment), where
    /// a type of that name and the definition's size is in the BTF.
    fn phantom_types(&self, m: &MapDef) -> Result<(Option<u32>, Option<u32>)> {
        let size_of = |field: &str| m.fields.iter().find(|(f, _)| *f == field).map(|(_, v)| *v);
        let Some(map_type) = self.variable_type(&m.name)? else { return Ok((None, None)) };
        let (kind, at) = self.kind(map_type as usize)?;
        if kind != BTF_KIND_STRUCT {
            return Ok((None, None));
        }
        let (mut key, mut value) = (None, None);
        let vlen = (u32_at(&self.types, at + 4)? & 0xffff) as usize;
        for i in 0..vlen {
            let member = at + 12 + 12 * i;
            let name = c_str(&self.strings, u32_at(&self.types, member)? as usize)?;
            let (slot, size) = match name.as_str() {
                "_k" => (&mut key, size_of("key_size")),
                "_v" | "_t" => (&mut value, size_of("value_size")),
                _ => continue,
            };
            let phantom = u32_at(&self.types, member + 4)?;
            let (_, pat) = self.kind(phantom as usize)?;
            let Some(inner) = rust_name(&self.name(pat)?)
                .strip_prefix("PhantomData<")
                .and_then(|n| n.strip_suffix('>'))
                .map(str::to_string)
            else {
                continue;
            };
            *slot = match size {
                Some(size) => self.type_named(&last_segment(&inner), size)?,
                None => None,
            };
        }
        Ok((key, value))
    }

    /// The type of the variable named `name`.
    fn variable_type(&self, name: &str) -> Result<Option<u32>> {
        for id in 1..=self.starts.len() {
            let (kind, at) = self.kind(id)?;
            if kind == BTF_KIND_VAR && self.name(at)? == name {
                return Ok(Some(u32_at(&self.types, at + 8)?));
            }
        }
        Ok(None)
    }

    /// The first type named `name` (as Rust writes it) of `size` bytes.
    fn type_named(&self, name: &str, size: u32) -> Result<Option<u32>> {
        for id in 1..=self.starts.len() {
            let (kind, at) = self.kind(id)?;
            let sized =
                matches!(kind, BTF_KIND_INT | BTF_KIND_STRUCT | BTF_KIND_UNION | BTF_KIND_ENUM | BTF_KIND_TYPEDEF);
            if sized
                && u32_at(&self.types, at)? != 0
                && rust_name(&self.name(at)?) == name
                && self.size(id)? == Some(size)
            {
                return Ok(Some(id as u32));
            }
        }
        Ok(None)
    }

    /// A type's size in bytes, through typedefs; None for kinds without one.
    fn size(&self, id: usize) -> Result<Option<u32>> {
        let (kind, at) = self.kind(id)?;
        Ok(match kind {
            BTF_KIND_INT | BTF_KIND_STRUCT | BTF_KIND_UNION | BTF_KIND_ENUM => Some(u32_at(&self.types, at + 8)?),
            BTF_KIND_TYPEDEF => self.size(u32_at(&self.types, at + 8)? as usize)?,
            _ => None,
        })
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
            let typed = self.phantom_types(m)?;
            let mut members = Vec::new();
            for (k, (field, value)) in m.fields.iter().enumerate() {
                // `__type(key, T)`: a pointer to T, where the size was.
                let named = match *field {
                    "key_size" => typed.0,
                    "value_size" => typed.1,
                    _ => None,
                };
                if let Some(ty) = named {
                    let ptr = self.push(0, BTF_KIND_PTR, 0, ty, &[]);
                    let name = self.string(&field[..field.len() - "_size".len()]);
                    members.extend([name, ptr, 64 * k as u32]);
                    continue;
                }
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

/// A name as Rust wrote it: bpf-linker writes each character BTF does not
/// take as `_XX_`, its code in hex (`PhantomData_3C_u32_3E_` for `PhantomData<u32>`).
fn rust_name(btf_name: &str) -> String {
    let b = btf_name.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex =
            b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex, b.get(i + 3)) {
            (b'_', Some(c), Some(b'_'))
                if b[i + 1..i + 3].iter().all(|x| x.is_ascii_hexdigit() && !x.is_ascii_lowercase()) =>
            {
                out.push(c as char);
                i += 4;
            }
            (c, ..) => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

/// A type's name without its path (`fun_xdp::Key<u8>` -> `Key<u8>`); its
/// generic arguments keep theirs.
fn last_segment(path: &str) -> String {
    let head = path.find('<').unwrap_or(path.len());
    let start = path[..head].rfind("::").map_or(0, |i| i + 2);
    path[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The members of map `name`'s definition in the mended object's BTF:
    /// (member, the name of the type its pointer points at: "" for the
    /// anonymous arrays that carry a number).
    fn definition(aya_object: &str, name: &str) -> Vec<(String, String)> {
        use libbpf_rs::btf::types::{Composite, Ptr, Var};
        use libbpf_rs::btf::{Btf, ReferencesType};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/objects/aya").join(aya_object);
        let (mended, _) = mend(&std::fs::read(path).unwrap()).unwrap().expect("a legacy 'maps' section");
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &mended).unwrap();
        let btf = Btf::from_path(file.path()).unwrap();
        let var: Var<'_> = btf.type_by_name(name).unwrap();
        let def = Composite::try_from(var.referenced_type()).unwrap();
        def.iter()
            .map(|m| {
                let ptr = Ptr::try_from(btf.type_by_id::<libbpf_rs::btf::BtfType<'_>>(m.ty).unwrap()).unwrap();
                let to = ptr.referenced_type().name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                (m.name.unwrap().to_string_lossy().into_owned(), to)
            })
            .collect()
    }

    #[test]
    fn a_maps_key_and_value_types_come_from_its_phantom_members_where_the_btf_has_them() {
        // HashMap<u32, u32>: u32 is in the BTF, of the definition's sizes.
        let sources = definition("fun-xdp-map.o", "SOURCES");
        let member = |name: &str| sources.iter().find(|(m, _)| m == name).map(|(_, t)| t.as_str());
        assert_eq!(member("key"), Some("u32"), "{sources:?}");
        assert_eq!(member("value"), Some("u32"), "{sources:?}");
        assert_eq!(member("key_size"), None, "{sources:?}");
        assert_eq!(member("type"), Some(""), "{sources:?}");
        // PerCpuArray<LogBuf>: LogBuf is not in the BTF, so its size stays.
        let buf = definition("fun-xdp-log.o", "AYA_LOG_BUF");
        assert!(buf.iter().any(|(m, _)| m == "value_size") && !buf.iter().any(|(m, _)| m == "value"), "{buf:?}");
    }

    #[test]
    fn rust_names_are_read_back_from_bpf_linkers_escapes() {
        assert_eq!(rust_name("PhantomData_3C_u32_3E_"), "PhantomData<u32>");
        assert_eq!(rust_name("HashMap_3C_u32_2C__20_u32_3E_"), "HashMap<u32, u32>");
        assert_eq!(rust_name("PhantomData_3C_aya_log_ebpf_3A__3A_LogBuf_3E_"), "PhantomData<aya_log_ebpf::LogBuf>");
        // Names with underscores of their own stay as they are.
        assert_eq!(rust_name("bpf_map_def"), "bpf_map_def");
        assert_eq!(rust_name("xdp_md"), "xdp_md");
        assert_eq!(last_segment("aya_log_ebpf::LogBuf"), "LogBuf");
        assert_eq!(last_segment("aya_ebpf::maps::lpm_trie::Key<fun::K>"), "Key<fun::K>");
        assert_eq!(last_segment("u32"), "u32");
    }
}
