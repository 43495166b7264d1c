// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: a syscall program whose context is its own struct: it
 * writes the product of the first two words into the third (the test
 * run gives the context back) and returns their sum. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct args {
	__u64 a;
	__u64 b;
	__u64 product;
};

SEC("syscall")
int syscall_mul(struct args *ctx)
{
	ctx->product = ctx->a * ctx->b;
	return ctx->a + ctx->b;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
