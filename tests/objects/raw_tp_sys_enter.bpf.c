// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A raw tracepoint on every system call's entry, counting the calls of
 * one system call number (getppid: 110 on x86-64) by a global. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

const volatile __u64 watched_nr = 110;
__u64 seen;

SEC("raw_tp/sys_enter")
int count_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	if (ctx->args[1] == watched_nr)
		__sync_fetch_and_add(&seen, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
