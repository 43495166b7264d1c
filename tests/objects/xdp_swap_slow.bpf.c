// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: xdp_swap with a chain of multiplications added, the same
 * output at a clearly higher cost (paired A/B must call it slower). */
#define SWAP_EXTRA_ALU 40
#include "xdp_swap.bpf.c"
