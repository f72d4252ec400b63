#include "core/check.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace sparseattn {

namespace {

Shape strip_leading_ones(Shape s) {
  while (s.size() > 1 && s.front() == 1) s.erase(s.begin());
  return s;
}

Shape unravel(int64_t index, const Shape& shape) {
  Shape pos(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    pos[a] = shape[a] ? index % shape[a] : 0;
    index = shape[a] ? index / shape[a] : 0;
  }
  return pos;
}

template <class T>
CheckReport check_impl(const Tensor<T>& candidate, const Tensor<double>& reference,
                       Tolerance tol) {
  CheckReport r;
  r.num_elements = reference.numel();
  if (strip_leading_ones(candidate.shape) != strip_leading_ones(reference.shape)) {
    r.reason = "shape mismatch: candidate " + shape_text(candidate.shape) + ", reference " +
               shape_text(reference.shape);
    return r;
  }
  for (int64_t e = 0; e < r.num_elements; ++e) {
    const double x = static_cast<double>(candidate.data[e]);
    const double ref = reference.data[e];
    double budget;
    if (!std::isfinite(ref) || !std::isfinite(x)) {
      // Equal infinities match (lse = -inf of a fully masked row); anything else is a
      // non-finite mismatch and uses an unbounded budget.
      const bool same = (x == ref);
      if (!same && std::isfinite(ref)) ++r.num_nonfinite;
      budget = same ? 0.0 : INFINITY;
      if (!same) ++r.num_mismatched;
    } else {
      const double abs_err = std::fabs(x - ref);
      const double allowed = tol.atol + tol.rtol * std::fabs(ref);
      // budget = abs_err / allowed, with its two undefined quotients defined: an exact
      // match uses none of the budget even at zero tolerance (0/0), and an error that
      // overflowed to infinity against an allowance that overflowed too uses all of it
      // (inf/inf). Never NaN, so "pass <=> budget_used <= 1" holds for every input.
      if (abs_err == 0.0) {
        budget = 0.0;
      } else if (std::isinf(abs_err) && std::isinf(allowed)) {
        budget = 1.0;
      } else {
        budget = abs_err / allowed;  // +inf when the allowance is 0
      }
      if (abs_err > r.max_abs_error) r.max_abs_error = abs_err;
      if (ref != 0.0 && abs_err / std::fabs(ref) > r.max_rel_error)
        r.max_rel_error = abs_err / std::fabs(ref);
      if (abs_err > allowed) ++r.num_mismatched;
    }
    if (r.worst_index < 0 || budget > r.budget_used) {
      r.budget_used = budget;
      r.worst_index = e;
      r.worst_candidate = x;
      r.worst_reference = ref;
    }
  }
  if (r.worst_index >= 0) r.worst_position = unravel(r.worst_index, reference.shape);
  if (r.num_nonfinite > 0) {
    r.reason = std::to_string(r.num_nonfinite) + " non-finite values where the oracle is finite";
  } else if (r.num_mismatched > 0) {
    r.reason = std::to_string(r.num_mismatched) + " elements outside atol + rtol*|ref|";
  }
  r.pass = r.num_mismatched == 0;
  return r;
}

}  // namespace

CheckReport check_close(const Tensor<double>& candidate, const Tensor<double>& reference,
                        Tolerance tol) {
  return check_impl(candidate, reference, tol);
}

CheckReport check_close(const Tensor<float>& candidate, const Tensor<double>& reference,
                        Tolerance tol) {
  return check_impl(candidate, reference, tol);
}

std::string report_json(const CheckReport& r, const std::string& name, Tolerance tol) {
  auto finite_or_null = [](double x) -> nlohmann::json {
    if (std::isfinite(x)) return x;
    return nullptr;
  };
  nlohmann::json j = {
      {"tensor", name},
      {"pass", r.pass},
      {"reason", r.reason},
      {"num_elements", r.num_elements},
      {"num_nonfinite", r.num_nonfinite},
      {"num_mismatched", r.num_mismatched},
      {"max_abs_error", r.max_abs_error},
      {"max_rel_error", r.max_rel_error},
      {"worst_index", r.worst_position},
      {"worst_candidate", finite_or_null(r.worst_candidate)},
      {"worst_reference", finite_or_null(r.worst_reference)},
      {"budget_used", finite_or_null(r.budget_used)},
      {"atol", tol.atol},
      {"rtol", tol.rtol},
  };
  return j.dump(2);
}

}  // namespace sparseattn
