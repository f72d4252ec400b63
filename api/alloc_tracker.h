// Heap bytes in use and their high-water mark, counted by replacing the global operator
// new/delete of the program that links sparseattn_alloc_tracker (alloc_tracker.cpp, an
// object library of its own: sparseattn_api never replaces anything). A program resets
// the mark, runs a kernel once and reads `peak - before`: the extra memory the kernel
// needed (outputs, packed panels, per-thread tiles), which must grow as O(n) for sparse
// kernels. The harness (measure.h) does so for the checked call given heap_probe().
#pragma once

#include <cstdint>

#include "api/measure.h"

namespace sparseattn::api {

int64_t heap_in_use();
int64_t heap_peak();
void reset_heap_peak();  // peak := in use

// The counter as the harness's TimingPlan::heap.
inline HeapProbe heap_probe() { return {&heap_in_use, &heap_peak, &reset_heap_peak}; }

}  // namespace sparseattn::api
