// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: drives a small LRU hash from packets, to compare its
 * evictions in the kernel and in userspace. Bytes 14-17 are the key, byte
 * 18 the operation: 0 lookup, 1 update, 2 update if absent, 3 delete. The
 * verdict is XDP_PASS; the result goes into `last`. A lookup that finds
 * the key adds one to its value (this CPU's, in a per-CPU map).
 * xdp_lru_percpu.bpf.c builds the same with LRU_TYPE a per-CPU LRU hash.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef LRU_TYPE
#define LRU_TYPE BPF_MAP_TYPE_LRU_HASH
#endif

struct {
	__uint(type, LRU_TYPE);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} lru SEC(".maps");

long last = 0;

SEC("xdp")
int xdp_lru(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	__u32 key;
	__u64 value, *found;

	if ((void *)(p + 19) > data_end)
		return XDP_ABORTED;
	key = *(__u32 *)(p + 14);
	value = key * 3;
	switch (p[18]) {
	case 0:
		found = bpf_map_lookup_elem(&lru, &key);
		if (found)
			*found += 1;
		last = found != NULL;
		break;
	case 1:
		last = bpf_map_update_elem(&lru, &key, &value, BPF_ANY);
		break;
	case 2:
		last = bpf_map_update_elem(&lru, &key, &value, BPF_NOEXIST);
		break;
	default:
		last = bpf_map_delete_elem(&lru, &key);
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
