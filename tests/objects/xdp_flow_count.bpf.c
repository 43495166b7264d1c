// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Counts each frame under its flow, checks its checksums, and drops it (flow_count.h). */
#include "flow_count.h"

SEC("xdp")
int xdp_flow_count(struct xdp_md *ctx)
{
	return count(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
