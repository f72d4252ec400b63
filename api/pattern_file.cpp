// Pattern files (api/pattern_file.h): JSON -> the pattern flags -> to_spec(), so a file
// and the flags reach the one pattern source through the same checks.
#include "api/pattern_file.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/npy.h"
#include "pattern/block_mask.h"

namespace sparseattn::api {

namespace {

// "where.key" below a list element ("...[1].window"), "where: key" below the file itself.
std::string field(const std::string& where, const std::string& key) {
  return where + (!where.empty() && where.back() == ']' ? "." : ": ") + key;
}

// A field's error inside a file names the field where the user wrote it ("p.json: [1].window",
// "p.json: heads[1].window"): `where` is the object's own path in the file.
[[noreturn]] void throw_at(const FieldError& e, const std::string& where) {
  throw InvalidArgument(field(where, e.argument_as(Spelling::name)), e.value(), e.allowed());
}

int64_t get_int(const nlohmann::json& v, const std::string& name) {
  require(v.is_number_integer(), name, v.dump(), "must be a JSON integer (e.g. 64, not 64.0 or \"64\")");
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    require(u <= static_cast<uint64_t>(INT64_MAX), name, v.dump(), "must be an integer below 2^63");
    return static_cast<int64_t>(u);
  }
  return v.get<int64_t>();
}

std::string get_path(const nlohmann::json& v, const std::string& name, const std::string& base_dir) {
  require(v.is_string() && !v.get<std::string>().empty(), name, v.dump(),
          "must be a non-empty string naming a .npy file (relative to the JSON file's folder)");
  const std::filesystem::path p = v.get<std::string>();
  return p.is_absolute() || base_dir.empty() ? p.string()
                                             : (std::filesystem::path(base_dir) / p).string();
}

// One object -> its validated spec; a range or kind error names the field at `where`.
PatternSpec spec_of(const nlohmann::json& object, const std::string& where,
                    const std::string& base_dir) {
  PatternSpec spec = spec_from_json(object, where, base_dir);
  try {
    validate_spec(spec);
  } catch (const FieldError& e) {
    throw_at(e, where);
  }
  return spec;
}

}  // namespace

std::string folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

nlohmann::json read_json_file(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  require(in.good(), flag, path, "must be a readable JSON file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's message says where ("syntax error while parsing ... at line 3, column 7").
    std::string why = e.what();
    const size_t bracket = why.find("] ");
    if (why.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
      why = why.substr(bracket + 2);
    throw InvalidArgument(flag, path, "must be valid JSON: " + why);
  }
}

PatternSpec spec_from_json(const nlohmann::json& o, const std::string& where,
                           const std::string& base_dir) {
  require(o.is_object(), where, o.dump(),
          "must be an object of pattern flags, e.g. {\"pattern\": \"window\", \"window\": 64}");
  PatternSpec s;
  std::string window_key;  // where "window" was written, if it was
  std::string block_mask_key, block_mask_dir;  // "block_mask": read once the kind is known
  for (const auto& [raw_key, value] : o.items()) {
    std::string key = raw_key;
    for (char& c : key)
      if (c == '-') c = '_';
    const std::string name = field(where, raw_key);
    if (key == "pattern") {
      require(value.is_string(), name, value.dump(), "must be a string naming the kind, e.g. \"window\"");
      const std::string kind = value.get<std::string>();
      require(kind != "per-head" && kind != "per_head", name, value.dump(),
              "a per-head pattern is written as a list of patterns, one per head");
      try {
        s.kind = parse_pattern_kind(kind);
      } catch (const FieldError& e) {
        throw InvalidArgument(name, e.value(), e.allowed());
      }
    } else if (key == "window") {
      s.window = get_int(value, name);
      window_key = name;
    } else if (key == "window_left") {
      s.window_left = get_int(value, name);
    } else if (key == "window_right") {
      s.window_right = get_int(value, name);
    } else if (key == "chunk_size") {
      s.chunk_size = get_int(value, name);
    } else if (key == "kernel_size") {
      s.kernel_size = get_int(value, name);
    } else if (key == "dilation") {
      s.dilation = get_int(value, name);
    } else if (key == "causal") {
      require(value.is_boolean(), name, value.dump(), "must be true or false");
      s.causal = value.get<bool>();
    } else if (key == "global") {
      if (value.is_array()) {
        require(!value.empty(), name, value.dump(), "must list at least one token position");
        for (size_t g = 0; g < value.size(); ++g)
          s.global.push_back(get_int(value[g], name + "[" + std::to_string(g) + "]"));
      } else {
        // The flag's "I,J" text is accepted too; it is read as the flag reads it.
        require(value.is_string(), name, value.dump(), "must be a list of token positions, e.g. [0, 511]");
        try {
          s.global = parse_positions(value.get<std::string>());
        } catch (const InvalidArgument& e) {
          throw InvalidArgument(name, value.get<std::string>(),
                                "must be a list of token positions, integers >= 0 (e.g. [0, 511])");
        }
      }
    } else if (key == "num_random") {
      s.num_random = get_int(value, name);
    } else if (key == "block_size") {
      s.block_size = get_int(value, name);
    } else if (key == "num_random_blocks") {
      s.num_random_blocks = get_int(value, name);
    } else if (key == "num_global_tokens") {
      s.num_global_tokens = get_int(value, name);
    } else if (key == "seed") {
      require(value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0),
              name, value.dump(), "must be a JSON integer in [0, 2^64)");
      s.seed = value.get<uint64_t>();
    } else if (key == "random_table") {
      s.random_table = read_npy_int(get_path(value, name, base_dir), name);
    } else if (key == "segment_ids") {
      const Tensor<int64_t> ids = read_npy_int(get_path(value, name, base_dir), name);
      require(ids.rank() == 1, name + " shape", shape_text(ids.shape),
              "must be [seq_len] (one id per token)");
      s.segment_ids = ids.data;
    } else if (key == "mask") {
      s.mask = read_npy_mask(get_path(value, name, base_dir), name);
    } else if (key == "key_padding_mask") {
      s.key_padding_mask = read_npy_mask(get_path(value, name, base_dir), name);
    } else if (key == "kv_indices") {  // contract §3.16
      s.kv_indices = read_npy_int(get_path(value, name, base_dir), name);
    } else if (key == "duplicates") {
      require(value.is_string(), name, value.dump(), "must be \"once\" or \"count\"");
      s.duplicates = parse_duplicates(value.get<std::string>());
    } else if (key == "block_indices") {  // contract §3.17
      s.block_indices = read_npy_int(get_path(value, name, base_dir), name);
    } else if (key == "block_size_q") {
      s.block_size_q = get_int(value, name);
    } else if (key == "block_size_k") {
      s.block_size_k = get_int(value, name);
    } else if (key == "block_mask") {  // contract §3.17: FlexAttention's tables, a folder
      require(value.is_string() && !value.get<std::string>().empty(), name, value.dump(),
              "must be a non-empty string naming a folder of FlexAttention's .npy tables "
              "(relative to the JSON file's folder)");
      block_mask_key = name;
      block_mask_dir = get_path(value, name, base_dir);
    } else {
      throw InvalidArgument(name, value.dump(),
                            "unknown key; keys are the pattern flags' names without \"--\" "
                            "(pattern, window, window_left, window_right, dilation, causal, "
                            "global, num_random, block_size, num_random_blocks, "
                            "num_global_tokens, random_table, segment_ids, mask, "
                            "key_padding_mask, seed, chunk_size, kernel_size, kv_indices, "
                            "duplicates, block_indices, block_size_q, block_size_k, block_mask)");
    }
  }
  if (!block_mask_key.empty()) {  // as --block-mask (api/pattern_flags.cpp to_spec)
    require(s.kind == PatternKind::selected_blocks, block_mask_key, block_mask_dir,
            std::string("needs \"pattern\": \"selected-blocks\" (its tables become block_indices), "
                        "not ") + pattern_kind_name(s.kind));
    require(!s.block_indices, block_mask_key, block_mask_dir, "replaces block_indices: give one of them");
    if (!s.block_size_q) s.block_size_q = kFlexBlockSize;
    if (!s.block_size_k) s.block_size_k = kFlexBlockSize;
    s.block_indices = read_block_mask(block_mask_dir, block_mask_key);
  }
  // contract §3.3: the pair replaces "window"; "window": 0 beside it is refused too.
  require(window_key.empty() || (!s.window_left && !s.window_right), window_key,
          std::to_string(s.window),
          "must not be given with window_left and window_right: the pair replaces the "
          "symmetric window");
  return s;
}

FilePattern pattern_from_json(const nlohmann::json& entry, const std::string& where,
                              const std::string& base_dir) {
  FilePattern out;
  if (entry.is_object() && entry.contains("layers"))
    throw InvalidArgument(field(where, "layers"), "[...]",
                          "per-layer files are read by `sparseattn reach` only; give one "
                          "pattern or a list of per-head patterns");
  const nlohmann::json* heads = nullptr;
  std::string heads_where = where;
  std::string padding;
  if (entry.is_array()) {
    heads = &entry;
  } else if (entry.is_object() && entry.contains("heads")) {
    heads = &entry.at("heads");
    heads_where = field(where, "heads");
    for (const auto& [key, value] : entry.items()) {
      if (key == "heads") continue;
      require(key == "key_padding_mask" || key == "key-padding-mask", field(where, key),
              value.dump(), "beside \"heads\" only \"key_padding_mask\" may appear");
      padding = get_path(value, field(where, key), base_dir);
    }
    require(heads->is_array(), heads_where, heads->dump(), "must be a list of per-head patterns");
  }
  if (heads == nullptr) {
    out.spec = spec_of(entry, where, base_dir);
    return out;
  }
  require(!heads->empty(), heads_where, "[]", "must list one pattern per head (at least one)");
  out.spec.kind = PatternKind::per_head;
  for (size_t h = 0; h < heads->size(); ++h) {
    // "p.json: [1]" for a plain list, "p.json: heads[1]", "... layers[0][1]" in a layer.
    const bool plain = heads == &entry && !where.empty() && where.back() != ']';
    const std::string at = (plain ? where + ": " : heads_where) + "[" + std::to_string(h) + "]";
    const nlohmann::json& e = (*heads)[h];
    require(e.is_object(), at, e.dump(), "must be an object of pattern flags (one head's pattern)");
    require(!e.contains("key_padding_mask") && !e.contains("key-padding-mask"),
            field(at, "key_padding_mask"), "...",
            "applies to the whole pattern, not one head: give it beside \"heads\" or as a flag");
    out.spec.per_head.push_back(spec_of(e, at, base_dir));
  }
  if (!padding.empty()) out.spec.key_padding_mask = read_npy_mask(padding, field(where, "key_padding_mask"));
  out.num_heads = static_cast<int64_t>(heads->size());
  return out;
}

PatternSpec spec_from_pattern_file(const PatternFlags& flags) {
  const std::string where = "--pattern-file " + flags.pattern_file;
  // The file replaces the pattern flags: a flag given beside it would be ignored silently.
  PatternFlags others = flags;
  others.pattern_file.clear();
  others.key_padding_mask.clear();
  const nlohmann::json extra = flags_to_json(others);
  if (!extra.empty()) {
    std::string flag = extra.begin().key();
    for (char& c : flag)
      if (c == '_') c = '-';
    throw InvalidArgument("--" + flag, extra.begin().value().dump(),
                          "--pattern-file replaces the pattern flags; write it in " +
                              flags.pattern_file + " instead");
  }
  const nlohmann::json doc = read_json_file("--pattern-file", flags.pattern_file);
  PatternSpec spec = pattern_from_json(doc, where, folder_of(flags.pattern_file)).spec;
  if (!flags.key_padding_mask.empty()) {
    require(!spec.key_padding_mask, "--key-padding-mask", flags.key_padding_mask,
            "the pattern file already names a key_padding_mask; give one of them");
    spec.key_padding_mask = read_npy_mask(flags.key_padding_mask, "--key-padding-mask");
  }
  return spec;
}

int64_t pattern_file_heads(const PatternFlags& flags) {
  if (flags.pattern_file.empty()) return 0;
  const nlohmann::json doc = read_json_file("--pattern-file", flags.pattern_file);
  if (doc.is_array()) return static_cast<int64_t>(doc.size());
  if (doc.is_object() && doc.contains("heads") && doc.at("heads").is_array())
    return static_cast<int64_t>(doc.at("heads").size());
  return 0;
}

nlohmann::json read_layer_entries(const std::string& flag, const std::string& path) {
  const nlohmann::json doc = read_json_file(flag, path);
  if (!(doc.is_object() && doc.contains("layers"))) return nlohmann::json::array();
  const nlohmann::json& layers = doc.at("layers");
  require(layers.is_array() && !layers.empty() && doc.size() == 1, flag + " " + path + ": layers",
          layers.dump(), "must be the only key, a non-empty list of per-layer patterns");
  return layers;
}

nlohmann::json flags_to_json(const PatternFlags& f) {
  const PatternFlags d;
  nlohmann::json j = nlohmann::json::object();
  if (f.pattern != d.pattern) j["pattern"] = f.pattern;
  if (f.window != d.window) j["window"] = f.window;
  if (f.window_left) j["window_left"] = *f.window_left;
  if (f.window_right) j["window_right"] = *f.window_right;
  if (f.chunk_size) j["chunk_size"] = *f.chunk_size;
  if (f.kernel_size) j["kernel_size"] = *f.kernel_size;
  if (f.dilation != d.dilation) j["dilation"] = f.dilation;
  if (f.causal != d.causal) j["causal"] = f.causal;
  if (!f.global.empty()) {
    // "I,J" -> [I, J] when it parses; otherwise the text, for to_spec() to report.
    nlohmann::json list = nlohmann::json::array();
    bool ok = true;
    size_t start = 0;
    while (ok && start <= f.global.size()) {
      const size_t end = std::min(f.global.find(',', start), f.global.size());
      const std::string item = f.global.substr(start, end - start);
      ok = !item.empty() && item.size() < 19 && item.find_first_not_of("0123456789") == std::string::npos;
      if (ok) list.push_back(std::stoll(item));
      start = end + 1;
    }
    j["global"] = ok ? list : nlohmann::json(f.global);
  }
  if (f.num_random != d.num_random) j["num_random"] = f.num_random;
  if (f.block_size != d.block_size) j["block_size"] = f.block_size;
  if (f.num_random_blocks != d.num_random_blocks) j["num_random_blocks"] = f.num_random_blocks;
  if (f.num_global_tokens != d.num_global_tokens) j["num_global_tokens"] = f.num_global_tokens;
  if (!f.random_table.empty()) j["random_table"] = f.random_table;
  if (!f.segment_ids.empty()) j["segment_ids"] = f.segment_ids;
  if (!f.mask.empty()) j["mask"] = f.mask;
  if (!f.key_padding_mask.empty()) j["key_padding_mask"] = f.key_padding_mask;
  if (f.seed != d.seed) j["seed"] = f.seed;
  if (!f.kv_indices.empty()) j["kv_indices"] = f.kv_indices;
  if (f.duplicates != d.duplicates) j["duplicates"] = f.duplicates;
  if (!f.block_indices.empty()) j["block_indices"] = f.block_indices;
  if (f.block_size_q) j["block_size_q"] = *f.block_size_q;
  if (f.block_size_k) j["block_size_k"] = *f.block_size_k;
  if (!f.block_mask.empty()) j["block_mask"] = f.block_mask;
  return j;
}

PatternFlags flags_from_json(const nlohmann::json& o, const std::string& where) {
  require(o.is_object() && !o.contains("heads"), where, o.dump(),
          "must be one pattern object to be written as pattern flags");
  spec_from_json(o, where, "");  // the same key and type checks as a pattern file
  PatternFlags f;
  for (const auto& [raw_key, v] : o.items()) {
    std::string key = raw_key;
    for (char& c : key)
      if (c == '-') c = '_';
    if (key == "pattern") f.pattern = v.get<std::string>();
    else if (key == "window") f.window = v.get<int64_t>(), f.window_given = true;
    else if (key == "window_left") f.window_left = v.get<int64_t>();
    else if (key == "window_right") f.window_right = v.get<int64_t>();
    else if (key == "chunk_size") f.chunk_size = v.get<int64_t>();
    else if (key == "kernel_size") f.kernel_size = v.get<int64_t>();
    else if (key == "dilation") f.dilation = v.get<int64_t>();
    else if (key == "causal") f.causal = v.get<bool>();
    else if (key == "num_random") f.num_random = v.get<int64_t>();
    else if (key == "block_size") f.block_size = v.get<int64_t>();
    else if (key == "num_random_blocks") f.num_random_blocks = v.get<int64_t>();
    else if (key == "num_global_tokens") f.num_global_tokens = v.get<int64_t>();
    else if (key == "seed") f.seed = v.get<uint64_t>();
    else if (key == "global") {
      if (v.is_string()) {
        f.global = v.get<std::string>();
      } else {
        for (const auto& g : v) f.global += (f.global.empty() ? "" : ",") + std::to_string(g.get<int64_t>());
      }
    } else {
      throw InvalidArgument(field(where, raw_key), v.dump(),
                            "a .npy path cannot be written as a preset's pattern flag");
    }
  }
  return f;
}

}  // namespace sparseattn::api
