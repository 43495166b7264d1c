//! Filling a user's map from JSON before validation (`--map NAME=FILE.json`).
//!
//! The file is an array of `{"key": K, "value": V}`; K and V are hex
//! strings or values laid out by the map's BTF (kernel/btf_value.rs).

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::kernel::btf_value::bytes_of;
use crate::kernel::maps;
use crate::kernel::object::ObjectFile;
use crate::system::cpu::possible_cpus;

/// Fills map `name` of `obj` (created, after prepare) from the JSON file
/// `path`. Returns the number of entries written.
pub fn fill(obj: &ObjectFile, name: &str, path: &Path) -> Result<usize> {
    let ctx = format!("--map {name}={}", path.display());
    let fd = obj.map_fd(name).with_context(|| ctx.clone())?;
    let info = libbpf_rs::MapInfo::new(fd).with_context(|| ctx.clone())?.info;
    let percpu = libbpf_rs::MapType::from(info.type_).is_percpu();
    if maps::holds_descriptors(info.type_) {
        bail!("{ctx}: map '{name}' holds references to other objects, which JSON cannot give");
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("{ctx}: cannot read the file"))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{ctx}: not valid JSON ({e})"))?;
    let Value::Array(entries) = doc else { bail!("{ctx}: expected a JSON array of {{\"key\": ..., \"value\": ...}}") };
    let btf = obj.typed_btf();
    let (key_id, value_id) = obj.map_btf_ids(name)?;
    let ncpus = possible_cpus()?;
    for (i, e) in entries.iter().enumerate() {
        let at = format!("{ctx}: entry {i}");
        let (Some(k), Some(v)) = (e.get("key"), e.get("value")) else { bail!("{at}: needs \"key\" and \"value\"") };
        if let Some(extra) = e.as_object().and_then(|o| o.keys().find(|k| *k != "key" && *k != "value")) {
            bail!("{at}: unknown member \"{extra}\" (an entry has \"key\" and \"value\")");
        }
        let key = bytes_of(btf.as_ref(), key_id, info.key_size as usize, k, &format!("{at}: key"))?;
        let one = bytes_of(btf.as_ref(), value_id, info.value_size as usize, v, &format!("{at}: value"))?;
        let value = if percpu {
            // Per-CPU maps take one 8-byte-aligned value per possible CPU: the same for all.
            let stride = maps::percpu_stride(one.len());
            let mut all = vec![0u8; stride * ncpus];
            for c in 0..ncpus {
                all[c * stride..c * stride + one.len()].copy_from_slice(&one);
            }
            all
        } else {
            one
        };
        if let Err(e) = maps::update(fd, &key, &value) {
            bail!("{at}: the kernel refused the entry: {e} (is the map full, or the key out of range?)");
        }
    }
    Ok(entries.len())
}
