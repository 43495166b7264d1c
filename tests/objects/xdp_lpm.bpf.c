// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Test object: an LPM trie of IPv4 prefixes driven from packets. Bytes
 * 14-17 are the address, byte 18 the operation (0 lookup as a /32, 1
 * update, 2 delete), byte 19 the prefix length. The result goes into
 * `last`: the value found (-1: none), or the helper's return code.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct lpm_key {
	__u32 prefixlen;
	__u8 addr[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 16);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_key);
	__type(value, __u64);
} prefixes SEC(".maps");

long last = 0;

SEC("xdp")
int xdp_lpm(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	struct lpm_key key = {};
	__u64 value, *v;

	if ((void *)(p + 20) > data_end)
		return XDP_ABORTED;
	__builtin_memcpy(key.addr, p + 14, 4);
	switch (p[18]) {
	case 0:
		key.prefixlen = 32;
		v = bpf_map_lookup_elem(&prefixes, &key);
		last = v ? (long)*v : -1;
		break;
	case 1:
		key.prefixlen = p[19];
		value = p[19] * 1000 + p[14];
		last = bpf_map_update_elem(&prefixes, &key, &value, BPF_ANY);
		break;
	default:
		key.prefixlen = p[19];
		last = bpf_map_delete_elem(&prefixes, &key);
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
