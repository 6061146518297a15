// The performance database (src/tune): the strict JSON reader, file round trip, two processes
// writing at once (nothing torn or lost), corrupt and foreign-version files refused with a
// warning, the candidate filter and choice shared by the CPU and GPU backends, and a second build
// of a model that times nothing.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cfloat>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "dnnl_probe.h"
#include "infera/infera.h"
#include "tune/choice.h"
#include "tune/json.h"
#include "tune/perfdb.h"

namespace infera {
namespace {

std::string temp_dir() {
  char t[] = "/tmp/infera-perfdb-XXXXXX";
  const char* d = mkdtemp(t);
  return d ? d : "/tmp";
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void spit(const std::string& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

PerfEntry entry(const std::string& shape, const std::string& winner, double ms) {
  PerfEntry e;
  e.key = {"cpu: test [avx2]", "oneDNN 9.9.9", "conv", shape, "f32", "nChw16c>nChw16c", "bias+relu"};
  e.winner = winner;
  e.ms = ms;
  e.candidates = {{"direct", ms * 2}, {winner, ms}};
  return e;
}

TuneSettings fast() { return TuneSettings{}; }

TEST(PerfDbJson, AcceptsStrictJsonOnly) {
  auto v = json::parse(R"( {"a": [1, -2.5e3, true, null, "x\u00e9\ud83d\ude00\n"], "b": {}} )");
  ASSERT_TRUE(v.is_ok()) << v.message();
  const json::Value* a = v.value().get("a");
  ASSERT_TRUE(a && a->items.size() == 5);
  EXPECT_EQ(a->items[1].num, -2500);
  EXPECT_EQ(a->items[4].str, "x\xc3\xa9\xf0\x9f\x98\x80\n");
  for (const char* bad :
       {"", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "-", "NaN", "[1e999]", "\"\x01\"", "\"\\ud800\"",
        "\"\\udc00x\"", "\"\\x\"", "{\"a\":1,\"a\":2}", "[1] [2]", "\"\xff\"", "/* c */ 1", "tru"}) {
    auto r = json::parse(bad);
    EXPECT_FALSE(r.is_ok()) << "accepted: " << bad;
    if (!r.is_ok()) EXPECT_NE(r.message().find("JSON"), std::string::npos) << r.message();
  }
  json::Limits lim;
  lim.max_depth = 4;
  EXPECT_FALSE(json::parse("[[[[[1]]]]]", lim).is_ok());
  EXPECT_TRUE(json::parse("[[[[1]]]]", lim).is_ok());
  EXPECT_EQ(json::quote(std::string("a\"\\\x01\xff", 5)), "\"a\\\"\\\\\\u0001\\ufffd\"");
  for (double d : {0.1, 1.0 / 3, 12345.678, 1e-9}) EXPECT_EQ(std::strtod(json::number(d).c_str(), nullptr), d);
}

TEST(PerfDbFile, SerializeParseRoundTrip) {
  std::vector<PerfEntry> es{entry("x1", "winograd", 0.25), entry("x2 \"quoted\" \xc3\xa9", "direct", 1.5)};
  es[1].search = "exhaustive";
  es[1].candidates.push_back({"failed_one", -1});
  auto back = perf_db_parse(perf_db_serialize(es));
  ASSERT_TRUE(back.is_ok()) << back.message();
  ASSERT_EQ(back.value().size(), 2u);
  for (size_t i = 0; i < es.size(); ++i) {
    EXPECT_EQ(back.value()[i].key.str(), es[i].key.str());
    EXPECT_EQ(back.value()[i].winner, es[i].winner);
    EXPECT_EQ(back.value()[i].ms, es[i].ms);
    EXPECT_EQ(back.value()[i].search, es[i].search);
    ASSERT_EQ(back.value()[i].candidates.size(), es[i].candidates.size());
    EXPECT_EQ(back.value()[i].candidates.back().ms, es[i].candidates.back().ms);
  }
}

TEST(PerfDbFile, SchemaViolationsRefusedWithReason) {
  const std::string ok = perf_db_serialize({entry("x", "winograd", 1)});
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = ok;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  struct Case {
    std::string text, word;
  };
  for (const Case& c : std::vector<Case>{
           {"[]", "not a JSON object"},
           {"{\"format\": \"other\", \"version\": 1, \"entries\": []}", "not an infera perf db"},
           {with("\"version\": 1", "\"version\": 7"), "version 7"},
           {with("\"version\": 1", "\"version\": \"1\""), "version"},
           {with("\"winner\": \"winograd\"", "\"winner\": \"nobody\""), "not among its candidates"},
           {with("\"ms\": 1,", "\"ms\": 1e12,"), "milliseconds"},
           {with("\"op\": \"conv\"", "\"op\": \"\""), "'op'"},
           {with("\"op\": \"conv\"", "\"op\": \"a\\nb\""), "control"},
           {with("\"op\": \"conv\"", "\"op\": 3"), "'op' must be a string"},
           {with("\"search\": \"fast\"", "\"search\": \"slow\""), "search"},
       }) {
    auto r = perf_db_parse(c.text);
    ASSERT_FALSE(r.is_ok()) << c.text;
    EXPECT_NE(r.message().find(c.word), std::string::npos) << r.message();
  }
}

TEST(PerfDbFile, WriteReadAgainAsANewProcessWould) {
  const std::string p = temp_dir() + "/sub/dir/perfdb.json";  // folders made on the first save
  {
    auto db = PerfDb::open(p, fast());
    EXPECT_FALSE(db->find(entry("a", "winograd", 1).key));
    db->record(entry("a", "winograd", 0.5));
    db->record(entry("b", "direct", 2));
    ASSERT_TRUE(db->flush().is_ok());
    EXPECT_EQ(db->timed(), 2u);
  }
  perf_db_forget_stores();
  auto db = PerfDb::open(p, fast());
  EXPECT_TRUE(db->warning().empty()) << db->warning();
  auto e = db->find(entry("a", "winograd", 1).key);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->winner, "winograd");
  EXPECT_EQ(e->ms, 0.5);
  EXPECT_EQ(db->size(), 2u);
  // An exhaustive search does not take what a fast one found.
  TuneSettings ex;
  ex.search = SessionOptions::SearchMode::kExhaustive;
  EXPECT_FALSE(PerfDb::open(p, ex)->find(entry("a", "winograd", 1).key));
  const PerfDbInfo info = perf_db_info(p);
  EXPECT_TRUE(info.exists);
  EXPECT_EQ(info.entries, 2u);
  EXPECT_EQ(info.entries_per_device.at("cpu: test [avx2]"), 2u);
  EXPECT_GT(info.file_bytes, 100u);
  EXPECT_TRUE(info.warning.empty());
}

TEST(PerfDbFile, NoneIsInMemoryOnly) {
  auto db = PerfDb::open("none", fast());
  db->record(entry("a", "winograd", 1));
  EXPECT_TRUE(db->flush().is_ok());
  EXPECT_TRUE(db->path().empty());
  EXPECT_TRUE(db->find(entry("a", "winograd", 1).key));
  EXPECT_FALSE(PerfDb::open("none", fast())->find(entry("a", "winograd", 1).key));  // per handle
}

// Two processes record different entries and save after each one, at the same time: the file
// ends with every entry of both, and every intermediate state was a whole file.
TEST(PerfDbFile, TwoProcessesWritingAtOnceLoseNothing) {
  const std::string p = temp_dir() + "/perfdb.json";
  const int per_process = 60;
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = fork();
    ASSERT_GE(kids[k], 0);
    if (kids[k] == 0) {
      perf_db_forget_stores();
      auto db = PerfDb::open(p, fast());
      int bad = 0;
      for (int i = 0; i < per_process; ++i) {
        db->record(entry("p" + std::to_string(k) + "_" + std::to_string(i), "winograd", 0.1 * i + k));
        if (!db->flush().is_ok()) ++bad;
        // A reader never sees a torn file (the writer renames a whole one over it).
        const std::string now = slurp(p);
        if (!now.empty() && !perf_db_parse(now).is_ok()) ++bad;
      }
      _exit(bad == 0 ? 0 : 1);
    }
  }
  for (pid_t k : kids) {
    int st = 0;
    ASSERT_EQ(waitpid(k, &st, 0), k);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "a writer saw an error or a torn file";
  }
  auto all = perf_db_parse(slurp(p));
  ASSERT_TRUE(all.is_ok()) << all.message();
  EXPECT_EQ(all.value().size(), 2u * per_process);
}

TEST(PerfDbFile, CorruptFileIsAWarningThenRewritten) {
  const std::string dir = temp_dir();
  for (const std::string& junk : {std::string("{\"format\": \"infera-perfdb\", \"version\": 1, \"entr"),
                                  std::string("\x00\x01garbage", 9), std::string(70u << 20, '[')}) {
    const std::string p = dir + "/bad" + std::to_string(junk.size()) + ".json";
    spit(p, junk);
    testing::internal::CaptureStderr();
    auto db = PerfDb::open(p, fast());
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(db->size(), 0u);
    EXPECT_NE(db->warning().find("using an empty database"), std::string::npos) << db->warning();
    EXPECT_NE(err.find("infera: warning: perf db " + p), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;  // one line
    db->record(entry("a", "direct", 1));
    ASSERT_TRUE(db->flush().is_ok());
    auto back = perf_db_parse(slurp(p));
    ASSERT_TRUE(back.is_ok()) << back.message();
    EXPECT_EQ(back.value().size(), 1u);
  }
}

TEST(PerfDbFile, ForeignVersionIsLeftAlone) {
  const std::string p = temp_dir() + "/v2.json";
  const std::string v2 = "{\"format\": \"infera-perfdb\", \"version\": 2, \"entries\": [\"whatever v2 keeps\"]}";
  spit(p, v2);
  testing::internal::CaptureStderr();
  auto db = PerfDb::open(p, fast());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("version 2; this infera reads version 1"), std::string::npos) << err;
  EXPECT_NE(err.find("left as it is"), std::string::npos) << err;
  db->record(entry("a", "direct", 1));
  EXPECT_TRUE(db->flush().is_ok());
  EXPECT_EQ(slurp(p), v2);
  EXPECT_NE(perf_db_info(p).warning.find("version 2"), std::string::npos);
}

TEST(PerfDbChoice, ForcedSettingsFilterCandidatesOrSayWhyNot) {
  using A = SessionOptions::ConvAlgo;
  using W = SessionOptions::WinogradMode;
  const std::vector<std::string> gpu{"f16_conv_nhwc_implicit_gemm_mma_128x128", "f16_conv_nhwc_implicit_gemm_mma_64x64",
                                     "f16_conv_nhwc_depthwise_direct", "cudnn_eng12_k3", "f16_conv_winograd_f4x4"};
  auto allowed = [&](A a, W w) {
    TuneSettings t;
    t.conv_algo = a, t.winograd = w;
    return tune::allowed_candidates(gpu, t);
  };
  tune::Allowed x = allowed(A::kAuto, W::kAuto);
  EXPECT_EQ(x.index.size(), 5u);
  EXPECT_FALSE(x.filtered);
  x = allowed(A::kImplicitGemm, W::kAuto);
  EXPECT_EQ(x.index, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(x.filtered);
  x = allowed(A::kVendor, W::kAuto);
  EXPECT_EQ(x.index, (std::vector<size_t>{3}));
  x = allowed(A::kAuto, W::kOff);
  EXPECT_EQ(x.index, (std::vector<size_t>{0, 1, 2, 3}));
  x = allowed(A::kAuto, W::kOn);
  EXPECT_EQ(x.index, (std::vector<size_t>{4}));
  x = allowed(A::kGemm, W::kAuto);  // no 1x1-as-GEMM kernel here: MIOpen-style fallback, said why
  EXPECT_EQ(x.index.size(), 5u);
  EXPECT_FALSE(x.filtered);
  EXPECT_NE(x.note.find("--conv-algo gemm cannot do this layer"), std::string::npos) << x.note;
  x = allowed(A::kWinograd, W::kOff);  // contradictory: Winograd off wins, then the forced algo cannot apply
  EXPECT_FALSE(x.note.empty());
  const std::vector<std::string> cpu{"direct", "winograd"};
  TuneSettings t;
  t.winograd = W::kOff;
  EXPECT_NE(tune::allowed_candidates({"winograd"}, t).note.find("only Winograd"), std::string::npos);
  EXPECT_EQ(tune::allowed_candidates(cpu, t).index, (std::vector<size_t>{0}));
}

TEST(PerfDbChoice, TimesOnceThenFindsTheWinner) {
  const std::string p = temp_dir() + "/choice.json";
  const PerfKey key = entry("k", "direct", 1).key;
  const std::vector<std::string> names{"direct", "winograd"};
  const tune::Allowed all = tune::allowed_candidates(names, fast());
  {
    auto db = PerfDb::open(p, fast());
    tune::Choice c(db.get(), key, all);
    ASSERT_TRUE(c.searching());
    EXPECT_FALSE(c.known(names));
    c.note("direct", 2.0);
    c.note("winograd", 0.75);
    c.note("broken", DBL_MAX);
    c.store();
    EXPECT_EQ(c.best(), "winograd");
    EXPECT_NE(c.summary().find("broken failed"), std::string::npos) << c.summary();
    EXPECT_TRUE(db->flush().is_ok());
    EXPECT_EQ(db->timed(), 1u);
  }
  perf_db_forget_stores();
  auto db = PerfDb::open(p, fast());
  tune::Choice c(db.get(), key, all);
  auto i = c.known(names);
  ASSERT_TRUE(i);
  EXPECT_EQ(*i, 1u);
  EXPECT_TRUE(c.from_db());
  EXPECT_EQ(c.summary(), "perf db 0.7500 ms");
  EXPECT_EQ(db->found(), 1u);
  EXPECT_EQ(db->timed(), 0u);
  // A winner this build cannot make (another setting chose it) is searched again.
  tune::Choice other(db.get(), key, all);
  EXPECT_FALSE(other.known({"direct"}));
  // Filtered (forced) settings neither read nor write the database.
  TuneSettings forced;
  forced.conv_algo = SessionOptions::ConvAlgo::kDirect;
  auto fdb = PerfDb::open(p, forced);
  tune::Choice f(fdb.get(), key, tune::allowed_candidates(names, forced));
  EXPECT_FALSE(f.searching());
  EXPECT_FALSE(f.known(names));
}

// A Winograd-sized conv model (3x3 stride 1, 32 -> 32 channels, 14x14), symbolic batch.
onnx::ModelProto conv_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("conv");
  auto io = [](onnx::ValueInfoProto* v, const char* name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("N");
    for (int d : {32, 14, 14}) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  io(g->add_input(), "x");
  io(g->add_output(), "y");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  for (const char* name : {"w1", "w2"}) {
    auto* w = g->add_initializer();
    w->set_name(name);
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int d : {32, 32, 3, 3}) w->add_dims(d);
    for (int i = 0; i < 32 * 32 * 9; ++i) w->add_float_data(u(rng));
  }
  auto conv = [&](const char* in, const char* w, const char* out) {
    auto* n = g->add_node();
    n->set_op_type("Conv");
    n->set_name(out);
    n->add_input(in), n->add_input(w), n->add_output(out);
    auto* a = n->add_attribute();
    a->set_name("pads");
    a->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i) a->add_ints(1);
  };
  conv("x", "w1", "c1");
  conv("c1", "w2", "y");
  return m;
}

Result<PlanReport> build(const SessionOptions& o, int64_t batch) {
  auto s = Session::load_from_memory(conv_model().SerializeAsString(), "", o);
  if (!s.is_ok()) return s.status();
  return s.value()->prepare({{"x", {batch, 32, 14, 14}}});
}

// Where oneDNN has Winograd beside direct: the first build times, a second finds, another batch
// times again, --search off uses no database.
void expect_search_and_reuse(SessionOptions o, const PlanReport& first) {
  // Two convs of one shape (with the same formats, the second finds the first's entry at once).
  EXPECT_GE(first.perf_db_timed, 1u);
  EXPECT_EQ(first.perf_db_timed + first.perf_db_found, 2u);
  bool noted = false;
  for (const PlanStepInfo& st : first.step_list) noted = noted || st.impl.find(" ms of: direct ") != std::string::npos;
  EXPECT_TRUE(noted) << "the timed conv's implementation name lists the candidates' times";
  perf_db_forget_stores();  // as a new process: read from the file
  auto second = build(o, 2);
  ASSERT_TRUE(second.is_ok()) << second.message();
  EXPECT_EQ(second.value().perf_db_timed, 0u);
  EXPECT_EQ(second.value().perf_db_found, 2u);
  auto other_batch = build(o, 3);  // another shape: another key
  ASSERT_TRUE(other_batch.is_ok());
  EXPECT_GE(other_batch.value().perf_db_timed, 1u);
  // No search: the fixed rule, no database at all.
  o.search = SessionOptions::SearchMode::kOff;
  o.perf_db = temp_dir() + "/off.json";
  auto off = build(o, 2);
  ASSERT_TRUE(off.is_ok());
  EXPECT_EQ(off.value().perf_db_timed + off.value().perf_db_found, 0u);
  EXPECT_FALSE(perf_db_info(o.perf_db).exists);
}

TEST(PerfDbSession, SecondBuildTimesNothing) {
  SessionOptions o;
  o.num_threads = 1;
  o.perf_db = temp_dir() + "/session.json";
  auto first = build(o, 2);
  ASSERT_TRUE(first.is_ok()) << first.message();
  if (!test::onednn_has_winograd()) {
    // One algorithm (direct) for the CPU's convs here: nothing to choose, nothing timed or stored.
    EXPECT_EQ(first.value().perf_db_timed + first.value().perf_db_found, 0u);
    EXPECT_FALSE(perf_db_info(o.perf_db).exists);
  } else {
    expect_search_and_reuse(o, first.value());
  }
  // Forced: every conv says so, nothing is timed.
  o.search = SessionOptions::SearchMode::kFast;
  o.perf_db = temp_dir() + "/forced.json";
  o.conv_algo = SessionOptions::ConvAlgo::kDirect;
  auto forced = build(o, 2);
  ASSERT_TRUE(forced.is_ok());
  EXPECT_EQ(forced.value().perf_db_timed, 0u);
  size_t forced_steps = 0;
  for (const PlanStepInfo& st : forced.value().step_list)
    forced_steps += st.impl.find("[direct: forced]") != std::string::npos;
  EXPECT_EQ(forced_steps, 2u);
}

}  // namespace
}  // namespace infera
