/* Stand-in for tools/include/linux/time64.h: the one constant the LPM bench uses. */
#pragma once
#define NSEC_PER_SEC 1000000000L
