// fuzz_check: the checker behind `sparseattn check` -- check_close() and report_json()
// (core/check.h) on a candidate and a reference of arbitrary shapes, dtypes and values
// (NaN, ±Inf, subnormals, huge), with any finite tolerance >= 0.
//
// Asserts (docs/robustness.md): nothing but a result or InvalidArgument (contract §5: bad
// input is refused by name); no sanitizer report. The checker's rule, restated from
// core/check.h: an element passes when both values are the same infinity, or both are
// finite and |x - ref| <= atol + rtol*|ref|; report.pass is true exactly when every element
// passes and the shapes agree (leading 1s aside); a NaN or an Inf where the reference is
// finite never passes; budget_used <= 1 exactly when it passes; report_json() is valid JSON.
//
// The `check` subcommand itself (its report, probes and conventions, api/results.cpp) is
// not linked here: it needs the whole CPU library set built with clang, which would double
// the fuzz build; its bad inputs are covered by tests/cli instead.
#include <fuzzer/FuzzedDataProvider.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "core/check.h"
#include "core/npy.h"
#include "fuzz_common.h"
#include "reference/attention.h"

namespace {

using namespace sparseattn;

// A double weighted towards what breaks comparisons: any bit pattern (NaN payloads,
// ±Inf, subnormals), small integers, the extremes of the range, and values next to `near`.
double any_double(FuzzedDataProvider& d, double near = 0.0) {
  switch (d.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: {
      const uint64_t bits = d.ConsumeIntegral<uint64_t>();
      double x;
      std::memcpy(&x, &bits, sizeof x);
      return x;
    }
    case 1: return std::numeric_limits<double>::quiet_NaN();
    case 2: return d.ConsumeBool() ? INFINITY : -INFINITY;
    case 3: return d.ConsumeBool() ? std::numeric_limits<double>::max()
                                   : std::numeric_limits<double>::denorm_min();
    case 4: return static_cast<double>(d.ConsumeIntegralInRange<int>(-4, 4));
    case 5: return near;
    case 6: return near * (1.0 + std::ldexp(static_cast<double>(d.ConsumeIntegralInRange<int>(-8, 8)), -d.ConsumeIntegralInRange<int>(10, 52)));
    default: return d.ConsumeFloatingPoint<double>();
  }
}

// A finite tolerance >= 0 (what --atol/--rtol admit).
double any_tolerance(FuzzedDataProvider& d) {
  const double table[] = {0.0, 1e-300, 1e-12, 2e-5, 1e-3, 1.0, 1e300,
                          std::numeric_limits<double>::max()};
  if (d.ConsumeBool()) return table[d.ConsumeIntegralInRange<int>(0, 7)];
  const double x = std::fabs(d.ConsumeFloatingPoint<double>());
  return std::isfinite(x) ? x : 0.0;
}

Shape any_shape(FuzzedDataProvider& d, int max_rank, int64_t max_dim) {
  Shape s(static_cast<size_t>(d.ConsumeIntegralInRange<int>(0, max_rank)));
  for (auto& x : s) x = d.ConsumeIntegralInRange<int64_t>(0, max_dim);
  return s;
}

Shape strip_leading_ones(Shape s) {
  while (s.size() > 1 && s.front() == 1) s.erase(s.begin());
  return s;
}

// --- path 1: the checker itself -------------------------------------------------------

template <class T>
void fuzz_checker(FuzzedDataProvider& d) {
  Tensor<double> ref(any_shape(d, 4, 4), 0.0);
  // The oracle never produces NaN (contract §2: o = 0, lse = -inf on an empty row).
  for (auto& x : ref.data) {
    x = any_double(d);
    if (std::isnan(x)) x = -INFINITY;
  }
  Tensor<T> cand;
  switch (d.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: cand.shape = ref.shape; break;
    case 1: cand.shape = ref.shape, cand.shape.insert(cand.shape.begin(), 1); break;
    case 2: cand.shape = strip_leading_ones(ref.shape); break;
    default: cand.shape = any_shape(d, 4, 4); break;
  }
  cand = Tensor<T>(cand.shape, T{});
  const bool same_shape = strip_leading_ones(cand.shape) == strip_leading_ones(ref.shape);
  for (size_t e = 0; e < cand.data.size(); ++e)
    cand.data[e] = static_cast<T>(any_double(d, e < ref.data.size() ? ref.data[e] : 0.0));
  const Tolerance tol{any_tolerance(d), any_tolerance(d)};

  const CheckReport r = check_close(cand, ref, tol);

  // The rule, restated.
  int64_t mismatched = 0, nonfinite = 0;
  if (same_shape) {
    for (size_t e = 0; e < ref.data.size(); ++e) {
      const double x = static_cast<double>(cand.data[e]), y = ref.data[e];
      bool ok;
      if (!std::isfinite(x) || !std::isfinite(y)) {
        ok = x == y;
        nonfinite += !ok && std::isfinite(y);
      } else {
        ok = std::fabs(x - y) <= tol.atol + tol.rtol * std::fabs(y);
      }
      mismatched += !ok;
    }
  }
  FUZZ_REQUIRE(r.pass == (same_shape && mismatched == 0), r.reason);
  FUZZ_REQUIRE(r.pass == r.reason.empty(), r.reason);
  if (!same_shape) FUZZ_REQUIRE(r.reason.rfind("shape mismatch", 0) == 0, r.reason);
  if (same_shape) {
    FUZZ_REQUIRE(r.num_mismatched == mismatched, std::to_string(r.num_mismatched));
    FUZZ_REQUIRE(r.num_nonfinite == nonfinite, std::to_string(r.num_nonfinite));
    FUZZ_REQUIRE(r.num_elements == ref.numel(), "num_elements");
    if (ref.numel() > 0) {
      FUZZ_REQUIRE(r.worst_index >= 0 && r.worst_index < ref.numel(), "worst_index");
      FUZZ_REQUIRE(r.worst_position.size() == ref.shape.size(), "worst_position rank");
      FUZZ_REQUIRE(!std::isnan(r.budget_used), "budget_used is NaN");
      FUZZ_REQUIRE(r.pass == (r.budget_used <= 1.0), std::to_string(r.budget_used));
    }
  }
  const std::string text = report_json(r, "o", tol);
  const nlohmann::json j = nlohmann::json::parse(text);  // throws (a crash) if invalid
  FUZZ_REQUIRE(j.at("pass").get<bool>() == r.pass, text);
}

// --- path 2: the `check` command -----------------------------------------------------

Tensor<double> finite_tensor(FuzzedDataProvider& d, Shape shape) {
  Tensor<double> t(std::move(shape), 0.0);
  for (auto& x : t.data) {
    // Mostly small values; sometimes huge ones (scores that overflow float64).
    x = d.ConsumeIntegralInRange<int>(0, 15) == 0 ? any_double(d) : d.ConsumeIntegralInRange<int>(-8, 8) / 4.0;
    if (!std::isfinite(x)) x = 1.0;  // inputs must be finite; refusing them is tested elsewhere
  }
  return t;
}

// Writes `t` as float16/32/64 .npy. float16: small integers, NaN and ±Inf exactly, any
// other value as arbitrary half bits (a candidate only has to be some float16 tensor).
void write_as(FuzzedDataProvider& d, const std::string& path, const Tensor<double>& t) {
  switch (d.ConsumeIntegralInRange<int>(0, 2)) {
    case 0: write_npy(path, t); return;
    case 1: write_npy(path, tensor_cast<float>(t)); return;
    default: {
      // float16 has no writer: a raw header and rounded bits (exact for small integers).
      std::string header = "{'descr': '<f2', 'fortran_order': False, 'shape': (";
      for (size_t a = 0; a < t.shape.size(); ++a)
        header += std::to_string(t.shape[a]) + (t.shape.size() == 1 ? ",)" : a + 1 < t.shape.size() ? ", " : ")");
      if (t.shape.empty()) header += ")";
      header += ", }\n";
      std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
      bytes += static_cast<char>(header.size() & 0xff);
      bytes += static_cast<char>(header.size() >> 8);
      bytes += header;
      for (double x : t.data) {
        uint16_t h = static_cast<uint16_t>(d.ConsumeIntegral<uint16_t>());
        if (std::isfinite(x) && std::fabs(x) < 2048 && x == std::round(x)) {
          // small integers: exact half encoding
          const int v = static_cast<int>(std::fabs(x));
          if (v == 0) {
            h = 0;
          } else {
            int e = 0;
            while ((v >> (e + 1)) != 0) ++e;
            h = static_cast<uint16_t>(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
          }
          if (x < 0) h |= 0x8000;
        } else if (std::isnan(x)) {
          h = 0x7e00;  // NaN stays NaN (the NaN-candidate assertion relies on it)
        } else if (std::isinf(x)) {
          h = x > 0 ? 0x7c00 : 0xfc00;
        }
        bytes += static_cast<char>(h & 0xff);
        bytes += static_cast<char>(h >> 8);
      }
      fuzz::write_bytes(path, bytes.data(), bytes.size());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider d(data, size);
  if (d.ConsumeBool()) fuzz_checker<double>(d);
  else fuzz_checker<float>(d);
  return 0;
}
