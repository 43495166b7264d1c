// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The smallest programs that need each kernel feature bpfbench's timing
 * uses. The host loads them one at a time (the others unloaded): a program
 * that loads proves its feature, and the kernel's refusal says why not.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "can_loop.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} probe_n SEC(".maps");

static __always_inline __u32 probe_count(void)
{
	__u32 zero = 0, *n = bpf_map_lookup_elem(&probe_n, &zero);

	return n ? *n : 0;
}

/* may_goto (6.9): the in-BPF loop bpfbench prefers. */
SEC("xdp")
int probe_may_goto(struct xdp_md *ctx)
{
	__u32 n = probe_count(), i;

	/* Nothing the verifier must track per iteration, so its states converge. */
	for (i = 0; i < n && can_loop; i++)
		asm volatile("" ::: "memory");
	return XDP_PASS;
}

static long probe_step(__u32 i, void *data)
{
	*(__u32 *)data += i;
	return 0;
}

/* bpf_loop (5.17). */
SEC("xdp")
int probe_bpf_loop(struct xdp_md *ctx)
{
	__u32 sum = 0;

	bpf_loop(probe_count(), probe_step, &sum, 0);
	return sum ? XDP_PASS : XDP_DROP;
}

/* A bounded loop the verifier walks (5.3). */
SEC("xdp")
int probe_bounded(struct xdp_md *ctx)
{
	__u32 n = probe_count(), i, sum = 0;

	for (i = 0; i < n && i < 256; i++)
		sum += i;
	return sum ? XDP_PASS : XDP_DROP;
}

/* A global subprogram that moves the packet's head, as a timed body does. */
__noinline int probe_adjust(struct xdp_md *ctx)
{
	if (!ctx)
		return XDP_ABORTED;
	return bpf_xdp_adjust_head(ctx, 0) ? XDP_ABORTED : XDP_PASS;
}

SEC("xdp")
int probe_global_pkt(struct xdp_md *ctx)
{
	return probe_adjust(ctx);
}

/* Runs in a test run with live frames (5.18): drops what it is given. */
SEC("xdp")
int probe_xdp(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
