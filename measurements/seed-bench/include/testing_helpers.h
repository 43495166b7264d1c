/* Stand-in: the benchmarks built here include testing_helpers.h but call none of it. */
#pragma once
