// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: xdp_lru.bpf.c's operations over a per-CPU hash (no
 * eviction: inserts into a full map are refused). */
#define LRU_TYPE BPF_MAP_TYPE_PERCPU_HASH
#include "xdp_lru.bpf.c"
