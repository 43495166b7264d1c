// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A kprobe and a kretprobe on openat's kernel work (do_sys_openat2),
 * counting calls and returns: kprobes are not built into every kernel (a
 * guest of Debian's 6.12 has them). kprobe_multi_openat.bpf.c is this
 * file with the multi-kprobe sections. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef KPROBE_SECTION
#define KPROBE_SECTION "kprobe"
#define KRETPROBE_SECTION "kretprobe"
#endif

__u64 calls, returns;

SEC(KPROBE_SECTION "/do_sys_openat2")
int on_openat(void *ctx)
{
	__sync_fetch_and_add(&calls, 1);
	return 0;
}

SEC(KRETPROBE_SECTION "/do_sys_openat2")
int on_openat_return(void *ctx)
{
	__sync_fetch_and_add(&returns, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
