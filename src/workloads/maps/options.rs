//! The map workloads' command-line options and the parameters they become.

use anyhow::{Result, bail, ensure};
use clap::{Args, FromArgMatches};

use super::instance::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use super::ops::{KeyLayout, MapKind, MapOp};

/// Bigger maps make fills and validation walks take minutes.
pub const MAX_ENTRIES: u32 = 1 << 24;

/// The two suites the map workloads offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// The kernel selftests' LPM-trie suite.
    LpmTrie,
    /// The operations across map types and sizes.
    Maps,
}

impl Suite {
    pub fn name(self) -> &'static str {
        match self {
            Suite::LpmTrie => "lpm-trie",
            Suite::Maps => "maps",
        }
    }
}

// Options of the map workloads (`lpm-trie`, `maps`). A plain comment: a doc
// comment here would become the help text of the `run` command it joins.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Map benchmarks (lpm-trie, maps)")]
pub struct MapArgs {
    /// Operations to time, comma-separated (default: all for lpm-trie;
    /// lookup,update,insert,delete for maps).
    #[arg(long = "op", value_enum, value_delimiter = ',')]
    pub ops: Vec<MapOp>,
    /// Map types, comma-separated (maps only; default: all six).
    #[arg(long = "map", value_enum, value_delimiter = ',')]
    pub maps: Vec<MapKind>,
    /// Map sizes, comma-separated; several make a size sweep (default 10000).
    #[arg(long, value_delimiter = ',')]
    pub entries: Vec<u32>,
    /// LPM prefix length in bits, 1-32 (default 32).
    #[arg(long)]
    pub prefix_len: Option<u32>,
    /// Key size of hash maps in bytes (arrays use 4, lpm_trie 8; default 4).
    #[arg(long)]
    pub key_size: Option<u32>,
    /// Value size in bytes (default 8).
    #[arg(long)]
    pub value_size: Option<u32>,
    /// Random keys instead of sequential ones (baseline, lookup, update only).
    #[arg(long)]
    pub random: bool,
    /// Threads running the op at once, each pinned to its own CPU.
    #[arg(long)]
    pub producers: Option<usize>,
}

/// What a map benchmark runs: the options with the suite's defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapParams {
    pub maps: Vec<MapKind>,
    pub ops: Vec<MapOp>,
    /// The user named the ops (an impossible combination is then an error,
    /// not an N/A row).
    pub ops_explicit: bool,
    pub entries: Vec<u32>,
    pub prefix_len: u32,
    /// Key size of hash maps (arrays take 4 bytes, LPM tries 8).
    pub key_size: u32,
    pub value_size: u32,
    pub random: bool,
    pub producers: usize,
}

impl MapParams {
    pub fn defaults(suite: Suite) -> MapParams {
        let (maps, ops) = match suite {
            Suite::LpmTrie => (vec![MapKind::LpmTrie], MapOp::SEED_ORDER.to_vec()),
            Suite::Maps => (MapKind::ALL.to_vec(), vec![MapOp::Lookup, MapOp::Update, MapOp::Insert, MapOp::Delete]),
        };
        MapParams {
            maps,
            ops,
            ops_explicit: false,
            entries: vec![10_000],
            prefix_len: 32,
            key_size: 4,
            value_size: 8,
            random: false,
            producers: 1,
        }
    }

    /// The suite's defaults overridden by what the command line gave.
    pub fn from_matches(suite: Suite, matches: &clap::ArgMatches) -> Result<MapParams> {
        let args = MapArgs::from_arg_matches(matches).map_err(|e| anyhow::anyhow!("{e}"))?;
        if suite == Suite::LpmTrie && args.maps.iter().any(|&k| k != MapKind::LpmTrie) {
            bail!(
                "the lpm-trie workload runs on lpm_trie maps only; use 'bpfbench run maps --map ...' for other types"
            );
        }
        let mut p = MapParams::defaults(suite);
        if !args.ops.is_empty() {
            p.ops = args.ops;
            p.ops_explicit = true;
        }
        if !args.maps.is_empty() {
            p.maps = args.maps;
        }
        if !args.entries.is_empty() {
            p.entries = args.entries;
        }
        p.prefix_len = args.prefix_len.unwrap_or(p.prefix_len);
        p.key_size = args.key_size.unwrap_or(p.key_size);
        p.value_size = args.value_size.unwrap_or(p.value_size);
        p.random = args.random;
        p.producers = args.producers.unwrap_or(p.producers);
        Ok(p)
    }

    pub fn key_layout(&self, kind: MapKind) -> KeyLayout {
        match kind {
            MapKind::LpmTrie => KeyLayout { size: 8, lpm_prefix: Some(self.prefix_len) },
            k if k.is_array() => KeyLayout { size: 4, lpm_prefix: None },
            _ => KeyLayout { size: self.key_size, lpm_prefix: None },
        }
    }

    /// Whether `op` runs with random keys (asked for, and allowed for it).
    pub fn random_for(&self, op: MapOp) -> bool {
        self.random && op.refuses_random().is_none()
    }

    /// Refuses combinations that cannot mean anything, in one line each.
    pub fn check(&self) -> Result<()> {
        ensure!(
            !self.maps.is_empty() && !self.ops.is_empty() && !self.entries.is_empty(),
            "nothing to run: no map, op or size selected"
        );
        ensure!((1..=32).contains(&self.prefix_len), "--prefix-len must be between 1 and 32, got {}", self.prefix_len);
        ensure!(
            (4..=MAX_KEY_SIZE).contains(&self.key_size),
            "--key-size must be between 4 and {MAX_KEY_SIZE} bytes, got {}",
            self.key_size
        );
        ensure!(
            (1..=MAX_VALUE_SIZE).contains(&self.value_size),
            "--value-size must be between 1 and {MAX_VALUE_SIZE} bytes, got {}",
            self.value_size
        );
        ensure!(self.producers >= 1, "--producers must be at least 1");
        for &e in &self.entries {
            ensure!((1..=MAX_ENTRIES).contains(&e), "--entries must be between 1 and {MAX_ENTRIES}, got {e}");
            if self.maps.contains(&MapKind::LpmTrie) && self.prefix_len < 32 && u64::from(e) > 1u64 << self.prefix_len {
                bail!(
                    "--entries {e} does not fit in /{} prefixes (at most {}); raise --prefix-len or lower --entries",
                    self.prefix_len,
                    1u64 << self.prefix_len
                );
            }
        }
        if self.random && self.ops_explicit {
            for op in &self.ops {
                if let Some(why) = op.refuses_random() {
                    bail!("--random cannot be used with --op {op}: {why}; use it with baseline, lookup or update");
                }
            }
        }
        Ok(())
    }
}
