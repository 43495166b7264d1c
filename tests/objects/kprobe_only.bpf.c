// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object with a program of a type bpfbench does not time. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("kprobe/do_sys_openat2")
int on_open(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
