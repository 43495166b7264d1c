// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Counts frames in a map declared to be pinned by name, as many datapaths
 * declare their maps: libbpf would pin it under /sys/fs/bpf when bpffs is
 * mounted there. bpfbench must not, so a run leaves no pin behind.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} bpfbench_test_pinned SEC(".maps");

SEC("xdp")
int xdp_pin_by_name(struct xdp_md *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&bpfbench_test_pinned, &zero);

	if (n)
		__sync_fetch_and_add(n, 1);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
