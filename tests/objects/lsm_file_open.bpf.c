// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* An LSM program on file_open that allows every open and counts them
 * (a kernel with the BPF LSM enabled: lsm=...,bpf). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

__u64 opens;

SEC("lsm/file_open")
int allow_open(unsigned long long *ctx)
{
	__sync_fetch_and_add(&opens, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
