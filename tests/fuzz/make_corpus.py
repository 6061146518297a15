#!/usr/bin/env python3
"""Write the seed corpus of the fuzz_model and fuzz_tensor_file targets.

    python3 tests/fuzz/make_corpus.py --out build-fuzz/corpus [--node-tests N]
    python3 tests/fuzz/make_corpus.py --seeds tests/fuzz/seeds     (the committed seed corpora)

Writes OUT/model/*.onnx (small hand-made models covering the op families, several with a symbolic
batch) plus up to N small node-test models from /usr/share/libonnx-testdata (copied, never
committed), and OUT/tensor/* (.npy and TensorProto .pb files). Needs PyPI onnx + numpy.
"""
import argparse
import glob
import io
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64
RNG = np.random.default_rng(0)


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def w(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def hand_models():
    N = "N"
    m = {}
    m["conv_relu"] = model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["y"])],
        [vi("x", [N, 3, 8, 8])], [vi("y", [N, 4, 8, 8])], [init("w", w((4, 3, 3, 3))), init("b", w(4))])
    m["conv_group_dil"] = model([
        helper.make_node("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 2], strides=[2, 1], auto_pad="SAME_UPPER")],
        [vi("x", [N, 4, 9, 7])], [vi("y", None)], [init("w", w((4, 2, 3, 3)))])
    m["convtranspose"] = model([
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])],
        [vi("x", [N, 2, 4, 4])], [vi("y", None)], [init("w", w((2, 3, 3, 3)))])
    m["reshape_shape"] = model([
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
        helper.make_node("Concat", ["n1", "m1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [vi("x", [N, 3, 4, 4])], [vi("y", None)],
        [init("i0", np.array(0, np.int64)), init("ax0", np.array([0], np.int64)), init("m1", np.array([-1], np.int64))])
    m["flatten_gemm"] = model([
        helper.make_node("Flatten", ["x"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1, alpha=0.5, beta=2.0)],
        [vi("x", [N, 2, 3, 2])], [vi("y", [N, 5])], [init("w", w((5, 12))), init("b", w(5))])
    m["matmul_add"] = model([
        helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["y"])],
        [vi("x", [N, 3, 6])], [vi("y", None)], [init("w", w((6, 4))), init("b", w(4))])
    m["pools"] = model([
        helper.make_node("MaxPool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
        helper.make_node("AveragePool", ["a"], ["b"], kernel_shape=[2, 2], count_include_pad=1, pads=[0, 0, 1, 1]),
        helper.make_node("GlobalAveragePool", ["b"], ["c"]),
        helper.make_node("GlobalMaxPool", ["x"], ["d"])],
        [vi("x", [N, 2, 9, 9])], [vi("c", None), vi("d", None)])
    m["concat_split_slice_gather"] = model([
        helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
        helper.make_node("Split", ["c", "sp"], ["s0", "s1"], axis=1),
        helper.make_node("Slice", ["s0", "st", "en", "ax", "stp"], ["sl"]),
        helper.make_node("Gather", ["sl", "idx"], ["y"], axis=2)],
        [vi("x", [N, 3, 6, 6])], [vi("y", None), vi("s1", None)],
        [init("sp", np.array([2, 4], np.int64)), init("st", np.array([0, 5], np.int64)),
         init("en", np.array([-1, -100], np.int64)), init("ax", np.array([2, 3], np.int64)),
         init("stp", np.array([1, -2], np.int64)), init("idx", np.array([[0, -1], [1, 2]], np.int64))])
    m["resize"] = model([
        helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", coordinate_transformation_mode="align_corners")],
        [vi("x", [N, 2, 3, 4])], [vi("y", None)], [init("scales", np.array([1, 1, 2, 1.5], np.float32))])
    m["resize_nearest_sizes"] = model([
        helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", nearest_mode="floor")],
        [vi("x", [1, 2, 3, 4])], [vi("y", None)], [init("sizes", np.array([1, 2, 7, 5], np.int64))])
    m["pad"] = model([
        helper.make_node("Pad", ["x", "pads", "v"], ["y"], mode="constant"),
        helper.make_node("Pad", ["x", "pads"], ["z"], mode="reflect")],
        [vi("x", [N, 2, 4, 4])], [vi("y", None), vi("z", None)],
        [init("pads", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)), init("v", np.array(0.5, np.float32))])
    m["reduce"] = model([
        helper.make_node("ReduceMean", ["x"], ["a"], axes=[2, 3], keepdims=1),
        helper.make_node("ReduceSum", ["x", "ax"], ["b"], keepdims=0),
        helper.make_node("ReduceMax", ["x"], ["c"], axes=[-1], keepdims=0),
        helper.make_node("ArgMax", ["x"], ["d"], axis=1, keepdims=0)],
        [vi("x", [N, 3, 4, 5])], [vi("a", None), vi("b", None), vi("c", None), vi("d", None, I64)],
        [init("ax", np.array([1], np.int64))])
    m["topk"] = model([
        helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1, largest=1, sorted=1)],
        [vi("x", [N, 3, 7])], [vi("v", None), vi("i", None, I64)], [init("k", np.array([3], np.int64))])
    m["norm_softmax"] = model([
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"]),
        helper.make_node("InstanceNormalization", ["bn", "s", "b"], ["inn"]),
        helper.make_node("LRN", ["inn"], ["l"], size=3),
        helper.make_node("Softmax", ["l"], ["y"], axis=1)],
        [vi("x", [N, 3, 4, 4])], [vi("y", None)],
        [init("s", w(3)), init("b", w(3)), init("m", w(3)), init("v", np.abs(w(3)) + 0.1)])
    m["elementwise_chain"] = model([
        helper.make_node("Mul", ["x", "c"], ["a"]), helper.make_node("Sigmoid", ["a"], ["b"]),
        helper.make_node("Clip", ["b", "lo", "hi"], ["c2"]), helper.make_node("Pow", ["c2", "two"], ["d"]),
        helper.make_node("Where", ["cond", "d", "x"], ["y"])],
        [vi("x", [N, 3, 4]), vi("cond", [1, 4], TensorProto.BOOL)], [vi("y", None)],
        [init("c", w((3, 1))), init("lo", np.array(0.1, np.float32)), init("hi", np.array(0.9, np.float32)),
         init("two", np.array(2, np.float32))])
    m["expand_tile_transpose"] = model([
        helper.make_node("Expand", ["x", "shp"], ["e"]),
        helper.make_node("Tile", ["e", "rep"], ["t"]),
        helper.make_node("Transpose", ["t"], ["y"], perm=[2, 0, 1])],
        [vi("x", [N, 1, 3]), vi("shp", [3], I64)], [vi("y", None)], [init("rep", np.array([1, 2, 1], np.int64))])
    m["const_of_shape_range"] = model([
        helper.make_node("ConstantOfShape", ["shp"], ["c"], value=numpy_helper.from_array(np.array([1.5], np.float32))),
        helper.make_node("Range", ["st", "lim", "dl"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=F),
        helper.make_node("Add", ["c", "rf"], ["y"])],
        [vi("shp", [2], I64)], [vi("y", None)],
        [init("st", np.array(0, np.int64)), init("lim", np.array(4, np.int64)), init("dl", np.array(1, np.int64))])
    m["depth_space"] = model([
        helper.make_node("DepthToSpace", ["x"], ["d"], blocksize=2, mode="CRD"),
        helper.make_node("SpaceToDepth", ["d"], ["y"], blocksize=2)],
        [vi("x", [N, 8, 2, 3])], [vi("y", None)])
    m["squeeze_unsqueeze_opset11"] = model([
        helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, -1]),
        helper.make_node("Squeeze", ["u"], ["y"], axes=[0])],
        [vi("x", [N, 3])], [vi("y", None)], opset=11)
    m["upsample_opset9"] = model([
        helper.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")],
        [vi("x", [N, 1, 2, 2])], [vi("y", None)], [init("sc", np.array([1, 1, 2, 2], np.float32))], opset=9)
    return m


def tensors():
    t = {}
    for name, arr in [("f32", RNG.standard_normal((2, 3)).astype(np.float32)),
                      ("i64", np.arange(6, dtype=np.int64).reshape(3, 2)),
                      ("bool", np.array([True, False])), ("scalar", np.array(3.5, np.float64)),
                      ("f16", np.ones((2, 2), np.float16)), ("empty", np.zeros((0, 3), np.float32))]:
        b = io.BytesIO()
        np.save(b, arr)
        t[name + ".npy"] = b.getvalue()
        t[name + ".pb"] = numpy_helper.from_array(arr, name).SerializeToString()
    return t


def npy_header_seeds():
    """Header texts (what follows the length field of a .npy) for fuzz_npy_header."""
    h = {}
    for name, arr in [("f32_2x3", np.zeros((2, 3), np.float32)), ("u8_5", np.zeros(5, np.uint8)),
                      ("bool_2x2", np.zeros((2, 2), bool)), ("i1_scalar", np.array(1, np.int8)),
                      ("u1_0x4", np.zeros((0, 4), np.uint8))]:
        b = io.BytesIO()
        np.save(b, arr)
        raw = b.getvalue()
        hlen = raw[8] | (raw[9] << 8)
        h[name] = raw[10:10 + hlen]
    h["double_quotes"] = b'{"descr": "|u1", "fortran_order": False, "shape": (3,)}'
    h["reordered_no_comma"] = b"{'shape': (1, 2), 'fortran_order': False, 'descr': '|b1'}"
    h["fortran"] = b"{'descr': '|u1', 'fortran_order': True, 'shape': (2, 2), }"
    h["whitespace"] = b"\t{ 'descr' :'|i1' ,\n'fortran_order':False,'shape':( 2 , 1 , ) }\n   "
    h["shape_float"] = b"{'descr': '|u1', 'fortran_order': False, 'shape': (2.4,), }"
    h["not_dict"] = b"'descr': '|u1', 'fortran_order': False, 'shape': (2, 4),"
    return h


def tensor_pb_seeds():
    """Serialized TensorProtos for fuzz_tensor_pb: each storage form and a few refusals."""
    t = {}
    t["f32_raw"] = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "a")
    t["i64_raw"] = numpy_helper.from_array(np.arange(4, dtype=np.int64), "b")
    t["f16_raw"] = numpy_helper.from_array(np.ones((2, 2), np.float16), "c")
    t["f64_scalar"] = numpy_helper.from_array(np.array(2.5), "d")
    t["empty"] = numpy_helper.from_array(np.zeros((0, 3), np.float32), "e")
    t["f32_typed"] = helper.make_tensor("f", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    t["i32_typed"] = helper.make_tensor("g", TensorProto.INT32, [2], [7, -7])
    t["bool_raw_noncanonical"] = helper.make_tensor("h", TensorProto.BOOL, [4], b"\x02\xff\x00\x01", raw=True)
    t["bool_typed"] = helper.make_tensor("i", TensorProto.BOOL, [3], [1, 0, 5])
    t["u8_typed"] = helper.make_tensor("j", TensorProto.UINT8, [2], [1, 255])
    ext = helper.make_tensor("k", TensorProto.FLOAT, [2], [0.0, 0.0])
    ext.ClearField("float_data")
    ext.data_location = TensorProto.EXTERNAL
    e = ext.external_data.add()
    e.key, e.value = "location", "weights.bin"
    t["external_refused"] = ext
    huge = TensorProto()
    huge.name, huge.data_type = "l", TensorProto.FLOAT
    huge.dims.extend([1 << 40, 1 << 40])
    t["huge_dims"] = huge
    return {k: v.SerializeToString() for k, v in t.items()}


def write_seeds(root):
    """The committed seed corpora (tests/fuzz/seeds): regenerate with --seeds tests/fuzz/seeds."""
    for sub, seeds, ext in (("npy_header", npy_header_seeds(), ".txt"), ("tensor_pb", tensor_pb_seeds(), ".pb"),
                            ("model", hand_models(), ".onnx"), ("tensor", tensors(), "")):
        d = os.path.join(root, sub)
        os.makedirs(d, exist_ok=True)
        for name, b in seeds.items():
            open(os.path.join(d, name + ext), "wb").write(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--seeds", help="write the small committed seed corpora into this folder and stop")
    ap.add_argument("--node-tests", type=int, default=400)
    ap.add_argument("--max-bytes", type=int, default=4096)
    a = ap.parse_args()
    if a.seeds:
        write_seeds(a.seeds)
        return
    if not a.out:
        ap.error("--out is required")
    mdir, tdir = os.path.join(a.out, "model"), os.path.join(a.out, "tensor")
    os.makedirs(mdir, exist_ok=True)
    os.makedirs(tdir, exist_ok=True)
    for name, b in hand_models().items():
        open(os.path.join(mdir, name + ".onnx"), "wb").write(b)
    n = 0
    for p in sorted(glob.glob("/usr/share/libonnx-testdata/data/node/*/model.onnx")):
        if n >= a.node_tests or os.path.getsize(p) > a.max_bytes:
            continue
        shutil.copy(p, os.path.join(mdir, "node_" + os.path.basename(os.path.dirname(p)) + ".onnx"))
        n += 1
        for q in glob.glob(os.path.join(os.path.dirname(p), "test_data_set_0", "input_0.pb"))[: 1 if n % 8 == 0 else 0]:
            shutil.copy(q, os.path.join(tdir, "node_%d.pb" % n))
    for name, b in tensors().items():
        open(os.path.join(tdir, name), "wb").write(b)
    print("corpus: %d hand models, %d node-test models, %d tensor files in %s" %
          (len(hand_models()), n, len(os.listdir(tdir)), a.out))


if __name__ == "__main__":
    main()
