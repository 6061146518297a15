// Hardening regressions (issue 7): the .npy header grammar, bool bytes, atomic save_npy, omitted
// and missing node outputs, enforced limits (rank, attribute lists, memory limits), and the
// memory planner against the quadratic form it replaced. tests/hostile/ runs the CLI cases.
#include <dirent.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <numeric>
#include <random>

#include "frontend/onnx/import.h"
#include "infera/limits.h"
#include "onnx_model_builder.h"
#include "op_test_util.h"
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "plan/plan.h"
#include "runtime/tensor_io.h"

namespace infera {
namespace {

// ------------------------------------------------------------------------------ .npy header

std::string numpy_header(const std::string& dict) {
  // What numpy writes: the dict, spaces to a multiple of 64 bytes (with the 10-byte prefix), '\n'.
  std::string h = dict;
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  return h;
}

std::string npy_file(const std::string& dict, const std::string& payload) {
  std::string h = numpy_header(dict);
  std::string f("\x93NUMPY\x01\x00", 8);
  f += static_cast<char>(h.size() & 0xff);
  f += static_cast<char>(h.size() >> 8);
  return f + h + payload;
}

TEST(NpyHeader, AcceptsWhatNumpyWritesAndPythonVariants) {
  struct Ok {
    std::string text;
    std::string descr;
    std::vector<int64_t> shape;
  } cases[] = {
      {numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), "<f4", {2, 3}},
      {"{'descr': '|b1', 'fortran_order': False, 'shape': (7,), }", "|b1", {7}},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (), }", "<i8", {}},
      {"{\"shape\": (1,2,3), \"descr\": \"<f8\", \"fortran_order\": False}", "<f8", {1, 2, 3}},
      {"\t{ 'descr' :'<f2' ,\n'fortran_order':False,'shape':( 0 , 5 , ) }\n  ", "<f2", {0, 5}},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (0,)}", "<f4", {0}},
  };
  for (const Ok& c : cases) {
    NpyHeader h;
    Status s = parse_npy_header(c.text, h);
    ASSERT_TRUE(s.is_ok()) << c.text << ": " << s.message();
    EXPECT_EQ(h.descr, c.descr) << c.text;
    EXPECT_EQ(h.shape, c.shape) << c.text;
    EXPECT_FALSE(h.fortran_order);
  }
  NpyHeader h;
  ASSERT_TRUE(parse_npy_header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,)}", h).is_ok());
  EXPECT_TRUE(h.fortran_order);
}

TEST(NpyHeader, RefusesWhatNumpyRefuses) {
  struct Bad {
    std::string text;
    const char* needle;
  } cases[] = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.4,), }", "tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 x 4), }", "expected ',' or ')'"},
      {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 4),", "not a dict"},
      {"['descr', '<f4']", "not a dict"},
      {"{'descr': '<f4', 'fortran_order': False}", "no 'shape'"},
      {"{'descr': '<f4', 'shape': (1,)}", "no 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (1,)}", "no 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 0}", "unexpected key"},
      {"{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (1,)}", "twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "after the dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (8)}", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [8]}", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3)}", "negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (01,)}", "leading zero"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1e3,)}", "tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,,2)}", "tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", "tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", "after the value of 'descr'"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "expected ':'"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}", "unsupported character"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999,)}", "2^40"},
      {"", "not a dict"},
  };
  for (const Bad& c : cases) {
    NpyHeader h;
    Status s = parse_npy_header(c.text, h);
    ASSERT_FALSE(s.is_ok()) << "accepted: " << c.text;
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << c.text << " -> " << s.message();
  }
  // Rank: 32 dims parse, 33 do not.
  std::string dims32, dims33;
  for (int i = 0; i < 32; ++i) dims32 += "1, ";
  dims33 = dims32 + "1, ";
  NpyHeader h;
  EXPECT_TRUE(parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims32 + ")}", h).is_ok());
  EXPECT_EQ(h.shape.size(), 32u);
  EXPECT_FALSE(parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims33 + ")}", h).is_ok());
}

TEST(NpyHeader, LongRunsAnywhereAreSafe) {
  // std::regex recursed once per character: ~40 KB was a SIGSEGV. 1 MB runs here, in every spot.
  const std::string ws(1 << 20, ' '), xs(1 << 20, 'x'), nines(1 << 20, '9');
  NpyHeader h;
  EXPECT_TRUE(
      parse_npy_header("{'descr':" + ws + "'<f4', 'fortran_order': False, 'shape': (1," + ws + "2)}", h).is_ok());
  EXPECT_EQ(h.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(parse_npy_header("{'descr': '" + xs + "', 'fortran_order': False, 'shape': (1,)}", h).is_ok() &&
               h.descr == "<f4");
  EXPECT_FALSE(parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (" + nines + ",)}", h).is_ok());
  EXPECT_FALSE(parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (" + xs + ",)}", h).is_ok());
  EXPECT_FALSE(parse_npy_header(std::string(1 << 20, '{'), h).is_ok());
  EXPECT_FALSE(parse_npy_header(std::string(1 << 20, '('), h).is_ok());
}

TEST(NpyHeader, RandomMutationsNeverCrashAndAcceptOnlyValidShapes) {
  const std::string base = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const char alphabet[] = "{}()[],:'\" \n\t0123456789-.xTrueFalsdcpho_";
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string s = base;
    const int edits = 1 + rng() % 4;
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % (s.size() + 1);
      const char c = alphabet[rng() % (sizeof alphabet - 1)];
      switch (rng() % 3) {
        case 0: s.insert(s.begin() + at, c); break;
        case 1:
          if (at < s.size()) s.erase(at, 1);
          break;
        default:
          if (at < s.size()) s[at] = c;
      }
    }
    NpyHeader h;
    if (parse_npy_header(s, h).is_ok()) {
      EXPECT_LE(h.shape.size(), static_cast<size_t>(limits::kMaxRank));
      for (int64_t d : h.shape) EXPECT_GE(d, 0) << s;
    }
  }
}

// ------------------------------------------------------------------------------ bool bytes

TEST(TensorFiles, BoolBytesFromNpyAndRawDataBecomeZeroOrOne) {
  const std::string raw("\x02\xff\x00\x01", 4);
  auto t = tensor_from_npy_bytes(npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", raw), "t.npy");
  ASSERT_TRUE(t.is_ok()) << t.message();
  const uint8_t want[] = {1, 1, 0, 1};
  EXPECT_EQ(0, std::memcmp(t.value().data(), want, 4));

  onnx::TensorProto tp;
  tp.set_data_type(onnx::TensorProto::BOOL);
  tp.add_dims(4);
  tp.set_raw_data(raw);
  auto p = tensor_from_proto(tp, "", "t");
  ASSERT_TRUE(p.is_ok()) << p.message();
  EXPECT_EQ(0, std::memcmp(p.value().data(), want, 4));
  // The .pb file path too.
  auto pb = tensor_from_pb_bytes(tp.SerializeAsString(), "t.pb");
  ASSERT_TRUE(pb.is_ok()) << pb.message();
  EXPECT_EQ(0, std::memcmp(pb.value().data(), want, 4));
}

TEST(TensorFiles, TensorProtoRankAndAttributeLimits) {
  onnx::TensorProto tp;
  tp.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < limits::kMaxRank + 1; ++i) tp.add_dims(1);
  tp.add_float_data(1.f);
  auto r = tensor_from_proto(tp, "", "t");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("more than the limit of 32"), std::string::npos) << r.message();
}

// ------------------------------------------------------------------------------ save_npy

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/infera_hardening_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { (void)!system(("rm -rf '" + path + "'").c_str()); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    DIR* d = opendir(path.c_str());
    while (dirent* e = d ? readdir(d) : nullptr)
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) out.push_back(e->d_name);
    if (d) closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(SaveNpy, ReplacesAPlantedSymlinkAndNeverWritesThroughIt) {
  TempDir d;
  const std::string victim = d.path + "/victim", out = d.path + "/y.npy";
  std::ofstream(victim) << "precious";
  ASSERT_EQ(0, symlink(victim.c_str(), out.c_str()));
  Tensor t = test::random_tensor({2, 3}, 5);
  ASSERT_TRUE(save_npy(out, t).is_ok());
  EXPECT_EQ(read_all(victim), "precious");
  struct stat st;
  ASSERT_EQ(0, lstat(out.c_str(), &st));
  EXPECT_TRUE(S_ISREG(st.st_mode));
  auto back = load_tensor_file(out);
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(back.value().dims(), t.dims());
  EXPECT_EQ(0, std::memcmp(back.value().data(), t.data(), t.nbytes()));
  EXPECT_EQ(d.entries(), (std::vector<std::string>{"victim", "y.npy"})) << "a temporary was left behind";
}

TEST(SaveNpy, FailuresLeaveNoFileBehind) {
  TempDir d;
  Tensor t = test::random_tensor({4}, 1);
  Status s = save_npy(d.path + "/missing/y.npy", t);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kIo);
  ASSERT_EQ(0, mkdir((d.path + "/y.npy").c_str(), 0755));  // the output name is taken by a folder
  s = save_npy(d.path + "/y.npy", t);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(d.entries(), (std::vector<std::string>{"y.npy"})) << "a temporary was left behind";
  EXPECT_FALSE(save_npy(d.path + "/..", t).is_ok());
}

// ------------------------------------------------------------------------------ models

using test::ModelBuilder;
using test::set_int;
using test::set_ints;
// Every (optimize, backend) combination a user can pick.
const std::pair<bool, bool> kModes[] = {{true, true}, {true, false}, {false, true}, {false, false}};

TEST(OmittedOutputs, MaxPoolWithOnlyIndices) {
  ModelBuilder b;
  b.input("x", {1, 2, 4, 4});
  auto* mp = b.node("MaxPool", {"x"}, {"", "idx"}, "mp");
  set_ints(mp, "kernel_shape", {2, 2});
  set_ints(mp, "strides", {2, 2});
  b.output("idx");
  Tensor x = test::random_tensor({1, 2, 4, 4}, 3);
  const float* p = x.data_as<float>();
  std::vector<int64_t> want;
  for (int c = 0; c < 2; ++c)
    for (int oy = 0; oy < 2; ++oy)
      for (int ox = 0; ox < 2; ++ox) {
        int64_t best = -1;
        for (int ky = 0; ky < 2; ++ky)
          for (int kx = 0; kx < 2; ++kx) {
            int64_t i = c * 16 + (oy * 2 + ky) * 4 + ox * 2 + kx;
            if (best < 0 || p[i] > p[best]) best = i;
          }
        want.push_back(best);
      }
  for (auto [opt, dnnl] : kModes) {
    auto s = b.load(opt, dnnl);
    ASSERT_TRUE(s.is_ok()) << s.message();
    auto r = s.value()->run({{"x", x}});
    ASSERT_TRUE(r.is_ok()) << r.message();
    ASSERT_EQ(r.value()[0].dtype(), DataType::kInt64);
    EXPECT_EQ(std::vector<int64_t>(r.value()[0].data_as<int64_t>(), r.value()[0].data_as<int64_t>() + 8), want)
        << "optimize " << opt << " dnnl " << dnnl;
  }
}

TEST(OmittedOutputs, BatchNormTrainingWithOnlyStatistics) {
  ModelBuilder b(15);
  b.input("x", {2, 3, 2, 2});
  b.floats("s", {3}, {1, 1, 1});
  b.floats("b", {3}, {0, 0, 0});
  b.floats("m", {3}, {0.5f, -1.f, 2.f});
  b.floats("v", {3}, {1.f, 0.5f, 4.f});
  auto* bn = b.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"", "rm", "rv"}, "bn");
  set_int(bn, "training_mode", 1);
  auto* mom = bn->add_attribute();
  mom->set_name("momentum");
  mom->set_type(onnx::AttributeProto::FLOAT);
  mom->set_f(0.75f);
  b.output("rm");
  b.output("rv");
  Tensor x = test::random_tensor({2, 3, 2, 2}, 9);
  const float mean0[] = {0.5f, -1.f, 2.f}, var0[] = {1.f, 0.5f, 4.f};
  for (auto [opt, dnnl] : kModes) {
    auto s = b.load(opt, dnnl);
    ASSERT_TRUE(s.is_ok()) << s.message();
    auto r = s.value()->run({{"x", x}});
    ASSERT_TRUE(r.is_ok()) << r.message();
    for (int c = 0; c < 3; ++c) {
      double sum = 0, sq = 0;
      for (int n = 0; n < 2; ++n)
        for (int i = 0; i < 4; ++i) sum += x.data_as<float>()[(n * 3 + c) * 4 + i];
      const double bm = sum / 8;
      for (int n = 0; n < 2; ++n)
        for (int i = 0; i < 4; ++i) sq += std::pow(x.data_as<float>()[(n * 3 + c) * 4 + i] - bm, 2);
      const double bv = sq / 8;
      EXPECT_NEAR(r.value()[0].data_as<float>()[c], mean0[c] * 0.75 + bm * 0.25, 1e-5);
      EXPECT_NEAR(r.value()[1].data_as<float>()[c], var0[c] * 0.75 + bv * 0.25, 1e-5);
    }
  }
}

TEST(OmittedOutputs, DropoutWithOnlyMaskAndReluWithNoneKept) {
  ModelBuilder b;
  b.input("x", {3, 4});
  b.node("Dropout", {"x"}, {"", "mask"}, "drop");
  b.node("Relu", {"x"}, {""}, "dead_relu");  // nothing reads it, and its output has no name
  b.node("Neg", {"x"}, {"y"}, "neg");
  b.output("mask");
  b.output("y");
  Tensor x = test::random_tensor({3, 4}, 4);
  for (auto [opt, dnnl] : kModes) {
    auto s = b.load(opt, dnnl);
    ASSERT_TRUE(s.is_ok()) << s.message();
    auto r = s.value()->run({{"x", x}});
    ASSERT_TRUE(r.is_ok()) << r.message();
    ASSERT_EQ(r.value()[0].dtype(), DataType::kBool);
    for (int i = 0; i < 12; ++i) {
      EXPECT_EQ(r.value()[0].data_as<uint8_t>()[i], 1);
      EXPECT_EQ(r.value()[1].data_as<float>()[i], -x.data_as<float>()[i]);
    }
  }
}

TEST(OmittedOutputs, NodesWithoutOutputsAreRefusedByName) {
  for (const char* op : {"Conv", "Constant"}) {
    ModelBuilder b;
    b.input("x", {1, 2, 4, 4});
    b.floats("w", {2, 2, 1, 1}, {1, 0, 0, 1});
    if (std::string(op) == "Conv") {
      b.node("Conv", {"x", "w"}, {}, "c0");
    } else {
      auto* a = b.node("Constant", {}, {}, "c0")->add_attribute();
      a->set_name("value_float");
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(1.f);
    }
    b.node("Neg", {"x"}, {"y"});
    b.output("y");
    for (bool opt : {true, false}) {
      auto s = b.load(opt);
      ASSERT_FALSE(s.is_ok()) << op;
      EXPECT_EQ(s.code(), StatusCode::kInvalidModel);
      EXPECT_NE(s.message().find(std::string("node 'c0' (") + op + ") has no outputs"), std::string::npos)
          << s.message();
    }
  }
}

TEST(OmittedOutputs, PlaceholderNameCannotClashWithTheFile) {
  // A value in the file already has the name the placeholder would take.
  ModelBuilder b;
  b.input("x", {4});
  b.node("Relu", {"x"}, {""}, "r");
  b.node("Neg", {"x"}, {"r:omitted_output_0"}, "n");
  b.output("r:omitted_output_0");
  auto s = b.load(false);
  ASSERT_TRUE(s.is_ok()) << s.message();
  Tensor x = test::random_tensor({4}, 2);
  auto r = s.value()->run({{"x", x}});
  ASSERT_TRUE(r.is_ok()) << r.message();
  EXPECT_EQ(r.value()[0].data_as<float>()[1], -x.data_as<float>()[1]);
}

TEST(FuzzRegressions, ConvPerAxisAttributeShorterThanTheRank) {
  // fuzz_model: a 2-D Conv with strides=[2], no kernel_shape and an unknown channel dim read
  // strides[1] (heap-buffer-overflow in the partial-shape path of inference).
  for (const char* attr : {"strides", "dilations"}) {
    ModelBuilder b(11);
    b.input("x", {1, 1, 7, 5});
    b.g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->clear_dim_value();
    b.input("W", {1, 1, 3, 3});
    set_ints(b.node("Conv", {"x", "W"}, {"y"}, "c"), attr, {2});
    b.output("y");
    auto s = b.load();
    ASSERT_FALSE(s.is_ok()) << attr;
    EXPECT_NE(s.message().find(std::string("attribute '") + attr + "' has 1 values, input X has 2 spatial dims"),
              std::string::npos)
        << s.message();
  }
}

TEST(FuzzRegressions, SplitSizesWhoseSumOverflows) {
  // fuzz_model (UBSan): 'split' sizes near 2^63 overflowed int64 while being summed.
  ModelBuilder b;
  b.input("x", {4});
  b.ints("sp", {8287186264315133954, 7278391443046140464});
  b.node("Split", {"x", "sp"}, {"a", "c"}, "split");
  b.output("a");
  b.output("c");
  auto s = b.load();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("sums to more than 2^40"), std::string::npos) << s.message();
}

TEST(FuzzRegressions, ExternalDataCheckedBeforeAllocating) {
  // fuzz_tensor_pb (12 s, 2 GB): a 424-byte TensorProto of 331M float elements whose data is
  // external, where a tensor file may have none: the 1.3 GB tensor was made (and zeroed) first.
  // Here the dims ask for 2^39 floats (2 TiB): allocating first answered with the memory limit.
  onnx::TensorProto tp;
  tp.set_data_type(onnx::TensorProto::FLOAT);
  tp.add_dims(int64_t(1) << 39);
  tp.set_data_location(onnx::TensorProto::EXTERNAL);
  auto r = tensor_from_pb_bytes(tp.SerializeAsString(), "t.pb");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.message().find("external data is not allowed here"), std::string::npos) << r.message();
}

// ------------------------------------------------------------------------------ limits

TEST(Limits, RankIsCheckedAtImportAndWhereInferenceGrowsIt) {
  {
    ModelBuilder b;
    b.input("x", std::vector<int64_t>(limits::kMaxRank + 1, 1));
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    auto s = b.load();
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("declares rank 33"), std::string::npos) << s.message();
  }
  {
    ModelBuilder b;
    b.input("x", {1});
    b.ints("ax", {0});
    std::string prev = "x";
    for (int i = 0; i < 40; ++i) {
      std::string out = i == 39 ? "y" : "t" + std::to_string(i);
      b.node("Unsqueeze", {prev, "ax"}, {out}, "u" + std::to_string(i));
      prev = out;
    }
    b.output("y");
    auto s = b.load();
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("node 'u31' (Unsqueeze): output rank 33 is more than the limit"), std::string::npos)
        << s.message();
  }
  for (const char* op : {"Reshape", "Expand", "ConstantOfShape"}) {
    // A shape input whose length is declared as 10^12: inference made a Shape of that rank.
    ModelBuilder b;
    const bool unary = std::string(op) == "ConstantOfShape";
    if (!unary) b.input("x", {1});
    b.input("s", {1000000000000}, onnx::TensorProto::INT64);
    b.node(op, unary ? std::vector<std::string>{"s"} : std::vector<std::string>{"x", "s"}, {"y"});
    b.output("y");
    auto s = b.load();
    ASSERT_FALSE(s.is_ok()) << op;
    EXPECT_NE(s.message().find("more than the limit of 32"), std::string::npos) << s.message();
  }
}

TEST(Limits, AttributeListLength) {
  ModelBuilder b;
  b.input("x", {1});
  auto* c = b.node("Constant", {}, {"c"}, "big");
  set_ints(c, "value_ints", std::vector<int64_t>(limits::kMaxAttributeElements + 1, 1));
  b.node("Add", {"x", "x"}, {"y"});
  b.output("y");
  auto s = b.load();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("attribute 'value_ints' has 1048577 elements"), std::string::npos) << s.message();
}

TEST(Limits, HostMemoryHonoursTheAddressSpaceLimit) {
  struct rlimit old;
  ASSERT_EQ(0, getrlimit(RLIMIT_AS, &old));
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  const size_t mapped = pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t room = size_t(512) << 20;
  struct rlimit lim = old;
  lim.rlim_cur = mapped + room;
  if (old.rlim_max != RLIM_INFINITY && lim.rlim_cur > old.rlim_max) GTEST_SKIP() << "hard RLIMIT_AS too low";
  ASSERT_EQ(0, setrlimit(RLIMIT_AS, &lim));
  const size_t seen = host_memory_bytes();
  auto t = Tensor::make(DataType::kFloat32, {int64_t(1) << 28});  // 1 GiB: more than the room left
  ASSERT_EQ(0, setrlimit(RLIMIT_AS, &old));
  EXPECT_LE(seen, room) << "host_memory_bytes ignores RLIMIT_AS";
  EXPECT_GT(seen, size_t(0));
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.code(), StatusCode::kOutOfMemory);
}

// ------------------------------------------------------------------------------ plan_memory

// The quadratic form plan_memory had until issue 7: every buffer against every placed one.
size_t plan_memory_quadratic(const std::vector<size_t>& size, const std::vector<int>& first,
                             const std::vector<int>& last, std::vector<int64_t>& offsets) {
  const size_t n = size.size();
  offsets.assign(n, -1);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size[a] > size[b]; });
  std::vector<size_t> placed;
  size_t arena = 0;
  for (size_t i : order) {
    if (size[i] == 0) continue;
    const size_t need = (size[i] + 63) / 64 * 64;
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed)
      if (first[j] <= last[i] && first[i] <= last[j]) busy.emplace_back(offsets[j], (size[j] + 63) / 64 * 64);
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cur = 0;
    for (auto& [off, len] : busy) {
      if (off >= cur + need && off - cur < best_gap) {
        best = cur;
        best_gap = off - cur;
      }
      cur = std::max(cur, off + len);
    }
    if (best == SIZE_MAX) best = cur;
    offsets[i] = static_cast<int64_t>(best);
    arena = std::max(arena, best + need);
    placed.push_back(i);
  }
  return arena;
}

void expect_no_overlap(const std::vector<size_t>& size, const std::vector<int>& first, const std::vector<int>& last,
                       const std::vector<int64_t>& off, size_t arena, size_t align) {
  const size_t n = size.size();
  for (size_t i = 0; i < n; ++i) {
    if (size[i] == 0) {
      EXPECT_EQ(off[i], -1);
      continue;
    }
    ASSERT_GE(off[i], 0);
    EXPECT_EQ(static_cast<size_t>(off[i]) % align, 0u);
    EXPECT_LE(off[i] + static_cast<int64_t>(size[i]), static_cast<int64_t>(arena));
    for (size_t j = 0; j < i; ++j) {
      if (size[j] == 0 || first[i] > last[j] || first[j] > last[i]) continue;
      const bool disjoint =
          off[i] + static_cast<int64_t>(size[i]) <= off[j] || off[j] + static_cast<int64_t>(size[j]) <= off[i];
      ASSERT_TRUE(disjoint) << "buffers " << i << " and " << j << " overlap while both live";
    }
  }
}

TEST(PlanMemory, SameOffsetsAsTheQuadraticForm) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 1 + rng() % 150, steps = 1 + rng() % 60;
    std::vector<size_t> size(n);
    std::vector<int> first(n), last(n);
    for (int i = 0; i < n; ++i) {
      // Repeated sizes exercise the tie order; zeros stay out of the arena.
      size[i] = rng() % 4 == 0 ? 0 : (rng() % 3 == 0 ? 4096 : rng() % 20000);
      first[i] = rng() % steps;
      last[i] = first[i] + (rng() % 5 == 0 ? rng() % steps : rng() % 4);
    }
    std::vector<int64_t> want, got;
    const size_t a = plan_memory_quadratic(size, first, last, want);
    const size_t b = plan_memory(size, first, last, got);
    ASSERT_EQ(a, b) << "trial " << trial;
    ASSERT_EQ(want, got) << "trial " << trial;
  }
}

TEST(PlanMemory, AlignmentParameter) {
  std::mt19937 rng(7);
  for (size_t align : {size_t(64), size_t(256), size_t(4096)}) {
    const int n = 200;
    std::vector<size_t> size(n);
    std::vector<int> first(n), last(n);
    for (int i = 0; i < n; ++i) {
      size[i] = 1 + rng() % 10000;
      first[i] = rng() % 100;
      last[i] = first[i] + rng() % 8;
    }
    std::vector<int64_t> off;
    const size_t arena = plan_memory(size, first, last, off, align);
    expect_no_overlap(size, first, last, off, arena, align);
  }
}

TEST(PlanMemory, WideGraphsTakeTheLinearPathAndStayValid) {
  // 4000 values alive at once (8M overlapping pairs, over the budget) plus short-lived ones.
  std::mt19937 rng(3);
  const int n = 6000;
  std::vector<size_t> size(n);
  std::vector<int> first(n), last(n);
  for (int i = 0; i < n; ++i) {
    size[i] = 1 + rng() % 5000;
    if (i < 4000) {
      first[i] = i % 50;
      last[i] = 3000;
    } else {
      first[i] = rng() % 3000;
      last[i] = first[i] + rng() % 3;
    }
  }
  std::vector<int64_t> off;
  const size_t arena = plan_memory(size, first, last, off);
  expect_no_overlap(size, first, last, off, arena, 64);
  size_t naive = 0;
  for (size_t s : size) naive += (s + 63) / 64 * 64;
  EXPECT_LE(arena, naive);
}

TEST(PlanMemory, LongChainIsPlannedInTwoBuffers) {
  const int n = 200000;
  std::vector<size_t> size(n, 1000);
  std::vector<int> first(n), last(n);
  for (int i = 0; i < n; ++i) {
    first[i] = i;
    last[i] = i + 1;
  }
  std::vector<int64_t> off;
  EXPECT_EQ(plan_memory(size, first, last, off), 2048u);
}

// ------------------------------------------------------------------------------ passes

TEST(Rewrite, UseIndexFollowsRewiringAndIdentityChainsCollapse) {
  ModelBuilder b;
  b.input("x", {4});
  std::string prev = "x";
  for (int i = 0; i < 2000; ++i) {
    std::string out = i == 1999 ? "y" : "t" + std::to_string(i);
    b.node("Identity", {prev}, {out}, "id" + std::to_string(i));
    prev = out;
  }
  b.node("Relu", {"t999"}, {"mid"}, "relu");  // a reader in the middle of the chain
  b.output("y");
  b.output("mid");
  auto g = import_onnx_bytes(b.m.SerializeAsString(), "", "chain");
  ASSERT_TRUE(g.is_ok()) << g.message();
  Graph& gr = g.value();
  {
    rewrite::UseIndex idx(gr);
    const int t0 = gr.find_value("t0"), x = gr.find_value("x");
    EXPECT_EQ(idx.count(gr, t0), 1);
    rewrite::replace_uses(gr, idx, t0, x);
    EXPECT_EQ(idx.count(gr, t0), 0);
    EXPECT_EQ(idx.count(gr, x), 2);  // id0 and id1 now
    EXPECT_EQ(rewrite::count_uses(gr, x), 2);
    EXPECT_TRUE(idx.is_graph_output(gr.find_value("y")));
  }
  auto pass = make_eliminate_identity();
  ASSERT_TRUE(pass->run(gr).is_ok());
  ASSERT_TRUE(gr.compact().is_ok());
  // Left: the last Identity (x is a graph input, y a graph output: one must stay) and Relu, which
  // now reads x.
  ASSERT_EQ(gr.nodes.size(), 2u);
  for (const Node& n : gr.nodes) EXPECT_EQ(gr.values[n.inputs[0]].name, "x");
  EXPECT_EQ(gr.values[gr.outputs[0]].name, "y");
  EXPECT_EQ(gr.values[gr.outputs[1]].name, "mid");
}

}  // namespace
}  // namespace infera
