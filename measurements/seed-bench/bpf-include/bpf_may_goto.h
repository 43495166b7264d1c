/* Stand-in for the selftests' can_loop where the tree has no bpf_may_goto.h
 * (clang >= 19 assembles may_goto): bpfbench's own definition. */
#pragma once
#include "../../../src/bpf/can_loop.bpf.h"
