// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Counts each frame as xdp_flow_count does, then overwrites its first 60
 * bytes, as a receiver that rewrites headers in place would: the
 * generator's page pool hands the very page back, and the generator must
 * send a whole frame again.
 */
#include "flow_count.h"

SEC("xdp")
int xdp_flow_scribble(struct xdp_md *ctx)
{
	int verdict = count(ctx);
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	if (data + 60 <= data_end)
		for (int i = 0; i < 60; i += 4)
			*(__u32 *)(data + i) = 0xa5a5a5a5;
	return verdict;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
