// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: xdp_lru.bpf.c over a per-CPU LRU hash (BPF_MAP_TYPE_LRU_PERCPU_HASH). */
#define LRU_TYPE BPF_MAP_TYPE_LRU_PERCPU_HASH
#include "xdp_lru.bpf.c"
