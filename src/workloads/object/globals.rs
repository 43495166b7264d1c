//! A user's global variables, set before load (`--global NAME=VALUE`, a
//! spec file's `[globals]`): the `volatile const` configuration in `.rodata`
//! (addresses, ports, feature flags, the way Cilium's `.rodata.config`,
//! xdp-tools and most libbpf programs are configured), and `.data`, `.bss`
//! and named data sections. libbpf freezes `.rodata*` after load, so the
//! verifier sees the values as constants and drops the paths they rule out,
//! as the program's own loader would.
//!
//! A variable is found by name in the object's BTF (its data sections'
//! variables) and its value laid out by its type (kernel/btf_value.rs).

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::btf::types::{DataSec, Var};
use libbpf_rs::btf::{Btf, ReferencesType, TypeId};
use serde_json::Value;

use crate::kernel::btf_value;
use crate::kernel::object::ObjectFile;

/// A global the user sets: its name and value (JSON, or a bare string
/// such as an address).
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalValue {
    pub name: String,
    pub value: Value,
}

impl GlobalValue {
    /// `NAME=VALUE`: VALUE is JSON (`80`, `[1, 2]`, `{"port": 80}`,
    /// `true`) or else a string (`10.0.0.1`, `02:00:00:00:00:01`, an
    /// enumerator's name).
    pub fn parse(s: &str) -> Result<GlobalValue> {
        let Some((name, value)) = s.split_once('=').filter(|(n, v)| !n.trim().is_empty() && !v.is_empty()) else {
            bail!("--global expects NAME=VALUE (a number, an address, JSON for arrays and structs), got '{s}'");
        };
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
        Ok(GlobalValue { name: name.trim().to_string(), value })
    }

    /// As the user wrote it, for notes.
    pub fn shown(&self) -> String {
        match &self.value {
            Value::String(s) => format!("{}={s}", self.name),
            v => format!("{}={v}", self.name),
        }
    }
}

/// A global variable of the object: where it lives and its type.
struct Variable {
    section: String,
    offset: usize,
    size: usize,
    ty: TypeId,
}

/// The object's global variables in data sections, by name.
fn variables(btf: &Btf<'_>) -> Vec<(String, Variable)> {
    let mut out = Vec::new();
    for sec in btf.type_by_kind::<DataSec<'_>>() {
        let Some(section) = sec.name().map(|n| n.to_string_lossy().into_owned()) else { continue };
        // .kconfig and .ksyms are the kernel's to fill, not the user's.
        if !(section.starts_with(".rodata") || section.starts_with(".data") || section == ".bss") {
            continue;
        }
        for v in sec.iter() {
            let Some(var) = btf.type_by_id::<Var<'_>>(v.ty) else { continue };
            let Some(name) = var.name().map(|n| n.to_string_lossy().into_owned()) else { continue };
            out.push((
                name,
                Variable {
                    section: section.clone(),
                    offset: v.offset as usize,
                    size: v.size,
                    ty: var.referenced_type_id(),
                },
            ));
        }
    }
    out
}

/// Sets `globals` in `obj` before load.
pub fn set(obj: &mut ObjectFile, globals: &[GlobalValue]) -> Result<()> {
    if globals.is_empty() {
        return Ok(());
    }
    let file = obj.path().display().to_string();
    // (section, offset, bytes) for each, laid out while the BTF is borrowed.
    let mut writes: Vec<(String, usize, Vec<u8>)> = Vec::new();
    {
        let btf = obj.typed_btf().with_context(|| format!("--global: {file} has no BTF to find its globals by"))?;
        let vars = variables(&btf);
        for g in globals {
            let at = format!("--global {}", g.shown());
            let Some((_, var)) = vars.iter().find(|(n, _)| *n == g.name) else {
                let names: Vec<String> = vars.iter().map(|(n, v)| format!("{n} ({})", v.section)).collect();
                bail!(
                    "{at}: {file} has no global variable '{}'; {}",
                    g.name,
                    if names.is_empty() {
                        "it has none the compiler kept".to_string()
                    } else {
                        format!("its globals are {}", names.join(", "))
                    }
                );
            };
            let typed = btf_value::size_of(&btf, var.ty)?;
            ensure!(typed == var.size, "{at}: BTF gives '{}' {typed} bytes, its section {}", g.name, var.size);
            // Laid out over the bytes it was compiled with, so that a
            // struct's fields not given keep their values.
            let data = obj.section_data(&var.section)?;
            let mut bytes = data
                .get(var.offset..var.offset + var.size)
                .with_context(|| format!("{at}: '{}' lies outside {}", g.name, var.section))?
                .to_vec();
            btf_value::encode(&btf, var.ty, &g.value, &mut bytes, &at)?;
            writes.push((var.section.clone(), var.offset, bytes));
        }
    }
    for (section, offset, bytes) in &writes {
        obj.section_data_mut(section)?[*offset..*offset + bytes.len()].copy_from_slice(bytes);
    }
    Ok(())
}
