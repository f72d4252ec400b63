// Registry-entry test doubles for the harness's tests (tests/api, tests/sweep): a Kernel
// that is cpu_k06_generic_tiles in every field but its name, its run (a planted mistake,
// a sleep, a thrown error) and, for an approximation, `exact`; it serves every pattern.
#pragma once

#include "registry/registry.h"

namespace sparseattn::testing_doubles {

// The kernel the doubles compute with: float32, serves any pattern.
inline const Kernel& generic() { return find_kernel("cpu_k06_generic_tiles"); }

inline bool serves_all(const Pattern&) { return true; }

inline Kernel double_of(const char* name, void (*run)(const Problem&, Output&), bool exact = true) {
  Kernel k = generic();
  k.name = name;
  k.serves = &serves_all;
  k.run_kernel = run;
  k.exact = exact;
  return k;
}

}  // namespace sparseattn::testing_doubles
