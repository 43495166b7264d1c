//! What bpfbench mends in an object's image, in memory, before libbpf opens
//! it, where libbpf refuses what the project's own loader takes (Cilium's
//! objects, built for cilium/ebpf). The file itself is never touched.
//!
//! - Static programs made global: libbpf loads no static program, and
//!   Cilium declares its tail-call programs static.
//! - Functions of a program's section that another section calls, copied
//!   into `.text`: libbpf takes calls into `.text` only ("bad call relo"),
//!   and two of Cilium's test files have a `pktgen` that calls another
//!   test's `pktgen`. The copy is the function's instructions with their
//!   relocations and BTF function, line and CO-RE records, under a symbol
//!   of its own; the call's relocation then names the copy, and the
//!   program keeps its own section.
//!
//! ELF64, little-endian (the BPF objects clang writes): sections that grow
//! (`.text`, its relocations, the symbol and string tables, `.BTF.ext`)
//! are written anew after the file's end, and the section headers after
//! them; the old bytes stay where they were, unreferenced.

use anyhow::{Context, Result, bail, ensure};

use super::elf::*;

/// Makes the static functions of `data`'s program sections (every
/// executable section but `.text`) global, in place, and returns their
/// names. The symbol's binding is the only byte changed, as
/// `llvm-objcopy --globalize-symbol` changes it.
pub fn globalize_static_programs(data: &mut [u8]) -> Result<Vec<String>> {
    let elf = Elf::parse(data)?;
    let Some(symtab) = elf.symtab else { return Ok(Vec::new()) };
    let mut fix = Vec::new();
    for (i, sym) in elf.symbols(data)?.iter().enumerate() {
        if sym.kind() != STT_FUNC || sym.bind() != STB_LOCAL {
            continue;
        }
        let Some(section) = elf.sections.get(usize::from(sym.shndx)) else { continue };
        if !section.executable() || elf.name(data, section)? == ".text" {
            continue;
        }
        fix.push((i, elf.symbol_name(data, sym)?));
    }
    let at = elf.sections[symtab].offset as usize;
    for (i, _) in &fix {
        // st_info follows the 4-byte st_name.
        *data.get_mut(at + i * SYM_SIZE + 4).context("a symbol past the end of the file")? =
            (STB_GLOBAL << 4) | STT_FUNC;
    }
    Ok(fix.into_iter().map(|(_, name)| name).collect())
}

/// `data` with every function that another section calls out of a
/// program's section copied into `.text` (see the module's comment), and
/// the names of the functions copied; None where no call needs it.
pub fn copy_called_programs_into_text(data: &[u8]) -> Result<Option<(Vec<u8>, Vec<String>)>> {
    let elf = Elf::parse(data)?;
    let Some(symtab) = elf.symtab else { return Ok(None) };
    let text = elf.section_named(data, ".text")?;
    let symbols = elf.symbols(data)?;
    // A call into a program's section: a BPF-to-BPF call whose symbol is a
    // function of an executable section other than .text.
    let foreign = |sym: &Sym| {
        sym.kind() == STT_FUNC
            && Some(usize::from(sym.shndx)) != text
            && elf.sections.get(usize::from(sym.shndx)).is_some_and(Section::executable)
    };
    let mut calls = Vec::new();
    for (r, rel) in elf.sections.iter().enumerate().filter(|(_, s)| s.kind == SHT_REL) {
        let Some(target) = elf.sections.get(rel.info as usize).filter(|s| s.executable()) else { continue };
        for (k, e) in elf.relocations(data, rel)?.iter().enumerate() {
            let insn = slice(data, target.offset + e.offset, 8)?;
            let call = insn[0] == CALL && insn[1] >> 4 == PSEUDO_CALL;
            if e.kind() == R_BPF_64_32 && call && symbols.get(e.symbol()).is_some_and(foreign) {
                calls.push((r, k, e.symbol()));
            }
        }
    }
    if calls.is_empty() {
        return Ok(None);
    }
    let mut m = Mend::new(data, &elf, text, symtab)?;
    for &(_, _, sym) in &calls {
        m.copy(sym)?;
    }
    // The calls name the copies: those in program sections here, those
    // inside the copies where they were copied.
    let mut redirected: Vec<(usize, Vec<Rel>)> = Vec::new();
    for &(r, k, sym) in &calls {
        let entries = match redirected.iter_mut().find(|(i, _)| *i == r) {
            Some((_, entries)) => entries,
            None => {
                redirected.push((r, elf.relocations(data, &elf.sections[r])?));
                &mut redirected.last_mut().expect("pushed").1
            }
        };
        entries[k].set_symbol(m.copy_of(sym)?);
    }
    m.redirect_copied_calls(&symbols, foreign)?;
    let names = m.copied.iter().map(|c| c.name.clone()).collect();
    Ok(Some((m.write(redirected)?, names)))
}

/// One function copied into `.text`.
struct Copied {
    /// The called symbol, and the copy's.
    from: usize,
    to: usize,
    name: String,
    /// Where the function starts in its own section, and in `.text`.
    section: usize,
    start: u64,
    at: u64,
    size: u64,
}

/// `.BTF.ext` anew, and `.BTF` where its strings grew (section, bytes).
struct BtfMended {
    ext: (usize, Vec<u8>),
    btf: Option<(usize, Vec<u8>)>,
}

/// The image being mended: what grows, kept apart from the old bytes.
struct Mend<'d> {
    data: &'d [u8],
    elf: &'d Elf,
    /// `.text`'s index (None: there is none yet) and its new bytes.
    text: Option<usize>,
    text_bytes: Vec<u8>,
    /// `.rel.text`'s index, and its entries old and new.
    rel_text: Option<usize>,
    rel_text_entries: Vec<Rel>,
    symtab: usize,
    symbols: Vec<Sym>,
    strtab_bytes: Vec<u8>,
    copied: Vec<Copied>,
}

impl<'d> Mend<'d> {
    fn new(data: &'d [u8], elf: &'d Elf, text: Option<usize>, symtab: usize) -> Result<Mend<'d>> {
        let text_bytes = match text {
            Some(t) => slice(data, elf.sections[t].offset, elf.sections[t].size)?.to_vec(),
            None => Vec::new(),
        };
        let rel_text = text.and_then(|t| elf.sections.iter().position(|s| s.kind == SHT_REL && s.info as usize == t));
        let rel_text_entries = match rel_text {
            Some(r) => elf.relocations(data, &elf.sections[r])?,
            None => Vec::new(),
        };
        let strtab = elf.sections[elf.sections[symtab].link as usize];
        Ok(Mend {
            data,
            elf,
            text,
            text_bytes,
            rel_text,
            rel_text_entries,
            symtab,
            symbols: elf.symbols(data)?,
            strtab_bytes: slice(data, strtab.offset, strtab.size)?.to_vec(),
            copied: Vec::new(),
        })
    }

    /// The index `.text` has, or will have once written.
    fn text_index(&self) -> usize {
        self.text.unwrap_or(self.elf.sections.len())
    }

    /// Copies the function of symbol `sym` into `.text` (once).
    fn copy(&mut self, sym: usize) -> Result<()> {
        if self.copied.iter().any(|c| c.from == sym) {
            return Ok(());
        }
        let s = self.symbols[sym];
        let name = self.elf.symbol_name(self.data, &s)?;
        let section = usize::from(s.shndx);
        let sec = self.elf.sections[section];
        // Its section holds it alone: calls inside it to others of the
        // section are relative, and would miss them in the copy.
        let others = self.symbols.iter().filter(|o| o.shndx == s.shndx && o.kind() == STT_FUNC).count();
        if others != 1 || s.size == 0 || s.value + s.size > sec.size || !s.value.is_multiple_of(8) {
            bail!(
                "function '{name}', called from another section, does not stand alone in its own (it cannot be copied into .text)"
            );
        }
        let at = self.text_bytes.len() as u64;
        self.text_bytes.extend_from_slice(slice(self.data, sec.offset + s.value, s.size)?);
        // Its relocations, moved with it.
        for rel in self.elf.sections.iter().filter(|r| r.kind == SHT_REL && r.info as usize == section) {
            for e in self.elf.relocations(self.data, rel)? {
                if (s.value..s.value + s.size).contains(&e.offset) {
                    self.rel_text_entries.push(Rel { offset: e.offset - s.value + at, info: e.info });
                }
            }
        }
        let copy_name = format!("{name}.text");
        let name_off = self.strtab_bytes.len() as u32;
        self.strtab_bytes.extend_from_slice(copy_name.as_bytes());
        self.strtab_bytes.push(0);
        let to = self.symbols.len();
        self.symbols.push(Sym {
            name: name_off,
            info: (STB_GLOBAL << 4) | STT_FUNC,
            other: s.other,
            shndx: u16::try_from(self.text_index()).context("too many sections")?,
            value: at,
            size: s.size,
        });
        self.copied.push(Copied { from: sym, to, name, section, start: s.value, at, size: s.size });
        Ok(())
    }

    fn copy_of(&self, sym: usize) -> Result<usize> {
        self.copied.iter().find(|c| c.from == sym).map(|c| c.to).context("a function not copied")
    }

    /// Calls inside the copies (and anywhere in `.text`) into a program's
    /// section name copies too, copied in turn.
    fn redirect_copied_calls(&mut self, symbols: &[Sym], foreign: impl Fn(&Sym) -> bool) -> Result<()> {
        let mut i = 0;
        while i < self.rel_text_entries.len() {
            let e = self.rel_text_entries[i];
            let at = e.offset as usize;
            let call = self.text_bytes.get(at) == Some(&CALL)
                && self.text_bytes.get(at + 1).is_some_and(|r| r >> 4 == PSEUDO_CALL);
            if e.kind() == R_BPF_64_32 && call && symbols.get(e.symbol()).is_some_and(&foreign) {
                self.copy(e.symbol())?;
                let to = self.copy_of(e.symbol())?;
                self.rel_text_entries[i].set_symbol(to);
            }
            i += 1;
        }
        Ok(())
    }

    /// `.BTF.ext` with the copies' function, line and CO-RE records added
    /// to `.text`'s, and `.BTF` where its strings gain the name `.text`
    /// (an object without functions in `.text` has none); None: the object
    /// has no `.BTF.ext`.
    fn btf_ext(&self) -> Result<Option<BtfMended>> {
        let (Some(ext), Some(btf)) =
            (self.elf.section_named(self.data, ".BTF.ext")?, self.elf.section_named(self.data, ".BTF")?)
        else {
            return Ok(None);
        };
        let (e, b) = (self.elf.sections[ext], self.elf.sections[btf]);
        let ext_bytes = slice(self.data, e.offset, e.size)?;
        let btf_bytes = slice(self.data, b.offset, b.size)?;
        ensure!(u16_at(btf_bytes, 0)? == BTF_MAGIC && u16_at(ext_bytes, 0)? == BTF_MAGIC, "damaged BTF");
        let (btf_hdr, str_off, str_len) =
            (u32_at(btf_bytes, 4)? as usize, u32_at(btf_bytes, 16)? as usize, u32_at(btf_bytes, 20)? as usize);
        let strings = btf_bytes.get(btf_hdr + str_off..btf_hdr + str_off + str_len).context("damaged BTF strings")?;
        let btf_str = |off: u32| c_str(strings, off as usize);
        let text_name = match self.text {
            Some(t) => self.elf.name(self.data, &self.elf.sections[t])?,
            None => ".text".into(),
        };
        // Where `.text` is named among the BTF strings, or will be once added at their end.
        let mut needle = text_name.as_bytes().to_vec();
        needle.push(0);
        let found = (0..strings.len())
            .find(|&i| (i == 0 || strings[i - 1] == 0) && strings.get(i..i + needle.len()) == Some(&needle[..]));
        let text_off = found.unwrap_or(strings.len()) as u32;
        let hdr_len = u32_at(ext_bytes, 4)? as usize;
        ensure!(hdr_len == 24 || hdr_len == 32, ".BTF.ext has a header of {hdr_len} bytes");
        let subsections = if hdr_len == 32 { 3 } else { 2 };
        let mut out = ext_bytes[..hdr_len].to_vec();
        let mut body = Vec::new();
        let mut names_text = false;
        for k in 0..subsections {
            let (off, len) = (u32_at(ext_bytes, 8 + 8 * k)? as usize, u32_at(ext_bytes, 12 + 8 * k)? as usize);
            let sub = ext_bytes.get(hdr_len + off..hdr_len + off + len).context("a damaged .BTF.ext")?;
            let start = body.len();
            if !sub.is_empty() {
                let (mended, new_block) = self.with_copied_records(sub, &btf_str, (&text_name, text_off))?;
                names_text |= new_block;
                body.extend(mended);
            }
            out[8 + 8 * k..12 + 8 * k].copy_from_slice(&(start as u32).to_le_bytes());
            out[12 + 8 * k..16 + 8 * k].copy_from_slice(&((body.len() - start) as u32).to_le_bytes());
        }
        out.extend(body);
        // The strings come last in clang's BTF: the name goes at their end.
        let btf = match (names_text && found.is_none(), btf_hdr + str_off + str_len == btf_bytes.len()) {
            (false, _) => None,
            (true, true) => {
                let mut bytes = btf_bytes.to_vec();
                bytes.extend(&needle);
                bytes[20..24].copy_from_slice(&((str_len + needle.len()) as u32).to_le_bytes());
                Some((btf, bytes))
            }
            (true, false) => bail!("the object's BTF strings do not come last, where the name {text_name} would go"),
        };
        Ok(Some(BtfMended { ext: (ext, out), btf }))
    }

    /// One `.BTF.ext` subsection (a record size, then per section its
    /// name, count and records, each starting with a byte offset) with the
    /// copies' records appended to `.text`'s (`text`: its name and the
    /// name's BTF string offset), and whether `.text` got a block of its own.
    fn with_copied_records(
        &self,
        sub: &[u8],
        name_of: &dyn Fn(u32) -> Result<String>,
        text: (&str, u32),
    ) -> Result<(Vec<u8>, bool)> {
        let rec = u32_at(sub, 0)? as usize;
        ensure!(rec >= 4, ".BTF.ext records of {rec} bytes");
        let mut blocks: Vec<(u32, String, Vec<Vec<u8>>)> = Vec::new();
        let mut at = 4;
        while at < sub.len() {
            let (name_off, n) = (u32_at(sub, at)?, u32_at(sub, at + 4)? as usize);
            let records = (0..n)
                .map(|i| Ok(slice(sub, (at + 8 + i * rec) as u64, rec as u64)?.to_vec()))
                .collect::<Result<Vec<_>>>()?;
            blocks.push((name_off, name_of(name_off)?, records));
            at += 8 + n * rec;
        }
        let mut added = Vec::new();
        for c in &self.copied {
            let name = self.elf.name(self.data, &self.elf.sections[c.section])?;
            for (_, _, records) in blocks.iter().filter(|(_, n, _)| *n == name) {
                for r in records {
                    let off = u64::from(u32::from_le_bytes(r[..4].try_into().expect("4 bytes")));
                    if (c.start..c.start + c.size).contains(&off) {
                        let mut r = r.clone();
                        r[..4].copy_from_slice(&((off - c.start + c.at) as u32).to_le_bytes());
                        added.push(r);
                    }
                }
            }
        }
        let mut new_block = false;
        if !added.is_empty() {
            match blocks.iter_mut().find(|(_, n, _)| n == text.0) {
                Some((_, _, records)) => records.extend(added),
                None => {
                    blocks.push((text.1, text.0.to_string(), added));
                    new_block = true;
                }
            }
        }
        let mut out = (rec as u32).to_le_bytes().to_vec();
        for (name_off, _, records) in blocks {
            out.extend(name_off.to_le_bytes());
            out.extend((records.len() as u32).to_le_bytes());
            records.iter().for_each(|r| out.extend(r));
        }
        Ok((out, new_block))
    }

    /// The mended image: the old bytes, then the sections that grew, then
    /// every section header (new ones last), `redirected` the program
    /// sections' relocations whose calls now name the copies.
    fn write(self, redirected: Vec<(usize, Vec<Rel>)>) -> Result<Vec<u8>> {
        let mut sections = self.elf.sections.clone();
        let mut out = self.data.to_vec();
        // clang's objects name sections and symbols from one table (.strtab).
        let strtab = sections[self.symtab].link as usize;
        let shared = strtab == self.elf.shstrndx;
        let mut names = match shared {
            true => self.strtab_bytes.clone(),
            false => slice(self.data, sections[self.elf.shstrndx].offset, sections[self.elf.shstrndx].size)?.to_vec(),
        };
        let name = |names: &mut Vec<u8>, n: &str| -> u32 {
            let at = names.len() as u32;
            names.extend_from_slice(n.as_bytes());
            names.push(0);
            at
        };
        let text_section = || Section {
            name: name(&mut names, ".text"),
            kind: SHT_PROGBITS,
            flags: SHF_ALLOC | SHF_EXECINSTR,
            align: 8,
            ..Section::default()
        };
        let text = put_section(&mut out, &mut sections, self.text, text_section, &self.text_bytes);
        let rel_bytes: Vec<u8> = self.rel_text_entries.iter().flat_map(Rel::bytes).collect();
        let rel_text_section = || Section {
            name: name(&mut names, ".rel.text"),
            kind: SHT_REL,
            flags: SHF_INFO_LINK,
            link: self.symtab as u32,
            info: text as u32,
            align: 8,
            entsize: REL_SIZE as u64,
            ..Section::default()
        };
        put_section(&mut out, &mut sections, self.rel_text, rel_text_section, &rel_bytes);
        for (r, entries) in redirected.iter().filter(|(r, _)| Some(*r) != self.rel_text) {
            let bytes: Vec<u8> = entries.iter().flat_map(Rel::bytes).collect();
            sections[*r].offset = append_aligned(&mut out, &bytes);
        }
        let sym_bytes: Vec<u8> = self.symbols.iter().flat_map(Sym::bytes).collect();
        sections[self.symtab].offset = append_aligned(&mut out, &sym_bytes);
        sections[self.symtab].size = sym_bytes.len() as u64;
        if !shared {
            sections[strtab].offset = append_aligned(&mut out, &self.strtab_bytes);
            sections[strtab].size = self.strtab_bytes.len() as u64;
        }
        if let Some(BtfMended { ext: (ext, bytes), btf }) = self.btf_ext()? {
            sections[ext].offset = append_aligned(&mut out, &bytes);
            sections[ext].size = bytes.len() as u64;
            if let Some((btf, bytes)) = btf {
                sections[btf].offset = append_aligned(&mut out, &bytes);
                sections[btf].size = bytes.len() as u64;
            }
        }
        let shstrndx = self.elf.shstrndx;
        sections[shstrndx].offset = append_aligned(&mut out, &names);
        sections[shstrndx].size = names.len() as u64;
        append_section_headers(&mut out, &sections)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::{Object, ObjectSection, ObjectSymbol};

    fn test_object(name: &str) -> Vec<u8> {
        std::fs::read(std::path::Path::new(concat!(env!("OUT_DIR"), "/test-objects")).join(name)).unwrap()
    }

    #[test]
    fn a_function_another_section_calls_is_copied_into_text_with_its_relocations() {
        // e_reply_again's pktgen and check call b_reply's; the object has no .text.
        let image = test_object("tc_framework_tests.bpf.o");
        let (mended, copied) = copy_called_programs_into_text(&image).unwrap().expect("two calls to mend");
        assert_eq!(copied, ["b_reply_pktgen", "b_reply_check"]);
        let file = object::File::parse(&*mended).unwrap();
        let text = file.section_by_name(".text").expect("a .text section made");
        let copy = file.symbols().find(|s| s.name() == Ok("b_reply_check.text")).expect("the copy's symbol");
        assert_eq!(copy.section_index(), Some(text.index()));
        // The check's map relocations moved with it; the programs keep their own sections.
        assert!(text.relocations().count() > 0);
        assert!(file.symbols().any(|s| s.name() == Ok("b_reply_check") && s.section_index() != Some(text.index())));
        // The calls name the copies now.
        let caller = file.section_by_name("tc/test/e_reply_again/check").unwrap();
        let (_, call) = caller.relocations().next().unwrap();
        let object::RelocationTarget::Symbol(target) = call.target() else { panic!("a symbol") };
        assert_eq!(file.symbol_by_index(target).unwrap().name(), Ok("b_reply_check.text"));
        // An object without such calls is left alone.
        assert!(copy_called_programs_into_text(&test_object("xdp_pass.bpf.o")).unwrap().is_none());
        assert!(copy_called_programs_into_text(b"not an ELF file").is_err());
    }
}
