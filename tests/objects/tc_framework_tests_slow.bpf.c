// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: tc_framework_tests with a chain of multiplications added to
 * its datapath entry, the same outputs at a clearly higher cost (`ab
 * --tests cilium` of two builds of a suite must call its entries slower). */
#define FW_EXTRA_ALU 40
#include "tc_framework_tests.bpf.c"
