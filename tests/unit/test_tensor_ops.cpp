// Tensor (data-movement and shape) ops against naive index formulas written in this file,
// plus inference checks with symbolic dims and unknown values.
#include <gtest/gtest.h>

#include <numeric>

#include "op_test_util.h"

namespace infera::test {
namespace {

Tensor i64(std::vector<int64_t> v) { return make_tensor<int64_t>(DataType::kInt64, {(int64_t)v.size()}, v); }
Tensor f32(std::vector<float> v) { return make_tensor<float>(DataType::kFloat32, {(int64_t)v.size()}, v); }
Tensor iota(std::vector<int64_t> dims, DataType dt = DataType::kFloat32) {
  Tensor t = Tensor::make(dt, dims).take();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::kFloat32)
      t.data_as<float>()[i] = float(i);
    else if (dt == DataType::kInt64)
      t.data_as<int64_t>()[i] = i;
    else if (dt == DataType::kUInt8)
      t.data_as<uint8_t>()[i] = uint8_t(i);
  }
  return t;
}
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (int k = int(dims.size()) - 1; k >= 0; --k) {
    c[k] = i % dims[k];
    i /= dims[k];
  }
  return c;
}
int64_t ravel(const std::vector<int64_t>& c, const std::vector<int64_t>& dims) {
  int64_t i = 0;
  for (size_t k = 0; k < dims.size(); ++k) i = i * dims[k] + c[k];
  return i;
}
float at(const Tensor& t, int64_t i) { return t.data_as<float>()[i]; }
std::vector<int64_t> ints_of(const Tensor& t) { return {t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel()}; }

// Runs only inference on given (possibly symbolic) input infos.
Result<std::vector<ValueInfo>> infer_only(const std::string& op, std::map<std::string, Attribute> attrs,
                                          std::vector<ValueInfo> ins, int n_out = 1, int64_t opset = 17) {
  Node n;
  n.name = "t";
  n.op_type = op;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < ins.size(); ++i) n.inputs.push_back(int(i));
  for (int i = 0; i < n_out; ++i) n.outputs.push_back(int(ins.size()) + i);
  auto k = make_kernel(n, opset);
  if (!k.is_ok()) return k.status();
  std::vector<const ValueInfo*> p;
  for (auto& v : ins) p.push_back(&v);
  InferContext ctx(n, opset, p);
  Status s = k.value()->infer(ctx);
  if (!s.is_ok()) return s;
  return ctx.outputs();
}
ValueInfo info(DataType dt, Shape s, const Tensor* value = nullptr) {
  ValueInfo v;
  v.dtype = dt;
  v.shape = std::move(s);
  if (value) v.value = std::make_shared<Tensor>(*value);
  return v;
}
Shape sym_shape(std::vector<Dim> d) { return Shape(std::move(d)); }

// ---------------------------------------------------------------- Reshape family
TEST(TensorOps, ReshapeZeroCopyAndInferredDim) {
  Tensor x = random_tensor({2, 3, 4}, 1);
  auto r = run_op("Reshape", {}, {x, i64({0, -1, 2})}, 1, 13, {1});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{2, 6, 2}));
  EXPECT_EQ(normalized_error(Tensor::view(DataType::kFloat32, {2, 3, 4}, r.value()[0].data()), x), 0);
  // allowzero=1 keeps a literal 0 dim (only valid with an empty input).
  Tensor e = Tensor::make(DataType::kFloat32, {0, 3}).take();
  r = run_op("Reshape", {{"allowzero", attr_i(1)}}, {e, i64({3, 0})}, 1, 14, {1});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{3, 0}));
  EXPECT_FALSE(run_op("Reshape", {}, {x, i64({5, -1})}, 1, 13, {1}).is_ok());
  EXPECT_FALSE(run_op("Reshape", {}, {x, i64({-1, -1})}, 1, 13, {1}).is_ok());
  EXPECT_FALSE(run_op("Reshape", {}, {x, i64({7, 7})}, 1, 13, {1}).is_ok());
}

TEST(TensorOps, ReshapeInferSymbolic) {
  Shape in = sym_shape({Dim::sym("batch"), 512, 1, 1});
  Tensor shp = i64({0, -1});
  auto r = infer_only("Reshape", {}, {info(DataType::kFloat32, in), info(DataType::kInt64, Shape::of({2}), &shp)});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].shape.str(), "[batch,512]");
  Tensor shp2 = i64({-1, 512});
  r = infer_only("Reshape", {}, {info(DataType::kFloat32, in), info(DataType::kInt64, Shape::of({2}), &shp2)});
  EXPECT_EQ(r.value()[0].shape.str(), "[batch,512]");
  // Unknown shape value: rank from the shape tensor's length.
  r = infer_only("Reshape", {}, {info(DataType::kFloat32, in), info(DataType::kInt64, Shape::of({3}))});
  EXPECT_EQ(r.value()[0].shape.str(), "[?,?,?]");
}

TEST(TensorOps, FlattenSqueezeUnsqueeze) {
  Tensor x = random_tensor({2, 1, 3, 1}, 2);
  for (int64_t axis : {0, 1, 2, 3, 4, -1, -3}) {
    auto r = run_op("Flatten", {{"axis", attr_i(axis)}}, {x});
    ASSERT_TRUE(r.is_ok()) << r.message();
    int64_t a = axis < 0 ? axis + 4 : axis, outer = 1;
    for (int k = 0; k < a; ++k) outer *= x.dims()[k];
    EXPECT_EQ(r.value()[0].dims(), (std::vector<int64_t>{outer, 6 / outer}));
  }
  auto sq = run_op("Squeeze", {{"axes", attr_ints({1, -1})}}, {x}, 1, 11);
  ASSERT_TRUE(sq.is_ok()) << sq.message();
  EXPECT_EQ(sq.value()[0].dims(), (std::vector<int64_t>{2, 3}));
  sq = run_op("Squeeze", {}, {x, i64({3})}, 1, 13, {1});
  EXPECT_EQ(sq.value()[0].dims(), (std::vector<int64_t>{2, 1, 3}));
  sq = run_op("Squeeze", {}, {x}, 1, 13);
  EXPECT_EQ(sq.value()[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(run_op("Squeeze", {}, {x, i64({0})}, 1, 13, {1}).is_ok());  // dim 2 is not 1
  auto un = run_op("Unsqueeze", {{"axes", attr_ints({0, -1})}}, {x}, 1, 11);
  ASSERT_TRUE(un.is_ok()) << un.message();
  EXPECT_EQ(un.value()[0].dims(), (std::vector<int64_t>{1, 2, 1, 3, 1, 1}));
  un = run_op("Unsqueeze", {}, {x, i64({4, 1})}, 1, 13, {1});
  EXPECT_EQ(un.value()[0].dims(), (std::vector<int64_t>{2, 1, 1, 3, 1, 1}));
  EXPECT_FALSE(run_op("Unsqueeze", {}, {x, i64({1, 1})}, 1, 13, {1}).is_ok());
  EXPECT_FALSE(run_op("Unsqueeze", {{"axes", attr_ints({0})}}, {x, i64({0})}, 1, 13, {1}).is_ok());
}

TEST(TensorOps, ShapeSizeAndChainInference) {
  Tensor x = random_tensor({2, 3, 5, 7}, 3);
  auto r = run_op("Shape", {}, {x});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(ints_of(r.value()[0]), (std::vector<int64_t>{2, 3, 5, 7}));
  r = run_op("Shape", {{"start", attr_i(1)}, {"end", attr_i(-1)}}, {x}, 1, 15);
  EXPECT_EQ(ints_of(r.value()[0]), (std::vector<int64_t>{3, 5}));
  r = run_op("Shape", {{"start", attr_i(-10)}, {"end", attr_i(10)}}, {x}, 1, 15);
  EXPECT_EQ(ints_of(r.value()[0]), (std::vector<int64_t>{2, 3, 5, 7}));
  r = run_op("Size", {}, {x});
  EXPECT_EQ(r.value()[0].data_as<int64_t>()[0], 210);
  EXPECT_EQ(r.value()[0].rank(), 0);
  // Shape infers from a symbolic shape alone.
  auto s = infer_only("Shape", {}, {info(DataType::kFloat32, sym_shape({Dim::sym("b"), 3, Dim(), 7}))});
  EXPECT_EQ(s.value()[0].shape.str(), "[4]");
  EXPECT_EQ(s.value()[0].dtype, DataType::kInt64);
  // Gather(indices const) -> Unsqueeze -> Concat infer exact shapes when values are known.
  Tensor shp = i64({2, 3, 5, 7}), idx = make_tensor<int64_t>(DataType::kInt64, {}, {0});
  auto g = infer_only("Gather", {},
                      {info(DataType::kInt64, Shape::of({4}), &shp), info(DataType::kInt64, Shape::of({}), &idx)});
  EXPECT_EQ(g.value()[0].shape.str(), "[]");
  auto c = infer_only("Concat", {{"axis", attr_i(0)}},
                      {info(DataType::kInt64, Shape::of({1})), info(DataType::kInt64, sym_shape({Dim()})),
                       info(DataType::kInt64, Shape::of({2}))});
  EXPECT_EQ(c.value()[0].shape.str(), "[?]");
}

// ---------------------------------------------------------------- Transpose / Concat / Split
TEST(TensorOps, TransposeRandomPerms) {
  std::mt19937 rng(4);
  for (int t = 0; t < 20; ++t) {
    int r = 1 + t % 5;
    std::vector<int64_t> dims(r), perm(r);
    for (auto& d : dims) d = 1 + rng() % 4;
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Tensor x = random_tensor(dims, t);
    auto y = run_op("Transpose", {{"perm", attr_ints(perm)}}, {x});
    ASSERT_TRUE(y.is_ok()) << y.message();
    const Tensor& o = y.value()[0];
    for (int64_t i = 0; i < o.numel(); ++i) {
      auto c = unravel(i, o.dims());
      std::vector<int64_t> ic(r);
      for (int k = 0; k < r; ++k) ic[perm[k]] = c[k];
      ASSERT_EQ(at(o, i), at(x, ravel(ic, dims)));
    }
  }
  auto def = run_op("Transpose", {}, {random_tensor({2, 3, 4}, 9)});
  EXPECT_EQ(def.value()[0].dims(), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_FALSE(run_op("Transpose", {{"perm", attr_ints({0, 0, 1})}}, {random_tensor({2, 3, 4}, 9)}).is_ok());
}

TEST(TensorOps, SplitThenConcatRoundTrips) {
  Tensor x = iota({3, 7, 2}, DataType::kInt64);
  auto s = run_op("Split", {{"axis", attr_i(1)}}, {x, i64({2, 0, 5})}, 3, 13, {1});
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(s.value()[1].dims(), (std::vector<int64_t>{3, 0, 2}));
  for (int64_t i = 0; i < s.value()[2].numel(); ++i) {
    auto c = unravel(i, s.value()[2].dims());
    c[1] += 2;
    ASSERT_EQ(s.value()[2].data_as<int64_t>()[i], ravel(c, x.dims()));
  }
  auto c = run_op("Concat", {{"axis", attr_i(-2)}}, {s.value()[0], s.value()[1], s.value()[2]});
  ASSERT_TRUE(c.is_ok()) << c.message();
  EXPECT_EQ(ints_of(c.value()[0]), ints_of(x));
  // Opset 11 'split' attribute; opset 18 num_outputs with an uneven last chunk.
  s = run_op("Split", {{"axis", attr_i(1)}, {"split", attr_ints({3, 4})}}, {x}, 2, 11);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(s.value()[1].dims(), (std::vector<int64_t>{3, 4, 2}));
  s = run_op("Split", {{"axis", attr_i(1)}, {"num_outputs", attr_i(3)}}, {x}, 3, 18);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(s.value()[2].dims(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_FALSE(run_op("Split", {{"axis", attr_i(1)}}, {x}, 2, 13).is_ok());  // 7 is odd
  EXPECT_FALSE(run_op("Split", {}, {x, i64({1, 1})}, 2, 13, {1}).is_ok());   // sums to 2, not 3
  EXPECT_FALSE(run_op("Concat", {{"axis", attr_i(0)}}, {x, iota({3, 6, 2}, DataType::kInt64)}).is_ok());
}

// ---------------------------------------------------------------- Slice
// Naive slice: walks the python-style range per axis.
std::vector<int64_t> naive_range(int64_t n, int64_t s, int64_t e, int64_t st) {
  auto clampv = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(hi, v)); };
  if (s < 0) s += n;
  if (e < 0) e += n;
  std::vector<int64_t> out;
  if (st > 0) {
    s = clampv(s, 0, n);
    e = clampv(e, 0, n);
    for (int64_t i = s; i < e; i += st) out.push_back(i);
  } else {
    s = clampv(s, 0, n - 1);
    e = clampv(e, -1, n - 1);
    for (int64_t i = s; i > e; i += st) out.push_back(i);
  }
  return out;
}

TEST(TensorOps, SliceRandomAgainstNaive) {
  std::mt19937 rng(5);
  const int64_t big = INT64_MAX, vals[] = {0, 1, 2, -1, -3, 100, -100, big, INT64_MIN};
  for (int t = 0; t < 60; ++t) {
    int r = 1 + t % 4;
    std::vector<int64_t> dims(r);
    for (auto& d : dims) d = 1 + rng() % 5;
    Tensor x = random_tensor(dims, 100 + t);
    std::vector<int64_t> axes(r), starts, ends, steps;
    std::iota(axes.begin(), axes.end(), 0);
    std::shuffle(axes.begin(), axes.end(), rng);
    axes.resize(1 + rng() % r);
    for (size_t i = 0; i < axes.size(); ++i) {
      starts.push_back(vals[rng() % 9]);
      ends.push_back(vals[rng() % 9]);
      const int64_t st[] = {1, 2, 3, -1, -2};
      steps.push_back(st[rng() % 5]);
    }
    auto y = run_op("Slice", {}, {x, i64(starts), i64(ends), i64(axes), i64(steps)}, 1, 13, {1, 2, 3, 4});
    ASSERT_TRUE(y.is_ok()) << y.message();
    std::vector<std::vector<int64_t>> idx(r);
    for (int k = 0; k < r; ++k)
      for (int64_t i = 0; i < dims[k]; ++i) idx[k].push_back(i);
    for (size_t i = 0; i < axes.size(); ++i) idx[axes[i]] = naive_range(dims[axes[i]], starts[i], ends[i], steps[i]);
    const Tensor& o = y.value()[0];
    for (int k = 0; k < r; ++k) ASSERT_EQ(o.dims()[k], (int64_t)idx[k].size());
    for (int64_t i = 0; i < o.numel(); ++i) {
      auto c = unravel(i, o.dims());
      for (int k = 0; k < r; ++k) c[k] = idx[k][c[k]];
      ASSERT_EQ(at(o, i), at(x, ravel(c, dims)));
    }
  }
  // Opset 9 attributes; zero step refused.
  Tensor x = iota({4, 5});
  auto y =
      run_op("Slice", {{"starts", attr_ints({1})}, {"ends", attr_ints({-1})}, {"axes", attr_ints({1})}}, {x}, 1, 9);
  ASSERT_TRUE(y.is_ok()) << y.message();
  EXPECT_EQ(y.value()[0].dims(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(at(y.value()[0], 3), 6.f);
  EXPECT_FALSE(run_op("Slice", {}, {x, i64({0}), i64({1}), i64({0}), i64({0})}, 1, 13, {1, 2, 3, 4}).is_ok());
}

TEST(TensorOps, SliceInferKeepsUntouchedDims) {
  Shape in = sym_shape({Dim::sym("b"), 3, 10});
  Tensor axes = i64({2});
  auto r = infer_only("Slice", {},
                      {info(DataType::kFloat32, in), info(DataType::kInt64, Shape::of({1})),
                       info(DataType::kInt64, Shape::of({1})), info(DataType::kInt64, Shape::of({1}), &axes)},
                      1, 13);
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].shape.str(), "[b,3,?]");
  Tensor st = i64({0}), en = i64({INT64_MAX}), ax0 = i64({0});
  r = infer_only("Slice", {},
                 {info(DataType::kFloat32, in), info(DataType::kInt64, Shape::of({1}), &st),
                  info(DataType::kInt64, Shape::of({1}), &en), info(DataType::kInt64, Shape::of({1}), &ax0)},
                 1, 13);
  EXPECT_EQ(r.value()[0].shape.str(), "[b,3,10]");
}

// ---------------------------------------------------------------- Gather / Expand / Tile
TEST(TensorOps, GatherAnyAxisNegativeIndices) {
  Tensor x = random_tensor({3, 4, 5}, 6);
  for (int64_t axis : {0, 1, 2, -1}) {
    int64_t a = axis < 0 ? axis + 3 : axis, n = x.dims()[a];
    Tensor idx = make_tensor<int32_t>(DataType::kInt32, {2, 2}, {0, int32_t(-n), int32_t(n - 1), -1});
    auto y = run_op("Gather", {{"axis", attr_i(axis)}}, {x, idx});
    ASSERT_TRUE(y.is_ok()) << y.message();
    const Tensor& o = y.value()[0];
    ASSERT_EQ(o.rank(), 4);
    for (int64_t i = 0; i < o.numel(); ++i) {
      auto c = unravel(i, o.dims());
      int64_t j = idx.data_as<int32_t>()[c[a] * 2 + c[a + 1]];
      if (j < 0) j += n;
      std::vector<int64_t> ic;
      for (int k = 0; k < 4; ++k) {
        if (k == a)
          ic.push_back(j);
        else if (k != a + 1)
          ic.push_back(c[k]);
      }
      ASSERT_EQ(at(o, i), at(x, ravel(ic, x.dims())));
    }
  }
  EXPECT_FALSE(run_op("Gather", {}, {x, i64({3})}).is_ok());
  EXPECT_FALSE(run_op("Gather", {}, {x, i64({-4})}).is_ok());
}

TEST(TensorOps, ExpandAndTile) {
  Tensor x = iota({3, 1}, DataType::kUInt8);
  auto y = run_op("Expand", {}, {x, i64({2, 1, 4})}, 1, 13, {1});
  ASSERT_TRUE(y.is_ok()) << y.message();
  const Tensor& o = y.value()[0];
  EXPECT_EQ(o.dims(), (std::vector<int64_t>{2, 3, 4}));
  for (int64_t i = 0; i < o.numel(); ++i) EXPECT_EQ(o.data_as<uint8_t>()[i], unravel(i, o.dims())[1]);
  EXPECT_FALSE(run_op("Expand", {}, {x, i64({2, 4})}, 1, 13, {1}).is_ok());
  Tensor t = random_tensor({2, 3}, 7);
  auto z = run_op("Tile", {}, {t, i64({3, 2})}, 1, 13, {1});
  ASSERT_TRUE(z.is_ok()) << z.message();
  const Tensor& w = z.value()[0];
  EXPECT_EQ(w.dims(), (std::vector<int64_t>{6, 6}));
  for (int64_t i = 0; i < w.numel(); ++i) {
    auto c = unravel(i, w.dims());
    EXPECT_EQ(at(w, i), at(t, (c[0] % 2) * 3 + c[1] % 3));
  }
}

// ---------------------------------------------------------------- Pad
int64_t naive_pad_src(int64_t i, int64_t n, const std::string& mode) {
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((i % n) + n) % n;
  while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;  // reflect: bounce off the ends
  return i;
}

TEST(TensorOps, PadModesAgainstNaive) {
  std::mt19937 rng(8);
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    for (int t = 0; t < 8; ++t) {
      std::vector<int64_t> dims = {2 + int64_t(rng() % 3), 2 + int64_t(rng() % 4)}, pads(4);
      for (auto& p : pads) p = int64_t(rng() % 3) - (std::string(mode) == "constant" ? 1 : 0);
      Tensor x = random_tensor(dims, 200 + t);
      auto y = run_op("Pad", {{"mode", attr_s(mode)}},
                      {x, i64(pads), make_tensor<float>(DataType::kFloat32, {}, {2.5f})}, 1, 19, {1, 2});
      ASSERT_TRUE(y.is_ok()) << y.message();
      const Tensor& o = y.value()[0];
      ASSERT_EQ(o.dims(), (std::vector<int64_t>{dims[0] + pads[0] + pads[2], dims[1] + pads[1] + pads[3]}));
      for (int64_t i = 0; i < o.numel(); ++i) {
        auto c = unravel(i, o.dims());
        int64_t a = naive_pad_src(c[0] - pads[0], dims[0], mode), b = naive_pad_src(c[1] - pads[1], dims[1], mode);
        ASSERT_EQ(at(o, i), (a < 0 || b < 0) ? 2.5f : at(x, a * dims[1] + b)) << mode;
      }
    }
  }
  // Opset 2..10: pads and value as attributes; opset 18: axes input.
  Tensor x = iota({2, 3});
  auto y = run_op("Pad", {{"pads", attr_ints({0, 1, 0, 0})}, {"value", attr_f(-1)}}, {x}, 1, 10);
  ASSERT_TRUE(y.is_ok()) << y.message();
  EXPECT_EQ(y.value()[0].dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(at(y.value()[0], 4), -1.f);
  y = run_op("Pad", {}, {x, i64({2, 0}), Tensor(), i64({-1})}, 1, 18, {1, 3});
  ASSERT_TRUE(y.is_ok()) << y.message();
  EXPECT_EQ(y.value()[0].dims(), (std::vector<int64_t>{2, 5}));
  EXPECT_FALSE(run_op("Pad", {{"mode", attr_s("wrap")}}, {x, i64({0, 1, 0, 0})}, 1, 18, {1}).is_ok());
  EXPECT_FALSE(run_op("Pad", {}, {x, i64({0, -4, 0, 0})}, 1, 13, {1}).is_ok());
}

// ---------------------------------------------------------------- constants, Range, Dropout
TEST(TensorOps, ConstantConstantOfShapeRange) {
  Node dummy;
  auto c = run_op("Constant", {{"value_ints", attr_ints({4, 5, 6})}}, {});
  ASSERT_TRUE(c.is_ok()) << c.message();
  EXPECT_EQ(ints_of(c.value()[0]), (std::vector<int64_t>{4, 5, 6}));
  c = run_op("Constant", {{"value_float", attr_f(1.5f)}}, {});
  EXPECT_EQ(c.value()[0].rank(), 0);
  EXPECT_EQ(at(c.value()[0], 0), 1.5f);
  Attribute sparse;
  sparse.kind = Attribute::kTensor;
  EXPECT_FALSE(run_op("Constant", {{"sparse_value", sparse}}, {}).is_ok());
  Attribute v;
  v.kind = Attribute::kTensor;
  v.t = std::make_shared<Tensor>(make_tensor<int32_t>(DataType::kInt32, {1}, {7}));
  auto k = run_op("ConstantOfShape", {{"value", v}}, {i64({2, 3})}, 1, 13, {0});
  ASSERT_TRUE(k.is_ok()) << k.message();
  EXPECT_EQ(k.value()[0].dtype(), DataType::kInt32);
  EXPECT_EQ(k.value()[0].numel(), 6);
  EXPECT_EQ(k.value()[0].data_as<int32_t>()[5], 7);
  auto rf =
      run_op("Range", {},
             {make_tensor<float>(DataType::kFloat32, {}, {1.f}), make_tensor<float>(DataType::kFloat32, {}, {2.f}),
              make_tensor<float>(DataType::kFloat32, {}, {0.3f})},
             1, 13, {0, 1, 2});
  ASSERT_TRUE(rf.is_ok()) << rf.message();
  EXPECT_EQ(rf.value()[0].numel(), 4);  // 1, 1.3, 1.6, 1.9
  EXPECT_NEAR(at(rf.value()[0], 3), 1.9f, 1e-6);
  auto ri = run_op("Range", {},
                   {make_tensor<int32_t>(DataType::kInt32, {}, {10}), make_tensor<int32_t>(DataType::kInt32, {}, {-3}),
                    make_tensor<int32_t>(DataType::kInt32, {}, {-4})},
                   1, 13, {0, 1, 2});
  ASSERT_TRUE(ri.is_ok()) << ri.message();
  ASSERT_EQ(ri.value()[0].numel(), 4);  // 10, 6, 2, -2
  EXPECT_EQ(ri.value()[0].data_as<int32_t>()[3], -2);
  EXPECT_FALSE(run_op("Range", {},
                      {make_tensor<int32_t>(DataType::kInt32, {}, {0}), make_tensor<int32_t>(DataType::kInt32, {}, {3}),
                       make_tensor<int32_t>(DataType::kInt32, {}, {0})},
                      1, 13, {0, 1, 2})
                   .is_ok());
}

TEST(TensorOps, DropoutIsIdentityAtInference) {
  Tensor x = random_tensor({3, 4}, 10);
  auto y = run_op("Dropout", {{"ratio", attr_f(0.3f)}}, {x}, 2, 10);
  ASSERT_TRUE(y.is_ok()) << y.message();
  EXPECT_EQ(normalized_error(y.value()[0], x), 0);
  EXPECT_EQ(y.value()[1].dtype(), DataType::kBool);
  for (int64_t i = 0; i < 12; ++i) EXPECT_TRUE(y.value()[1].data_as<bool>()[i]);
  Tensor tm = make_tensor<bool>(DataType::kBool, {}, {true});
  Tensor zero = make_tensor<float>(DataType::kFloat32, {}, {0.f}),
         half = make_tensor<float>(DataType::kFloat32, {}, {0.5f});
  EXPECT_TRUE(run_op("Dropout", {}, {x, zero, tm}, 2, 13, {1, 2}).is_ok());
  auto bad = run_op("Dropout", {}, {x, half, tm}, 1, 13, {1, 2});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("training_mode"), std::string::npos);
  EXPECT_FALSE(run_op("Dropout", {}, {x, half, tm}, 1, 13, {}).is_ok());  // refused when run, too
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth
TEST(TensorOps, DepthToSpaceModesAndRoundTrip) {
  const int64_t N = 2, C = 8, H = 3, W = 2, b = 2, c = C / (b * b);
  Tensor x = random_tensor({N, C, H, W}, 11);
  for (const char* mode : {"DCR", "CRD"}) {
    auto y = run_op("DepthToSpace", {{"blocksize", attr_i(b)}, {"mode", attr_s(mode)}}, {x}, 1, 13);
    ASSERT_TRUE(y.is_ok()) << y.message();
    const Tensor& o = y.value()[0];
    ASSERT_EQ(o.dims(), (std::vector<int64_t>{N, c, H * b, W * b}));
    for (int64_t i = 0; i < o.numel(); ++i) {
      auto q = unravel(i, o.dims());
      int64_t bh = q[2] % b, bw = q[3] % b;
      int64_t ch = std::string(mode) == "DCR" ? (bh * b + bw) * c + q[1] : q[1] * b * b + bh * b + bw;
      ASSERT_EQ(at(o, i), at(x, ravel({q[0], ch, q[2] / b, q[3] / b}, x.dims())));
    }
  }
  auto d = run_op("DepthToSpace", {{"blocksize", attr_i(b)}}, {x}, 1, 13);
  auto s = run_op("SpaceToDepth", {{"blocksize", attr_i(b)}}, {d.value()[0]}, 1, 13);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(normalized_error(s.value()[0], x), 0);
  EXPECT_FALSE(run_op("DepthToSpace", {{"blocksize", attr_i(3)}}, {x}, 1, 13).is_ok());
  EXPECT_FALSE(run_op("SpaceToDepth", {{"blocksize", attr_i(0)}}, {x}, 1, 13).is_ok());
}

// ---------------------------------------------------------------- Resize / Upsample
// Naive separable bilinear on the last two axes with a coordinate function.
template <class F>
std::vector<float> naive_bilinear(const Tensor& x, int64_t OH, int64_t OW, F coord_h, F coord_w) {
  const auto& d = x.dims();
  const int64_t P = d[0] * d[1], H = d[2], W = d[3];
  std::vector<float> y(P * OH * OW);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double fy = std::clamp(coord_h(i), 0.0, double(H - 1)), fx = std::clamp(coord_w(j), 0.0, double(W - 1));
        int64_t y0 = int64_t(fy), x0 = int64_t(fx), y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
        double ly = fy - y0, lx = fx - x0;
        auto v = [&](int64_t a, int64_t b) { return double(at(x, (p * H + a) * W + b)); };
        y[(p * OH + i) * OW + j] =
            float((1 - ly) * ((1 - lx) * v(y0, x0) + lx * v(y0, x1)) + ly * ((1 - lx) * v(y1, x0) + lx * v(y1, x1)));
      }
  return y;
}

double max_diff(const Tensor& a, const std::vector<float>& b) {
  if (a.numel() != static_cast<int64_t>(b.size())) return 1e30;
  return max_abs_error(a.data_as<float>(), b.data(), b.size());  // op_test_util.h: NaN/Inf fail
}

TEST(TensorOps, ResizeLinearCoordinateModes) {
  Tensor x = random_tensor({1, 2, 5, 4}, 12);
  const float sh = 2.f, sw = 1.5f;
  const int64_t OH = 10, OW = 6;
  for (const char* ct : {"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"}) {
    auto y = run_op("Resize", {{"mode", attr_s("linear")}, {"coordinate_transformation_mode", attr_s(ct)}},
                    {x, Tensor(), f32({1, 1, sh, sw})}, 1, 13, {2});
    ASSERT_TRUE(y.is_ok()) << y.message();
    ASSERT_EQ(y.value()[0].dims(), (std::vector<int64_t>{1, 2, OH, OW}));
    std::string m = ct;
    auto fh = [&](int64_t o) {
      return m == "asymmetric" ? o / double(sh) : m == "align_corners" ? o * 4.0 / 9.0 : (o + 0.5) / sh - 0.5;
    };
    auto fw = [&](int64_t o) {
      return m == "asymmetric" ? o / double(sw) : m == "align_corners" ? o * 3.0 / 5.0 : (o + 0.5) / sw - 0.5;
    };
    EXPECT_LT(max_diff(y.value()[0], naive_bilinear(x, OH, OW, std::function<double(int64_t)>(fh),
                                                    std::function<double(int64_t)>(fw))),
              1e-5)
        << ct;
  }
  // sizes instead of scales give the same result when they match.
  auto a = run_op("Resize", {{"mode", attr_s("linear")}}, {x, Tensor(), Tensor(), i64({1, 2, OH, OW})}, 1, 13, {3});
  auto b = run_op("Resize", {{"mode", attr_s("linear")}}, {x, Tensor(), f32({1, 1, sh, sw})}, 1, 13, {2});
  ASSERT_TRUE(a.is_ok()) << a.message();
  EXPECT_LT(normalized_error(a.value()[0], b.value()[0]), 1e-6);
}

TEST(TensorOps, ResizeNearestIntegerScaleRepeats) {
  Tensor x = iota({1, 1, 3, 2}, DataType::kUInt8);
  // Opset 10 Resize, Upsample 7 (attribute) and 9 (input), and opset 13 asymmetric floor agree.
  std::vector<Result<std::vector<Tensor>>> rs;
  rs.push_back(run_op("Resize", {}, {x, f32({1, 1, 2, 3})}, 1, 10, {1}));
  rs.push_back(run_op("Upsample", {{"scales", attr_floats({1, 1, 2, 3})}}, {x}, 1, 7));
  rs.push_back(run_op("Upsample", {}, {x, f32({1, 1, 2, 3})}, 1, 9, {1}));
  rs.push_back(run_op("Resize",
                      {{"coordinate_transformation_mode", attr_s("asymmetric")}, {"nearest_mode", attr_s("floor")}},
                      {x, Tensor(), f32({1, 1, 2, 3})}, 1, 13, {2}));
  for (auto& r : rs) {
    ASSERT_TRUE(r.is_ok()) << r.message();
    const Tensor& o = r.value()[0];
    ASSERT_EQ(o.dims(), (std::vector<int64_t>{1, 1, 6, 6}));
    for (int64_t i = 0; i < o.numel(); ++i) {
      auto c = unravel(i, o.dims());
      ASSERT_EQ(o.data_as<uint8_t>()[i], (c[2] / 2) * 2 + c[3] / 3);
    }
  }
  EXPECT_FALSE(run_op("Upsample", {}, {x, f32({1, 1, 0.5f, 1})}, 1, 9, {1}).is_ok());
}

TEST(TensorOps, ResizeCubicAndAntialiasPreserveConstantsAndRamps) {
  // Interpolation weights sum to 1: a constant image stays constant in every mode.
  Tensor x = Tensor::make(DataType::kFloat32, {1, 1, 6, 7}).take();
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = 3.25f;
  for (int antialias : {0, 1})
    for (int excl : {0, 1})
      for (const char* mode : {"linear", "cubic"}) {
        std::map<std::string, Attribute> a = {
            {"mode", attr_s(mode)}, {"exclude_outside", attr_i(excl)}, {"antialias", attr_i(antialias)}};
        auto y = run_op("Resize", a, {x, Tensor(), f32({1, 1, 0.4f, 1.7f})}, 1, 18, {2});
        ASSERT_TRUE(y.is_ok()) << y.message();
        for (int64_t i = 0; i < y.value()[0].numel(); ++i) ASSERT_NEAR(at(y.value()[0], i), 3.25f, 1e-5);
      }
  // Cubic with align_corners reproduces a linear ramp inside the image.
  Tensor r = Tensor::make(DataType::kFloat32, {1, 1, 1, 8}).take();
  for (int64_t i = 0; i < 8; ++i) r.data_as<float>()[i] = float(i);
  auto y = run_op("Resize", {{"mode", attr_s("cubic")}, {"coordinate_transformation_mode", attr_s("align_corners")}},
                  {r, Tensor(), Tensor(), i64({1, 1, 1, 15})}, 1, 13, {3});
  ASSERT_TRUE(y.is_ok()) << y.message();
  for (int64_t i = 2; i < 13; ++i) EXPECT_NEAR(at(y.value()[0], i), i * 0.5f, 1e-4);
  // axes + keep_aspect_ratio_policy (opset 18).
  auto k = run_op("Resize", {{"axes", attr_ints({2, 3})}, {"keep_aspect_ratio_policy", attr_s("not_larger")}},
                  {x, Tensor(), Tensor(), i64({3, 100})}, 1, 18, {3});
  ASSERT_TRUE(k.is_ok()) << k.message();
  EXPECT_EQ(k.value()[0].dims(), (std::vector<int64_t>{1, 1, 3, 4}));  // scale 0.5: 7 * 0.5 rounds to 4
  EXPECT_FALSE(run_op("Resize", {{"mode", attr_s("nearest")}, {"antialias", attr_i(1)}},
                      {x, Tensor(), f32({1, 1, 2, 2})}, 1, 18, {2})
                   .is_ok());
  EXPECT_FALSE(run_op("Resize", {}, {x, Tensor(), f32({1, 1, 2})}, 1, 13, {2}).is_ok());
  EXPECT_FALSE(run_op("Resize", {{"coordinate_transformation_mode", attr_s("half_pixel_symmetric")}},
                      {x, Tensor(), f32({1, 1, 2, 2})}, 1, 18, {2})
                   .is_ok());
}

TEST(TensorOps, ResizeTfCropAndResizeExtrapolates) {
  Tensor x = iota({1, 1, 4, 4});
  auto y = run_op("Resize",
                  {{"mode", attr_s("linear")},
                   {"coordinate_transformation_mode", attr_s("tf_crop_and_resize")},
                   {"extrapolation_value", attr_f(-9)}},
                  {x, f32({0, 0, 0.5f, 0.5f, 1, 1, 1.5f, 1.5f}), Tensor(), i64({1, 1, 3, 3})}, 1, 13, {1, 3});
  ASSERT_TRUE(y.is_ok()) << y.message();
  const Tensor& o = y.value()[0];
  // Rows/cols map to 1.5, 3.0, 4.5 (the last beyond the edge, 3).
  EXPECT_NEAR(at(o, 0), 1.5f * 4 + 1.5f, 1e-5);
  EXPECT_NEAR(at(o, 4), 3.f * 4 + 3.f, 1e-5);
  EXPECT_EQ(at(o, 2), -9.f);
  EXPECT_EQ(at(o, 6), -9.f);
}

TEST(TensorOps, HostileSizesAreRefused) {
  Tensor x = random_tensor({2, 3}, 13);
  const int64_t huge = int64_t(1) << 62;
  EXPECT_FALSE(run_op("Tile", {}, {x, i64({huge, 4})}, 1, 13, {1}).is_ok());
  EXPECT_FALSE(run_op("Expand", {}, {x, i64({huge, 1 << 20, 3})}, 1, 13, {1}).is_ok());
  EXPECT_FALSE(run_op("Pad", {}, {x, i64({huge, 0, 0, 0})}, 1, 13, {1}).is_ok());
  EXPECT_FALSE(run_op("ConstantOfShape", {}, {i64({huge, huge})}, 1, 13, {0}).is_ok());
  EXPECT_FALSE(run_op("Reshape", {}, {x, i64({-1, -2})}, 1, 13, {1}).is_ok());
  EXPECT_FALSE(
      run_op("Range", {},
             {make_tensor<int64_t>(DataType::kInt64, {}, {INT64_MIN}),
              make_tensor<int64_t>(DataType::kInt64, {}, {INT64_MAX}), make_tensor<int64_t>(DataType::kInt64, {}, {1})},
             1, 13, {0, 1, 2})
          .is_ok());
  EXPECT_FALSE(run_op("Resize", {}, {x, Tensor(), f32({1e9f, 1e9f})}, 1, 13, {2}).is_ok());
  EXPECT_FALSE(run_op("Resize", {{"mode", attr_s("linear")}}, {x, Tensor(), f32({1, 0})}, 1, 18, {2}).is_ok());
  EXPECT_FALSE(run_op("DepthToSpace", {{"blocksize", attr_i(huge)}}, {random_tensor({1, 4, 2, 2}, 1)}, 1, 13).is_ok());
  EXPECT_FALSE(run_op("Slice", {}, {x, i64({0}), i64({1}), i64({5}), i64({1})}, 1, 13, {1, 2, 3, 4}).is_ok());
  EXPECT_FALSE(run_op("Gather", {{"axis", attr_i(2)}}, {x, i64({0})}).is_ok());
}

}  // namespace
}  // namespace infera::test
