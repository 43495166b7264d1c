// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Test object: tc_framework_tests whose entry lowers a reply's TTL by two,
 * so that b_reply's and e_reply_again's own CHECK fail: a build of the
 * suite that breaks two tests (`ab --tests cilium` must say so, and its
 * gate fail). */
#define FW_REPLY_TTL_STEP 2
#include "tc_framework_tests.bpf.c"
