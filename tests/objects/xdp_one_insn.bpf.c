/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* A program whose two builds differ by one BPF instruction: ONE_INSN_MORE
 * adds a multiplication (xdp_one_insn_more.bpf.c), which the x86-64 JIT
 * emits as one imul. Kernel instruction counts (--metric kernel-insns)
 * must tell them apart by exactly that, per packet. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef ONE_INSN_MORE
#define ONE_INSN_MORE 0
#endif

SEC("xdp")
int xdp_one_insn(struct xdp_md *ctx)
{
	__u64 x = 7;

	/* The value is materialized in both builds; only the multiplication differs. */
	asm volatile("" : "+r"(x));
	if (ONE_INSN_MORE)
		asm volatile("%[x] *= 3" : [x] "+r"(x));
	asm volatile("" : : "r"(x));
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
