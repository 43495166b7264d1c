// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* kprobe_openat.bpf.c's two counters through multi-kprobe links (fprobe):
 * the same function by name, entered and returned. Kernels with kprobes
 * have them (a guest of Debian's 6.12); this one has neither. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__u64 calls, returns;

SEC("kprobe.multi/do_sys_openat2")
int on_openat(void *ctx)
{
	__sync_fetch_and_add(&calls, 1);
	return 0;
}

SEC("kretprobe.multi/do_sys_openat2")
int on_openat_return(void *ctx)
{
	__sync_fetch_and_add(&returns, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
