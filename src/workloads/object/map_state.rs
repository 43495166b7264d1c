//! What a case expects of the maps after its packets (`--expect-map
//! NAME=FILE.json`, a spec case's `expect-maps`), as Cilium's CHECK
//! programs and the selftests assert a conntrack entry or a counter after
//! one run: the maps are put back as the setup left them (`--map` files,
//! globals), each of the case's packets runs once, then each expected key
//! is looked up.
//!
//! An expectation is a JSON array like a `--map` file's, of `{"key": K,
//! "value": V}` (V laid out by the map's BTF; a struct's fields left out
//! are not compared) or `{"key": K, "absent": true}`. A per-CPU map's
//! value is the one of the CPU the case ran on.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::kernel::btf_value::{bytes_of, expected_bytes, value_differs};
use crate::kernel::maps;
use crate::kernel::object::ObjectFile;

/// The entries one map must hold (or not) after a case.
#[derive(Debug, Clone)]
pub struct MapExpectation {
    pub map: String,
    /// Where the entries came from, for errors: a file, or the spec file.
    pub from: String,
    entries: Vec<Value>,
}

impl MapExpectation {
    /// `NAME=FILE.json`, as `--expect-map` takes it.
    pub fn parse_flag(text: &str) -> Result<MapExpectation> {
        let Some((map, file)) = text.split_once('=') else {
            bail!("--expect-map expects NAME=FILE.json, got '{text}'");
        };
        MapExpectation::from_file(map, Path::new(file))
    }

    /// The entries of `file` for map `map`.
    pub fn from_file(map: &str, file: &Path) -> Result<MapExpectation> {
        let from = file.display().to_string();
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--expect-map {map}={from}: cannot read the file"))?;
        let doc: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("--expect-map {map}={from}: not valid JSON ({e})"))?;
        MapExpectation::from_value(map, &from, doc)
    }

    /// The entries `doc` (a JSON array) gives for map `map`, checked for shape.
    pub fn from_value(map: &str, from: &str, doc: Value) -> Result<MapExpectation> {
        let at = format!("--expect-map {map}={from}");
        let Value::Array(entries) = doc else {
            bail!(
                "{at}: expected a JSON array of {{\"key\": ..., \"value\": ...}} or {{\"key\": ..., \"absent\": true}}"
            )
        };
        for (i, e) in entries.iter().enumerate() {
            let Some(o) = e.as_object() else { bail!("{at}: entry {i} is not an object") };
            if let Some(extra) = o.keys().find(|k| !["key", "value", "absent"].contains(&k.as_str())) {
                bail!(
                    "{at}: entry {i}: unknown member \"{extra}\" (an entry has \"key\" and \"value\", or \"absent\": true)"
                );
            }
            match (o.get("key"), o.get("value"), o.get("absent")) {
                (None, _, _) => bail!("{at}: entry {i} needs a \"key\""),
                (Some(_), Some(_), None) | (Some(_), None, Some(Value::Bool(true))) => {}
                _ => bail!("{at}: entry {i} needs either \"value\" or \"absent\": true"),
            }
        }
        Ok(MapExpectation { map: map.to_string(), from: from.to_string(), entries })
    }

    /// Looks up each expected key in `obj`'s map (its value on `cpu` for a
    /// per-CPU map): the line the case's checks show, or what differs,
    /// naming the map, the entry and the field.
    pub fn check(&self, obj: &ObjectFile, cpu: usize) -> Result<String> {
        let at = format!("map {}", self.map);
        let fd = obj.map_fd(&self.map).with_context(|| format!("--expect-map {}", self.map))?;
        let info = libbpf_rs::MapInfo::new(fd).with_context(|| at.clone())?.info;
        if !maps::resettable(info.type_) {
            bail!(
                "--expect-map {}: a map of this type (type {}) cannot be looked up from outside",
                self.map,
                info.type_
            );
        }
        let ncpus = crate::system::cpu::possible_cpus()?;
        let btf = obj.typed_btf();
        let (key_id, value_id) = obj.map_btf_ids(&self.map)?;
        let (key_size, value_size) = (info.key_size as usize, info.value_size as usize);
        let percpu = libbpf_rs::MapType::from(info.type_).is_percpu();
        let (mut present, mut absent) = (0, 0);
        for (i, e) in self.entries.iter().enumerate() {
            let entry = format!("{at}, entry {i} of {}", self.from);
            let key = bytes_of(btf.as_ref(), key_id, key_size, &e["key"], &format!("{entry}: key"))?;
            let got = maps::lookup(fd, &key, maps::value_len(&info, ncpus)).with_context(|| entry.clone())?;
            let shown_key = e["key"].to_string();
            let Some(value) = e.get("value") else {
                if got.is_some() {
                    bail!("{entry}: key {shown_key} is present, expected absent");
                }
                absent += 1;
                continue;
            };
            let Some(got) = got else { bail!("{entry}: key {shown_key} is absent, expected present") };
            let got = match percpu {
                true => got[cpu * maps::percpu_stride(value_size)..][..value_size].to_vec(),
                false => got,
            };
            let (want, given) = expected_bytes(btf.as_ref(), value_id, value_size, value, &format!("{entry}: value"))?;
            if let Some(diff) = value_differs(btf.as_ref(), value_id, &want, &got, &given) {
                bail!("{entry}: key {shown_key}: {diff}");
            }
            present += 1;
        }
        let cpu_note = if percpu { format!(" (CPU {cpu}'s values)") } else { String::new() };
        Ok(format!(
            "map {}: {present} entr{} as expected{cpu_note} and {absent} key(s) absent as expected, after each packet ran once from the maps as set up",
            self.map,
            if present == 1 { "y" } else { "ies" }
        ))
    }
}
