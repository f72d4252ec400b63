// Heap bytes in use and their high-water mark, counted by replacing the global operator
// new/delete of the benchmark binary (alloc_tracker.cpp). A benchmark resets the mark,
// runs a kernel once and reads `peak - before`: the extra memory the kernel needed
// (outputs, packed panels, per-thread tiles), which must grow as O(n) for sparse kernels.
#pragma once

#include <cstdint>

namespace sparseattn::bench {

int64_t heap_in_use();
int64_t heap_peak();
void reset_heap_peak();  // peak := in use

}  // namespace sparseattn::bench
