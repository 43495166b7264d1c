// SPDX-License-Identifier: GPL-2.0
/* The Aya objects' program (examples/aya/fun-xdp) in C, for comparison: each IPv4
 * source's class (1 Fizz, 2 Buzz, 3 FizzBuzz, 0 none) stored in a hash map. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} SOURCES SEC(".maps");

SEC("xdp")
int fun_xdp(struct xdp_md *ctx)
{
	void *start = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (start + 34 > end)
		return XDP_PASS;
	if (*(__u16 *)(start + 12) != 0x0008)
		return XDP_PASS;
	__u32 src = __builtin_bswap32(*(__u32 *)(start + 26));
	__u32 class = src % 3 == 0 ? (src % 5 == 0 ? 3 : 1) : (src % 5 == 0 ? 2 : 0);
	bpf_map_update_elem(&SOURCES, &src, &class, BPF_ANY);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";
