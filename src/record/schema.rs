//! The JSON schema of a run: its name and version, reading a document back,
//! and upgrading documents of the previous version.
//!
//! Version 3 replaced version 2's free-form `params` strings with typed
//! `facts`; version 4 replaced a scenario's three optional figures
//! (`measurement`, `instructions`, `kernel_insns`) with one `figure` tagged
//! by its metric. Documents of versions 2 and 3 (histories stored before,
//! the output of older bpfbench executables `ab` runs) are upgraded on
//! read, a version at a time; older ones are refused.

use serde_json::{Map, Value, json};

use super::{Metric, RunRecord};

pub const SCHEMA_NAME: &str = "bpfbench.run";
pub const SCHEMA_VERSION: u32 = 4;
/// The oldest version that is upgraded on read.
const OLDEST_READABLE: u32 = 2;

pub fn schema() -> String {
    format!("{SCHEMA_NAME}/{SCHEMA_VERSION}")
}

/// Why a JSON document is not a run this bpfbench can read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("not valid JSON ({0})")]
    Json(serde_json::Error),
    #[error("not a bpfbench result: no \"schema\" field naming {SCHEMA_NAME}/N")]
    Foreign,
    #[error(
        "written by a newer bpfbench (schema {0}; this one reads up to {SCHEMA_NAME}/{SCHEMA_VERSION}); upgrade bpfbench"
    )]
    Newer(String),
    #[error(
        "schema {0} is too old for this bpfbench (it reads {SCHEMA_NAME}/{OLDEST_READABLE} to /{SCHEMA_VERSION}); re-run the benchmark"
    )]
    Older(String),
    #[error("a {0} document with a missing or malformed field ({1})")]
    Malformed(String, serde_json::Error),
}

/// Reads a run from JSON, naming what is wrong when it is not one.
pub fn parse_run(text: &str) -> Result<RunRecord, RecordError> {
    let mut value: Value = serde_json::from_str(text).map_err(RecordError::Json)?;
    let schema = value.get("schema").and_then(|s| s.as_str()).ok_or(RecordError::Foreign)?.to_string();
    let version = schema
        .strip_prefix(SCHEMA_NAME)
        .and_then(|v| v.strip_prefix('/'))
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or(RecordError::Foreign)?;
    if version > SCHEMA_VERSION {
        return Err(RecordError::Newer(schema));
    }
    if version < OLDEST_READABLE {
        return Err(RecordError::Older(schema));
    }
    if version <= 2 {
        upgrade_v2(&mut value);
    }
    if version <= 3 {
        upgrade_v3(&mut value);
    }
    serde_json::from_value(value).map_err(|e| RecordError::Malformed(schema, e))
}

/// Version 3 kept each figure in its own optional field, at most one of
/// them set; version 4 has the one that is set as `figure`, its fields
/// beside the metric's name.
fn upgrade_v3(doc: &mut Value) {
    doc["schema"] = json!(schema());
    let Some(results) = doc.get_mut("results").and_then(Value::as_array_mut) else { return };
    for r in results {
        let Some(obj) = r.as_object_mut() else { continue };
        let mut figure = Value::Null;
        for (field, metric) in
            [("measurement", Metric::Time), ("instructions", Metric::Insns), ("kernel_insns", Metric::KernelInsns)]
        {
            match obj.remove(field) {
                Some(Value::Object(mut fields)) if figure.is_null() => {
                    fields.insert("metric".into(), json!(metric.name()));
                    figure = Value::Object(fields);
                }
                _ => {}
            }
        }
        obj.insert("figure".into(), figure);
    }
}

/// Version 2 kept a scenario's facts as strings in `params`; version 3 has
/// them typed. Missing or unreadable strings leave the defaults.
fn upgrade_v2(doc: &mut Value) {
    doc["schema"] = json!(schema());
    let Some(results) = doc.get_mut("results").and_then(Value::as_array_mut) else { return };
    for r in results {
        let Some(obj) = r.as_object_mut() else { continue };
        let params: Map<String, Value> = match obj.remove("params") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        let text = |k: &str| params.get(k).and_then(Value::as_str).map(str::to_string);
        let number = |k: &str| text(k).and_then(|v| v.parse::<u64>().ok());
        let map = text("map").map(|map_type| {
            json!({
                "map_type": map_type,
                "op": text("op").unwrap_or_default(),
                "entries": number("entries").unwrap_or(0),
                "key_size": number("key_size").unwrap_or(0),
                "value_size": number("value_size").unwrap_or(0),
                "prefix_len": number("prefix_len"),
                "random": text("random").as_deref() == Some("true"),
            })
        });
        let unit = match (text("op").as_deref(), number("entries")) {
            (Some("drain"), Some(keys)) => json!({"map": {"keys": keys}}),
            _ => json!("op"),
        };
        obj.insert(
            "facts".into(),
            json!({
                "layout": if map.is_some() { "op-lines" } else { "table" },
                "producers": number("producers").unwrap_or(1),
                "unit": unit,
                "map": map,
            }),
        );
    }
}
