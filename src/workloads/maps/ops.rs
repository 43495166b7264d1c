//! The operations and map types the map benchmarks cover, and the rules
//! that say which combinations make sense.

use std::fmt;

use libbpf_rs::MapType;

/// An operation, as `--op` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum MapOp {
    /// The harness alone: the timing loop around an empty call.
    Noop,
    /// Key generation without a map operation.
    Baseline,
    Lookup,
    /// Inserting new keys into a map that starts empty.
    Insert,
    /// Overwriting existing keys.
    Update,
    Delete,
    /// Freeing a filled map (needs fentry on bpf_map_free_deferred).
    Free,
    /// Deleting every key of a full map in one batch from BPF: the closest
    /// measurable stand-in for `free` where fentry is refused.
    Drain,
}

impl MapOp {
    pub const SEED_ORDER: [MapOp; 8] = [
        MapOp::Noop,
        MapOp::Baseline,
        MapOp::Lookup,
        MapOp::Insert,
        MapOp::Update,
        MapOp::Delete,
        MapOp::Free,
        MapOp::Drain,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MapOp::Noop => "noop",
            MapOp::Baseline => "baseline",
            MapOp::Lookup => "lookup",
            MapOp::Insert => "insert",
            MapOp::Update => "update",
            MapOp::Delete => "delete",
            MapOp::Free => "free",
            MapOp::Drain => "drain",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            MapOp::Noop => "harness only: the timing loop around an empty call",
            MapOp::Baseline => "key generation, no map operation",
            MapOp::Lookup => "bpf_map_lookup_elem of present keys",
            MapOp::Insert => "bpf_map_update_elem(BPF_NOEXIST) into a map that starts empty",
            MapOp::Update => "bpf_map_update_elem(BPF_EXIST) of present keys",
            MapOp::Delete => "bpf_map_delete_elem of present keys, from a full map",
            MapOp::Free => "freeing a filled map (timed with fentry/fexit on bpf_map_free_deferred)",
            MapOp::Drain => "deleting every key of a full map in one BPF batch (NOT the map-free path)",
        }
    }

    /// Why `--random` is refused, if it is: random keys would insert existing
    /// or delete missing keys, and freeing has no keys.
    pub fn refuses_random(self) -> Option<&'static str> {
        match self {
            MapOp::Noop | MapOp::Baseline | MapOp::Lookup | MapOp::Update => None,
            MapOp::Insert => Some("random keys would insert existing keys and skew the result"),
            MapOp::Delete | MapOp::Drain => Some("random keys would delete missing keys and skew the result"),
            MapOp::Free => Some("freeing a map takes no keys"),
        }
    }

    /// The map changes size as this op runs, so the host refills or empties it.
    pub fn consumes_keys(self) -> bool {
        matches!(self, MapOp::Insert | MapOp::Delete | MapOp::Drain)
    }

    /// The op starts from an empty map (all others start full).
    pub fn starts_empty(self) -> bool {
        self == MapOp::Insert
    }
}

impl fmt::Display for MapOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A map type, as `--map` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum MapKind {
    Hash,
    LruHash,
    PercpuHash,
    LruPercpuHash,
    Array,
    PercpuArray,
    LpmTrie,
}

impl MapKind {
    pub const ALL: [MapKind; 7] = [
        MapKind::Hash,
        MapKind::LruHash,
        MapKind::PercpuHash,
        MapKind::LruPercpuHash,
        MapKind::Array,
        MapKind::PercpuArray,
        MapKind::LpmTrie,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MapKind::Hash => "hash",
            MapKind::LruHash => "lru_hash",
            MapKind::PercpuHash => "percpu_hash",
            MapKind::LruPercpuHash => "lru_percpu_hash",
            MapKind::Array => "array",
            MapKind::PercpuArray => "percpu_array",
            MapKind::LpmTrie => "lpm_trie",
        }
    }

    pub fn map_type(self) -> MapType {
        match self {
            MapKind::Hash => MapType::Hash,
            MapKind::LruHash => MapType::LruHash,
            MapKind::PercpuHash => MapType::PercpuHash,
            MapKind::LruPercpuHash => MapType::LruPercpuHash,
            MapKind::Array => MapType::Array,
            MapKind::PercpuArray => MapType::PercpuArray,
            MapKind::LpmTrie => MapType::LpmTrie,
        }
    }

    pub fn is_array(self) -> bool {
        matches!(self, MapKind::Array | MapKind::PercpuArray)
    }

    pub fn is_percpu(self) -> bool {
        matches!(self, MapKind::PercpuHash | MapKind::LruPercpuHash | MapKind::PercpuArray)
    }

    /// LRU maps evict: they get headroom so that no key of a full benchmark is evicted.
    pub fn is_lru(self) -> bool {
        matches!(self, MapKind::LruHash | MapKind::LruPercpuHash)
    }

    /// Why `op` cannot run on this map type, if it cannot.
    pub fn refuses(self, op: MapOp) -> Option<&'static str> {
        match op {
            MapOp::Insert | MapOp::Delete | MapOp::Drain | MapOp::Free if self.is_array() => {
                Some("array elements are preallocated: they cannot be inserted, deleted or freed one by one")
            }
            _ => None,
        }
    }
}

impl fmt::Display for MapKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How keys are laid out, per map type (`enum key_kind` in map_ops.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyLayout {
    pub size: u32,
    /// Some(prefix length) for LPM keys `{ u32 prefixlen; be32 data }`.
    pub lpm_prefix: Option<u32>,
}

impl KeyLayout {
    /// The key bytes of dense index `idx`, exactly as map_op() builds them.
    pub fn encode(&self, idx: u32, out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + self.size as usize, 0);
        let key = &mut out[start..];
        match self.lpm_prefix {
            Some(p) => {
                let data = if p >= 32 { idx } else { idx << (32 - p) };
                key[..4].copy_from_slice(&p.to_ne_bytes());
                key[4..8].copy_from_slice(&data.to_be_bytes());
            }
            None => key[..4].copy_from_slice(&idx.to_ne_bytes()),
        }
    }

    pub fn key(&self, idx: u32) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.size as usize);
        self.encode(idx, &mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lpm_keys_are_dense_prefixes_in_network_order() {
        let k = KeyLayout { size: 8, lpm_prefix: Some(24) };
        assert_eq!(k.key(1), [24, 0, 0, 0, 0, 0, 1, 0]);
        let k = KeyLayout { size: 8, lpm_prefix: Some(32) };
        assert_eq!(k.key(0x0102_0304), [32, 0, 0, 0, 1, 2, 3, 4]);
    }

    #[test]
    fn index_keys_pad_with_zeros() {
        let k = KeyLayout { size: 8, lpm_prefix: None };
        assert_eq!(k.key(7), [7, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn only_sequential_safe_ops_take_random_keys() {
        let ok: Vec<_> = MapOp::SEED_ORDER.into_iter().filter(|o| o.refuses_random().is_none()).collect();
        assert_eq!(ok, [MapOp::Noop, MapOp::Baseline, MapOp::Lookup, MapOp::Update]);
    }
}
