#include "api/seq_range.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"

namespace sparseattn::api {

namespace {

const char* kAllowed =
    "must be N, A:B (the ends and the powers of two between) or A,B,C (ascending), "
    "decimal integers >= 1";

int64_t parse_one(const std::string& flag, const std::string& text, const std::string& item) {
  if (item.empty() || item.size() > 18 || item.find_first_not_of("0123456789") != std::string::npos)
    throw InvalidArgument(flag, text, kAllowed);
  errno = 0;
  const long long v = std::strtoll(item.c_str(), nullptr, 10);  // base 10: "010" is ten
  if (errno == ERANGE || v < 1) throw InvalidArgument(flag, text, kAllowed);
  return v;
}

}  // namespace

bool is_seq_len_sweep(const std::string& text) {
  return text.find_first_of(":,") != std::string::npos;
}

std::vector<int64_t> parse_seq_lens(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  const size_t colon = text.find(':');
  if (colon != std::string::npos) {
    const int64_t lo = parse_one(flag, text, text.substr(0, colon));
    const int64_t hi = parse_one(flag, text, text.substr(colon + 1));
    require(lo <= hi, flag, text, "a range A:B needs A <= B");
    out.push_back(lo);
    int64_t p = 1;
    while (p <= lo) p *= 2;  // first power of two above lo (at most 2^60: hi < 10^18)
    for (; p < hi; p *= 2) out.push_back(p);
    if (hi != lo) out.push_back(hi);
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const int64_t v = parse_one(flag, text, text.substr(start, end - start));
    require(out.empty() || v > out.back(), flag, text, "a list A,B,C must be strictly ascending");
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

}  // namespace sparseattn::api
