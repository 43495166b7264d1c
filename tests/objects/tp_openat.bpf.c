// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A tracepoint program on openat's entry counting calls: the tracepoint
 * beside kprobe_openat.bpf.c and fentry_openat.bpf.c, the same work on the
 * same system call through three mechanisms. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__u64 calls;

SEC("tp/syscalls/sys_enter_openat")
int on_openat(void *ctx)
{
	__sync_fetch_and_add(&calls, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
