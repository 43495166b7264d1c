// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The smallest tracing program: fentry on bpf_fentry_test1, a kernel
 * function that exists for BPF's own tests. Whether it loads and attaches
 * tells whether this kernel allows fentry/fexit at all (lockdown kernels
 * refuse them with EPERM).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("fentry/bpf_fentry_test1")
int tracing_probe(unsigned long long *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
