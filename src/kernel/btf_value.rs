//! Values laid out by BTF from JSON: a map's keys and values
//! (`--map NAME=FILE.json`), a global variable (`--global NAME=VALUE`), a
//! kernel struct a test run takes (`--skb`, a flow dissector's keys).
//!
//! A value is hex bytes (as they sit in memory) or laid out by its BTF
//! type: objects by field name (nested structs, unions by one member),
//! arrays, numbers (big-endian for `__be16/32/64` fields, native otherwise),
//! enumerator names, and address strings: IPv4 into 4-byte fields, IPv6
//! into 16-byte fields, MAC into 6-byte fields, in network order.

use std::net::{Ipv4Addr, Ipv6Addr};

use anyhow::{Context, Result, bail, ensure};
use libbpf_rs::btf::types::{Array, Composite, DataSec, Enum, Enum64, Int, MemberAttr, Var};
use libbpf_rs::btf::{Btf, BtfKind, BtfType, HasSize, ReferencesType, TypeId};
use serde_json::Value;

use crate::packet::spec::{hex_bytes, mac_bytes};

/// How a BTF type stores a number.
struct Scalar {
    size: usize,
    big_endian: bool,
}

/// The type behind typedefs and qualifiers, and whether a `__be*` typedef
/// was on the way.
pub fn resolve<'b>(btf: &'b Btf<'b>, id: TypeId) -> Result<(BtfType<'b>, bool)> {
    let mut t: BtfType<'b> = btf.type_by_id(id).context("dangling BTF type id")?;
    let mut big_endian = false;
    loop {
        match t.kind() {
            BtfKind::Typedef | BtfKind::Const | BtfKind::Volatile | BtfKind::Restrict | BtfKind::TypeTag => {
                if let Some(name) = t.name() {
                    big_endian |= name.to_string_lossy().starts_with("__be");
                }
                t = t.next_type().context("dangling BTF typedef")?;
            }
            _ => return Ok((t, big_endian)),
        }
    }
}

/// Bytes a BTF type occupies.
pub fn size_of(btf: &Btf<'_>, id: TypeId) -> Result<usize> {
    let (t, _) = resolve(btf, id)?;
    Ok(match t.kind() {
        BtfKind::Int => Int::try_from(t).map(|i| i.size()).unwrap_or(0),
        BtfKind::Enum => Enum::try_from(t).map(|e| e.size()).unwrap_or(0),
        BtfKind::Enum64 => Enum64::try_from(t).map(|e| e.size()).unwrap_or(0),
        BtfKind::Struct | BtfKind::Union => Composite::try_from(t).map(|c| c.size()).unwrap_or(0),
        BtfKind::Array => {
            let a = Array::try_from(t).map_err(|_| anyhow::anyhow!("bad BTF array"))?;
            a.capacity() * size_of(btf, a.ty())?
        }
        BtfKind::Ptr => 8,
        BtfKind::Float => libbpf_rs::btf::types::Float::try_from(t).map(|f| f.size()).unwrap_or(0),
        BtfKind::DataSec => DataSec::try_from(t).map(|d| d.size()).unwrap_or(0),
        other => bail!("BTF kind {other:?} has no size here"),
    })
}

/// A string for a field of `size` bytes: an address when it reads as one
/// of that size, else hex bytes.
fn string_bytes(s: &str, size: usize, at: &str) -> Result<Vec<u8>> {
    let by_size = match size {
        4 => s.parse::<Ipv4Addr>().ok().map(|a| a.octets().to_vec()),
        16 => s.parse::<Ipv6Addr>().ok().map(|a| a.octets().to_vec()),
        6 => mac_bytes(s).map(|m| m.to_vec()),
        _ => None,
    };
    if let Some(b) = by_size {
        return Ok(b);
    }
    let bytes = hex_bytes(s)
        .with_context(|| format!("{at}: '{s}' is neither an address for this {size}-byte field nor hex bytes"))?;
    ensure!(bytes.len() == size, "{at}: '{s}' is {} bytes, the field has {size}", bytes.len());
    Ok(bytes)
}

fn number(v: &Value, at: &str) -> Result<i128> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .with_context(|| format!("{at}: {n} is not an integer")),
        Value::Bool(b) => Ok(i128::from(*b)),
        Value::String(s) => {
            let t = s.trim();
            match t.strip_prefix("0x") {
                Some(h) => i128::from_str_radix(h, 16).ok(),
                None => t.parse::<i128>().ok(),
            }
            .with_context(|| format!("{at}: '{s}' is not a number"))
        }
        other => bail!("{at}: expected a number, got {other}"),
    }
}

fn write_scalar(out: &mut [u8], value: i128, s: &Scalar, at: &str) -> Result<()> {
    let bits = s.size * 8;
    let fits = if bits >= 128 { true } else { value >= -(1i128 << (bits - 1)) && value < (1i128 << bits) };
    ensure!(fits, "{at}: {value} does not fit in {} bytes", s.size);
    let le = value.to_le_bytes();
    let bytes = &le[..s.size];
    if s.big_endian {
        out.copy_from_slice(&bytes.iter().rev().copied().collect::<Vec<_>>());
    } else {
        out.copy_from_slice(bytes);
    }
    Ok(())
}

/// Writes `v` laid out as BTF type `id` into `out` (exactly its size).
pub fn encode(btf: &Btf<'_>, id: TypeId, v: &Value, out: &mut [u8], at: &str) -> Result<()> {
    let (t, big_endian) = resolve(btf, id)?;
    if let Value::String(s) = v
        && !matches!(t.kind(), BtfKind::Int | BtfKind::Enum | BtfKind::Enum64)
    {
        let b = string_bytes(s, out.len(), at)?;
        out.copy_from_slice(&b);
        return Ok(());
    }
    match t.kind() {
        BtfKind::Int => {
            if let Value::String(s) = v
                && number(v, at).is_err()
            {
                let b = string_bytes(s, out.len(), at)?;
                out.copy_from_slice(&b);
                return Ok(());
            }
            write_scalar(out, number(v, at)?, &Scalar { size: out.len(), big_endian }, at)
        }
        BtfKind::Enum | BtfKind::Enum64 => {
            let value = match v {
                Value::String(s) if number(v, at).is_err() => {
                    let names: Vec<(String, i128)> = match t.kind() {
                        BtfKind::Enum => Enum::try_from(t)
                            .map(|e| {
                                e.iter()
                                    .map(|m| {
                                        (
                                            m.name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                                            i128::from(m.value),
                                        )
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                        _ => Enum64::try_from(t)
                            .map(|e| {
                                e.iter()
                                    .map(|m| {
                                        (m.name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), m.value)
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    };
                    names.iter().find(|(n, _)| n == s).map(|(_, v)| *v).with_context(|| {
                        format!(
                            "{at}: '{s}' is not one of {}",
                            names.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                        )
                    })?
                }
                _ => number(v, at)?,
            };
            write_scalar(out, value, &Scalar { size: out.len(), big_endian }, at)
        }
        BtfKind::Array => {
            let a = Array::try_from(t).map_err(|_| anyhow::anyhow!("{at}: bad BTF array"))?;
            let elem = size_of(btf, a.ty())?;
            let Value::Array(items) = v else {
                bail!("{at}: expected an array of {} elements (or a string), got {v}", a.capacity())
            };
            ensure!(
                items.len() <= a.capacity(),
                "{at}: {} elements given, the array holds {}",
                items.len(),
                a.capacity()
            );
            for (i, item) in items.iter().enumerate() {
                encode(btf, a.ty(), item, &mut out[i * elem..(i + 1) * elem], &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        BtfKind::Struct | BtfKind::Union => {
            let c = Composite::try_from(t).map_err(|_| anyhow::anyhow!("{at}: bad BTF struct"))?;
            let Value::Object(fields) = v else {
                bail!("{at}: expected an object with fields {} (or hex bytes), got {v}", field_names(btf, &c))
            };
            if !c.is_struct {
                ensure!(fields.len() == 1, "{at}: a union takes exactly one of its members: {}", field_names(btf, &c));
            }
            for (key, value) in fields {
                let (ty, attr) = find_member(btf, &c, key, 0)?
                    .with_context(|| format!("{at}: no field '{key}'; the fields are {}", field_names(btf, &c)))?;
                let here = format!("{at}.{key}");
                match attr {
                    MemberAttr::Normal { offset } => {
                        let start = offset as usize / 8;
                        let size = size_of(btf, ty)?;
                        ensure!(start + size <= out.len(), "{here}: the field lies outside the type");
                        encode(btf, ty, value, &mut out[start..start + size], &here)?;
                    }
                    MemberAttr::BitField { size, offset } => {
                        let n = number(value, &here)?;
                        ensure!(n >= 0 && n < (1i128 << size), "{here}: {n} does not fit in {size} bits");
                        for bit in 0..size as u32 {
                            let pos = (offset + bit) as usize;
                            let (byte, shift) = (pos / 8, pos % 8);
                            out[byte] = (out[byte] & !(1 << shift)) | ((((n >> bit) & 1) as u8) << shift);
                        }
                    }
                }
            }
            Ok(())
        }
        BtfKind::DataSec => {
            // A global data section (`.bss`, `.data`, `.rodata`): an object by variable name.
            let vars = section_variables(btf, t);
            let names = || vars.iter().map(|(n, ..)| n.as_str()).collect::<Vec<_>>().join(", ");
            let Value::Object(fields) = v else {
                bail!("{at}: expected an object with variables {} (or hex bytes), got {v}", names())
            };
            for (key, value) in fields {
                let (_, ty, start, size) = vars
                    .iter()
                    .find(|(n, ..)| n == key)
                    .with_context(|| format!("{at}: no variable '{key}'; the section's variables are {}", names()))?;
                ensure!(start + size <= out.len(), "{at}.{key}: the variable lies outside the section");
                encode(btf, *ty, value, &mut out[*start..start + size], &format!("{at}.{key}"))?;
            }
            Ok(())
        }
        other => bail!("{at}: a {other:?} field cannot be given in JSON; give the bytes in hex"),
    }
}

/// A data section's variables: (name, type, byte offset, size).
fn section_variables(btf: &Btf<'_>, t: BtfType<'_>) -> Vec<(String, TypeId, usize, usize)> {
    let Ok(sec) = DataSec::try_from(t) else { return Vec::new() };
    sec.iter()
        .filter_map(|v| {
            let var: Var<'_> = btf.type_by_id(v.ty)?;
            let name = var.name()?.to_string_lossy().into_owned();
            Some((name, var.referenced_type_id(), v.offset as usize, v.size))
        })
        .collect()
}

/// Member `key` of `c` (at bit offset `base`): a named member, or one of
/// an anonymous struct or union's, as C lets it be named (`def.vip` for a
/// `union { __be32 vip; __be32 vipv6[4]; }` inside `def`).
fn find_member(btf: &Btf<'_>, c: &Composite<'_>, key: &str, base: u32) -> Result<Option<(TypeId, MemberAttr)>> {
    for m in c.iter() {
        let shift = |attr: MemberAttr| match attr {
            MemberAttr::Normal { offset } => MemberAttr::Normal { offset: offset + base },
            MemberAttr::BitField { size, offset } => MemberAttr::BitField { size, offset: offset + base },
        };
        match m.name {
            Some(n) if n.to_string_lossy() == key => return Ok(Some((m.ty, shift(m.attr)))),
            None => {
                let (inner, _) = resolve(btf, m.ty)?;
                if let (Ok(ic), MemberAttr::Normal { offset }) = (Composite::try_from(inner), m.attr)
                    && let Some(found) = find_member(btf, &ic, key, base + offset)?
                {
                    return Ok(Some(found));
                }
            }
            _ => {}
        }
    }
    Ok(None)
}

/// The names a JSON object may use for `c`: its members, with anonymous
/// members' fields in their place.
fn field_names(btf: &Btf<'_>, c: &Composite<'_>) -> String {
    let mut names = Vec::new();
    for m in c.iter() {
        match m.name {
            Some(n) => names.push(n.to_string_lossy().into_owned()),
            None => match resolve(btf, m.ty).ok().and_then(|(t, _)| Composite::try_from(t).ok()) {
                Some(inner) => names.push(field_names(btf, &inner)),
                None => names.push("(anonymous)".into()),
            },
        }
    }
    names.join(", ")
}

/// The bytes of a key or value: hex, or laid out by BTF type `id` (0: none).
pub fn bytes_of(btf: Option<&Btf<'_>>, id: u32, size: usize, v: &Value, at: &str) -> Result<Vec<u8>> {
    let mut out = vec![0u8; size];
    match (v, btf) {
        (Value::String(s), _) if hex_bytes(s).is_some_and(|b| b.len() == size) => out = hex_bytes(s).expect("checked"),
        // A global data section's key (0), which has no BTF type.
        (Value::Number(_), _) if id == 0 && matches!(size, 1 | 2 | 4 | 8) => {
            write_scalar(&mut out, number(v, at)?, &Scalar { size, big_endian: false }, at)?
        }
        (_, Some(btf)) if id != 0 => {
            let typed = size_of(btf, TypeId::from(id))?;
            ensure!(typed == size, "{at}: the map's BTF type has {typed} bytes, the map {size}");
            encode(btf, TypeId::from(id), v, &mut out, at)?;
        }
        _ => bail!("{at}: the map has no BTF type for it; give its {size} bytes as a hex string"),
    }
    Ok(out)
}

/// An expected key or value, laid out as [`bytes_of`] does, with which of
/// its bytes `v` gives: a struct's fields it leaves out are not compared.
/// (Laid out twice, over zeros and over 0xff: the bytes `v` writes agree.)
pub fn expected_bytes(
    btf: Option<&Btf<'_>>,
    id: u32,
    size: usize,
    v: &Value,
    at: &str,
) -> Result<(Vec<u8>, Vec<bool>)> {
    let want = bytes_of(btf, id, size, v, at)?;
    let given = match (v, btf) {
        (Value::String(s), _) if hex_bytes(s).is_some_and(|b| b.len() == size) => vec![true; size],
        (_, Some(btf)) if id != 0 => {
            let mut ones = vec![0xffu8; size];
            encode(btf, TypeId::from(id), v, &mut ones, at)?;
            want.iter().zip(&ones).map(|(a, b)| a == b).collect()
        }
        _ => vec![true; size],
    };
    Ok((want, given))
}

/// How `got` differs from `want` in the bytes `given` marks, by member of
/// BTF type `id` where it is a struct ("packets: expected 01000000, got
/// 02000000"), else as bytes; `None` if it does not.
pub fn value_differs(btf: Option<&Btf<'_>>, id: u32, want: &[u8], got: &[u8], given: &[bool]) -> Option<String> {
    if want.len() != got.len() {
        return Some(format!("expected {} bytes, got {}", want.len(), got.len()));
    }
    let differs = |r: std::ops::Range<usize>| r.clone().any(|i| given[i] && want[i] != got[i]);
    if !differs(0..want.len()) {
        return None;
    }
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let by_member = || -> Option<String> {
        let btf = btf?;
        let (t, _) = resolve(btf, TypeId::from(id)).ok()?;
        // (name, byte offset, size) of each member, or each variable of a data section.
        let members: Vec<(String, usize, usize)> = match Composite::try_from(t) {
            Ok(c) => c
                .iter()
                .filter_map(|m| {
                    let MemberAttr::Normal { offset } = m.attr else { return None };
                    let (start, size) = ((offset / 8) as usize, size_of(btf, m.ty).ok()?);
                    let name = m.name.map_or_else(
                        || format!("bytes {start}..{}", start + size),
                        |n| n.to_string_lossy().into_owned(),
                    );
                    Some((name, start, size))
                })
                .collect(),
            Err(_) => section_variables(btf, t).into_iter().map(|(n, _, start, size)| (n, start, size)).collect(),
        };
        let mut out = Vec::new();
        for (name, start, size) in members {
            if start + size <= want.len() && differs(start..start + size) {
                out.push(format!(
                    "{name}: expected {}, got {}",
                    hex(&want[start..start + size]),
                    hex(&got[start..start + size])
                ));
            }
        }
        (!out.is_empty()).then(|| out.join("; "))
    };
    Some(by_member().unwrap_or_else(|| format!("expected {}, got {}", hex(want), hex(got))))
}

/// The bytes of an skb program's test-run context: the running kernel's
/// `struct __sk_buff` (from its BTF) with the fields `fields` (a JSON object,
/// as a map value) set and the rest zero. `what` names the input in errors.
pub fn skb_context(fields: &Value, what: &str) -> Result<Vec<u8>> {
    kernel_struct("__sk_buff", fields, what)
}

/// The bytes of the running kernel's `struct type_name` (from its BTF) with
/// the fields `fields` (a JSON object, as a map value) set, the rest zero.
pub fn kernel_struct(type_name: &str, fields: &Value, what: &str) -> Result<Vec<u8>> {
    expected_kernel_struct(type_name, fields, what).map(|(bytes, _)| bytes)
}

/// An expected value of the running kernel's `struct type_name`: the
/// fields `fields` gives, and which bytes they are ([`expected_bytes`]).
pub fn expected_kernel_struct(type_name: &str, fields: &Value, what: &str) -> Result<(Vec<u8>, Vec<bool>)> {
    let btf = Btf::from_vmlinux().map_err(|e| {
        anyhow::anyhow!("{what}: the kernel's BTF (/sys/kernel/btf/vmlinux) is needed to lay out {type_name}: {e}")
    })?;
    let c: Composite<'_> =
        btf.type_by_name(type_name).with_context(|| format!("{what}: the kernel's BTF has no struct {type_name}"))?;
    expected_bytes(Some(&btf), u32::from(c.type_id()), c.size(), fields, what)
}

/// How `got` differs from an expected kernel struct `want` in the bytes
/// `given` marks, by member; `None` if it does not.
pub fn kernel_struct_differs(type_name: &str, want: &[u8], got: &[u8], given: &[bool]) -> Option<String> {
    // Equal outputs, the common case (every reference run of a flow
    // dissector), need no names: the kernel's BTF is parsed only to name a difference.
    if want.len() == got.len() && want.iter().zip(got).zip(given).all(|((w, g), keep)| !keep || w == g) {
        return None;
    }
    let btf = Btf::from_vmlinux().ok();
    let id =
        btf.as_ref().and_then(|b| b.type_by_name::<Composite<'_>>(type_name)).map_or(0, |c| u32::from(c.type_id()));
    value_differs(btf.as_ref(), id, want, got, given)
}

/// The running kernel's `struct type_name` in `bytes` as its non-zero
/// fields read ("nhoff=14 thoff=34 ip_proto=6 sport=1000 ipv4_src=10.0.0.1"),
/// anonymous structs and unions flattened: numbers in the field's byte
/// order, a `__be32` as an IPv4 address, 16 bytes as an IPv6 address,
/// other arrays as hex. `None` without the kernel's BTF.
pub fn describe_kernel_struct(type_name: &str, bytes: &[u8]) -> Option<String> {
    let btf = Btf::from_vmlinux().ok()?;
    let c: Composite<'_> = btf.type_by_name(type_name)?;
    let mut fields = Vec::new();
    describe_members(&btf, &c, 0, bytes, &mut fields);
    Some(if fields.is_empty() { "all zero".into() } else { fields.join(" ") })
}

fn describe_members(btf: &Btf<'_>, c: &Composite<'_>, base: usize, bytes: &[u8], out: &mut Vec<String>) {
    for m in c.iter() {
        let MemberAttr::Normal { offset } = m.attr else { continue };
        let start = base + (offset / 8) as usize;
        let Ok((t, big_endian)) = resolve(btf, m.ty) else { continue };
        let Some(name) = m.name.map(|n| n.to_string_lossy().into_owned()) else {
            if let Ok(inner) = Composite::try_from(t) {
                match t.kind() {
                    BtfKind::Union => describe_union(btf, &inner, start, bytes, out),
                    _ => describe_members(btf, &inner, start, bytes, out),
                }
            }
            continue;
        };
        let Some(field) = size_of(btf, m.ty).ok().and_then(|size| bytes.get(start..start + size)) else { continue };
        if field.iter().all(|b| *b == 0) {
            continue;
        }
        let shown = match (t.kind(), field.len()) {
            (BtfKind::Int | BtfKind::Enum, 4) if big_endian => {
                Ipv4Addr::from(<[u8; 4]>::try_from(field).expect("4 bytes")).to_string()
            }
            (BtfKind::Int | BtfKind::Enum, n @ (1 | 2 | 4 | 8)) => {
                let mut word = [0u8; 8];
                if big_endian {
                    word[8 - n..].copy_from_slice(field);
                    u64::from_be_bytes(word).to_string()
                } else {
                    word[..n].copy_from_slice(field);
                    u64::from_le_bytes(word).to_string()
                }
            }
            (_, 16) => Ipv6Addr::from(<[u8; 16]>::try_from(field).expect("16 bytes")).to_string(),
            _ => field.iter().map(|b| format!("{b:02x}")).collect(),
        };
        out.push(format!("{name}={shown}"));
    }
}

/// An anonymous union's one reading: the largest member with non-zero
/// bytes beyond what its smaller siblings cover (bpf_flow_keys' IPv6
/// addresses), else the first (its IPv4 ones), so that the bytes are
/// not shown twice.
fn describe_union(btf: &Btf<'_>, u: &Composite<'_>, base: usize, bytes: &[u8], out: &mut Vec<String>) {
    let mut members: Vec<(usize, TypeId)> =
        u.iter().filter_map(|m| size_of(btf, m.ty).ok().map(|size| (size, m.ty))).collect();
    members.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    let beyond_the_rest = |i: usize| {
        let (size, _) = members[i];
        let rest = members.get(i + 1).map_or(0, |(s, _)| *s);
        bytes.get(base + rest..base + size).is_some_and(|b| b.iter().any(|x| *x != 0))
    };
    let chosen =
        (0..members.len()).find(|&i| beyond_the_rest(i)).map(|i| members[i].1).or(u.iter().next().map(|m| m.ty));
    let Some(ty) = chosen else { return };
    if let Some(inner) = resolve(btf, ty).ok().and_then(|(t, _)| Composite::try_from(t).ok()) {
        describe_members(btf, &inner, base, bytes, out);
    }
}

/// How two values of the running kernel's `struct type_name` differ, by
/// member ("ip_proto: expected 06, got 11"), or `None` if they do not.
pub fn struct_differs(type_name: &str, want: &[u8], got: &[u8]) -> Option<String> {
    kernel_struct_differs(type_name, want, got, &vec![true; want.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_differences_are_named_by_the_kernels_btf() {
        let offset = |name: &str| {
            let btf = Btf::from_vmlinux().unwrap();
            let c: Composite<'_> = btf.type_by_name("bpf_flow_keys").unwrap();
            let m = c.iter().find(|m| m.name.is_some_and(|n| n.to_string_lossy() == name)).unwrap();
            let MemberAttr::Normal { offset } = m.attr else { panic!("bit field") };
            (offset / 8) as usize
        };
        let want = vec![0u8; 56];
        assert_eq!(struct_differs("bpf_flow_keys", &want, &want), None);
        let mut got = want.clone();
        got[offset("ip_proto")] = 0x11;
        assert_eq!(struct_differs("bpf_flow_keys", &want, &got).unwrap(), "ip_proto: expected 00, got 11");
        // An unknown type: the bytes, whole.
        assert_eq!(struct_differs("no_such_struct", &[1], &[2]).unwrap(), "expected 01, got 02");
    }
}
