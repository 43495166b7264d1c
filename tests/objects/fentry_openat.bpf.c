// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fentry and fexit on openat's kernel work (do_sys_openat2), counting
 * calls and returns through BPF trampolines (refused on some kernels; a
 * guest of Debian's 6.12 takes them). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__u64 calls, returns;

SEC("fentry/do_sys_openat2")
int on_openat(unsigned long long *ctx)
{
	__sync_fetch_and_add(&calls, 1);
	return 0;
}

SEC("fexit/do_sys_openat2")
int on_openat_exit(unsigned long long *ctx)
{
	__sync_fetch_and_add(&returns, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
