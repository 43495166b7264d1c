// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: xdp_lossy dropping every data segment (handshakes and ACKs
 * pass): a receiver that accepts a connection and then hears nothing. */
#define LOSSY_EVERY 1
#include "xdp_lossy.bpf.c"
