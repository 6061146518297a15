// Saved plans (src/runtime/saved_plan*.cpp, docs/saved_plans.md): a round trip gives the bits of
// the session it was saved from at every saved batch and times nothing at load; a plan made for
// another machine, library, infera or options is refused with what differs; truncated, flipped or
// corrupt files are errors, never crashes; typed ops a pass set directly survive or are refused.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <unistd.h>
#include <cctype>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "backends/packed_weights.h"
#include "dnnl_probe.h"
#include "infera/infera.h"
#include "ops/activation.h"
#include "ops/conv.h"
#include "ops/infer.h"
#include "ops/norm.h"
#include "runtime/saved_plan.h"
#include "tune/perfdb.h"

namespace infera {
namespace {

std::string temp_dir() {
  char t[] = "/tmp/infera-iplan-XXXXXX";
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

void add_tensor(onnx::GraphProto* g, const char* name, std::vector<int64_t> dims, std::mt19937& rng, float lo = -0.2f,
                float hi = 0.2f) {
  auto* w = g->add_initializer();
  w->set_name(name);
  w->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) w->add_dims(d), n *= d;
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < n; ++i) w->add_float_data(u(rng));
}

onnx::NodeProto* node(onnx::GraphProto* g, const char* op, std::vector<const char*> in, const char* out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (const char* i : in) n->add_input(i);
  n->add_output(out);
  return n;
}

void ints(onnx::NodeProto* n, const char* name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// x[N,16,12,12] -> Conv+BN+Relu -> Conv 3x3 (Winograd-sized) + residual x + Relu -> y1, and
// GlobalAveragePool -> Flatten -> Gemm + Relu -> y2: every fused epilogue the passes make
// (FusedConv with activation, with residual, FusedGemm), a folded BatchNorm, a symbolic batch.
std::string model_bytes() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("iplan_test");
  auto io = [](onnx::ValueInfoProto* v, const char* name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("N");
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  io(g->add_input(), "x", {16, 12, 12});
  io(g->add_output(), "y1", {16, 12, 12});
  io(g->add_output(), "y2", {10});
  std::mt19937 rng(11);
  add_tensor(g, "w1", {16, 16, 3, 3}, rng);
  add_tensor(g, "b1", {16}, rng);
  add_tensor(g, "w2", {16, 16, 3, 3}, rng);
  add_tensor(g, "bn_s", {16}, rng, 0.5f, 1.5f);
  add_tensor(g, "bn_b", {16}, rng);
  add_tensor(g, "bn_m", {16}, rng);
  add_tensor(g, "bn_v", {16}, rng, 0.5f, 1.5f);
  add_tensor(g, "wg", {10, 16}, rng);
  add_tensor(g, "bg", {10}, rng);
  ints(node(g, "Conv", {"x", "w1", "b1"}, "c1"), "pads", {1, 1, 1, 1});
  node(g, "BatchNormalization", {"c1", "bn_s", "bn_b", "bn_m", "bn_v"}, "bn");
  node(g, "Relu", {"bn"}, "r1");
  ints(node(g, "Conv", {"r1", "w2"}, "c2"), "pads", {1, 1, 1, 1});
  node(g, "Add", {"c2", "x"}, "sum");
  node(g, "Relu", {"sum"}, "y1");
  node(g, "GlobalAveragePool", {"y1"}, "gap");
  node(g, "Flatten", {"gap"}, "flat");
  auto* gemm = node(g, "Gemm", {"flat", "wg", "bg"}, "gm");
  auto* tb = gemm->add_attribute();
  tb->set_name("transB");
  tb->set_type(onnx::AttributeProto::INT);
  tb->set_i(1);
  node(g, "Relu", {"gm"}, "y2");
  return m.SerializeAsString();
}

std::map<std::string, std::vector<int64_t>> shape(int64_t n) { return {{"x", {n, 16, 12, 12}}}; }

Tensor input(int64_t n, uint32_t seed) {
  Tensor t = Tensor::make(DataType::kFloat32, {n, 16, 12, 12}).take();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = u(rng);
  return t;
}

void expect_same_bits(Session& a, Session& b, int64_t n) {
  Tensor x = input(n, static_cast<uint32_t>(n) + 3);
  auto ra = a.run({{"x", x}});
  auto rb = b.run({{"x", x}});
  ASSERT_TRUE(ra.is_ok()) << ra.message();
  ASSERT_TRUE(rb.is_ok()) << rb.message();
  ASSERT_EQ(ra.value().size(), rb.value().size());
  for (size_t i = 0; i < ra.value().size(); ++i) {
    const Tensor &p = ra.value()[i], &q = rb.value()[i];
    ASSERT_EQ(p.dims(), q.dims());
    EXPECT_EQ(std::memcmp(p.data(), q.data(), p.nbytes()), 0) << "output " << i << " differs at batch " << n;
  }
}

struct Saved {
  std::unique_ptr<Session> from;
  std::string path, bytes;
};

// A session of the test model with its own perf db file, saved for batches 1, 3 and 8.
Saved save_one(SessionOptions::ConvAlgo algo = SessionOptions::ConvAlgo::kAuto) {
  Saved s;
  const std::string dir = temp_dir();
  SessionOptions o;
  o.num_threads = 1;
  o.conv_algo = algo;
  o.perf_db = dir + "/perfdb.json";
  auto sess = Session::load_from_memory(model_bytes(), "", o);
  EXPECT_TRUE(sess.is_ok()) << sess.message();
  if (!sess.is_ok()) return s;
  s.from = sess.take();
  s.path = dir + "/model.plan";  // recognized by its magic, whatever the name
  Status st = s.from->save_plan(s.path, {shape(1), shape(3), shape(8)});
  EXPECT_TRUE(st.is_ok()) << st.message();
  s.bytes = slurp(s.path);
  return s;
}

SessionOptions one_thread() {
  SessionOptions o;
  o.num_threads = 1;
  return o;
}

TEST(SavedPlan, RoundTripGivesTheSameBitsAndTimesNothing) {
  Saved s = save_one();
  ASSERT_TRUE(s.from);
  ASSERT_TRUE(is_saved_plan(s.bytes));
  auto loaded = Session::load(s.path, one_thread());
  ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  Session& b = *loaded.value();
  EXPECT_EQ(b.cached_plan_count(), 3u) << "every saved shape is prepared at load";
  for (int64_t n : {1, 3, 8}) {
    auto rep = b.prepare(shape(n));
    ASSERT_TRUE(rep.is_ok()) << rep.message();
    EXPECT_EQ(rep.value().perf_db_timed, 0u) << "batch " << n << ": a loaded plan times nothing";
    EXPECT_GT(rep.value().weights_converted + rep.value().weights_reused, 0u) << "batch " << n;
    if (test::onednn_has_winograd())  // else the CPU's convs have one algorithm: no choice to save
      EXPECT_GT(rep.value().perf_db_found, 0u) << "batch " << n << ": the CPU's Conv choices come from the plan";
    expect_same_bits(*s.from, b, n);
  }
  {
    // A batch that was not saved is planned and searched as usual (its own timing may pick another
    // algorithm than the saving session's did: equal within tolerance, not in bits).
    Tensor x = input(5, 9);
    auto ra = s.from->run({{"x", x}});
    auto rb = b.run({{"x", x}});
    ASSERT_TRUE(ra.is_ok() && rb.is_ok());
    for (size_t i = 0; i < ra.value().size(); ++i)
      for (int64_t k = 0; k < ra.value()[i].numel(); ++k)
        ASSERT_NEAR(ra.value()[i].data_as<float>()[k], rb.value()[i].data_as<float>()[k], 1e-4f) << i << " " << k;
  }
  // The model's face is the same: inputs with the symbolic batch, outputs, the summary.
  ASSERT_EQ(b.inputs().size(), 1u);
  EXPECT_EQ(b.inputs()[0].dims[0].symbol, "N");
  EXPECT_EQ(b.outputs().size(), 2u);
  EXPECT_EQ(b.summary().node_count_original, s.from->summary().node_count_original);
  EXPECT_EQ(b.summary().node_count, s.from->summary().node_count);
  EXPECT_EQ(b.summary().op_histogram, s.from->summary().op_histogram);
  EXPECT_EQ(b.summary().op_histogram_optimized, s.from->summary().op_histogram_optimized);
  EXPECT_EQ(b.summary().op_histogram_optimized.count("com.infera.FusedGemm"), 1u);
  EXPECT_EQ(b.summary().metadata.metadata_props.at("infera.plan.format"), std::to_string(kSavedPlanFormat));
  EXPECT_TRUE(b.options().optimize);
  // From memory too.
  auto mem = Session::load_from_memory(s.bytes, "", one_thread());
  ASSERT_TRUE(mem.is_ok()) << mem.message();
  expect_same_bits(*s.from, *mem.value(), 3);
}

TEST(SavedPlan, SavingTwiceGivesTheSameFile) {
  Saved s = save_one();
  ASSERT_TRUE(s.from);
  const std::string again = s.path + ".2";
  ASSERT_TRUE(s.from->save_plan(again, {shape(1), shape(3), shape(8)}).is_ok());
  EXPECT_EQ(slurp(again), s.bytes);
}

TEST(SavedPlan, ALoadedPlanSavesAgain) {
  Saved s = save_one();
  ASSERT_TRUE(s.from);
  auto loaded = Session::load(s.path, one_thread());
  ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  const std::string again = s.path + ".again";
  Status st = loaded.value()->save_plan(again, {shape(3)});
  ASSERT_TRUE(st.is_ok()) << st.message();
  auto twice = Session::load(again, one_thread());
  ASSERT_TRUE(twice.is_ok()) << twice.message();
  auto rep = twice.value()->prepare(shape(3));
  ASSERT_TRUE(rep.is_ok());
  EXPECT_EQ(rep.value().perf_db_timed, 0u);
  EXPECT_EQ(twice.value()->summary().node_count_original, s.from->summary().node_count_original);
  expect_same_bits(*s.from, *twice.value(), 3);
}

// The test model saved with its 3x3 convs in Winograd where oneDNN has it (else as chosen).
Saved save_winograd() {
  return save_one(test::onednn_has_winograd() ? SessionOptions::ConvAlgo::kWinograd : SessionOptions::ConvAlgo::kAuto);
}

// Saved plans keep the Winograd-transformed weights (section PACK); reorders into blocks are made
// again at load. Where oneDNN has no Winograd (AVX2), a plan keeps none and converts all at load.
TEST(SavedPlan, WinogradWeightsAreStoredAndAdoptedAtLoad) {
  const bool wino = test::onednn_has_winograd();
  Saved s = save_winograd();
  ASSERT_TRUE(s.from);
  auto sp = decode_saved_plan(s.bytes, limits::Limits{});
  ASSERT_TRUE(sp.is_ok()) << sp.message();
  if (!wino) {
    EXPECT_TRUE(sp.value().packed.empty()) << "no Winograd here: nothing is worth storing";
  } else {
    ASSERT_GE(sp.value().packed.size(), 2u) << "the two 3x3 convs (a format per batch size at most)";
    for (const PackedWeights::Entry& e : sp.value().packed) EXPECT_EQ(e.key.rfind("dnnl:conv:", 0), 0u) << e.key;
  }
  auto loaded = Session::load(s.path, one_thread());
  ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  // The load prepared 1, 3, 8 in that order: batch 1 took the Winograd weights from the plan and
  // reordered the Gemm's; the later batches share what batch 1 has.
  auto first = loaded.value()->prepare(shape(1));
  ASSERT_TRUE(first.is_ok()) << first.message();
  EXPECT_EQ(first.value().weights_reused, wino ? 2u : 0u);
  EXPECT_GT(first.value().weights_converted, 0u) << "the Gemm's blocked weights";
  for (int64_t n : {1, 3, 8}) expect_same_bits(*s.from, *loaded.value(), n);
}

// The weights in backend formats (section PACK) are untrusted: an entry whose byte count is not
// the one the kernel computes for its format is not adopted (the weights are converted again,
// from the graph's constants), and the store itself keeps one entry per (key, layout).
TEST(SavedPlan, PackedWeightsOfTheWrongSizeAreConvertedAgain) {
  const bool wino = test::onednn_has_winograd();
  Saved s = save_winograd();
  ASSERT_TRUE(s.from);
  auto sp = decode_saved_plan(s.bytes, limits::Limits{});
  ASSERT_TRUE(sp.is_ok()) << sp.message();
  SavedPlan p = sp.take();
  EXPECT_EQ(p.packed.empty(), !wino);
  for (PackedWeights::Entry& e : p.packed) {
    std::shared_ptr<PackedBlob> b = PackedBlob::make(e.blob->size() + 64);
    ASSERT_TRUE(b);
    std::memset(b->data(), 0x7f, b->size());  // NaN-like garbage: used, it would change every output
    e.blob = b;
  }
  // Without Winograd: an entry of a made-up key is carried and never asked for.
  std::shared_ptr<PackedBlob> stray = PackedBlob::make(64);
  ASSERT_TRUE(stray);
  std::memset(stray->data(), 0x7f, 64);
  p.packed.push_back({"dnnl:conv:w1:y2:nobody", "layout", stray});
  auto loaded = Session::load_from_memory(encode_saved_plan(p), "", one_thread());
  ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  // The load prepares 1, 3, 8 in that order: batch 1 converts every weight (replacing the bad
  // entries); the later batches may reuse what batch 1 converted.
  auto first = loaded.value()->prepare(shape(1));
  ASSERT_TRUE(first.is_ok()) << first.message();
  EXPECT_EQ(first.value().weights_reused, 0u);
  EXPECT_GT(first.value().weights_converted, 0u);
  for (int64_t n : {1, 3, 8}) expect_same_bits(*s.from, *loaded.value(), n);

  auto shared = std::make_shared<PackedWeights>();
  PackedWeights view(shared);
  std::shared_ptr<PackedBlob> a = PackedBlob::make(100), b = PackedBlob::make(100);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % 64, 0u);
  EXPECT_EQ(view.find("k", "L", 100), nullptr);
  EXPECT_EQ(view.put("k", "L", a), a);
  EXPECT_EQ(view.put("k", "L", b), a) << "one entry per (key, layout): the first stays";
  EXPECT_EQ(shared->find("k", "L", 100), a) << "published to the parent";
  EXPECT_EQ(shared->find("k", "L", 99), nullptr) << "the byte count must match";
  EXPECT_EQ(shared->find("k", "M", 100), nullptr) << "another layout is another entry";
  PackedWeights later(shared);
  EXPECT_EQ(later.find("k", "L", 100), a) << "found through the parent";
  EXPECT_EQ(later.hits(), 1u);
  EXPECT_EQ(later.misses(), 0u);
  EXPECT_EQ(later.entries().size(), 1u) << "and recorded in the view";
  EXPECT_EQ(view.hits(), 0u);
  EXPECT_EQ(view.misses(), 1u);
  EXPECT_EQ(shared->size(), 1u);
  EXPECT_EQ(shared->bytes(), 100u);
  // The session's store holds published bytes weakly (a kernel keeps them), pinned ones strongly.
  PackedWeights session;
  {
    std::shared_ptr<PackedBlob> c = PackedBlob::make(8), d = PackedBlob::make(8);
    ASSERT_TRUE(c && d);
    session.put("gone", "L", c);
    session.pin("kept", "L", d);
    EXPECT_EQ(session.size(), 2u);
  }
  EXPECT_EQ(session.find("gone", "L", 8), nullptr) << "no kernel uses it any more: freed";
  EXPECT_NE(session.find("kept", "L", 8), nullptr);
  EXPECT_EQ(session.size(), 1u);
  // Memory another allocator owns (a GPU's device copies): its owner frees it with the last user.
  auto freed = std::make_shared<bool>(false);
  {
    static int word = 0;
    std::shared_ptr<void> owner(&word, [freed](void*) { *freed = true; });
    std::shared_ptr<PackedBlob> g = PackedBlob::wrap(&word, sizeof word, 0, std::move(owner));
    EXPECT_EQ(g->device(), 0);
    EXPECT_EQ(g->data(), static_cast<void*>(&word));
    session.put("gpu0:conv-w:w1:y2:c", "L", g, false);
    EXPECT_FALSE(*freed) << "a kernel still holds it";
  }
  EXPECT_TRUE(*freed);
  EXPECT_EQ(PackedBlob::make(8)->device(), -1) << "make's bytes are the host's";
}

// Re-encodes the plan with one header field changed (the checksum made right again).
std::string with_header(const std::string& bytes, void (*change)(SavedPlanHeader&)) {
  auto sp = decode_saved_plan(bytes, limits::Limits{});
  EXPECT_TRUE(sp.is_ok()) << sp.message();
  change(sp.value().header);
  return encode_saved_plan(sp.value());
}

TEST(SavedPlan, ForeignPlanRefusedNamingWhatDiffers) {
  Saved s = save_one();
  ASSERT_TRUE(s.from);
  const struct {
    void (*change)(SavedPlanHeader&);
    const char* says;
  } cases[] = {
      {[](SavedPlanHeader& h) { h.cpu_isa = "sse41"; }, "made for the CPU architecture (oneDNN ISA) 'sse41'"},
      {[](SavedPlanHeader& h) { h.cpu_libs = "oneDNN 0.0.1"; }, "made for the CPU library 'oneDNN 0.0.1'"},
      {[](SavedPlanHeader& h) { h.cpu_device = "cpu: Some Other CPU"; }, "made for the CPU 'cpu: Some Other CPU'"},
      {[](SavedPlanHeader& h) { h.infera_version = "0.0.1"; }, "made by infera 0.0.1"},
      {[](SavedPlanHeader& h) { h.device = Device::gpu(0); }, "gpu"},
  };
  for (const auto& c : cases) {
    const std::string bytes = with_header(s.bytes, c.change);
    auto r = Session::load_from_memory(bytes, "", one_thread());
    ASSERT_FALSE(r.is_ok()) << c.says;
    // A GPU plan is refused for the device without a GPU, for the GPU's identity with one.
    std::string msg = r.message();
    if (std::string(c.says) == "gpu")
      for (char& ch : msg) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_NE(msg.find(c.says), std::string::npos) << r.message();
    if (std::string(c.says) != "gpu") EXPECT_NE(r.message().find("rebuild it with `infera build`"), std::string::npos);
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
  }
  // Another format version (older or newer): refused before anything else is read.
  for (uint32_t v : {kSavedPlanFormat - 1, kSavedPlanFormat + 1}) {
    std::string other = s.bytes;
    std::memcpy(&other[8], &v, 4);
    auto r = Session::load_from_memory(other, "", one_thread());
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.code(), StatusCode::kInvalidModel);
    EXPECT_NE(r.message().find("saved plan format version " + std::to_string(v) + "; this infera"), std::string::npos)
        << r.message();
  }
  // Options that would make another plan are refused; those left at their defaults follow the plan.
  SessionOptions o = one_thread();
  o.conv_algo = SessionOptions::ConvAlgo::kWinograd;
  auto r = Session::load(s.path, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("conv algo winograd, the plan was built with auto: rebuild it with `infera build "
                             "--conv-algo winograd`"),
            std::string::npos)
      << r.message();
  o = one_thread();
  o.device = Device::gpu(0);
  r = Session::load(s.path, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("device gpu:0, the plan was built for cpu"), std::string::npos) << r.message();
  o = one_thread();
  o.backends = {"ref"};
  r = Session::load(s.path, o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("backends ref, the plan was built with dnnl,ref"), std::string::npos) << r.message();
}

TEST(SavedPlan, TruncatedOrFlippedFilesAreCleanErrors) {
  Saved s = save_one();
  ASSERT_TRUE(s.from);
  const std::string& b = s.bytes;
  const size_t step = std::max<size_t>(1, b.size() / 700);
  size_t cuts = 0, flips = 0;
  for (size_t n = 0; n < b.size(); n += (n < 64 ? 1 : step), ++cuts) {
    auto r = Session::load_from_memory(b.substr(0, n), "", one_thread());
    ASSERT_FALSE(r.is_ok()) << "a plan cut at " << n << " bytes loaded";
    if (n >= 8) EXPECT_EQ(r.code(), StatusCode::kInvalidModel) << n << ": " << r.message();
    EXPECT_FALSE(r.message().empty());
  }
  for (size_t i = 0; i < b.size(); i += (i < 64 ? 1 : step), ++flips) {
    std::string f = b;
    f[i] = static_cast<char>(f[i] ^ 0x20);
    auto r = Session::load_from_memory(f, "", one_thread());
    if (i < 8) continue;  // not a plan any more: read as an ONNX model, which fails its own way
    ASSERT_FALSE(r.is_ok()) << "a plan with byte " << i << " flipped loaded";
    EXPECT_EQ(r.code(), StatusCode::kInvalidModel) << i << ": " << r.message();
  }
  EXPECT_GT(cuts + flips, 1000u);
  // Past the checksum (as the fuzzer goes): cut bodies with a right length field decode to an
  // error or a plan, never a crash.
  for (size_t n = kSavedPlanPrefixBytes; n < b.size(); n += step) {
    std::string c = b.substr(0, n);
    const uint64_t body = n - kSavedPlanPrefixBytes;
    std::memcpy(&c[16], &body, 8);
    auto r = decode_saved_plan(c, limits::Limits{}, false);
    EXPECT_FALSE(r.is_ok()) << "a body cut at " << n << " decoded";
    EXPECT_FALSE(r.message().empty());
  }
  // A file on disk that is cut is an error naming the file.
  const std::string cut = s.path + ".cut";
  spit(cut, b.substr(0, b.size() / 2));
  auto r = Session::load(cut, one_thread());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.message().rfind(cut + ": truncated saved plan", 0), 0u) << r.message();
}

TEST(SavedPlan, LimitsApplyToThePlan) {
  Saved s = save_one();
  ASSERT_TRUE(s.from);
  SessionOptions o = one_thread();
  o.limits.max_nodes = 2;
  auto r = Session::load_from_memory(s.bytes, "", o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("over the limit of"), std::string::npos) << r.message();
  o = one_thread();
  o.limits.max_tensor_elements = 100;  // the 16x16x3x3 weights are 2304
  r = Session::load_from_memory(s.bytes, "", o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("over the limit of 100 elements"), std::string::npos) << r.message();
}

TEST(SavedPlan, SaveErrors) {
  Saved s = save_one();
  ASSERT_TRUE(s.from);
  Status st = s.from->save_plan(s.path + ".x", {});
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  st = s.from->save_plan(s.path + ".x", {{{"x", {1, 15, 12, 12}}}});
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput) << st.message();
  EXPECT_NE(st.message().find("save_plan: shapes 0: "), std::string::npos) << st.message();
  st = s.from->save_plan("/nonexistent-dir/x.iplan", {shape(1)});
  EXPECT_EQ(st.code(), StatusCode::kIo) << st.message();
}

// A typed op a pass set directly must be described by the attributes written, or refused.
TEST(SavedPlan, TypedOpsSetByPassesSurviveOrAreRefused) {
  Graph g;
  g.opset = 17;
  Node n;
  n.name = "c";
  n.op_type = "FusedConv";
  n.domain = "com.infera";
  Attribute pads;
  pads.kind = Attribute::kInts;
  pads.ints = {1, 1, 1, 1};
  n.attrs["pads"] = pads;
  ConvAttrs a;
  a.pads = {1, 1, 1, 1};
  Activation leaky{ActKind::kLeakyRelu, 0.125f, 0.f};
  n.op = ConvOp::make_fused(a, leaky);
  g.nodes.push_back(n);
  ASSERT_TRUE(attributes_for_ops(g).is_ok());
  EXPECT_EQ(g.nodes[0].attrs.at("activation").s, "LeakyRelu");
  g.nodes[0].op.reset();
  ASSERT_TRUE(attach_ops(g).is_ok());
  const auto* made = dynamic_cast<const ConvOp*>(g.nodes[0].op.get());
  ASSERT_TRUE(made);
  EXPECT_TRUE(made->activation() == leaky);
  // A plain Conv node carrying a fused typed op: its attributes cannot say so.
  g.nodes[0].op_type = "Conv";
  g.nodes[0].domain = "";
  g.nodes[0].attrs.erase("activation");
  g.nodes[0].attrs.erase("activation_alpha");
  g.nodes[0].attrs.erase("activation_beta");
  g.nodes[0].op = ConvOp::make_fused(a, leaky);
  Status st = attributes_for_ops(g);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("typed op that its attributes do not describe"), std::string::npos) << st.message();

  // FusedBatchNorm (fuse_conv_activation): the activation is written and read back; a plain
  // BatchNormalization node carrying the fused op is refused.
  Graph h;
  h.opset = 17;
  Node bn;
  bn.name = "bn";
  bn.op_type = "BatchNormalization";
  Attribute eps;
  eps.kind = Attribute::kFloat;
  eps.f = 1e-3f;
  bn.attrs["epsilon"] = eps;
  bn.inputs = {0, 1, 2, 3, 4};
  bn.outputs = {5};
  auto plain = make_kernel(bn, 17);
  ASSERT_TRUE(plain.is_ok()) << plain.message();
  const Activation clip{ActKind::kClip, 0.f, 6.f};
  bn.op = BatchNormOp::make_fused(*dynamic_cast<const BatchNormOp*>(plain.value().get()), clip);
  h.nodes.push_back(bn);
  st = attributes_for_ops(h);
  EXPECT_FALSE(st.is_ok()) << "a BatchNormalization node cannot say it is fused";
  h.nodes[0].op_type = "FusedBatchNorm";
  h.nodes[0].domain = "com.infera";
  ASSERT_TRUE(attributes_for_ops(h).is_ok());
  EXPECT_EQ(h.nodes[0].attrs.at("activation").s, "Clip");
  h.nodes[0].op.reset();
  ASSERT_TRUE(attach_ops(h).is_ok());
  const auto* fb = dynamic_cast<const BatchNormOp*>(h.nodes[0].op.get());
  ASSERT_TRUE(fb);
  EXPECT_TRUE(fb->fused() && fb->activation() == clip && fb->epsilon() == 1e-3f);
}

}  // namespace
}  // namespace infera
