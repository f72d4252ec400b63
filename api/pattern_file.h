// Patterns from a JSON file (`--pattern-file P.json`, contract §3): the PatternSpec's fields,
// written as JSON and read straight into the spec, so a pattern that has no one-line flag
// form (one pattern per head, one per layer) has a file form every subcommand reads.
//
//   one pattern      {"pattern": "window", "window": 64, "dilation": 2}
//   per head         [{"pattern": "window", "window": 64},
//                     {"pattern": "bigbird", "block_size": 64, "num_random_blocks": 3}]
//                    (or {"heads": [...]}: the same, and room for "key_padding_mask")
//   per layer        {"layers": [{"pattern": "window", "window": 1},
//                                [{"pattern": "window", "window": 2}, {"pattern": "dense"}]]}
//                    (`reach` only; each entry is a pattern or a per-head list)
//
// Keys are the pattern flags' names without "--", "-" written "_" ("num_random_blocks";
// "num-random-blocks" is accepted too). Integers must be JSON integers, "causal" a
// boolean, "global" a list of integers (or the flag's "I,J" text); .npy paths are
// relative to the JSON file's folder. Every error names the file and the field, e.g.
// `invalid --pattern-file p.json: [1].window = -1: must be an integer >= 0 ...`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/pattern_flags.h"
#include "pattern/spec.h"

namespace sparseattn::api {

// A pattern read from JSON: the spec, and the number of heads it fixes (the length of a
// per-head list; 0 when it applies to any number of heads).
struct FilePattern {
  PatternSpec spec;
  int64_t num_heads = 0;
};

// Reads a JSON file; throws InvalidArgument(flag, path, ...) when unreadable or not JSON.
nlohmann::json read_json_file(const std::string& flag, const std::string& path);

// One JSON object -> the PatternSpec it describes, its keys the spec's fields (the table of
// core/field.h), its .npy files read (relative paths joined to `base_dir`). Checks unknown
// keys and JSON types, naming `where` (e.g. "--pattern-file p.json: [1]"); ranges are
// validate_spec()'s, which pattern_from_json() calls.
PatternSpec spec_from_json(const nlohmann::json& object, const std::string& where,
                           const std::string& base_dir);

// One pattern entry (an object, a per-head list, or {"heads": [...]}) -> spec and heads.
// Range errors (validate_spec's FieldError) name the field where it is written
// (`where`.window, not --window).
// Throws InvalidArgument for {"layers": ...} (only `reach` reads those: read_layer_entries).
FilePattern pattern_from_json(const nlohmann::json& entry, const std::string& where,
                              const std::string& base_dir);

// to_spec() for `--pattern-file`: reads flags.pattern_file (every other pattern flag must
// be left at its default; --key-padding-mask may accompany it and applies to the whole
// pattern). Throws InvalidArgument naming the file and field.
PatternSpec spec_from_pattern_file(const PatternFlags& flags);

// Number of heads the file fixes (0: any), for commands whose head count comes from flags.
int64_t pattern_file_heads(const PatternFlags& flags);

// Whether the file is a per-layer file ({"layers": [...]}); its entries (each a pattern
// entry for pattern_from_json). Empty when the file holds one pattern.
nlohmann::json read_layer_entries(const std::string& flag, const std::string& path);

// The command line's pattern flags that differ from their defaults, as the JSON
// object a pattern file holds (global as a list of integers). Used by the round-trip tests
// and by `sweep` to record its pattern.
nlohmann::json flags_to_json(const PatternFlags& flags);

// The inverse of flags_to_json() for one pattern object (not a per-head list, no .npy
// paths): the pattern flags that write `entry`, so a preset's layer is run exactly as the
// same flags on the command line would run it. Throws InvalidArgument naming `where` for an
// entry it cannot write as flags.
PatternFlags flags_from_json(const nlohmann::json& entry, const std::string& where);

// The folder of `path` ("." when it has none), for relative .npy paths in the file.
std::string folder_of(const std::string& path);

}  // namespace sparseattn::api
