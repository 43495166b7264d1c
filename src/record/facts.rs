//! What a scenario is, in the terms reports need: filled by the workload,
//! read by renderers and exports (which never parse workload strings).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioFacts {
    /// How a text report lays the scenario out.
    pub layout: Layout,
    /// Threads running the scenario at once, each pinned to its own CPU.
    /// Throughput counts all of them; latency is what one of them sees.
    pub producers: u32,
    /// What one reported latency figure covers.
    pub unit: Unit,
    /// The map a map benchmark works on.
    #[serde(default)]
    pub map: Option<MapFacts>,
}

impl ScenarioFacts {
    /// One producer, one figure per operation, in a table row.
    pub const TABLE_ROW: ScenarioFacts =
        ScenarioFacts { layout: Layout::Table, producers: 1, unit: Unit::Op, map: None };

    /// The facts as `key=value` pairs, for exports that carry them as text.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(m) = &self.map {
            out.push(("map", m.map_type.clone()));
            out.push(("op", m.op.clone()));
            out.push(("entries", m.entries.to_string()));
            out.push(("key_size", m.key_size.to_string()));
            out.push(("value_size", m.value_size.to_string()));
            out.push(("random", m.random.to_string()));
            if let Some(p) = m.prefix_len {
                out.push(("prefix_len", p.to_string()));
            }
        }
        if self.producers != 1 || self.map.is_some() {
            out.push(("producers", self.producers.to_string()));
        }
        if let Unit::Map { keys } = self.unit {
            out.push(("unit", format!("map of {keys} keys")));
        }
        out
    }
}

/// The text layouts a scenario can be shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// A row of a per-group table (p50, stddev, percentiles, loop cost).
    Table,
    /// One line per operation in the kernel selftests' bench shape
    /// (throughput, ops per producer, latency).
    OpLines,
}

/// What one reported figure covers. Samples are always ns per operation;
/// a unit of several operations scales them for display and throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// One operation (one packet, one map call).
    Op,
    /// A whole map of `keys` keys (`drain`: every key deleted).
    Map { keys: u64 },
}

impl Unit {
    /// Operations in one unit.
    pub fn ops(self) -> f64 {
        match self {
            Unit::Op => 1.0,
            Unit::Map { keys } => keys as f64,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Unit::Op => "op",
            Unit::Map { .. } => "map",
        }
    }
}

/// The map and operation of a map benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapFacts {
    /// Map type as `--map` names it ("hash", "lpm_trie", ...).
    pub map_type: String,
    /// Operation as `--op` names it ("lookup", "drain", ...).
    pub op: String,
    pub entries: u32,
    pub key_size: u32,
    pub value_size: u32,
    /// LPM prefix length, for tries.
    pub prefix_len: Option<u32>,
    /// Keys drawn at random instead of in sequence.
    pub random: bool,
}
