// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: an array of hash maps, as load balancers keep per-CPU
 * connection tables. Byte 14 picks the slot, bytes 15-18 are the key; the
 * value found is counted up and its old count goes into `last` (-1: no
 * map in the slot, -2: no such key).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct inner {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 4);
	__type(key, __u32);
	__array(values, struct inner);
} tables SEC(".maps");

long last = 0;

SEC("xdp")
int xdp_mim(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	__u32 slot, key;
	__u64 *v;
	void *table;

	if ((void *)(p + 19) > data_end)
		return XDP_ABORTED;
	slot = p[14];
	key = *(__u32 *)(p + 15);
	table = bpf_map_lookup_elem(&tables, &slot);
	if (!table) {
		last = -1;
		return XDP_PASS;
	}
	v = bpf_map_lookup_elem(table, &key);
	if (!v) {
		last = -2;
		return XDP_PASS;
	}
	last = *v;
	*v += 1;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
