//! The license a Rust object is loaded under when it names none. Aya's
//! loader (`aya-obj`) takes an object without a `license` section as
//! "GPL"; libbpf takes it as no license, and the verifier then refuses the
//! GPL-only helpers such an object calls (`bpf_perf_event_output`, which
//! every `aya-log` call makes). Aya's templates write the section, older
//! projects and bpf-linker's own output do not. So, for an object rustc
//! built (its debug information names the compiler) with no `license`
//! section, a section "GPL" is added, in memory (the file is untouched):
//! the object loads as Aya loads it. A C object keeps libbpf's default.

use anyhow::Result;

use super::elf::*;

const LICENSE: &str = "license";
/// What Aya's loader takes an object without a license for.
pub const AYA_DEFAULT: &str = "GPL";
/// The producer rustc writes into the debug information (DW_AT_producer).
const RUSTC_PRODUCER: &[u8] = b"(rustc version ";

/// `data` with a `license` section of "GPL" where rustc built it and it
/// names no license; None otherwise.
pub fn mend(data: &[u8]) -> Result<Option<Vec<u8>>> {
    let elf = Elf::parse(data)?;
    if elf.section_named(data, LICENSE)?.is_some() || !built_by_rustc(data, &elf)? {
        return Ok(None);
    }
    let mut out = data.to_vec();
    let mut sections = elf.sections.clone();
    let shstrtab = elf.shstrndx;
    let mut names = slice(data, sections[shstrtab].offset, sections[shstrtab].size)?.to_vec();
    let name = names.len() as u32;
    names.extend_from_slice(LICENSE.as_bytes());
    names.push(0);
    let license = || Section { name, kind: SHT_PROGBITS, flags: SHF_ALLOC, align: 1, ..Section::default() };
    put_section(&mut out, &mut sections, None, license, &[AYA_DEFAULT.as_bytes(), b"\0"].concat());
    sections[shstrtab].offset = append_aligned(&mut out, &names);
    sections[shstrtab].size = names.len() as u64;
    append_section_headers(&mut out, &sections)?;
    Ok(Some(out))
}

/// Whether the object's debug strings name rustc as their producer.
fn built_by_rustc(data: &[u8], elf: &Elf) -> Result<bool> {
    let Some(i) = elf.section_named(data, ".debug_str")? else { return Ok(false) };
    let strings = slice(data, elf.sections[i].offset, elf.sections[i].size)?;
    Ok(strings.windows(RUSTC_PRODUCER.len()).any(|w| w == RUSTC_PRODUCER))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aya_object(name: &str) -> Vec<u8> {
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/objects/aya").join(name)).unwrap()
    }

    #[test]
    fn a_rust_object_without_a_license_gets_ayas_default_and_a_c_object_does_not() {
        let data = aya_object("fun-xdp-map.o");
        let mended = mend(&data).unwrap().expect("fun-xdp-map.o names no license");
        let elf = Elf::parse(&mended).unwrap();
        let i = elf.section_named(&mended, LICENSE).unwrap().expect("a license section");
        assert_eq!(slice(&mended, elf.sections[i].offset, elf.sections[i].size).unwrap(), b"GPL\0");
        // Every section before it is where it was.
        let old = Elf::parse(&data).unwrap();
        assert_eq!(elf.sections.len(), old.sections.len() + 1);
        // Mended once: it names a license now.
        assert!(mend(&mended).unwrap().is_none());
        let c = std::fs::read(concat!(env!("OUT_DIR"), "/test-objects/xdp_drop.bpf.o")).unwrap();
        assert!(mend(&c).unwrap().is_none());
    }
}
