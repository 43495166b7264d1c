// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The counter of the chain test objects (xdp_chain, tc_chain): programs of
 * a chain add 1 to one payload byte, so the output packet shows how many
 * of them ran. */
#ifndef PAYLOAD_COUNT_H
#define PAYLOAD_COUNT_H

#include <linux/types.h>

/* The first payload byte of eth/ipv4/udp (14 + 20 + 8). */
#define PAYLOAD_OFF 42

/* Adds 1 to the byte at PAYLOAD_OFF of the packet [data, data_end) (an
 * xdp_md's or a __sk_buff's); 0 if the packet is too short. */
static __always_inline int count_in_payload(void *data, void *data_end)
{
	__u8 *count = data + PAYLOAD_OFF;

	if ((void *)(count + 1) > data_end)
		return 0;
	*count += 1;
	return 1;
}

#endif
