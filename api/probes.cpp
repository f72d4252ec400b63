// The cause probes of `check`; see probes.h. Each probe is a hypothesis — a function that
// predicts one row of the candidate — judged by one engine (Prober::judge) on the worst
// row, the failing rows and a sample of the passing rows it changes.
#include "api/probes.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include "api/check_report.h"
#include "api/padding_align.h"
#include "api/probe_rows.h"
#include "api/selected_probes.h"
#include "core/error.h"

namespace sparseattn::api {

ProbeOptions parse_probe_options(const std::string& mode, double budget_s,
                                 const std::string& mode_name, const std::string& budget_name) {
  ProbeOptions o;
  require(mode == "auto" || mode == "always" || mode == "never", mode_name, mode,
          "must be auto, always or never");
  o.mode = mode == "always"  ? ProbeOptions::Mode::always
           : mode == "never" ? ProbeOptions::Mode::never
                             : ProbeOptions::Mode::automatic;
  require(std::isfinite(budget_s) && budget_s > 0.0, budget_name, budget_s,
          "must be a finite number of seconds > 0");
  o.budget_s = budget_s;
  return o;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Multiply-adds a probe may spend on failing rows per second of budget before it settles
// for a spread sample (of at least kMinRows rows); passing rows sampled per probe.
constexpr double kWorkPerSecond = 4.0e7;
constexpr int64_t kMinRows = 64;
constexpr int64_t kPassingSample = 64;

// A hypothesis about how the candidate was computed.
struct Hypothesis {
  std::string name;   // probes.tried[].probe
  std::string cause;  // probable_cause when it matches
  // Writes row (b, h, i) under the hypothesis into o [Dv] and lse (natural log, or the
  // candidate's base when lse_in_candidate_base); returns false when the row is the
  // oracle's own (o, lse untouched). Adds the multiply-adds done to *work.
  std::function<bool(int64_t b, int64_t h, int64_t i, double* o, double* lse, int64_t* work)>
      predict;
  bool compare_lse = true;
  bool lse_in_candidate_base = false;
  // Rows the hypothesis leaves unspecified (not compared).
  std::function<bool(int64_t b, int64_t h, int64_t i)> unspecified;
  // A further condition on the failing rows (the BigBird probe: whole query blocks).
  std::function<bool()> also;
};

using KeysFn = std::function<void(int64_t b, int64_t h, int64_t i, std::vector<int64_t>& keys)>;

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

class Prober {
 public:
  explicit Prober(const ProbeInputs& in)
      : in_(in),
        s_(attention_shape(in.q.shape, in.k.shape, in.v.shape, KvHeads::grouped)),
        start_(Clock::now()),
        scale_(in.scale ? *in.scale : 1.0 / std::sqrt(double(s_.head_dim))) {
    B_ = s_.batch, H_ = s_.num_heads, Lq_ = s_.seq_len_q, Lk_ = s_.seq_len_k;
    Dv_ = s_.head_dim_v;
    // The judged rows' keys: the pattern's, or under --padding-align valid each batch
    // element's aligned rows (contract §2.6; the counts were validated by the oracle).
    if (in.conv.padding_align_valid) {
      valid_ = valid_counts(in.pattern);
      judged_ = valid_row_keys(in.pattern);
    } else {
      judged_ = [this](int64_t b, int64_t h, int64_t i, std::vector<int64_t>& k) {
        pattern_row_keys(in_.pattern, b, h, i, k);
      };
    }
    find_failing_rows();
  }

  nlohmann::json run();

 private:
  // ---- rows ----
  int64_t row_id(int64_t b, int64_t h, int64_t i) const { return (b * H_ + h) * Lq_ + i; }
  bool skipped(int64_t b, int64_t i) const {
    return !in_.skip_row.empty() && in_.skip_row[static_cast<size_t>(b * Lq_ + i)] != 0;
  }
  // Query head h of batch b reading kv head `kv` (contract §2.7: h / g; a probe may ask for
  // another), under `mods` (the judged ones by default).
  HeadView head_view(int64_t b, int64_t h, int64_t kv, const ScoreMods* mods,
                     ScoreMistake mistake = ScoreMistake::none) const {
    const int64_t bh = b * H_ + h, bk = b * s_.num_kv_heads + kv;
    HeadView hv{in_.q.ptr() + bh * Lq_ * s_.head_dim, in_.k.ptr() + bk * Lk_ * s_.head_dim,
                in_.v.ptr() + bk * Lk_ * Dv_, Lk_, s_.head_dim, Dv_};
    hv.mods = mods, hv.batch = b, hv.head = h, hv.offset = Lk_ - Lq_;
    hv.pattern = &in_.pattern, hv.mistake = mistake;
    return hv;
  }
  HeadView head_view(int64_t b, int64_t h) const {
    return head_view(b, h, h / s_.group(), in_.mods);
  }
  // Whether the candidate's row r matches (o [Dv], lse in the candidate's base).
  bool row_matches(int64_t r, const double* o, double lse, bool with_lse) const {
    for (int64_t d = 0; d < Dv_; ++d)
      if (!element_ok(in_.o.data[r * Dv_ + d], o[d], in_.o_tol)) return false;
    if (with_lse && in_.lse) return element_ok(in_.lse->data[r], lse, in_.lse_tol);
    return true;
  }
  void find_failing_rows();

  // ---- the engine ----
  bool out_of_time() const {
    return in_.options.mode == ProbeOptions::Mode::automatic &&
           std::chrono::duration<double>(Clock::now() - start_).count() > in_.options.budget_s;
  }
  enum class Verdict { match, no_match, out_of_time };
  Verdict judge(const Hypothesis& hy);

  // ---- building hypotheses ----
  Hypothesis keyed(const std::string& name, const std::string& cause, KeysFn keys,
                   double scale, std::optional<double> masked);
  Hypothesis keyed(const std::string& name, const std::string& cause, KeysFn keys) {
    return keyed(name, cause, std::move(keys), scale_, in_.conv.masked_score);
  }
  // Rows of selected attention over `p`'s table (the judged pattern's when p is null) by
  // selected_row, each listed entry counted (`count`) or each key once: the probes that
  // change weights, not key sets.
  Hypothesis selected_rows(const std::string& name, const std::string& cause,
                           std::shared_ptr<const Pattern> p, bool count) {
    Hypothesis hy;
    hy.name = name;
    hy.cause = cause;
    const Pattern* table = p ? p.get() : &in_.pattern;
    hy.predict = [this, p, table, count](int64_t b, int64_t h, int64_t i, double* o,
                                         double* lse, int64_t* work) {
      const HeadView hv = head_view(b, h);
      *work += selected_row(*table, b, h, i, count, hv.q, hv.k, hv.v, hv.head_dim,
                            hv.head_dim_v, scale_, o, lse);
      return true;
    };
    return hy;
  }
  KeysFn keys_of(std::shared_ptr<const Pattern> p) const {
    // Under --padding-align valid a rebuilt pattern is read with the judged alignment
    // (contract §2.6); valid_row_keys throws where it cannot be, and run() skips the probe.
    if (in_.conv.padding_align_valid) return valid_row_keys(*p);
    return [p](int64_t b, int64_t h, int64_t i, std::vector<int64_t>& k) {
      pattern_row_keys(*p, b, h, i, k);
    };
  }
  // The spec the flags meant (before the causal alignment rebuilt it as an explicit mask).
  const PatternSpec* logical_spec() const {
    if (in_.conv.causal_top_left && Lq_ != Lk_) return in_.raw_spec;
    return &in_.pattern.spec;
  }
  // `spec` materialized for these sizes with the judged pattern's key padding and the
  // causal alignment of the conventions; nullptr when it is not a valid pattern.
  std::shared_ptr<const Pattern> build(PatternSpec spec, bool top_left) const;
  int64_t position(int64_t i) const { return i + Lk_ - Lq_; }
  // Query i's position in batch element b as judged (contract §2.6 under valid alignment).
  int64_t position(int64_t b, int64_t i) const {
    if (!in_.conv.padding_align_valid) return position(i);
    return i + valid_.keys[static_cast<size_t>(b)] - valid_.queries[static_cast<size_t>(b)];
  }

  void add_probes();
  void add_modern_probes();
  void add_selected_probes();  // contract §3.16–§3.17 (api/selected_probes.h)
  void add(const std::string& name, std::function<std::optional<Hypothesis>()> make) {
    probes_.push_back({name, std::move(make)});
  }

  const ProbeInputs& in_;
  const AttentionShape s_;
  const Clock::time_point start_;
  const double scale_;
  int64_t B_, H_, Lq_, Lk_, Dv_;
  std::vector<uint8_t> failing_;       // [B*H*Lq]: o or lse outside its tolerance
  std::vector<uint8_t> o_failing_;     // o alone
  std::vector<int64_t> failing_order_; // failing rows, worst first, then spread out
  int64_t worst_ = -1;
  std::vector<std::pair<std::string, std::function<std::optional<Hypothesis>()>>> probes_;
  KeysFn judged_;       // the judged row keys (set in the constructor)
  ValidCounts valid_;   // under --padding-align valid
  nlohmann::json tried_ = nlohmann::json::array();
};

void Prober::find_failing_rows() {
  const int64_t rows = B_ * H_ * Lq_;
  failing_.assign(static_cast<size_t>(rows), 0);
  o_failing_.assign(static_cast<size_t>(rows), 0);
  double worst_budget = -1.0;
  std::vector<int64_t> list;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % Lq_, b = r / (Lq_ * H_);
    if (skipped(b, i)) continue;
    double budget = 0.0;
    auto score = [&](double x, double ref, Tolerance tol, uint8_t& flag) {
      if (element_ok(x, ref, tol)) return;
      flag = 1;
      const double u = std::isfinite(x) && std::isfinite(ref)
                           ? std::fabs(x - ref) / (tol.atol + tol.rtol * std::fabs(ref))
                           : kInf;
      budget = std::max(budget, u);
    };
    for (int64_t d = 0; d < Dv_; ++d)
      score(in_.o.data[r * Dv_ + d], in_.oracle.o.data[r * Dv_ + d], in_.o_tol,
            o_failing_[static_cast<size_t>(r)]);
    failing_[static_cast<size_t>(r)] = o_failing_[static_cast<size_t>(r)];
    if (in_.lse)
      score(in_.lse->data[r], in_.oracle.lse.data[r], in_.lse_tol, failing_[static_cast<size_t>(r)]);
    if (!failing_[static_cast<size_t>(r)]) continue;
    list.push_back(r);
    if (budget > worst_budget) worst_budget = budget, worst_ = r;
  }
  // Worst first, then in rounds of halving stride: any prefix is spread over the rows.
  std::vector<uint8_t> taken(list.size(), 0);
  if (worst_ >= 0) failing_order_.push_back(worst_);
  size_t stride = 1;
  while (stride * 2 <= list.size()) stride *= 2;
  for (; stride >= 1; stride /= 2) {
    for (size_t x = 0; x < list.size(); x += stride)
      if (!taken[x]) {
        taken[x] = 1;
        if (list[x] != worst_) failing_order_.push_back(list[x]);
      }
    if (stride == 1) break;
  }
}

Prober::Verdict Prober::judge(const Hypothesis& hy) {
  const bool bounded = in_.options.mode == ProbeOptions::Mode::automatic;
  const double work_cap = in_.options.budget_s * kWorkPerSecond;
  std::vector<double> o(static_cast<size_t>(Dv_));
  int64_t work = 0, checked = 0, failing_checked = 0;
  bool ok = true, sampled = false;
  auto check = [&](int64_t r) {
    const int64_t i = r % Lq_, h = (r / Lq_) % H_, b = r / (Lq_ * H_);
    if (hy.unspecified && hy.unspecified(b, h, i)) return true;
    ++checked;
    double lse = 0.0;
    if (!hy.predict(b, h, i, o.data(), &lse, &work))
      return row_matches(r, in_.oracle.o.ptr() + r * Dv_, in_.oracle.lse.data[r], hy.compare_lse);
    if (!hy.lse_in_candidate_base && in_.conv.lse_base2) lse /= std::log(2.0);
    return row_matches(r, o.data(), lse, hy.compare_lse);
  };
  for (int64_t r : failing_order_) {
    if (out_of_time()) return Verdict::out_of_time;
    if (bounded && failing_checked >= kMinRows && static_cast<double>(work) >= work_cap) {
      sampled = true;
      break;
    }
    ++failing_checked;
    if (!(ok = check(r))) break;
  }
  // Passing rows the hypothesis changes must still match it.
  const int64_t rows = B_ * H_ * Lq_;
  const int64_t step = std::max<int64_t>(1, rows / kPassingSample);
  for (int64_t r = step / 2; ok && r < rows; r += step) {
    if (failing_[static_cast<size_t>(r)] || skipped(r / (Lq_ * H_), r % Lq_)) continue;
    if (out_of_time()) return Verdict::out_of_time;
    ok = check(r);
  }
  if (ok && hy.also) ok = hy.also();
  // A hypothesis that leaves no row to check explains nothing: it would name a fix that
  // skips every row (contract §4.9, "nothing compared fails").
  if (checked == 0) ok = false;
  nlohmann::json t = {{"probe", hy.name},
                      {"matches", ok},
                      {"rows_checked", checked},
                      {"failing_rows", static_cast<int64_t>(failing_order_.size())}};
  if (sampled) t["sampled"] = true;
  tried_.push_back(std::move(t));
  return ok ? Verdict::match : Verdict::no_match;
}

Hypothesis Prober::keyed(const std::string& name, const std::string& cause, KeysFn keys,
                         double scale, std::optional<double> masked) {
  Hypothesis hy;
  hy.name = name;
  hy.cause = cause;
  const bool same_rule = scale == scale_ && masked == in_.conv.masked_score;
  hy.predict = [this, keys = std::move(keys), scale, masked, same_rule](
                   int64_t b, int64_t h, int64_t i, double* o, double* lse, int64_t* work) {
    thread_local std::vector<int64_t> mine, theirs;
    keys(b, h, i, mine);
    if (same_rule) {
      judged_(b, h, i, theirs);
      if (mine == theirs) return false;
    }
    *work += attend_row(head_view(b, h), i, mine, scale, masked, o, lse);
    return true;
  };
  return hy;
}

std::shared_ptr<const Pattern> Prober::build(PatternSpec spec, bool top_left) const {
  spec.key_padding_mask = in_.pattern.spec.key_padding_mask;  // polarity already applied
  try {
    PatternSizes z = in_.pattern.sizes;
    Pattern p = materialize(spec, z);
    if (top_left && Lq_ != Lk_) {
      Conventions c;
      c.causal_top_left = true;
      p = apply_pattern_conventions(p, c);
    }
    return std::make_shared<const Pattern>(std::move(p));
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Sorted-vector set helpers for key lists.
void remove_key(std::vector<int64_t>& k, int64_t j) {
  auto it = std::lower_bound(k.begin(), k.end(), j);
  if (it != k.end() && *it == j) k.erase(it);
}
void add_key(std::vector<int64_t>& k, int64_t j) {
  auto it = std::lower_bound(k.begin(), k.end(), j);
  if (it == k.end() || *it != j) k.insert(it, j);
}

// The mistakes of the attention of current models (contract §2.7–§2.9), each a whole-row
// recomputation under the judged pattern's keys with one thing done wrong.
void Prober::add_modern_probes() {
  const ScoreMods* m = in_.mods;
  // A row under other mods or another kv head, on the judged keys.
  auto row = [this](int64_t b, int64_t h, int64_t i, int64_t kv, const ScoreMods* mods,
                    ScoreMistake mistake, double* o, double* lse, int64_t* work) {
    thread_local std::vector<int64_t> keys;
    judged_(b, h, i, keys);
    *work += attend_row(head_view(b, h, kv, mods, mistake), i, keys, scale_, std::nullopt, o, lse);
  };
  auto variant = [this, row](const std::string& name, const std::string& cause,
                             std::shared_ptr<const ScoreMods> mods, ScoreMistake mistake) {
    add(name, [this, row, name, cause, mods, mistake]() -> std::optional<Hypothesis> {
      Hypothesis hy;
      hy.name = name;
      hy.cause = cause;
      hy.predict = [this, row, mods, mistake](int64_t b, int64_t h, int64_t i, double* o,
                                              double* lse, int64_t* work) {
        row(b, h, i, h / s_.group(), mods.get(), mistake, o, lse, work);
        return true;
      };
      return hy;
    });
  };
  auto without = [m](auto edit) {
    auto c = std::make_shared<ScoreMods>(m ? *m : ScoreMods{});
    edit(*c);
    return std::shared_ptr<const ScoreMods>(c);
  };
  const std::shared_ptr<const ScoreMods> same = without([](ScoreMods&) {});
  if (s_.num_kv_heads != s_.num_heads) {
    add("kv head h mod H_kv", [this, row]() -> std::optional<Hypothesis> {
      Hypothesis hy;
      hy.name = "kv head h mod H_kv";
      hy.cause = "query head h read kv head h mod H_kv (kv heads tiled); grouped-query "
                 "attention reads kv head h / g, each kv head repeated g times in place "
                 "(repeat_interleave, contract §2.7)";
      hy.predict = [this, row](int64_t b, int64_t h, int64_t i, double* o, double* lse,
                               int64_t* work) {
        if (h % s_.num_kv_heads == h / s_.group()) return false;  // the same kv head
        row(b, h, i, h % s_.num_kv_heads, in_.mods, ScoreMistake::none, o, lse, work);
        return true;
      };
      return hy;
    });
  }
  if (m == nullptr) return;
  if (m->has_sinks()) {
    const auto no_sinks = without([](ScoreMods& c) { c.sinks.reset(); });
    variant("sinks ignored",
            "sinks ignored: the candidate is attention without the sink logits (contract §2.9: "
            "each sink enters its row's denominator, lse included)",
            no_sinks, ScoreMistake::none);
    if (in_.lse) {
      // One of the two: o (or lse) with the sink, the other without.
      for (const bool in_lse : {true, false}) {
        const std::string name = in_lse ? "sink in lse only" : "sink in p only";
        add(name, [this, row, name, in_lse, no_sinks, same]() -> std::optional<Hypothesis> {
          Hypothesis hy;
          hy.name = name;
          hy.cause = in_lse ? "the sink is in lse but not in p: o is attention without the sink "
                              "while lse includes it (contract §2.9: both include it)"
                            : "the sink is in p but not in lse: o includes the sink while lse "
                              "is the logsumexp of the keys alone (contract §2.9: both include it)";
          hy.predict = [this, row, in_lse, no_sinks, same](int64_t b, int64_t h, int64_t i,
                                                             double* o, double* lse, int64_t* work) {
            double other = 0.0;
            thread_local std::vector<double> o2;
            o2.resize(static_cast<size_t>(Dv_));
            row(b, h, i, h / s_.group(), (in_lse ? no_sinks : same).get(), ScoreMistake::none,
                o, &other, work);
            row(b, h, i, h / s_.group(), (in_lse ? same : no_sinks).get(), ScoreMistake::none,
                o2.data(), lse, work);
            return true;
          };
          return hy;
        });
      }
    }
  }
  if (m->has_softcap()) {
    variant("softcap missing",
            "softcap missing: the candidate's scores were not capped (contract §2.8: s = c·tanh(s/c) "
            "on the scaled score)",
            without([](ScoreMods& c) { c.softcap.reset(); }), ScoreMistake::none);
    variant("softcap before the scale",
            "softcap applied before the scale: scale·c·tanh(q·k/c) instead of c·tanh(scale·q·k/c) "
            "(contract §2.8: the cap acts on the scaled score)",
            same, ScoreMistake::softcap_before_scale);
    const double c = *m->softcap;
    add("softcap after the mask", [this, c]() -> std::optional<Hypothesis> {
      // Capping after masking turns each masked -inf into c·tanh(-inf) = -c: masked keys count.
      Hypothesis hy = keyed("softcap after the mask",
                            "softcap applied after the mask: every masked key scores -c = " +
                                num(-c) + " instead of leaving the softmax (contract §2.8: the "
                                "pattern removes pairs after the cap)",
                            judged_, scale_, -c);
      return hy;
    });
  }
  if (m->has_alibi()) {
    variant("ALiBi sign flipped",
            "ALiBi's sign flipped: the candidate adds a·|p - j| (contract §2.8 subtracts it)",
            without([](ScoreMods& c) {
              for (double& a : c.alibi_slopes->data) a = -a;
            }),
            ScoreMistake::none);
    if (Lq_ != Lk_)
      variant("ALiBi aligned top-left",
              "ALiBi aligned top-left: the distance is |i - j| with the query's index; contract "
              "§2.8 measures it from the query's position p = i + L_k - L_q (bottom-right)",
              same, ScoreMistake::alibi_top_left);
  }
}

// The mistakes of selected attention first: a selection's table explains its rows better
// than any window or scale rule.
void Prober::add_selected_probes() {
  // selected_row computes plain attention rows only (no score modifier, no convention).
  const bool plain = (in_.mods == nullptr || !(in_.mods->has_softcap() || in_.mods->has_alibi() ||
                                               in_.mods->has_sinks())) &&
                     !in_.conv.masked_score && !in_.conv.padding_align_valid;
  for (const SelectedMistake& m : selected_mistakes(in_.pattern, s_.num_kv_heads)) {
    if (m.counted) {
      if (!plain) continue;
      add(m.name, [this, m]() -> std::optional<Hypothesis> {
        std::shared_ptr<const Pattern> p = build(m.spec, false);
        if (!p) return std::nullopt;
        return selected_rows(m.name, m.cause, p, true);
      });
      continue;
    }
    add(m.name, [this, m]() -> std::optional<Hypothesis> {
      auto p = build(m.spec, false);
      if (!p) return std::nullopt;
      return keyed(m.name, m.cause, keys_of(p));
    });
  }
  // Duplicates counted versus not: the same keys, other weights (plain attention only).
  if (plain && has_repeats(in_.pattern)) {
    const bool count = in_.pattern.spec.duplicates == Duplicates::once;
    const std::string name = count ? "duplicates counted" : "duplicates counted once";
    const std::string cause =
        count ? "duplicates counted: a key listed twice entered the softmax twice; the pattern "
                "has --duplicates once (set semantics, contract §3.16)"
              : "duplicates counted once: a key listed twice entered the softmax once; the "
                "pattern has --duplicates count (contract §3.16)";
    add(name, [this, name, cause, count]() -> std::optional<Hypothesis> {
      return selected_rows(name, cause, nullptr, count);
    });
  }
}

void Prober::add_probes() {
  add_selected_probes();
  if (in_.mods != nullptr || s_.num_kv_heads != s_.num_heads) add_modern_probes();
  const PatternSpec* logical = logical_spec();
  const bool top_left = in_.conv.causal_top_left;
  const PatternKind kind = logical ? logical->kind : in_.pattern.spec.kind;
  const bool banded = kind == PatternKind::window || kind == PatternKind::longformer ||
                      kind == PatternKind::random;
  // The probes below edit the judged pattern's band and globals directly: only where its
  // positions are the contract's own (not rebuilt top-left).
  const bool native = !(top_left && Lq_ != Lk_) && !(in_.conv.padding_align_valid && Lq_ != Lk_);
  const PatternSpec& spec = in_.pattern.spec;
  const bool has_padding = in_.pattern.has_key_padding();

  // lse in the other base: o matches everywhere, lse = oracle's in the other base.
  if (in_.lse && std::none_of(o_failing_.begin(), o_failing_.end(), [](uint8_t x) { return x; })) {
    const bool b2 = in_.conv.lse_base2;
    add(b2 ? "lse in base e" : "lse in base 2", [this, b2] {
      Hypothesis hy;
      hy.name = b2 ? "lse in base e" : "lse in base 2";
      hy.cause = b2 ? "lse in base e (candidate matches with --lse-base e)"
                    : "lse in base 2 (candidate's lse = oracle lse / ln 2; pass --lse-base 2)";
      const double f = b2 ? std::log(2.0) : 1.0 / std::log(2.0);
      hy.lse_in_candidate_base = true;
      hy.predict = [this, f](int64_t b, int64_t h, int64_t i, double* o, double* lse, int64_t*) {
        const int64_t r = row_id(b, h, i);
        std::copy_n(in_.oracle.o.ptr() + r * Dv_, Dv_, o);
        *lse = in_.oracle.lse.data[r] * f;
        return true;
      };
      return hy;
    });
  }
  // Scale.
  const KeysFn same_keys = judged_;
  if (s_.head_dim > 1 && std::fabs(1.0 / double(s_.head_dim) - scale_) > 1e-15) {
    const double sd = 1.0 / double(s_.head_dim);
    add("scale 1/head_dim", [this, sd, same_keys] {
      return keyed("scale 1/head_dim",
                   "scale 1/head_dim (candidate matches the oracle with --scale " + num(sd) + ")",
                   same_keys, sd, in_.conv.masked_score);
    });
  }
  if (scale_ != 1.0)
    add("scale 1", [this, same_keys] {
      return keyed("scale 1", "scale 1 (candidate matches the oracle with --scale 1)", same_keys,
                   1.0, in_.conv.masked_score);
    });
  // The (left, right) window (contract §3.3): one side one narrower or wider, or the two
  // sides read the other way round (FlashAttention's window_size=(left, right) swapped).
  if (banded && logical && logical->window_left && logical->window_right) {
    struct PairEdit {
      const char* name;
      int64_t dl, dr;
      bool swap;
    };
    const int64_t l0 = *logical->window_left, r0 = *logical->window_right;
    const PairEdit edits[] = {{"window_left one narrower", -1, 0, false},
                              {"window_left one wider", 1, 0, false},
                              {"window_right one narrower", 0, -1, false},
                              {"window_right one wider", 0, 1, false},
                              {"window sides swapped", 0, 0, true}};
    for (const PairEdit& e : edits) {
      // -1 is unbounded: one narrower or wider than it means nothing; a swap of equal sides
      // is the same window.
      if ((e.dl != 0 && l0 < 0) || (e.dr != 0 && r0 < 0) || (e.swap && l0 == r0)) continue;
      const int64_t l = (e.swap ? r0 : l0) + e.dl, r = (e.swap ? l0 : r0) + e.dr;
      if ((e.dl != 0 && l < 0) || (e.dr != 0 && r < 0)) continue;  // narrower than 0
      PatternSpec sp = *logical;
      sp.window_left = l;
      sp.window_right = r;
      const std::string name = e.name;
      const std::string cause = name + " (candidate matches --window-left " + std::to_string(l) +
                                " --window-right " + std::to_string(r) + ")";
      add(name, [this, sp, name, cause, top_left]() -> std::optional<Hypothesis> {
        auto p = build(sp, top_left);
        if (!p) return std::nullopt;
        return keyed(name, cause, keys_of(p));
      });
    }
  }
  // Window one narrower or wider.
  if (banded && logical && !logical->window_left)
    for (int delta : {-1, 1}) {
      if (logical->window + delta < 0) continue;
      const std::string which = delta < 0 ? "narrower" : "wider";
      add("window one " + which, [this, delta, which, logical, top_left]() -> std::optional<Hypothesis> {
        PatternSpec sp = *logical;
        sp.window += delta;
        auto p = build(sp, top_left);
        if (!p) return std::nullopt;
        return keyed("window one " + which,
                     "window one " + which + " (candidate matches --window " +
                         std::to_string(sp.window) + ")",
                     keys_of(p));
      });
    }
  // Causal toggled.
  if ((banded || kind == PatternKind::dense) && logical) {
    const bool to = !logical->causal;
    add(to ? "causal" : "not causal", [this, to, logical, top_left]() -> std::optional<Hypothesis> {
      PatternSpec sp = *logical;
      sp.causal = to;
      auto p = build(sp, top_left);
      if (!p) return std::nullopt;
      return keyed(to ? "causal" : "not causal",
                   to ? "causal mask applied (candidate matches with --causal)"
                      : "causal mask missing (candidate matches without --causal)",
                   keys_of(p));
    });
  }
  // Query alignment, both ways (contract §3.1, §1.6).
  if (Lq_ != Lk_ && logical && (banded || (kind == PatternKind::dense && logical->causal))) {
    const bool causal = logical->causal;
    if (!top_left) {
      add("aligned top-left", [this, causal]() -> std::optional<Hypothesis> {
        // The square pattern of side max(Lq, Lk), rows [0, Lq), columns [0, Lk).
        PatternSpec sq = in_.pattern.spec;
        sq.key_padding_mask.reset();
        PatternSizes z = in_.pattern.sizes;
        z.batch = 1;
        z.seq_len_q = z.seq_len_k = std::max(Lq_, Lk_);
        std::shared_ptr<const Pattern> big;
        try {
          big = std::make_shared<const Pattern>(materialize(sq, z));
        } catch (const std::exception&) {
          return std::nullopt;
        }
        const int64_t lk = Lk_;
        return keyed("aligned top-left",
                     causal ? "causal diagonal aligned top-left (candidate matches with "
                              "--causal-align top-left)"
                            : "query positions aligned top-left: query i sits at key position "
                              "i, not i + seq_len_k - seq_len_q (candidate matches with "
                              "--causal-align top-left)",
                     [this, big, lk](int64_t b, int64_t h, int64_t i, std::vector<int64_t>& k) {
                       k.clear();
                       if (!in_.pattern.query_valid(b, i)) return;
                       thread_local std::vector<int64_t> row;
                       layout_row_keys(*big, h, i, row);
                       for (int64_t j : row)
                         if (j < lk && in_.pattern.key_valid(b, j)) k.push_back(j);
                     });
      });
    } else if (in_.raw_spec) {
      add("aligned bottom-right", [this]() -> std::optional<Hypothesis> {
        auto p = build(*in_.raw_spec, false);
        if (!p) return std::nullopt;
        return keyed("aligned bottom-right",
                     "query positions aligned bottom-right: query i sits at key position i + "
                     "seq_len_k - seq_len_q, as FlashAttention >= 2.1 (candidate matches without "
                     "--causal-align top-left)",
                     keys_of(p));
      });
    }
  }
  // Padding aligned the other way (contract §2.6): by each batch element's valid counts,
  // as FlashAttention, when the check ran with the full lengths; back when it ran valid.
  if (has_padding && Lq_ != Lk_ && logical) {
    const bool to_valid = !in_.conv.padding_align_valid, causal = logical->causal;
    const std::string name =
        to_valid ? "padding aligned to the valid counts" : "padding aligned to the full lengths";
    add(name, [this, to_valid, causal, name]() -> std::optional<Hypothesis> {
      // valid_row_keys throws for padding that is not right padding or a pattern with
      // nothing to align: run() then skips this probe.
      KeysFn keys = to_valid ? KeysFn(valid_row_keys(in_.pattern))
                             : KeysFn([this](int64_t b, int64_t h, int64_t i, std::vector<int64_t>& k) {
                                 pattern_row_keys(in_.pattern, b, h, i, k);
                               });
      return keyed(name, padding_align_cause(causal, to_valid), std::move(keys));
    });
  }
  // Globals and the band's ends: edits of the judged pattern's own rows.
  std::shared_ptr<std::vector<uint8_t>> is_global;
  const bool globals = native && (kind == PatternKind::longformer || kind == PatternKind::random) &&
                       !spec.global.empty();
  if (globals) {
    is_global = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(Lk_), 0);
    for (int64_t g : spec.global)
      if (g >= 0 && g < Lk_) (*is_global)[static_cast<size_t>(g)] = 1;
  }
  auto row_global = [this, is_global](int64_t i) {
    const int64_t p = position(i);
    return is_global && p >= 0 && p < Lk_ && (*is_global)[static_cast<size_t>(p)];
  };
  const std::string gtext = globals ? ranges_text(spec.global) : "";
  // The band keys of row i (window steps of contract §3.3).
  auto band_keys = [this](int64_t i, std::vector<int64_t>& k) {
    const BandParams bp = in_.pattern.band();
    const BandSteps st = band_steps(bp, i);
    k.clear();
    for (int64_t t = st.t_lo; t <= st.t_hi; ++t) k.push_back(st.position + bp.dilation * t);
  };
  // An edit of the pattern's keys row by row: edit(b, h, i, keys) changes them in place.
  using Edit = std::function<void(int64_t b, int64_t h, int64_t i, std::vector<int64_t>& k)>;
  auto edited = [this](Edit edit) -> KeysFn {
    return [this, edit](int64_t b, int64_t h, int64_t i, std::vector<int64_t>& k) {
      pattern_row_keys(in_.pattern, b, h, i, k);
      if (!in_.pattern.query_valid(b, i)) return;
      edit(b, h, i, k);
      if (in_.pattern.has_key_padding())
        k.erase(std::remove_if(k.begin(), k.end(), [&](int64_t j) { return !in_.pattern.key_valid(b, j); }),
                k.end());
    };
  };
  if (globals) {
    const bool causal = spec.causal;
    add("global rows missing", [=] {
      // A global row computed as a window row: its band and the global keys.
      return keyed("global rows missing",
                   "global rows computed as window rows (query rows " + gtext +
                       " must attend to every key)",
                   edited([=](int64_t, int64_t, int64_t i, std::vector<int64_t>& k) {
                     if (!row_global(i)) return;
                     band_keys(i, k);
                     for (int64_t g : spec.global)
                       if (!causal || g <= position(i)) add_key(k, g);
                   }));
    });
    add("global columns missing", [=] {
      return keyed("global columns missing",
                   "global columns missing (every query must attend to keys " + gtext + ")",
                   edited([=](int64_t, int64_t, int64_t i, std::vector<int64_t>& k) {
                     if (row_global(i)) return;
                     thread_local std::vector<int64_t> band;
                     band_keys(i, band);
                     for (int64_t g : spec.global)
                       if (!std::binary_search(band.begin(), band.end(), g)) remove_key(k, g);
                   }));
    });
    if (causal) {
      // Global tokens that ignore causality: global rows see every key, every query every
      // global key (contract §3.4 keeps j <= p for both).
      struct Variant {
        const char* name;
        bool rows, cols;
        const char* text;
      };
      for (const Variant& var :
           {Variant{"global tokens not causal", true, true,
                    "global tokens ignore causality: the global rows attend every key and every "
                    "query attends every global key, future ones included (contract §3.4: with "
                    "--causal, j <= i holds for global rows and columns too)"},
            Variant{"global rows not causal", true, false,
                    "global rows ignore causality: the global queries attend future keys "
                    "(contract §3.4: with --causal a global query attends keys j <= its position)"},
            Variant{"global columns not causal", false, true,
                    "global columns ignore causality: queries attend global keys after their own "
                    "position (contract §3.4: with --causal a global key j is seen by queries "
                    "at positions >= j only)"}})
        add(var.name, [=] {
          return keyed(var.name, std::string(var.text) + " (globals " + gtext + ")",
                       edited([=](int64_t, int64_t, int64_t i, std::vector<int64_t>& k) {
                         if (row_global(i)) {
                           if (!var.rows) return;
                           k.resize(static_cast<size_t>(Lk_));
                           for (int64_t j = 0; j < Lk_; ++j) k[static_cast<size_t>(j)] = j;
                         } else if (var.cols) {
                           for (int64_t g : spec.global) add_key(k, g);
                         }
                       }));
        });
    }
  }
  if (banded && native) {
    const BandParams bp = in_.pattern.band();
    // A key of the band that nothing else (a global row or column) allows in row i.
    auto band_only = [=](int64_t i, int64_t j) {
      return band_allows(bp, i, j) && !row_global(i) &&
             !(is_global && j >= 0 && j < Lk_ && (*is_global)[static_cast<size_t>(j)]);
    };
    struct Cut {
      const char* name;
      const char* text;
      std::function<int64_t(int64_t i)> key;  // the key row i loses, if band-only
    };
    std::vector<Cut> cuts;
    if (!bp.causal)
      cuts.push_back({"window clipped at the sequence end",
                      "window clipped one short at the sequence end: key seq_len_k - 1 is missing "
                      "from the rows whose window reaches it (an end bound of seq_len_k - 1 used as "
                      "exclusive)",
                      [=](int64_t) { return Lk_ - 1; }});
    cuts.push_back({"window clipped at the sequence start",
                    "window clipped one short at the sequence start: key 0 is missing from the "
                    "rows whose window reaches it (a start bound of 0 used as exclusive)",
                    [](int64_t) { return int64_t{0}; }});
    if (band_t_max(bp) > 0)
      cuts.push_back({"window upper edge exclusive",
                      "window's upper edge exclusive: every row misses its key i + window (the "
                      "window is one-sided and inclusive, contract §3.3)",
                      [=](int64_t i) { return position(i) + bp.dilation * bp.right; }});
    if (bp.left > 0)
      cuts.push_back({"window lower edge exclusive",
                      "window's lower edge exclusive: every row misses its key i - window (the "
                      "window is one-sided and inclusive, contract §3.3)",
                      [=](int64_t i) { return position(i) - bp.dilation * bp.left; }});
    for (const Cut& c : cuts)
      add(c.name, [=] {
        return keyed(c.name, c.text, edited([=](int64_t, int64_t, int64_t i, std::vector<int64_t>& k) {
                       const int64_t j = c.key(i);
                       if (band_only(i, j)) remove_key(k, j);
                     }));
      });
    // A window shifted at the sequence ends to keep its full width.
    const int64_t width = bp.left + band_t_max(bp);
    if (bp.dilation == 1 && width > 0 && width < Lk_)
      add("window shifted at the ends", [=] {
        return keyed("window shifted at the ends",
                     "window shifted at the sequence ends: rows near an end keep " +
                         std::to_string(width + 1) +
                         " keys by sliding their window inward instead of clipping it "
                         "(contract §3.3 clips it)",
                     edited([=](int64_t, int64_t, int64_t i, std::vector<int64_t>& k) {
                       if (row_global(i)) return;
                       thread_local std::vector<int64_t> band;
                       band_keys(i, band);
                       for (int64_t j : band)
                         if (band_only(i, j)) remove_key(k, j);
                       const int64_t lo = std::clamp<int64_t>(position(i) - bp.left, 0, Lk_ - 1 - width);
                       for (int64_t j = lo; j <= lo + width; ++j) add_key(k, j);
                     }));
      });
  }
  // The diagonal missing: each query without its own position.
  add("diagonal missing", [=] {
    return keyed("diagonal missing",
                 "diagonal missing: each query omits its own key position i + seq_len_k - "
                 "seq_len_q (a strict < where the pattern has <=)",
                 edited([=](int64_t, int64_t, int64_t i, std::vector<int64_t>& k) {
                   remove_key(k, position(i));
                 }));
  });
  // Fully masked rows given the mean of v (a large negative masked score).
  const bool any_empty = !in_.conv.masked_score &&
                         std::any_of(in_.oracle.lse.data.begin(), in_.oracle.lse.data.end(),
                                     [](double x) { return x == -kInf; });
  if (any_empty)
    add("masked score -1e9", [this] {
      Hypothesis hy;
      hy.name = "masked score -1e9";
      hy.cause = "fully masked rows hold the mean of v: masked scores set to a large negative "
                 "constant instead of removed (pass --masked-score VALUE, e.g. -1e9)";
      hy.compare_lse = false;
      hy.predict = [this](int64_t b, int64_t h, int64_t i, double* o, double* lse, int64_t* work) {
        if (in_.oracle.lse.data[row_id(b, h, i)] != -kInf) return false;
        *work += attend_row(head_view(b, h), i, {}, scale_, -1e9, o, lse);
        return true;
      };
      return hy;
    });
  if (has_padding && logical) {
    add("key-padding polarity inverted", [this, logical, top_left]() -> std::optional<Hypothesis> {
      PatternSpec sp = *logical;
      auto p = build(sp, top_left);  // build() puts the judged padding back: invert it after
      if (!p) return std::nullopt;
      PatternSpec inv = p->spec;
      for (uint8_t& x : inv.key_padding_mask->data) x = x ? 0 : 1;
      std::shared_ptr<const Pattern> q;
      try {
        q = std::make_shared<const Pattern>(materialize(inv, p->sizes));
      } catch (const std::exception&) {
        return std::nullopt;
      }
      return keyed("key-padding polarity inverted",
                   in_.conv.key_padding_ignore
                       ? "key-padding polarity inverted (candidate matches with "
                         "--key-padding-polarity keep)"
                       : "key-padding polarity inverted: 1 read as padding, as PyTorch's "
                         "key_padding_mask (pass --key-padding-polarity ignore)",
                   keys_of(q));
    });
  }
  if (has_padding) {
    add("padded keys attended", [this] {
      return keyed("padded keys attended",
                   "padded keys attended: the real queries attend the padded keys too (the key "
                   "padding mask was not applied to the keys, contract §2.4)",
                   [this](int64_t b, int64_t h, int64_t i, std::vector<int64_t>& k) {
                     k.clear();
                     if (in_.pattern.query_valid(b, i)) layout_row_keys(in_.pattern, h, i, k);
                   });
    });
    add("key padding ignored", [this] {
      return keyed("key padding ignored",
                   "key padding ignored: every row, padded queries included, attends the padded "
                   "keys (the key padding mask was not applied at all, contract §2.4)",
                   [this](int64_t, int64_t h, int64_t i, std::vector<int64_t>& k) {
                     layout_row_keys(in_.pattern, h, i, k);
                   });
    });
    if (!in_.conv.padded_queries_any)
      add("padded query rows not zeroed", [this] {
        Hypothesis hy;
        // Under --masked-score VALUE the oracle's padded rows are not zero but the mean of v
        // (every score of the row is VALUE, contract §1.6): the text says which it expected.
        hy.name = in_.conv.masked_score ? "padded query rows differ" : "padded query rows not zeroed";
        hy.cause = in_.conv.masked_score
                       ? "padded query rows differ: every other row matches (under --masked-score "
                         "the oracle gives a padded row the mean of v over all keys, every score "
                         "of it being VALUE; pass --masked-score -inf for rows of o = 0, or "
                         "--padded-queries any if they are unspecified in your convention)"
                       : "padded query rows not zeroed: every other row matches (contract §2 "
                         "zeroes them; pass --padded-queries any if they are unspecified in your "
                         "convention)";
        hy.predict = [](int64_t, int64_t, int64_t, double*, double*, int64_t*) { return false; };
        hy.unspecified = [this](int64_t b, int64_t, int64_t i) {
          return in_.conv.padding_align_valid ? valid_query_padded(valid_, b, i)
                                              : !in_.pattern.query_valid(b, i);
        };
        return hy;
      });
  }
  // q/k/v and o given as [batch, seq_len, num_heads, d] (and k/v with fewer heads: GQA).
  if (!in_.conv.bshd)
    add("layout bshd", [this]() -> std::optional<Hypothesis> {
      auto q2 = std::make_shared<Tensor<double>>(swap_dims_1_2(in_.q));
      auto k2 = std::make_shared<Tensor<double>>(swap_dims_1_2(in_.k));
      auto v2 = std::make_shared<Tensor<double>>(swap_dims_1_2(in_.v));
      const int64_t hq = q2->shape[1], hk = k2->shape[1], L2 = q2->shape[2], L2k = k2->shape[2];
      if (v2->shape[1] != hk || hq % hk != 0 || v2->shape[2] != L2k) return std::nullopt;
      PatternSpec sp = in_.raw_spec ? *in_.raw_spec : in_.pattern.spec;
      sp.key_padding_mask = in_.pattern.spec.key_padding_mask;
      PatternSizes z2 = in_.pattern.sizes;
      z2.num_heads = hq, z2.seq_len_q = L2, z2.seq_len_k = L2k;
      std::shared_ptr<const Pattern> p2;
      try {
        p2 = std::make_shared<const Pattern>(materialize(sp, z2));
        if (in_.conv.causal_top_left) p2 = std::make_shared<const Pattern>(
            apply_pattern_conventions(*p2, [] { Conventions c; c.causal_top_left = true; return c; }()));
      } catch (const std::exception&) {
        return std::nullopt;
      }
      const int64_t group = hq / hk;
      Hypothesis hy;
      hy.name = "layout bshd";
      hy.cause = group == 1
                     ? "q/k/v and o given as [batch, seq_len, num_heads, head_dim] (pass --layout bshd)"
                     : "q/k/v and o given as [batch, seq_len, num_heads, head_dim] with grouped-query "
                       "attention (q has " + std::to_string(hq) + " heads, k and v " +
                           std::to_string(hk) + "): pass --layout bshd";
      hy.compare_lse = false;
      const int64_t D = s_.head_dim;
      // Row (b, h, i) of the candidate as read is row (b, h2 = i, i2 = h) of the bshd world.
      hy.predict = [=](int64_t b, int64_t h, int64_t i, double* o, double* lse, int64_t* work) {
        const int64_t h2 = i, i2 = h, hkv = h2 / group;
        const HeadView hv{q2->ptr() + (b * hq + h2) * L2 * D, k2->ptr() + (b * hk + hkv) * L2k * D,
                          v2->ptr() + (b * hk + hkv) * L2k * Dv_, L2k, D, Dv_};
        thread_local std::vector<int64_t> keys;
        pattern_row_keys(*p2, b, h2, i2, keys);
        *work += attend_row(hv, i2, keys, scale_, in_.conv.masked_score, o, lse);
        return true;
      };
      return hy;
    });
  // BigBird: the failing rows are whole query blocks with random key blocks.
  if (kind == PatternKind::bigbird && in_.pattern.random_draws.numel() > 0)
    add("bigbird random blocks", [this] {
      const int64_t bs = in_.pattern.spec.block_size;
      const Tensor<int64_t>* draws = &in_.pattern.random_draws;  // [H, nb - 2, r]
      const int64_t rows = draws->shape[1], r = draws->shape[2];
      auto random_block = [draws, rows, r, bs](int64_t h, int64_t i) {
        const int64_t qb = i / bs - 1;  // draws row of query block i / bs
        if (qb < 0 || qb >= rows) return false;
        for (int64_t t = 0; t < r; ++t)
          if (draws->data[(h * rows + qb) * r + t] >= 0) return true;
        return false;
      };
      Hypothesis hy;
      hy.name = "bigbird random blocks";
      hy.cause = "BigBird random blocks differ from the pattern's: the failing rows are whole "
                 "query blocks with random key blocks and every row without random keys matches "
                 "(export the pattern's draws with mask --random-table-out, or pass yours with "
                 "--random-table)";
      hy.predict = [](int64_t, int64_t, int64_t, double*, double*, int64_t*) { return false; };
      hy.unspecified = [random_block](int64_t, int64_t h, int64_t i) { return random_block(h, i); };
      hy.also = [this, bs] {
        for (int64_t row : failing_order_) {
          const int64_t i = row % Lq_, b = row / (Lq_ * H_), base = row - i;
          for (int64_t x = (i / bs) * bs; x < std::min(Lq_, (i / bs + 1) * bs); ++x)
            if (!skipped(b, x) && !failing_[static_cast<size_t>(base + x)]) return false;
        }
        return true;
      };
      return hy;
    });
}

nlohmann::json Prober::run() {
  nlohmann::json out, probes;
  const ProbeOptions& opt = in_.options;
  probes["mode"] = opt.mode == ProbeOptions::Mode::always  ? "always"
                   : opt.mode == ProbeOptions::Mode::never ? "never"
                                                           : "auto";
  if (opt.mode == ProbeOptions::Mode::automatic) probes["budget_s"] = opt.budget_s;
  if (opt.mode == ProbeOptions::Mode::never) {
    out["probable_cause"] = "unknown: probes not run (--probes never)";
    probes["tried"] = tried_;
    probes["skipped"] = "--probes never";
    out["probes"] = probes;
    return out;
  }
  add_probes();
  std::string cause;
  std::vector<std::string> not_run;
  for (auto& [name, make] : probes_) {
    if (!cause.empty()) break;
    if (out_of_time()) {
      not_run.push_back(name);
      continue;
    }
    std::optional<Hypothesis> hy;
    try {
      hy = make();
    } catch (const std::exception&) {  // a hypothesis that is not a valid pattern here
      continue;
    }
    if (!hy) continue;
    const Verdict v = judge(*hy);
    if (v == Verdict::match) cause = hy->cause;
    if (v == Verdict::out_of_time) not_run.push_back(name + " (not finished)");
  }
  // The worst row: the smallest change of its key set that explains it.
  std::string explained;
  if (worst_ >= 0 && !in_.conv.masked_score) {
    if (cause.empty() && out_of_time()) {
      not_run.push_back("worst row key set");
    } else {
      const int64_t i = worst_ % Lq_, h = (worst_ / Lq_) % H_, b = worst_ / (Lq_ * H_);
      std::vector<int64_t> keys;
      judged_(b, h, i, keys);
      const KeyChange c = smallest_key_change(
          head_view(b, h), i, position(b, i), keys, scale_, in_.o.ptr() + worst_ * Dv_,
          in_.lse ? &in_.lse->data[worst_] : nullptr, in_.conv.lse_base2, in_.o_tol, in_.lse_tol);
      nlohmann::json w = {{"batch", b}, {"head", h}, {"row", i}};
      const std::string where = "row " + std::to_string(i) + " (batch " + std::to_string(b) +
                                ", head " + std::to_string(h) + ")";
      if (c.found) {
        auto part = [](const std::vector<int64_t>& ks, const char* verb) {
          return std::string(ks.size() == 1 ? "key " : "keys ") + ranges_text(ks) + " " +
                 (ks.size() == 1 ? "is " : "are ") + verb;
        };
        std::string t = where + " matches if ";
        if (!c.removed.empty()) t += part(c.removed, "removed");
        if (!c.removed.empty() && !c.added.empty()) t += " and ";
        if (!c.added.empty()) t += part(c.added, "added");
        w["added"] = ranges_text(c.added);
        w["removed"] = ranges_text(c.removed);
        w["text"] = t;
        explained = t;
      } else {
        w["text"] = "no change of at most two ranges of keys explains " + where;
      }
      probes["worst_row_keys"] = w;
    }
  }
  probes["tried"] = tried_;
  if (!not_run.empty()) probes["not_run"] = not_run;
  if (cause.empty()) {
    cause = "unknown: no probe matched (a local error, not one of the usual convention mistakes)";
    if (!not_run.empty()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", opt.budget_s);
      cause = "unknown: no probe matched within the probe budget of " + std::string(buf) +
              " s (" + std::to_string(not_run.size()) +
              " not run; raise --probe-budget or pass --probes always)";
    }
    if (!explained.empty()) cause += "; " + explained;
  }
  out["probable_cause"] = cause;
  out["probes"] = probes;
  return out;
}

}  // namespace

nlohmann::json probe_causes(const ProbeInputs& in) {
  // Rule before the probes: non-finite values exactly on fully masked rows.
  const AttentionShape s = attention_shape(in.q.shape, in.k.shape, in.v.shape, KvHeads::grouped);
  const int64_t rows = s.batch * s.num_heads * s.seq_len_q;
  auto empty_row = [&](int64_t r) {
    // With sinks a real row without keys has lse = sink (contract §2.9): read its keys.
    const bool sinks = in.mods != nullptr && in.mods->has_sinks();
    if (!in.conv.masked_score && !sinks) return in.oracle.lse.data[r] == -kInf;
    std::vector<int64_t> keys;
    const int64_t i = r % s.seq_len_q, h = (r / s.seq_len_q) % s.num_heads,
                  b = r / (s.seq_len_q * s.num_heads);
    pattern_row_keys(in.pattern, b, h, i, keys);
    return keys.empty();
  };
  bool nonfinite = false, only_empty = true;
  auto scan = [&](const Tensor<double>& c, const Tensor<double>& ref) {
    const int64_t width = ref.numel() / rows;
    for (int64_t e = 0; e < ref.numel(); ++e)
      if (!std::isfinite(c.data[e]) && c.data[e] != ref.data[e]) {
        nonfinite = true;
        if (only_empty && !empty_row(e / width)) only_empty = false;
      }
  };
  scan(in.o, in.oracle.o);
  if (in.lse) scan(*in.lse, in.oracle.lse);
  if (nonfinite && only_empty)
    return {{"probable_cause",
             "NaN/Inf on fully masked rows (no allowed key, e.g. a fully padded batch row): "
             "contract §2 gives them o = 0 and lse = -inf; a softmax over an empty set divides "
             "0 by 0"},
            {"probes", {{"tried", nlohmann::json::array()}}}};
  return Prober(in).run();
}

}  // namespace sparseattn::api
