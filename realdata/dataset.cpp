// Loading and verifying data/ (see dataset.h).
#include "realdata/dataset.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "core/error.h"
#include "core/npy.h"

namespace sparseattn::realdata {

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RuntimeError("cannot read " + path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw RuntimeError("OpenSSL: cannot start sha256");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  std::ostringstream hex;
  for (unsigned int i = 0; i < len; ++i)
    hex << std::hex << std::setw(2) << std::setfill('0') << static_cast<int>(digest[i]);
  return hex.str();
}

namespace {

using nlohmann::json;

// Verifies `name` against its provenance entry (shape, dtype, sha256) and returns its path.
std::string checked_file(const std::string& dir, const json& files, const std::string& name,
                         bool verify_sha256) {
  const std::string path = dir + "/" + name;
  require(files.contains(name), "--data", dir,
          "provenance.json must list " + name + " (regenerate with tools/extract_qkv.py)");
  const json& entry = files.at(name);
  const NpyHeader header = read_npy_header(path, path);
  const Shape want = entry.at("shape").get<Shape>();
  require(header.shape == want, path, shape_text(header.shape),
          "provenance.json says shape " + shape_text(want));
  const std::string dtype = entry.at("dtype").get<std::string>();
  require(dtype == npy_dtype_name(header.dtype), path, npy_dtype_name(header.dtype),
          "provenance.json says dtype " + dtype);
  if (verify_sha256) {
    const std::string sha = sha256_file(path);
    require(sha == entry.at("sha256").get<std::string>(), path, "sha256 " + sha,
            "provenance.json says sha256 " + entry.at("sha256").get<std::string>() +
                " (the file changed since extraction)");
  }
  return path;
}

// x[:, :, :seq_len, :] of a [1, H, L, D] tensor.
Tensor<double> prefix_tokens(Tensor<double> x, int64_t seq_len) {
  const int64_t H = x.dim(1), L = x.dim(2), D = x.dim(3);
  if (seq_len == L) return x;
  Tensor<double> y({1, H, seq_len, D});
  for (int64_t h = 0; h < H; ++h)
    std::copy_n(x.ptr() + h * L * D, seq_len * D, y.ptr() + h * seq_len * D);
  return y;
}

}  // namespace

RealDataset load_dataset(const std::string& dir, const LoadOptions& options) {
  const std::string prov_path = dir + "/provenance.json";
  std::ifstream in(prov_path);
  require(static_cast<bool>(in), "--data", dir,
          "must be a folder holding provenance.json (data/ of the repository; "
          "tools/extract_qkv.py writes it)");
  json prov;
  try {
    prov = json::parse(in);
  } catch (const json::exception& e) {
    throw InvalidArgument("--data", prov_path, std::string("must be valid JSON: ") + e.what());
  }

  RealDataset d;
  try {
    d.dir = dir;
    d.model = prov.at("model").at("name").get<std::string>();
    d.package = prov.at("model").at("package").get<std::string>() + " " +
                prov.at("model").at("package_version").get<std::string>();
    d.document = prov.at("document").at("path").get<std::string>();
    d.document_sha256 = prov.at("document").at("sha256").get<std::string>();
    d.stored_seq_len = prov.at("seq_len").get<int64_t>();
    d.num_heads = prov.at("num_heads").get<int64_t>();
    d.head_dim = prov.at("head_dim").get<int64_t>();
    d.scale = prov.at("scale").get<double>();
  } catch (const json::exception& e) {
    throw InvalidArgument("--data", prov_path, std::string("lacks a field: ") + e.what());
  }
  const std::vector<int64_t> stored = prov.at("layers").get<std::vector<int64_t>>();
  const json& files = prov.at("files");

  d.seq_len = options.seq_len == 0 ? d.stored_seq_len : options.seq_len;
  require(d.seq_len >= 1 && d.seq_len <= d.stored_seq_len, "--seq-len", options.seq_len,
          "must be in [1, " + to_text(d.stored_seq_len) + "] (0 = all stored tokens)");
  std::vector<int64_t> wanted = options.layers.empty() ? stored : options.layers;
  for (int64_t l : wanted) {
    std::string list;
    for (int64_t s : stored) list += (list.empty() ? "" : ", ") + to_text(s);
    require(std::find(stored.begin(), stored.end(), l) != stored.end(), "--layers", l,
            "must be a stored layer: " + list);
  }

  const Tensor<int64_t> ids =
      read_npy_int(checked_file(dir, files, "token_ids.npy", options.verify_sha256), "token_ids");
  d.token_ids.shape = {d.seq_len};
  d.token_ids.data.assign(ids.data.begin(), ids.data.begin() + d.seq_len);

  for (int64_t l : wanted) {
    RealLayer layer;
    layer.layer = l;
    auto load = [&](const char* part) {
      const std::string name = "layer" + to_text(l) + "_" + part + ".npy";
      return prefix_tokens(
          read_npy_float(checked_file(dir, files, name, options.verify_sha256), name), d.seq_len);
    };
    layer.q = load("q");
    layer.k = load("k");
    layer.v = load("v");
    d.layers.push_back(std::move(layer));
  }
  return d;
}

}  // namespace sparseattn::realdata
