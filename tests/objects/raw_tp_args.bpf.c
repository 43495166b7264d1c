// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: raw tracepoint programs given their arguments by the test
 * run. raw_tp_sum returns the sum of the first three, counting its runs
 * in a map; raw_tp_chain tail-calls raw_tp_sum. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} runs SEC(".maps");

SEC("raw_tp/sys_enter")
int raw_tp_sum(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&runs, &zero);

	if (n)
		__sync_fetch_and_add(n, 1);
	return ctx->args[0] + ctx->args[1] + ctx->args[2];
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__array(values, int(void *));
} raw_tp_slots SEC(".maps") = {
	.values = { [0] = (void *)&raw_tp_sum },
};

SEC("raw_tp/sys_exit")
int raw_tp_chain(struct bpf_raw_tracepoint_args *ctx)
{
	bpf_tail_call(ctx, &raw_tp_slots, 0);
	return -1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
