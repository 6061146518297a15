// The shared half of every per-layer algorithm choice (choice.h).
#include "tune/choice.h"

#include <cstdio>

namespace infera::tune {

using ConvAlgo = SessionOptions::ConvAlgo;
using Wino = SessionOptions::WinogradMode;

ConvAlgo algo_of(const std::string& n) {
  auto has = [&](const char* w) { return n.find(w) != std::string::npos; };
  if (has("winograd")) return ConvAlgo::kWinograd;
  if (has("implicit_gemm")) return ConvAlgo::kImplicitGemm;
  if (has("cudnn") || has("cublas") || has("cutlass") || has("miopen") || has("rocblas") || has("hipblas"))
    return ConvAlgo::kVendor;
  if (has("direct")) return ConvAlgo::kDirect;
  if (has("gemm")) return ConvAlgo::kGemm;
  return ConvAlgo::kAuto;
}

Allowed allowed_candidates(const std::vector<std::string>& names, const TuneSettings& t) {
  Allowed a;
  for (size_t i = 0; i < names.size(); ++i) a.index.push_back(i);
  auto keep = [&](auto pred) {
    std::vector<size_t> k;
    for (size_t i : a.index)
      if (pred(names[i])) k.push_back(i);
    return k;
  };
  if (t.winograd == Wino::kOff) {
    auto k = keep([](const std::string& n) { return algo_of(n) != ConvAlgo::kWinograd; });
    if (k.empty())
      a.note = "--winograd off: only Winograd can do this layer; using it";
    else if (k.size() < a.index.size())
      a.index = k, a.filtered = true;
  } else if (t.winograd == Wino::kOn) {
    auto k = keep([](const std::string& n) { return algo_of(n) == ConvAlgo::kWinograd; });
    if (!k.empty() && k.size() < a.index.size()) a.index = k, a.filtered = true;
    // no Winograd candidate: the layer is searched as usual (Winograd does not apply to it)
  }
  if (t.conv_algo != ConvAlgo::kAuto) {
    auto k = keep([&](const std::string& n) { return algo_of(n) == t.conv_algo; });
    if (k.empty()) {
      std::string have;
      for (size_t i : a.index) have += (have.empty() ? "" : ", ") + names[i];
      a.note = std::string("--conv-algo ") + conv_algo_name(t.conv_algo) +
               " cannot do this layer (candidates: " + have + "); searching those instead";
    } else if (k.size() < a.index.size()) {
      a.index = k, a.filtered = true;
    }
  }
  return a;
}

Choice::Choice(PerfDb* db, PerfKey key, const Allowed& allowed)
    : db_(db), key_(std::move(key)), filtered_(allowed.filtered) {}

bool Choice::searching() const {
  return db_ && db_->settings().search != SessionOptions::SearchMode::kOff && !filtered_;
}

std::optional<size_t> Choice::known(const std::vector<std::string>& names) {
  if (!searching()) return std::nullopt;
  // An entry whose winner this build cannot make (another setting made it) is searched again.
  auto e = db_->find(key_);
  if (!e) return std::nullopt;
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == e->winner) {
      db_->count_found();
      from_db_ = true;
      best_ = e->winner;
      best_ms_ = e->ms;
      tried_ = e->candidates;
      return i;
    }
  return std::nullopt;
}

std::optional<std::string> Choice::winner() const {
  if (!searching()) return std::nullopt;
  auto e = db_->find(key_);
  if (!e) return std::nullopt;
  return e->winner;
}

void Choice::note(const std::string& name, double ms) {
  const bool failed = !(ms >= 0) || ms == DBL_MAX;
  tried_.push_back({name, failed ? -1.0 : ms});
  if (!failed && ms < best_ms_) best_ms_ = ms, best_ = name;
}

void Choice::store() {
  if (!searching() || from_db_ || best_.empty()) return;
  PerfEntry e;
  e.key = key_;
  e.winner = best_;
  e.ms = best_ms_;
  e.search = exhaustive() ? "exhaustive" : "fast";
  e.candidates = tried_;
  db_->record(e);
}

int Choice::reps() const { return exhaustive() ? 10 : 3; }

bool Choice::exhaustive() const { return db_ && db_->settings().search == SessionOptions::SearchMode::kExhaustive; }

std::string Choice::summary() const {
  auto ms = [](double v) {
    char b[32];
    if (v < 0)
      std::snprintf(b, sizeof b, "failed");
    else
      std::snprintf(b, sizeof b, "%.4f ms", v);
    return std::string(b);
  };
  if (best_.empty()) return "";
  if (from_db_) return "perf db " + ms(best_ms_);
  std::string s = ms(best_ms_) + " of:";
  for (size_t i = 0; i < tried_.size(); ++i) s += (i ? ", " : " ") + tried_[i].name + " " + ms(tried_[i].ms);
  return s;
}

}  // namespace infera::tune
