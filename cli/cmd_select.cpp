// sparseattn select — an index table from scores, deterministic and in float64 (contract
// §3.18), for --pattern selected (--kv-indices) or selected-blocks (--block-indices).
//
//   sparseattn select --method topk --scores S.npy --top-k K [--causal] --out I.npy
//   sparseattn select --method dsa --index-q Q.npy --index-k K.npy --weights W.npy --top-k K --out I.npy
//   sparseattn select --method moba --q Q.npy --k K.npy --chunk-size C --top-k K --out I.npy
//   sparseattn select --method nsa --scores S.npy --block-size-k BK --num-selected N
//                     [--num-initial F] [--num-local L] [--seq-len-k LK] --out I.npy
//
// Writes int64 [B, H, L_q, K] (dsa: H = 1; moba, nsa: key-block indices for
// --block-size-q 1 and --block-size-k C or BK, with --causal). Ties go to the lower index;
// -1 pads rows with fewer candidates. A flag the method does not read is refused (exit 2),
// as is every bad shape or value, naming the flag; no file is written then.
#include <optional>
#include <string>

#include "api/inputs.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/npy.h"
#include "pattern/select.h"

namespace sparseattn::cli {

namespace {

struct SelectArgs {
  std::string method, out, scores, index_q, index_k, weights, q, k;
  std::optional<int64_t> top_k, chunk_size, block_size_k, num_selected, seq_len_k;
  int64_t num_initial = 0, num_local = 0;
  bool causal = false;
  CLI::App* cmd = nullptr;
};

// The library names arguments by their Python keyword ("top_k", "scores shape"); the
// command line writes the flag ("--top-k", "--scores shape").
InvalidArgument as_flag(const InvalidArgument& e) {
  const std::string& a = e.argument();
  size_t end = a.find_first_not_of("abcdefghijklmnopqrstuvwxyz_");
  if (end == std::string::npos) end = a.size();
  std::string flag = "--" + a.substr(0, end);
  for (char& c : flag)
    if (c == '_') c = '-';
  return InvalidArgument(flag + a.substr(end), e.value(), e.allowed());
}

void run_select(const SelectArgs& a) {
  require(a.method == "topk" || a.method == "dsa" || a.method == "moba" || a.method == "nsa",
          "--method", a.method, "must be topk, dsa, moba or nsa (contract §3.18)");
  // Which flags each method reads; any other given is refused.
  struct Use {
    const char* flag;
    bool given;
    const char* methods;
  };
  const Use uses[] = {
      {"--scores", !a.scores.empty(), "topk nsa"},     {"--top-k", a.top_k.has_value(), "topk dsa moba"},
      {"--causal", a.causal, "topk"},                   {"--index-q", !a.index_q.empty(), "dsa"},
      {"--index-k", !a.index_k.empty(), "dsa"},         {"--weights", !a.weights.empty(), "dsa"},
      {"--q", !a.q.empty(), "moba"},                    {"--k", !a.k.empty(), "moba"},
      {"--chunk-size", a.chunk_size.has_value(), "moba"},
      {"--block-size-k", a.block_size_k.has_value(), "nsa"},
      {"--num-selected", a.num_selected.has_value(), "nsa"},
      {"--num-initial", a.cmd->count("--num-initial") > 0, "nsa"},
      {"--num-local", a.cmd->count("--num-local") > 0, "nsa"},
      {"--seq-len-k", a.seq_len_k.has_value(), "nsa"},
  };
  const std::string m = " " + a.method + " ";
  for (const Use& u : uses) {
    const std::string readers = std::string(" ") + u.methods + " ";
    if (u.given && readers.find(m) == std::string::npos)
      throw InvalidArgument(u.flag, "given", std::string("not used by --method ") + a.method +
                                                 "; it applies to --method " + u.methods);
  }
  auto need = [&](bool given, const char* flag, const char* what) {
    require(given, flag, "none", std::string("--method ") + a.method + " needs " + what);
  };
  check_outputs({{"--out", a.out}}, {{"--scores", a.scores}, {"--index-q", a.index_q},
                                     {"--index-k", a.index_k}, {"--weights", a.weights},
                                     {"--q", a.q}, {"--k", a.k}});
  Tensor<int64_t> out;
  try {
    if (a.method == "topk") {
      need(!a.scores.empty(), "--scores", "S.npy, float [B, H, L_q, N]");
      need(a.top_k.has_value(), "--top-k", "K, an integer >= 1");
      out = select_topk(read_npy_float(a.scores, "--scores"), *a.top_k, a.causal);
    } else if (a.method == "dsa") {
      need(!a.index_q.empty(), "--index-q", "Q.npy, float [B, L_q, H_I, d_I]");
      need(!a.index_k.empty(), "--index-k", "K.npy, float [B, L_k, d_I]");
      need(!a.weights.empty(), "--weights", "W.npy, float [B, L_q, H_I]");
      need(a.top_k.has_value(), "--top-k", "K, an integer >= 1");
      out = select_dsa(read_npy_float(a.index_q, "--index-q"), read_npy_float(a.index_k, "--index-k"),
                       read_npy_float(a.weights, "--weights"), *a.top_k);
    } else if (a.method == "moba") {
      need(!a.q.empty(), "--q", "Q.npy, float [B, H_q, L_q, d]");
      need(!a.k.empty(), "--k", "K.npy, float [B, H_kv, L_k, d]");
      need(a.chunk_size.has_value(), "--chunk-size", "C, an integer >= 1 (keys per chunk)");
      need(a.top_k.has_value(), "--top-k", "K, an integer >= 1 (chunks, the own one included)");
      out = select_moba(read_npy_float(a.q, "--q"), read_npy_float(a.k, "--k"), *a.chunk_size, *a.top_k);
    } else {
      need(!a.scores.empty(), "--scores", "S.npy, float [B, H, L_q, ceil(L_k / BK)]");
      need(a.block_size_k.has_value(), "--block-size-k", "BK, an integer >= 1");
      need(a.num_selected.has_value(), "--num-selected", "N, an integer >= 1");
      const Tensor<double> s = read_npy_float(a.scores, "--scores");
      const int64_t lk = a.seq_len_k ? *a.seq_len_k : (s.rank() == 4 ? s.dim(2) : 1);
      out = select_nsa(s, *a.block_size_k, *a.num_selected, a.num_initial, a.num_local, lk);
    }
  } catch (const FieldError&) {
    throw;
  } catch (const MemoryLimitError&) {
    throw;
  } catch (const InvalidArgument& e) {
    if (e.argument().rfind("--", 0) == 0) throw;
    throw as_flag(e);
  }
  write_npy(a.out, out);
}

}  // namespace

void register_select(CLI::App& app) {
  auto args = std::make_shared<SelectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "select", "an index table from scores for --pattern selected / selected-blocks: topk, "
                "DeepSeek's lightning indexer (dsa), MoBA, NSA; float64, ties to the lower "
                "index (contract §3.18)");
  args->cmd = cmd;
  cmd->add_option("--method", args->method, "topk | dsa | moba | nsa")->required();
  cmd->add_option("--out", args->out, "I.npy: int64 [B, H, L_q, K] indices, -1 = empty slot")
      ->required();
  cmd->add_option("--scores", args->scores,
                  "S.npy: float [B, H, L_q, N] scores (topk; -inf = not a candidate) or block "
                  "importance [B, H, L_q, ceil(L_k / BK)] (nsa) [topk, nsa]");
  cmd->add_option_function<int64_t>("--top-k", [a = args.get()](const int64_t& v) { a->top_k = v; },
                                    "K: indices per row, integer >= 1 (moba: chunks, the query's "
                                    "own included) [topk, dsa, moba]");
  cmd->add_flag("--causal", args->causal,
                "candidates j <= i + N - L_q only (bottom-right, contract §3.1) [topk]");
  cmd->add_option("--index-q", args->index_q, "Q.npy: float [B, L_q, H_I, d_I] indexer queries [dsa]");
  cmd->add_option("--index-k", args->index_k, "K.npy: float [B, L_k, d_I] indexer keys [dsa]");
  cmd->add_option("--weights", args->weights, "W.npy: float [B, L_q, H_I] indexer weights [dsa]");
  cmd->add_option("--q", args->q, "Q.npy: float [B, H_q, L_q, d] queries [moba]");
  cmd->add_option("--k", args->k, "K.npy: float [B, H_kv, L_k, d] keys [moba]");
  cmd->add_option_function<int64_t>("--chunk-size",
                                    [a = args.get()](const int64_t& v) { a->chunk_size = v; },
                                    "C: keys per chunk, integer >= 1 [moba]");
  cmd->add_option_function<int64_t>("--block-size-k",
                                    [a = args.get()](const int64_t& v) { a->block_size_k = v; },
                                    "BK: keys per block, integer >= 1 [nsa]");
  cmd->add_option_function<int64_t>("--num-selected",
                                    [a = args.get()](const int64_t& v) { a->num_selected = v; },
                                    "N: blocks per query in all, integer >= F + L [nsa]");
  cmd->add_option("--num-initial", args->num_initial,
                  "F: initial blocks always selected, integer >= 0 [nsa]")
      ->capture_default_str();
  cmd->add_option("--num-local", args->num_local,
                  "L: local blocks always selected (those ending at the query's block), integer "
                  ">= 0 [nsa]")
      ->capture_default_str();
  cmd->add_option_function<int64_t>("--seq-len-k",
                                    [a = args.get()](const int64_t& v) { a->seq_len_k = v; },
                                    "LK: keys, integer >= 1 (default: L_q, self-attention) [nsa]");
  cmd->callback([args] { run_select(*args); });
}

}  // namespace sparseattn::cli
