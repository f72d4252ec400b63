// Sequence lengths given as a range or a list, for the commands that sweep n (`sweep`,
// `info`, `reach`):
//   "1024:65536"      the two ends and every power of two between them (1024, 2048, ..., 65536;
//                     "1000:5000" gives 1000, 1024, 2048, 4096, 5000)
//   "1024,3000,8192"  exactly these, ascending
//   "4096"            one length
// Integers are decimal ("010" is ten), >= 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparseattn::api {

// Parses `text` as above; throws InvalidArgument(flag, text, the forms allowed) for anything
// else (empty items, signs, non-digits, overflow, a range whose start exceeds its end, a list
// not strictly ascending).
std::vector<int64_t> parse_seq_lens(const std::string& flag, const std::string& text);

// Whether `text` asks for more than one length (a range or a list), even one that comes
// out as a single value ("512:512").
bool is_seq_len_sweep(const std::string& text);

}  // namespace sparseattn::api
