// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A tracepoint program: counts getppid() calls in an array. The attached
 * tests run it on its hook under bpfbench's getppid trigger;
 * tp_getppid_slow.bpf.c is this file with EXTRA_ROUNDS of work a run. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} calls SEC(".maps");

SEC("tp/syscalls/sys_enter_getppid")
int count_getppid(void *ctx)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&calls, &zero);

	if (!n)
		return 0;
#ifndef EXTRA_ROUNDS
	__sync_fetch_and_add(n, 1);
#else
	__u64 x = __sync_fetch_and_add(n, 1);

#pragma clang loop unroll(disable)
	for (int i = 0; i < EXTRA_ROUNDS; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ULL + i;
	/* Kept: the mix's result goes back where it came from. */
	if (x == 0)
		*n = 0;
#endif
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
