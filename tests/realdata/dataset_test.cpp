// Checks contract §1.5 (the stored real data, verified on load).
// The stored real data (data/): documented shapes, sha256 checksums, slicing, and the
// loader's refusals (a changed byte, a wrong shape, a missing file).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/npy.h"
#include "realdata/dataset.h"

namespace sparseattn::realdata {
namespace {

namespace fs = std::filesystem;
const std::string kData = SPARSEATTN_DATA_DIR;

TEST(Sha256, KnownVector) {
  const std::string path = (fs::temp_directory_path() / "sparseattn_sha_abc.txt").string();
  std::ofstream(path) << "abc";
  // FIPS 180-2, appendix B.1.
  EXPECT_EQ(sha256_file(path), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  fs::remove(path);
}

// data/README.md documents: all-MiniLM-L6-v2, 12 heads of dimension 32, 4096 tokens of
// GPL-3 framed by [CLS] (id 101) and [SEP] (id 102), layers 0 and 5, float16.
TEST(StoredData, LoadsWithDocumentedShapesAndChecksums) {
  const RealDataset d = load_dataset(kData, LoadOptions{});  // verifies every sha256
  EXPECT_EQ(d.model, "sentence-transformers/all-MiniLM-L6-v2");
  EXPECT_EQ(d.document, "/usr/share/common-licenses/GPL-3");
  EXPECT_EQ(d.seq_len, 4096);
  EXPECT_EQ(d.num_heads, 12);
  EXPECT_EQ(d.head_dim, 32);
  EXPECT_DOUBLE_EQ(d.scale, 1.0 / std::sqrt(32.0));
  ASSERT_EQ(d.layers.size(), 2u);
  EXPECT_EQ(d.layers[0].layer, 0);
  EXPECT_EQ(d.layers[1].layer, 5);
  ASSERT_EQ(d.token_ids.shape, (Shape{4096}));
  EXPECT_EQ(d.token_ids.data.front(), 101);
  EXPECT_EQ(d.token_ids.data.back(), 102);
  for (const RealLayer& l : d.layers)
    for (const Tensor<double>* t : {&l.q, &l.k, &l.v}) {
      EXPECT_EQ(t->shape, (Shape{1, 12, 4096, 32}));
      int64_t nonfinite = 0, zeros = 0;
      for (double x : t->data) {
        nonfinite += !std::isfinite(x);
        zeros += x == 0.0;
      }
      EXPECT_EQ(nonfinite, 0);
      EXPECT_LT(zeros, t->numel() / 100);  // real activations, not a zero placeholder
    }
}

// The text the data came from is the one on this machine (when it is a Debian machine).
TEST(StoredData, DocumentChecksumMatchesTheLocalText) {
  const std::string doc = "/usr/share/common-licenses/GPL-3";
  if (!fs::exists(doc)) GTEST_SKIP() << doc << " not present on this machine";
  std::ifstream in(kData + "/provenance.json");
  const nlohmann::json prov = nlohmann::json::parse(in);
  EXPECT_EQ(sha256_file(doc), prov["document"]["sha256"].get<std::string>());
}

TEST(StoredData, SliceIsAPrefixOfTheFullSequence) {
  LoadOptions full_opts;
  full_opts.layers = {5};
  full_opts.verify_sha256 = false;
  LoadOptions slice_opts = full_opts;
  slice_opts.seq_len = 100;
  const RealDataset full = load_dataset(kData, full_opts);
  const RealDataset part = load_dataset(kData, slice_opts);
  ASSERT_EQ(part.layers.at(0).k.shape, (Shape{1, 12, 100, 32}));
  const int64_t L = 4096, n = 100, D = 32;
  for (int64_t h : {0, 7, 11})
    for (int64_t i : {0, 57, 99})
      for (int64_t c : {0, 31})
        EXPECT_EQ(part.layers[0].k.data[(h * n + i) * D + c], full.layers[0].k.data[(h * L + i) * D + c]);
  EXPECT_EQ(part.token_ids.data.size(), 100u);
}

TEST(StoredData, BadOptionsNameTheFlag) {
  LoadOptions o;
  o.verify_sha256 = false;
  o.seq_len = 5000;
  try {
    load_dataset(kData, o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "--seq-len");
  }
  o.seq_len = 0;
  o.layers = {3};
  try {
    load_dataset(kData, o);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "--layers");
  }
  try {
    load_dataset(kData + "/no-such-folder", LoadOptions{});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "--data");
  }
}

// A small dataset in the same format, to prove the loader refuses a changed byte and a
// shape that disagrees with provenance.json.
class FakeData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("sparseattn_fake_data_" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
    Tensor<int64_t> ids({4});
    ids.data = {101, 7, 8, 102};
    write_npy(dir_ + "/token_ids.npy", ids);
    Tensor<float> x({1, 2, 4, 3});
    for (int64_t i = 0; i < x.numel(); ++i) x.data[i] = 0.25f * static_cast<float>(i);
    nlohmann::json files;
    files["token_ids.npy"] = {{"shape", {4}}, {"dtype", "int64"},
                              {"sha256", sha256_file(dir_ + "/token_ids.npy")}};
    for (const char* part : {"q", "k", "v"}) {
      const std::string name = std::string("layer0_") + part + ".npy";
      write_npy(dir_ + "/" + name, x);
      files[name] = {{"shape", {1, 2, 4, 3}}, {"dtype", "float32"},
                     {"sha256", sha256_file(dir_ + "/" + name)}};
    }
    prov_ = {{"model", {{"name", "fake"}, {"package", "none"}, {"package_version", "0"}}},
             {"document", {{"path", "none"}, {"sha256", "0"}}},
             {"seq_len", 4}, {"num_heads", 2}, {"head_dim", 3}, {"scale", 0.5},
             {"layers", {0}}, {"files", files}};
    write_provenance();
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write_provenance() { std::ofstream(dir_ + "/provenance.json") << prov_.dump(); }
  std::string dir_;
  nlohmann::json prov_;
};

TEST_F(FakeData, LoadsWhenEverythingAgrees) {
  const RealDataset d = load_dataset(dir_, LoadOptions{});
  EXPECT_EQ(d.layers.at(0).v.data.at(5), 1.25);
}

TEST_F(FakeData, ChangedByteIsRefused) {
  const std::string path = dir_ + "/layer0_k.npy";
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(-1, std::ios::end);
  f.put('\x7f');
  f.close();
  try {
    load_dataset(dir_, LoadOptions{});
    FAIL() << "changed file accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), path);
    EXPECT_NE(std::string(e.what()).find("sha256"), std::string::npos) << e.what();
  }
  LoadOptions no_verify;
  no_verify.verify_sha256 = false;
  EXPECT_NO_THROW(load_dataset(dir_, no_verify));
}

TEST_F(FakeData, ShapeDisagreeingWithProvenanceIsRefused) {
  prov_["files"]["layer0_q.npy"]["shape"] = {1, 2, 4, 4};
  write_provenance();
  EXPECT_THROW(load_dataset(dir_, LoadOptions{}), InvalidArgument);
}

TEST_F(FakeData, MissingFileEntryIsRefused) {
  prov_["files"].erase("layer0_v.npy");
  write_provenance();
  try {
    load_dataset(dir_, LoadOptions{});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "--data");
  }
}

}  // namespace
}  // namespace sparseattn::realdata
