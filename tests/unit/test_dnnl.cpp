// The oneDNN backend against the reference kernels: every accelerated op on seeded random
// shapes and attributes, in the plain layout and (4-D activations) the blocked layout, with
// reorder_to_blocked / reorder_to_plain around the kernel. Normalized error < 1e-4.
#include <cstring>
#include <random>

#include "backends/cpu/backend.h"
#include "graph/infer.h"
#include "op_test_util.h"
#include "plan/plan.h"

namespace infera::test {
namespace {

using Attrs = std::map<std::string, Attribute>;

struct Case {
  std::string op, domain;
  Attrs attrs;
  std::vector<Tensor> inputs;  // empty Tensor = optional input left out
  std::vector<int> const_inputs;
  int64_t opset = 17;
  int num_outputs = 1;
};

struct Buffer {
  std::vector<int64_t> dims;
  std::vector<float> storage;
  TensorRef ref;
};

// Layout modes: every slot plain, every 4-D slot the backend accepts blocked, only inputs
// blocked, only outputs blocked.
enum Mode { kPlain, kBlocked, kBlockedIn, kBlockedOut };
const char* kModeNames[] = {" [plain]", " [blocked]", " [blocked in]", " [blocked out]"};

// Runs the case through dnnl_query/dnnl_create in the layouts of `mode`. Returns the plain
// outputs; `declined` when not taken. alias: output 0 shares input slot `alias`'s buffer.
Result<std::vector<Tensor>> run_dnnl(const Case& c, Mode mode, bool* declined = nullptr, int alias = -1) {
  Node n;
  n.name = "dnnl_" + c.op;
  n.op_type = c.op;
  n.domain = c.domain;
  n.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) n.inputs.push_back(c.inputs[i].empty() ? -1 : static_cast<int>(i));
  for (int i = 0; i < c.num_outputs; ++i) n.outputs.push_back(static_cast<int>(c.inputs.size()) + i);
  auto k = make_kernel(n, c.opset);
  if (!k.is_ok()) return k.status();
  std::vector<ValueInfo> infos(c.inputs.size());
  std::vector<const ValueInfo*> in_ptrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].empty()) {
      in_ptrs.push_back(nullptr);
      continue;
    }
    infos[i].dtype = c.inputs[i].dtype();
    infos[i].shape = Shape::of(c.inputs[i].dims());
    if (std::count(c.const_inputs.begin(), c.const_inputs.end(), static_cast<int>(i)))
      infos[i].value = std::make_shared<Tensor>(c.inputs[i]);
    in_ptrs.push_back(&infos[i]);
  }
  InferContext ictx(n, c.opset, in_ptrs);
  Status s = k.value()->infer(ictx);
  if (!s.is_ok()) return s;
  std::vector<const ValueInfo*> out_ptrs;
  for (size_t i = 0; i < ictx.outputs().size(); ++i)
    out_ptrs.push_back(ictx.has_output(i) ? &ictx.outputs()[i] : nullptr);

  AccelRequest req;
  req.node = &n;
  req.op = k.value().get();
  req.opset = c.opset;
  req.inputs = in_ptrs;
  req.outputs = out_ptrs;
  req.num_threads = 2;
  AccelSupport sup = dnnl_query(req);
  if (declined) *declined = !sup.supported;
  if (!sup.supported) return std::vector<Tensor>{};
  const bool bin = mode == kBlocked || mode == kBlockedIn, bout = mode == kBlocked || mode == kBlockedOut;
  for (size_t i = 0; i < in_ptrs.size(); ++i)
    req.input_layouts.push_back(bin && sup.input_blocked_ok[i] ? Layout::kBlocked : Layout::kPlain);
  for (size_t i = 0; i < out_ptrs.size(); ++i)
    req.output_layouts.push_back(bout && sup.output_blocked_ok[i] ? Layout::kBlocked : Layout::kPlain);
  if (alias >= 0) req.output_layouts[0] = req.input_layouts[alias];
  auto kern = dnnl_create(req);
  if (!kern.is_ok()) return kern.status();
  if (!kern.value()) {
    if (declined) *declined = true;
    return std::vector<Tensor>{};
  }

  // Buffers in the decided layouts (blocked ones hold padded channels).
  auto make_buffer = [](const std::vector<int64_t>& dims, Layout l) {
    Buffer b;
    b.dims = dims;
    int64_t numel = 1;
    for (int64_t d : dims) numel *= d;
    size_t bytes = l == Layout::kBlocked ? blocked_bytes(dims) : static_cast<size_t>(numel) * 4;
    b.storage.assign(bytes / 4 + 16, std::nanf(""));  // NaN garbage: padding must not leak
    b.ref = TensorRef{DataType::kFloat32, dims, b.storage.data()};
    return b;
  };
  std::vector<Buffer> ins(c.inputs.size()), outs(out_ptrs.size());
  std::vector<const TensorRef*> ip;
  std::vector<TensorRef*> op;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i].empty()) {
      ip.push_back(nullptr);
      continue;
    }
    ins[i] = make_buffer(c.inputs[i].dims(), req.input_layouts[i]);
    TensorRef plain = TensorRef::of(c.inputs[i]);
    if (req.input_layouts[i] == Layout::kBlocked) {
      s = reorder_to_blocked(plain, ins[i].ref);
      if (!s.is_ok()) return s;
    } else {
      std::memcpy(ins[i].ref.data, plain.data, plain.nbytes());
    }
    ip.push_back(&ins[i].ref);
  }
  for (size_t i = 0; i < out_ptrs.size(); ++i) {
    if (!out_ptrs[i]) {
      op.push_back(nullptr);
      continue;
    }
    outs[i] = make_buffer(out_ptrs[i]->shape.concrete(), req.output_layouts[i]);
    op.push_back(&outs[i].ref);
  }
  if (alias >= 0) op[0] = &ins[alias].ref;  // in place: the input is consumed, so run once
  ComputeContext cctx(n, ip, op, 2);
  for (int rep = 0; rep < (alias >= 0 ? 1 : 2); ++rep) {  // twice: a kernel runs many times
    s = kern.value()->run(cctx);
    if (!s.is_ok()) return s;
  }
  if (alias >= 0) outs[0] = ins[alias];
  // Blocked outputs keep the padded channels zero: downstream kernels read them (as x * 0).
  const int64_t blk = blocked_channel_block();
  for (size_t i = 0; i < out_ptrs.size(); ++i) {
    if (!out_ptrs[i] || req.output_layouts[i] != Layout::kBlocked) continue;
    const auto& d = outs[i].dims;
    const int64_t cb = (d[1] + blk - 1) / blk, hw = d[2] * d[3];
    for (int64_t nn = 0; nn < d[0]; ++nn)
      for (int64_t c = d[1]; c < cb * blk; ++c)
        for (int64_t j = 0; j < hw; ++j)
          if (outs[i].storage[((nn * cb + c / blk) * hw + j) * blk + c % blk] != 0.f)
            return Status::error("blocked output " + std::to_string(i) + " has a non-zero padded channel " +
                                 std::to_string(c));
  }
  std::vector<Tensor> result;
  for (size_t i = 0; i < out_ptrs.size(); ++i) {
    if (!out_ptrs[i]) {
      result.emplace_back();
      continue;
    }
    Tensor t = Tensor::make(DataType::kFloat32, outs[i].dims).take();
    TensorRef tr = TensorRef::of(t);
    if (req.output_layouts[i] == Layout::kBlocked) {
      s = reorder_to_plain(outs[i].ref, tr);
      if (!s.is_ok()) return s;
    } else {
      std::memcpy(tr.data, outs[i].ref.data, tr.nbytes());
    }
    result.push_back(std::move(t));
  }
  return result;
}

// Reference vs oneDNN in every layout mode; expects the backend to take the case.
void check(const Case& c, const std::string& what, double tol = 1e-4, int alias = -1) {
  auto ref = run_op(c.op, c.attrs, c.inputs, c.num_outputs, c.opset, c.const_inputs, c.domain);
  ASSERT_TRUE(ref.is_ok()) << what << ": reference: " << ref.message();
  for (Mode mode : {kPlain, kBlocked, kBlockedIn, kBlockedOut}) {
    bool declined = false;
    auto got = run_dnnl(c, mode, &declined, alias);
    ASSERT_TRUE(got.is_ok()) << what << ": dnnl: " << got.message();
    ASSERT_FALSE(declined) << what << ": declined";
    ASSERT_EQ(got.value().size(), ref.value().size()) << what;
    double err = normalized_error(got.value()[0], ref.value()[0]);
    EXPECT_LT(err, tol) << what << kModeNames[mode] << (alias >= 0 ? " in place" : "");
  }
}

std::string describe(const Attrs& a) {
  std::string s;
  for (auto& [k, v] : a) {
    s += " " + k + "=";
    if (v.kind == Attribute::kInt) s += std::to_string(v.i);
    if (v.kind == Attribute::kFloat) s += std::to_string(v.f);
    if (v.kind == Attribute::kString) s += v.s;
    if (v.kind == Attribute::kInts)
      for (int64_t x : v.ints) s += std::to_string(x) + ",";
  }
  return s;
}

int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

const char* kActs[] = {"",          "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid",
                       "HardSwish", "Elu",  "Selu",      "Softplus"};

// A random Conv / FusedConv case (rank 4, or rank 3 for 1-D).
Case random_conv(std::mt19937& rng, uint32_t seed, bool fused, int rank = 4) {
  const int k = rank - 2;
  const int64_t g_kind = pick(rng, 0, 2);
  const int64_t cg = pick(rng, 1, 6), mg = pick(rng, 1, 6);
  const int64_t group = g_kind == 0 ? 1 : (g_kind == 1 ? pick(rng, 2, 3) : pick(rng, 3, 20));
  const int64_t c = g_kind == 2 ? group : cg * group, m = g_kind == 2 ? group * pick(rng, 1, 2) : mg * group;
  Case cs;
  cs.op = fused ? "FusedConv" : "Conv";
  cs.domain = fused ? "com.infera" : "";
  std::vector<int64_t> x{pick(rng, 1, 2), c}, w{m, c / group}, ks, st, dl, pads(2 * k);
  for (int i = 0; i < k; ++i) {
    ks.push_back(pick(rng, 1, 5));
    st.push_back(pick(rng, 1, 3));
    dl.push_back(pick(rng, 1, 2));
    pads[i] = pick(rng, 0, 2);
    pads[k + i] = pick(rng, 0, 2);
    x.push_back(pick(rng, (ks[i] - 1) * dl[i] + 1, 14));
    w.push_back(ks[i]);
  }
  cs.attrs["group"] = attr_i(group);
  cs.attrs["strides"] = attr_ints(st);
  cs.attrs["dilations"] = attr_ints(dl);
  if (pick(rng, 0, 1)) cs.attrs["kernel_shape"] = attr_ints(ks);
  const int64_t ap = pick(rng, 0, 5);
  if (ap == 3)
    cs.attrs["auto_pad"] = attr_s("SAME_UPPER");
  else if (ap == 4)
    cs.attrs["auto_pad"] = attr_s("SAME_LOWER");
  else if (ap == 5)
    cs.attrs["auto_pad"] = attr_s("VALID");
  else
    cs.attrs["pads"] = attr_ints(pads);
  cs.inputs = {random_tensor(x, seed), random_tensor(w, seed + 1)};
  cs.const_inputs = {1};
  const bool bias = pick(rng, 0, 2) != 0;
  cs.inputs.push_back(bias ? random_tensor({m}, seed + 2) : Tensor());
  if (fused) {
    // Z is the output shape: ask the reference for it.
    auto y = run_op("Conv", cs.attrs, {cs.inputs[0], cs.inputs[1]}, 1, 17, {1});
    const bool z = y.is_ok() && pick(rng, 0, 1);
    cs.inputs.push_back(z ? random_tensor(y.value()[0].dims(), seed + 3) : Tensor());
    const char* act = kActs[pick(rng, 0, 10)];
    cs.attrs["activation"] = attr_s(act);
    if (std::string(act) == "LeakyRelu" || std::string(act) == "Elu") cs.attrs["activation_alpha"] = attr_f(0.3f);
    if (std::string(act) == "Clip") {
      cs.attrs["activation_alpha"] = attr_f(-0.5f);
      cs.attrs["activation_beta"] = attr_f(0.7f);
    }
  }
  while (!cs.inputs.empty() && cs.inputs.back().empty()) cs.inputs.pop_back();
  return cs;
}

TEST(DnnlConv, RandomConv2D) {
  std::mt19937 rng(1234);
  int checked = 0;  // invalid draws (an output dim < 1) are discarded
  for (int it = 0; it < 60; ++it) {
    Case c = random_conv(rng, 100 + it, false);
    if (!run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs).is_ok()) continue;  // output < 1
    check(c, "conv it " + std::to_string(it) + describe(c.attrs) + " X" + Shape::of(c.inputs[0].dims()).str() + " W" +
                 Shape::of(c.inputs[1].dims()).str());
    ++checked;
  }
  EXPECT_GE(checked, 45);  // 60 of 60 today
}

TEST(DnnlConv, RandomConv1D) {
  std::mt19937 rng(77);
  int checked = 0;  // invalid draws (an output dim < 1) are discarded
  for (int it = 0; it < 15; ++it) {
    Case c = random_conv(rng, 300 + it, false, 3);
    if (!run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs).is_ok()) continue;
    check(c, "conv1d it " + std::to_string(it) + describe(c.attrs));
    ++checked;
  }
  EXPECT_GE(checked, 12);  // 15 of 15 today
}

TEST(DnnlConv, RandomFusedConv) {
  std::mt19937 rng(4321);
  int checked = 0;  // invalid draws (an output dim < 1) are discarded
  for (int it = 0; it < 60; ++it) {
    Case c = random_conv(rng, 500 + it, true);
    if (!run_op(c.op, c.attrs, c.inputs, 1, 17, c.const_inputs, c.domain).is_ok()) continue;
    check(c, "fused conv it " + std::to_string(it) + describe(c.attrs) + " X" + Shape::of(c.inputs[0].dims()).str() +
                 " W" + Shape::of(c.inputs[1].dims()).str() + (c.inputs.size() > 3 ? " +Z" : ""));
    ++checked;
  }
  EXPECT_GE(checked, 45);  // 60 of 60 today
}

TEST(DnnlConv, ResNetShapes) {
  // The shapes that matter for speed, with a residual and Relu, 64 channels blocked cleanly.
  Case c;
  c.op = "FusedConv";
  c.domain = "com.infera";
  c.attrs = {{"pads", attr_ints({1, 1, 1, 1})}, {"activation", attr_s("Relu")}};
  c.inputs = {random_tensor({1, 64, 14, 14}, 1), random_tensor({64, 64, 3, 3}, 2, -0.1f, 0.1f), random_tensor({64}, 3),
              random_tensor({1, 64, 14, 14}, 4)};
  c.const_inputs = {1, 2};
  check(c, "resnet 3x3");
  check(c, "resnet 3x3", 1e-4, 3);  // Y in Z's buffer
  // Shapes where oneDNN has Winograd kernels (2x3 and 4x3 tiles): still within tolerance.
  for (auto [n, ch, hw] : {std::tuple{1, 128, 28}, std::tuple{4, 64, 20}, std::tuple{2, 256, 14}}) {
    c.inputs = {random_tensor({n, ch, hw, hw}, 20 + ch), random_tensor({ch, ch, 3, 3}, 21 + ch, -0.1f, 0.1f),
                random_tensor({ch}, 22 + ch), random_tensor({n, ch, hw, hw}, 23 + ch)};
    check(c, "3x3 " + std::to_string(ch) + "ch " + std::to_string(hw) + "px batch " + std::to_string(n));
  }
  c.inputs = {random_tensor({1, 64, 14, 14}, 1), random_tensor({64, 64, 3, 3}, 2, -0.1f, 0.1f), random_tensor({64}, 3),
              random_tensor({1, 64, 14, 14}, 4)};
  c.inputs[0] = random_tensor({1, 64, 14, 14}, 8);
  c.inputs[1] = random_tensor({256, 64, 1, 1}, 9, -0.1f, 0.1f);
  c.inputs[2] = random_tensor({256}, 10);
  c.inputs[3] = random_tensor({1, 256, 14, 14}, 11);
  c.attrs = {{"activation", attr_s("Relu")}};
  check(c, "resnet 1x1 expand");
  check(c, "resnet 1x1 expand", 1e-4, 3);
  c.attrs = {{"strides", attr_ints({2, 2})}, {"pads", attr_ints({3, 3, 3, 3})}};
  c.inputs = {random_tensor({2, 3, 32, 32}, 5), random_tensor({64, 3, 7, 7}, 6, -0.1f, 0.1f), random_tensor({64}, 7)};
  check(c, "stem 7x7");
}

TEST(DnnlConv, RandomConvTranspose) {
  std::mt19937 rng(2024);
  int taken = 0;
  for (int it = 0; it < 40; ++it) {
    const int64_t group = pick(rng, 0, 2) == 0 ? pick(rng, 2, 3) : 1;
    const int64_t c = group * pick(rng, 1, 5), mg = pick(rng, 1, 5);
    std::vector<int64_t> x{pick(rng, 1, 2), c}, w{c, mg}, ks, st, dl, pads(4), op;
    for (int i = 0; i < 2; ++i) {
      ks.push_back(pick(rng, 1, 4));
      st.push_back(pick(rng, 1, 3));
      dl.push_back(pick(rng, 1, 2));
      pads[i] = pick(rng, 0, ks[i] - 1);
      pads[2 + i] = pick(rng, 0, ks[i] - 1);
      op.push_back(pick(rng, 0, st[i] - 1));
      x.push_back(pick(rng, 1, 9));
      w.push_back(ks[i]);
    }
    Case cs;
    cs.op = "ConvTranspose";
    cs.attrs = {{"group", attr_i(group)},
                {"strides", attr_ints(st)},
                {"dilations", attr_ints(dl)},
                {"pads", attr_ints(pads)},
                {"output_padding", attr_ints(op)}};
    if (it % 5 == 4) {
      cs.attrs.erase("pads");
      cs.attrs["auto_pad"] = attr_s("SAME_UPPER");
    }
    cs.inputs = {random_tensor(x, 800 + it), random_tensor(w, 900 + it)};
    if (pick(rng, 0, 1)) cs.inputs.push_back(random_tensor({mg * group}, 1000 + it));
    cs.const_inputs = {1};
    if (!run_op(cs.op, cs.attrs, cs.inputs, 1, 17, cs.const_inputs).is_ok()) continue;
    bool declined = false;
    auto r = run_dnnl(cs, kPlain, &declined);
    ASSERT_TRUE(r.is_ok()) << r.message();
    if (declined) continue;  // a negative begin pad (auto_pad with dilations)
    ++taken;
    check(cs, "convtranspose it " + std::to_string(it) + describe(cs.attrs) + " X" + Shape::of(x).str() + " W" +
                  Shape::of(w).str());
  }
  EXPECT_GT(taken, 30);
}

TEST(DnnlConv, DeclinesNonConstantWeights) {
  Case c;
  c.op = "Conv";
  c.inputs = {random_tensor({1, 4, 8, 8}, 1), random_tensor({4, 4, 3, 3}, 2)};
  bool declined = false;
  auto r = run_dnnl(c, kPlain, &declined);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_TRUE(declined);
}

// ---------------------------------------------------------------- Gemm / MatMul
TEST(DnnlGemm, Random) {
  std::mt19937 rng(99);
  for (int it = 0; it < 50; ++it) {
    const int64_t m = pick(rng, 1, 20), n = pick(rng, 1, 40), k = pick(rng, 1, 30);
    const bool ta = pick(rng, 0, 1), tb = pick(rng, 0, 1);
    Case c;
    const bool fused = it % 3 == 2;
    c.op = fused ? "FusedGemm" : "Gemm";
    c.domain = fused ? "com.infera" : "";
    c.attrs = {{"transA", attr_i(ta)}, {"transB", attr_i(tb)}};
    const bool b_const = it % 5 != 4;
    if (pick(rng, 0, 1) && b_const) c.attrs["alpha"] = attr_f(0.5f + pick(rng, 0, 3) * 0.25f);
    c.inputs = {random_tensor(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, 10 + it),
                random_tensor(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 20 + it)};
    if (b_const) c.const_inputs = {1};
    const int64_t ck = pick(rng, 0, 5);
    const std::vector<std::vector<int64_t>> cshapes{{}, {n}, {1, n}, {m, n}, {m, 1}, {1}};
    if (ck > 0) {
      c.inputs.push_back(random_tensor(cshapes[ck], 30 + it));
      const bool c_const = pick(rng, 0, 2) != 0;
      if (c_const) c.const_inputs.push_back(2);
      if (c_const && pick(rng, 0, 1)) c.attrs["beta"] = attr_f(0.75f);
    }
    if (fused) c.attrs["activation"] = attr_s(kActs[pick(rng, 1, 10)]);
    check(c, "gemm it " + std::to_string(it) + describe(c.attrs) + " M=" + std::to_string(m) +
                 " N=" + std::to_string(n) + " K=" + std::to_string(k) + " C kind " + std::to_string(ck));
  }
}

TEST(DnnlMatMul, Random) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes{
      {{5, 7}, {7, 3}}, {{2, 5, 7}, {2, 7, 3}}, {{2, 5, 7}, {7, 3}}, {{3, 1, 4, 6}, {2, 6, 5}},
      {{7}, {7, 3}},    {{5, 7}, {7}},          {{1, 33}, {33, 65}}, {{4, 2, 3, 8}, {4, 2, 8, 9}}};
  uint32_t seed = 40;
  for (auto& [a, b] : shapes) {
    for (bool b_const : {false, true}) {
      Case c;
      c.op = "MatMul";
      c.inputs = {random_tensor(a, seed++), random_tensor(b, seed++)};
      if (b_const) c.const_inputs = {1};
      check(c, "matmul " + Shape::of(a).str() + " x " + Shape::of(b).str() + (b_const ? " const" : ""));
    }
  }
}

// ---------------------------------------------------------------- pooling
TEST(DnnlPool, Random) {
  std::mt19937 rng(555);
  int taken = 0;
  for (int it = 0; it < 120; ++it) {
    Case c;
    const bool is_max = it % 2 == 0;
    c.op = is_max ? "MaxPool" : "AveragePool";
    c.opset = is_max ? 12 : (pick(rng, 0, 1) ? 19 : 11);
    std::vector<int64_t> x{pick(rng, 1, 2), pick(rng, 1, 20)}, ks, st, dl, pads(4);
    for (int i = 0; i < 2; ++i) {
      ks.push_back(pick(rng, 1, 4));
      st.push_back(pick(rng, 1, 3));
      dl.push_back((is_max || c.opset >= 19) ? pick(rng, 1, 2) : 1);
      pads[i] = pick(rng, 0, ks[i] - 1);
      pads[2 + i] = pick(rng, 0, ks[i] - 1);
      x.push_back(pick(rng, (ks[i] - 1) * dl[i] + 1, 13));
    }
    c.attrs["kernel_shape"] = attr_ints(ks);
    c.attrs["strides"] = attr_ints(st);
    if (dl != std::vector<int64_t>{1, 1}) c.attrs["dilations"] = attr_ints(dl);
    const int64_t ap = pick(rng, 0, 4);
    if (ap == 3)
      c.attrs["auto_pad"] = attr_s("SAME_UPPER");
    else if (ap == 4)
      c.attrs["auto_pad"] = attr_s("VALID");
    else
      c.attrs["pads"] = attr_ints(pads);
    c.attrs["ceil_mode"] = attr_i(pick(rng, 0, 1));
    if (!is_max) c.attrs["count_include_pad"] = attr_i(pick(rng, 0, 1));
    c.inputs = {random_tensor(x, 700 + it)};
    if (!run_op(c.op, c.attrs, c.inputs, 1, c.opset).is_ok()) continue;
    bool declined = false;
    auto r = run_dnnl(c, kPlain, &declined);
    ASSERT_TRUE(r.is_ok()) << r.message();
    if (declined) continue;  // count_include_pad over ceil padding, windows wholly in padding
    ++taken;
    check(c, "pool it " + std::to_string(it) + " " + c.op + describe(c.attrs) + " X" + Shape::of(x).str());
  }
  EXPECT_GT(taken, 80);
}

TEST(DnnlPool, GlobalAndIndices) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    Case c;
    c.op = op;
    c.inputs = {random_tensor({2, 37, 7, 9}, 3)};
    check(c, op);
  }
  Case c;
  c.op = "MaxPool";
  c.attrs = {{"kernel_shape", attr_ints({2, 2})}};
  c.inputs = {random_tensor({1, 3, 6, 6}, 4)};
  c.num_outputs = 2;
  bool declined = false;
  auto r = run_dnnl(c, kPlain, &declined);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_TRUE(declined) << "MaxPool with Indices must be declined";
}

// ---------------------------------------------------------------- BN / eltwise / binary
TEST(DnnlNorm, BatchNormalization) {
  const std::vector<std::vector<int64_t>> shapes{{2, 20, 5, 7}, {1, 64, 3, 3}, {3, 5}, {2, 6, 11}};
  uint32_t seed = 900;
  for (auto& x : shapes) {
    const int64_t ch = x[1];
    Case c;
    c.op = "BatchNormalization";
    c.opset = 15;
    c.attrs = {{"epsilon", attr_f(1e-3f)}};
    c.inputs = {random_tensor(x, seed++), random_tensor({ch}, seed++), random_tensor({ch}, seed++),
                random_tensor({ch}, seed++), random_tensor({ch}, seed++, 0.5f, 2.f)};
    c.const_inputs = {1, 2, 3, 4};
    check(c, "bn " + Shape::of(x).str());
  }
}

TEST(DnnlEltwise, Unary) {
  struct U {
    const char* op;
    Attrs attrs;
    float lo, hi;
  };
  const std::vector<U> ops{{"Relu", {}, -2, 2},
                           {"LeakyRelu", {{"alpha", attr_f(0.2f)}}, -2, 2},
                           {"Sigmoid", {}, -6, 6},
                           {"Tanh", {}, -3, 3},
                           {"Elu", {{"alpha", attr_f(0.7f)}}, -3, 3},
                           {"HardSigmoid", {{"alpha", attr_f(0.3f)}, {"beta", attr_f(0.4f)}}, -4, 4},
                           {"HardSwish", {}, -5, 5},
                           {"Selu", {}, -3, 3},
                           {"Softplus", {}, -5, 5},
                           {"Exp", {}, -3, 3},
                           {"Log", {}, 0.1f, 5},
                           {"Sqrt", {}, 0, 5},
                           {"Abs", {}, -2, 2},
                           {"Neg", {}, -2, 2},
                           {"Mish", {}, -4, 4},
                           {"Gelu", {}, -4, 4},
                           {"Gelu", {{"approximate", attr_s("tanh")}}, -4, 4}};
  uint32_t seed = 1000;
  for (auto& u : ops) {
    for (auto dims : {std::vector<int64_t>{2, 20, 5, 3}, std::vector<int64_t>{7, 33}}) {
      Case c;
      c.op = u.op;
      c.opset = std::string(u.op) == "Gelu" ? 20 : 17;
      c.attrs = u.attrs;
      c.inputs = {random_tensor(dims, seed++, u.lo, u.hi)};
      check(c, std::string(u.op) + " " + Shape::of(dims).str());
    }
  }
  Case clip6;
  clip6.op = "Clip";
  clip6.opset = 6;
  clip6.attrs = {{"min", attr_f(-0.3f)}, {"max", attr_f(0.6f)}};
  clip6.inputs = {random_tensor({2, 17, 4, 4}, 5)};
  check(clip6, "Clip opset 6");
  Case clip13;
  clip13.op = "Clip";
  clip13.opset = 13;
  clip13.inputs = {random_tensor({2, 17, 4, 4}, 6), make_tensor<float>(DataType::kFloat32, {}, {0.f}),
                   make_tensor<float>(DataType::kFloat32, {}, {6.f})};
  clip13.inputs[0] = random_tensor({2, 17, 4, 4}, 6, -10, 10);
  clip13.const_inputs = {1, 2};
  check(clip13, "Clip opset 13 (relu6)");
}

TEST(DnnlEltwise, Binary) {
  const std::vector<std::vector<int64_t>> others{{2, 20, 5, 6}, {1, 20, 1, 1}, {2, 20, 1, 1}, {20, 1, 1},
                                                 {6},           {1},           {1, 1, 5, 6}};
  uint32_t seed = 1200;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (auto& o : others) {
      for (bool swap : {false, true}) {
        const bool commutative = std::string(op) != "Sub" && std::string(op) != "Div";
        if (swap && !commutative) continue;
        Case c;
        c.op = op;
        Tensor full = random_tensor({2, 20, 5, 6}, seed++);
        Tensor b = random_tensor(o, seed++, 0.5f, 1.5f);  // positive: safe divisor
        c.inputs = swap ? std::vector<Tensor>{b, full} : std::vector<Tensor>{full, b};
        if (o.size() < 4) c.const_inputs = {swap ? 0 : 1};
        check(c, std::string(op) + " with " + Shape::of(o).str() + (swap ? " swapped" : ""));
      }
    }
  }
}

TEST(DnnlMisc, Softmax) {
  uint32_t seed = 1400;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t opset : {11, 13}) {
      for (int64_t axis : {-1, 1, 0}) {
        Case c;
        c.op = op;
        c.opset = opset;
        c.attrs = {{"axis", attr_i(axis)}};
        c.inputs = {random_tensor({3, 4, 5}, seed++, -5, 5)};
        check(c, std::string(op) + " opset " + std::to_string(opset) + " axis " + std::to_string(axis));
      }
    }
  }
}

TEST(DnnlMisc, Concat) {
  uint32_t seed = 1500;
  Case c;
  c.op = "Concat";
  c.attrs = {{"axis", attr_i(1)}};
  c.inputs = {random_tensor({2, 32, 5, 5}, seed++), random_tensor({2, 16, 5, 5}, seed++),
              random_tensor({2, 64, 5, 5}, seed++)};
  check(c, "concat channels (whole blocks)");
  c.inputs = {random_tensor({2, 3, 5, 5}, seed++), random_tensor({2, 20, 5, 5}, seed++)};
  check(c, "concat channels (partial blocks)");
  for (int64_t axis : {0, 2, -1}) {
    c.attrs = {{"axis", attr_i(axis)}};
    std::vector<int64_t> a{2, 3, 4, 5}, b = a;
    b[axis < 0 ? 3 : axis] = 2;
    c.inputs = {random_tensor(a, seed++), random_tensor(b, seed++)};
    check(c, "concat axis " + std::to_string(axis));
  }
}

// ---------------------------------------------------------------- layout helpers
TEST(DnnlLayout, ReorderRoundTrip) {
  const int b = blocked_channel_block();
  EXPECT_TRUE(b == 8 || b == 16);
  for (auto dims : {std::vector<int64_t>{2, 19, 3, 5}, std::vector<int64_t>{1, 64, 7, 7}}) {
    Tensor x = random_tensor(dims, 7);
    const int64_t cp = (dims[1] + b - 1) / b * b;
    EXPECT_EQ(blocked_bytes(dims), static_cast<size_t>(dims[0] * cp * dims[2] * dims[3] * 4));
    std::vector<float> blk(blocked_bytes(dims) / 4);
    TensorRef in = TensorRef::of(x), bl{DataType::kFloat32, dims, blk.data()};
    ASSERT_TRUE(reorder_to_blocked(in, bl).is_ok());
    // Element (n, c, h, w) lives at ((n * Cp/b + c/b) * H * W + h * W + w) * b + c % b.
    const float* xp = x.data_as<float>();
    bool same = true;
    for (int64_t n = 0; n < dims[0]; ++n)
      for (int64_t c = 0; c < dims[1]; ++c)
        for (int64_t hw = 0; hw < dims[2] * dims[3]; ++hw)
          same = same && blk[((n * (cp / b) + c / b) * dims[2] * dims[3] + hw) * b + c % b] ==
                             xp[(n * dims[1] + c) * dims[2] * dims[3] + hw];
    EXPECT_TRUE(same);
    Tensor back = Tensor::make(DataType::kFloat32, dims).take();
    TensorRef br = TensorRef::of(back);
    ASSERT_TRUE(reorder_to_plain(bl, br).is_ok());
    EXPECT_EQ(std::memcmp(back.data(), x.data(), x.nbytes()), 0);
  }
}

TEST(DnnlLayout, Describe) {
  const std::string d = dnnl_describe();
  EXPECT_NE(d.find("oneDNN"), std::string::npos) << d;
  EXPECT_NE(d.find("conv 3x3"), std::string::npos) << d;
}

// Elementwise ops follow their input's layout: on NHWC-ordered tensors (after a Transpose) a
// blocked output between two elementwise ops would only add reorders, so it stays plain.
TEST(DnnlLayout, ElementwiseFollowsInput) {
  Graph g;
  g.opset = 17;
  auto value = [&](const char* name) { return g.add_value(name); };
  auto node = [&](const char* op, std::vector<int> ins, int out, std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.name = op + std::to_string(g.nodes.size());
    n.op_type = op;
    n.inputs = std::move(ins);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g.add_node(std::move(n));
  };
  auto constant = [&](const char* name, Tensor t) {
    int v = g.add_value(name, t.dtype(), Shape::of(t.dims()));
    g.values[v].constant = std::make_shared<const Tensor>(std::move(t));
    return v;
  };
  int x = g.add_value("x", DataType::kFloat32, Shape::of({1, 8, 6, 6}));
  g.inputs.push_back(x);
  int c1 = value("c1"), r1 = value("r1"), y1 = value("y1"), t = value("t"), a = value("a"), s = value("s");
  int u = value("u"), y2 = value("y2");
  node("Conv", {x, constant("w1", random_tensor({8, 8, 1, 1}, 1))}, c1);
  node("Relu", {c1}, r1);  // blocked input: blocked output
  node("Conv", {r1, constant("w2", random_tensor({8, 8, 1, 1}, 2))}, y1);
  node("Transpose", {x}, t, {{"perm", attr_ints({0, 2, 3, 1})}});
  node("Add", {t, constant("eps", random_tensor({1}, 3))}, a);  // plain input: plain output
  node("Sqrt", {a}, s);
  node("Transpose", {s}, u, {{"perm", attr_ints({0, 3, 1, 2})}});
  node("Conv", {u, constant("w3", random_tensor({8, 8, 1, 1}, 4))}, y2);
  g.outputs = {y1, y2};
  ASSERT_TRUE(infer_graph(g).is_ok());
  std::vector<std::unique_ptr<OpKernel>> kernels;
  for (const Node& n : g.nodes) {
    auto k = make_kernel(n, g.opset);
    ASSERT_TRUE(k.is_ok()) << k.message();
    kernels.push_back(k.take());
  }
  auto p = make_plan(g, kernels, {{1, 8, 6, 6}}, true, 1);
  ASSERT_TRUE(p.is_ok()) << p.message();
  const auto& l = p.value()->layouts;
  EXPECT_EQ(l[c1], Layout::kBlocked);
  EXPECT_EQ(l[r1], Layout::kBlocked);
  EXPECT_EQ(l[a], Layout::kPlain);
  EXPECT_EQ(l[s], Layout::kPlain);
}

}  // namespace
}  // namespace infera::test
