#!/usr/bin/env python3
"""Write malformed models and inputs for infera's bad-input test, plus a manifest of the commands.

Run with the PATH python3 (PyPI onnx + numpy):
    python3 tests/badinput/make_bad_inputs.py --out DIR
Writes DIR/<case>/... and DIR/cases.json: a list of {name, what, args, expect, kind, says,
model_valid}, where args is the infera command line after the program name (absolute paths), expect
the exit code (1 for a bad case; 0 for the few positive controls that prove the harness and the good
path work), kind "run" (one-line error on stderr) or "check" (a failed test counted, no crash), and
says the words the one error line must contain: what is wrong and where (the file, node, tensor or
attribute, and the expected vs found value); a tuple in says is "one of these". model_valid (check
cases): the model loads, so the test must fail for the stated reason, not in loading. Every
malformed case states its words (main() refuses one that does not).
tests/badinput/run_bad_inputs.py runs them. Models are built with onnx.helper and never checked
with onnx.checker: most are invalid on purpose.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    sys.stderr.write("make_bad_inputs.py: needs PyPI onnx (run with the PATH python3): %s\n" % e)
    sys.exit(1)

OPSET = 13
F = TensorProto.FLOAT
RNG = np.random.default_rng(0)
CASES = []


# --- building blocks ---------------------------------------------------------------------------

def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(nodes, inputs, outputs, inits=(), opset=OPSET, ir=8, domains=()):
    g = helper.make_graph(list(nodes), "bad", list(inputs), list(outputs), list(inits))
    ops = [helper.make_operatorsetid("", opset)] + [helper.make_operatorsetid(d, 1) for d in domains]
    m = helper.make_model(g, opset_imports=ops, producer_name="infera-badinput")
    m.ir_version = ir
    return m


def conv_weight():
    return RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)


def small_cnn(weight_init=None, input_shape=("batch", 3, 8, 8), conv_attrs=None):
    """input [N,3,8,8] -> Conv(3->4, 3x3, pad 1) -> Relu -> GlobalAveragePool -> Flatten -> Gemm -> [N,2]."""
    attrs = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    attrs.update(conv_attrs or {})
    w = weight_init if weight_init is not None else numpy_helper.from_array(conv_weight(), "W")
    inits = [w,
             numpy_helper.from_array(np.zeros(4, np.float32), "B"),
             numpy_helper.from_array(RNG.standard_normal((2, 4)).astype(np.float32), "G"),
             numpy_helper.from_array(np.zeros(2, np.float32), "GB")]
    nodes = [helper.make_node("Conv", ["input", "W", "B"], ["c"], name="conv0", **attrs),
             helper.make_node("Relu", ["c"], ["r"], name="relu0"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap0"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten0", axis=1),
             helper.make_node("Gemm", ["f", "G", "GB"], ["output"], name="fc0", transB=1)]
    out_batch = input_shape[0]
    return model_of(nodes, [vi("input", list(input_shape))], [vi("output", [out_batch, 2])], inits)


def raw_tensor(name, dtype, dims, raw=None, floats=None):
    """A TensorProto built field by field: onnx.helper.make_tensor would refuse the lies we need."""
    t = TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    if floats is not None:
        t.float_data.extend(floats)
    return t


def ext_weight(location, offset=None, length=None):
    """Conv weight W as external data (no bytes inside the model)."""
    t = TensorProto()
    t.name = "W"
    t.data_type = F
    t.dims.extend([4, 3, 3, 3])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return t


class Case:
    def __init__(self, root, name, says=()):
        self.root, self.name, self.says = root, name, list(says)
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.out = os.path.join(self.dir, "out")
        os.makedirs(self.out)

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def save(self, model, fname="model.onnx"):
        with open(self.path(fname), "wb") as f:
            f.write(model.SerializeToString() if hasattr(model, "SerializeToString") else model)
        return self.path(fname)

    def add(self, what, args, expect=1, kind="run", model_valid=False):
        CASES.append(dict(name=self.name, what=what, args=args, expect=expect, kind=kind, says=self.says,
                          model_valid=model_valid))

    def run(self, what, model_path, *extra, expect=1):
        self.add(what, ["run", model_path, *extra, "--output-dir", self.out], expect)


def npy_bytes(header_dict_text, payload):
    """A .npy v1.0 file with the given header text (not validated) and payload bytes."""
    h = header_dict_text.encode("latin1")
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + payload


# --- the cases ---------------------------------------------------------------------------------

def build(root):
    good_x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    good_bytes = small_cnn().SerializeToString()
    w = conv_weight()
    outside = os.path.join(root, "_outside")  # files a path escape would reach
    os.makedirs(outside)
    with open(os.path.join(outside, "weights.bin"), "wb") as f:
        f.write(w.tobytes())
    with open(os.path.join(root, "weights.bin"), "wb") as f:  # target of ../weights.bin
        f.write(w.tobytes())

    # Positive controls: if these fail, the harness or the good path is broken, not the bad path.
    c = Case(root, "control_valid_model_random_input")
    c.run("valid model, no input (seeded random)", c.save(small_cnn()), expect=0)
    c = Case(root, "control_valid_npy_input")
    np.save(c.path("x.npy"), good_x)
    c.run("valid model and .npy input", c.save(small_cnn()), "--input", "input=" + c.path("x.npy"), expect=0)
    c = Case(root, "control_valid_external_data")
    with open(c.path("weights.bin"), "wb") as f:
        f.write(w.tobytes())
    c.run("weights in a regular file inside the model folder", c.save(small_cnn(ext_weight("weights.bin", 0, w.nbytes))),
          expect=0)

    # Model files that are not models.
    c = Case(root, "model_empty_file", says=["model.onnx", "empty"])
    c.run("0-byte model file", c.save(b""))
    c = Case(root, "model_garbage_bytes", says=["model.onnx", "not a valid ONNX model"])
    c.run("4 KiB of random bytes", c.save(RNG.integers(0, 256, 4096, dtype=np.uint8).tobytes()))
    c = Case(root, "model_truncated_half", says=["model.onnx", "not a valid ONNX model"])
    c.run("valid model cut at half its size", c.save(good_bytes[: len(good_bytes) // 2]))
    c = Case(root, "model_truncated_last_byte", says=["model.onnx", "not a valid ONNX model"])
    c.run("valid model without its last byte", c.save(good_bytes[:-1]))
    c = Case(root, "model_missing_file", says=["no_such_model.onnx", "not found"])
    c.run("model path that does not exist", c.path("no_such_model.onnx"))
    c = Case(root, "model_path_is_directory", says=["model_path_is_directory", "not a regular file"])
    c.run("model path is a folder", c.dir)
    c = Case(root, "model_no_graph", says=["model.onnx", "no graph"])
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.add().version = OPSET
    c.run("ModelProto without a graph", c.save(m))

    # External data: only a regular file inside the model's folder, within its size.
    c = Case(root, "extdata_dotdot_traversal", says=["initializer 'W'", "'../weights.bin'", "leaves the model's folder"])
    c.run("location ../weights.bin (the file exists there)", c.save(small_cnn(ext_weight("../weights.bin", 0, w.nbytes))))
    c = Case(root, "extdata_deep_traversal", says=["initializer 'W'", "'sub/../../weights.bin'", "leaves the model's folder"])
    os.makedirs(c.path("sub"))
    c.run("location sub/../../weights.bin", c.save(small_cnn(ext_weight("sub/../../weights.bin", 0, w.nbytes))))
    c = Case(root, "extdata_absolute_path", says=["initializer 'W'", "must be relative"])
    abs_path = os.path.join(outside, "weights.bin")
    c.run("absolute location to an existing file", c.save(small_cnn(ext_weight(abs_path, 0, w.nbytes))))
    c = Case(root, "extdata_symlink_outside", says=["initializer 'W'", "'weights.bin'", "symbolic link"])
    os.symlink(abs_path, c.path("weights.bin"))
    c.run("weights.bin is a symlink to a file outside the folder", c.save(small_cnn(ext_weight("weights.bin", 0, w.nbytes))))
    c = Case(root, "extdata_symlink_inside", says=["initializer 'W'", "'weights.bin'", "symbolic link"])
    with open(c.path("real.bin"), "wb") as f:
        f.write(w.tobytes())
    os.symlink("real.bin", c.path("weights.bin"))
    c.run("weights.bin is a symlink (to a file in the same folder)", c.save(small_cnn(ext_weight("weights.bin", 0, w.nbytes))))
    c = Case(root, "extdata_hard_link", says=["initializer 'W'", "'weights.bin'", "hard link"])
    os.link(abs_path, c.path("weights.bin"))
    c.run("weights.bin is a hard link to a file outside the folder", c.save(small_cnn(ext_weight("weights.bin", 0, w.nbytes))))
    c = Case(root, "extdata_offset_beyond_file", says=["initializer 'W'", "offset 496", "length 432", "432 bytes"])
    shutil.copy(abs_path, c.path("weights.bin"))
    c.run("offset past the end of the file", c.save(small_cnn(ext_weight("weights.bin", w.nbytes + 64, w.nbytes))))
    c = Case(root, "extdata_length_beyond_file", says=["initializer 'W'", "offset 16", "length 432", "432 bytes"])
    shutil.copy(abs_path, c.path("weights.bin"))
    c.run("offset + length past the end of the file", c.save(small_cnn(ext_weight("weights.bin", 16, w.nbytes))))
    c = Case(root, "extdata_length_wrong_for_dims", says=["initializer 'W'", "length 64", "432 bytes"])
    shutil.copy(abs_path, c.path("weights.bin"))
    c.run("length 64 bytes for a 432-byte tensor", c.save(small_cnn(ext_weight("weights.bin", 0, 64))))
    c = Case(root, "extdata_offset_huge", says=["initializer 'W'", "offset 9223372036854775807", "432 bytes"])
    shutil.copy(abs_path, c.path("weights.bin"))
    c.run("offset 2^63-1", c.save(small_cnn(ext_weight("weights.bin", 2 ** 63 - 1, w.nbytes))))
    c = Case(root, "extdata_missing_file", says=["initializer 'W'", "'nothere.bin'", "not found"])
    c.run("location names no file", c.save(small_cnn(ext_weight("nothere.bin", 0, w.nbytes))))
    c = Case(root, "extdata_location_is_directory", says=["initializer 'W'", "'weights.bin'", "not a regular file"])
    os.makedirs(c.path("weights.bin"))
    c.run("location is a folder", c.save(small_cnn(ext_weight("weights.bin", 0, w.nbytes))))
    # CVE-2024-27318 was a sanitizer bypass of the CVE-2022-25882 fix: other spellings of "..".
    # (small_cnn draws from RNG: its state is put back after these cases, so later data is unchanged.)
    rng_state = RNG.bit_generator.state
    c = Case(root, "extdata_backslash_traversal", says=["initializer 'W'", "backslash"])
    c.run("location ..\\weights.bin (Windows separators)",
          c.save(small_cnn(ext_weight("..\\weights.bin", 0, w.nbytes))))
    c = Case(root, "extdata_nul_in_location", says=["initializer 'W'", "NUL byte"])
    shutil.copy(abs_path, c.path("weights.bin"))
    c.run("location 'weights.bin\\0.txt' (cut at the NUL, it would read weights.bin)",
          c.save(small_cnn(ext_weight("weights.bin\0.txt", 0, w.nbytes))))
    c = Case(root, "extdata_symlinked_folder_outside", says=["initializer 'W'", "'sub/weights.bin'", "outside the model's folder"])
    outside2 = os.path.join(root, "_outside2")
    os.makedirs(outside2)
    shutil.copy(abs_path, os.path.join(outside2, "weights.bin"))  # one link (abs_path has two now)
    os.symlink(outside2, c.path("sub"))
    c.run("sub/ is a symlink to a folder outside (the file itself is regular)",
          c.save(small_cnn(ext_weight("sub/weights.bin", 0, w.nbytes))))
    c = Case(root, "extdata_fifo", says=["initializer 'W'", "'weights.bin'", "not a regular file"])
    os.mkfifo(c.path("weights.bin"))
    c.run("weights.bin is a FIFO (reading it would block)", c.save(small_cnn(ext_weight("weights.bin", 0, w.nbytes))))
    c = Case(root, "extdata_location_100k", says=["initializer 'W'", "message truncated"])
    c.run("a 100 KB location with ESC bytes", c.save(small_cnn(ext_weight("\x1b[2J" * 20000 + ".bin", 0, w.nbytes))))
    RNG.bit_generator.state = rng_state

    # Ill-formed graphs.
    x, y = vi("input", ["batch", 4]), vi("output", ["batch", 4])
    c = Case(root, "graph_cycle_two_nodes", says=["cycle", ("node 'add0' (Add)", "node 'relu0' (Relu)")])
    c.run("Add(input, b) -> a; Relu(a) -> b: a cycle", c.save(model_of(
        [helper.make_node("Add", ["input", "b"], ["a"], name="add0"),
         helper.make_node("Relu", ["a"], ["b"], name="relu0"),
         helper.make_node("Identity", ["b"], ["output"], name="id0")], [x], [y])))
    c = Case(root, "graph_self_loop", says=["cycle", "node 'add0' (Add)"])
    c.run("Add(input, a) -> a", c.save(model_of(
        [helper.make_node("Add", ["input", "a"], ["a"], name="add0"),
         helper.make_node("Identity", ["a"], ["output"], name="id0")], [x], [y])))
    c = Case(root, "graph_undefined_input_tensor", says=["node 'add0' (Add)", "'nowhere'"])
    c.run("node reads a tensor nobody defines", c.save(model_of(
        [helper.make_node("Add", ["input", "nowhere"], ["output"], name="add0")], [x], [y])))
    c = Case(root, "graph_output_never_produced", says=["graph output 'output'", "not produced"])
    c.run("graph output names no tensor", c.save(model_of(
        [helper.make_node("Relu", ["input"], ["r"], name="relu0")], [x], [y])))
    c = Case(root, "graph_duplicate_output_names", says=["tensor 'output'", "'relu0'", "'neg0'"])
    c.run("two nodes write the same tensor", c.save(model_of(
        [helper.make_node("Relu", ["input"], ["output"], name="relu0"),
         helper.make_node("Neg", ["input"], ["output"], name="neg0")], [x], [y])))
    c = Case(root, "graph_output_shadows_initializer", says=["node 'relu0' (Relu)", "'K'", "initializer"])
    c.run("node output has an initializer's name", c.save(model_of(
        [helper.make_node("Relu", ["input"], ["K"], name="relu0"),
         helper.make_node("Add", ["K", "input"], ["output"], name="add0")], [x], [y],
        [numpy_helper.from_array(np.ones(4, np.float32), "K")])))
    c = Case(root, "op_unknown", says=["node 'foo0'", "'FooBar'", "unsupported"])
    c.run("op type FooBar", c.save(model_of([helper.make_node("FooBar", ["input"], ["output"], name="foo0")], [x], [y])))
    c = Case(root, "op_unknown_domain", says=["node 'relu0'", "'com.example'", "unsupported"])
    c.run("Relu in domain com.example", c.save(model_of(
        [helper.make_node("Relu", ["input"], ["output"], name="relu0", domain="com.example")], [x], [y],
        domains=["com.example"])))
    c = Case(root, "opset_99", says=["opset 99", "7..28"])
    c.run("default-domain opset 99", c.save(model_of([helper.make_node("Relu", ["input"], ["output"])], [x], [y], opset=99)))
    c = Case(root, "ir_version_99", says=["IR version 99", "3..14"])
    c.run("IR version 99", c.save(model_of([helper.make_node("Relu", ["input"], ["output"])], [x], [y], ir=99)))

    # Attributes and shapes.
    c = Case(root, "conv_zero_stride", says=["node 'conv0' (Conv)", "'strides'", "found 0"])
    c.run("Conv strides [0, 0]", c.save(small_cnn(conv_attrs=dict(strides=[0, 0]))))
    c = Case(root, "conv_negative_pads", says=["node 'conv0' (Conv)", "'pads'", "found -1"])
    c.run("Conv pads [-1, -1, -1, -1]", c.save(small_cnn(conv_attrs=dict(pads=[-1, -1, -1, -1]))))
    c = Case(root, "conv_zero_dilation", says=["node 'conv0' (Conv)", "'dilations'", "found 0"])
    c.run("Conv dilations [0, 0]", c.save(small_cnn(conv_attrs=dict(dilations=[0, 0]))))
    c = Case(root, "conv_kernel_larger_than_input", says=["node 'conv0' (Conv)", "[batch,3,8,8]", "16"])
    big = numpy_helper.from_array(RNG.standard_normal((4, 3, 16, 16)).astype(np.float32), "W")
    c.run("16x16 kernel on an 8x8 input, no padding", c.save(small_cnn(
        big, conv_attrs=dict(kernel_shape=[16, 16], pads=[0, 0, 0, 0]))))
    c = Case(root, "conv_channel_mismatch", says=["node 'conv0' (Conv)", "3 channels", "expected", "5"])
    w5 = numpy_helper.from_array(RNG.standard_normal((4, 5, 3, 3)).astype(np.float32), "W")
    c.run("weight has 5 input channels, input has 3", c.save(small_cnn(w5)))
    c = Case(root, "conv_group_not_dividing_channels", says=["node 'conv0' (Conv)", "3 channels", "group", "2"])
    c.run("group 2 with 3 input channels", c.save(small_cnn(conv_attrs=dict(group=2))))
    c = Case(root, "conv_strides_wrong_type", says=["node 'conv0' (Conv)", "'strides'", "ints"])
    m = small_cnn()
    for a in m.graph.node[0].attribute:
        if a.name == "strides":
            a.type, a.floats[:] = onnx.AttributeProto.FLOATS, [1.0, 1.0]
            del a.ints[:]
    c.run("Conv strides given as floats", c.save(m))
    c = Case(root, "maxpool_zero_kernel", says=["node 'pool0' (MaxPool)", "'kernel_shape'", "found 0"])
    c.run("MaxPool kernel_shape [0, 0]", c.save(model_of(
        [helper.make_node("MaxPool", ["input"], ["output"], name="pool0", kernel_shape=[0, 0])],
        [vi("input", ["batch", 3, 8, 8])], [vi("output", ["batch", 3, 8, 8])])))
    c = Case(root, "concat_missing_axis", says=["node 'cat0' (Concat)", "'axis'", "required"])
    c.run("Concat without its required axis", c.save(model_of(
        [helper.make_node("Concat", ["input", "input"], ["output"], name="cat0")], [x], [vi("output", ["batch", 8])])))
    c = Case(root, "softmax_axis_out_of_range", says=["node 'sm0' (Softmax)", "'axis'", "[-2, 1]", "found 7"])
    c.run("Softmax axis 7 on a rank-2 tensor", c.save(model_of(
        [helper.make_node("Softmax", ["input"], ["output"], name="sm0", axis=7)], [x], [y])))
    c = Case(root, "reshape_incompatible_size", says=["node 'reshape0' (Reshape)", "[1,3,8,8]", "[5,7]"])
    c.run("Reshape 1x3x8x8 (192 values) to 5x7", c.save(model_of(
        [helper.make_node("Reshape", ["input", "shape"], ["output"], name="reshape0")],
        [vi("input", [1, 3, 8, 8])], [vi("output", [5, 7])],
        [numpy_helper.from_array(np.array([5, 7], np.int64), "shape")])))
    c = Case(root, "gemm_k_mismatch", says=["node 'gemm0' (Gemm)", "K = 8", "K = 7"])
    c.run("Gemm A [N,8] x B [7,2]", c.save(model_of(
        [helper.make_node("Gemm", ["input", "Bw"], ["output"], name="gemm0")],
        [vi("input", ["batch", 8])], [vi("output", ["batch", 2])],
        [numpy_helper.from_array(np.ones((7, 2), np.float32), "Bw")])))
    c = Case(root, "matmul_k_mismatch", says=["node 'mm0' (MatMul)", "K = 8", "K = 5"])
    c.run("MatMul [N,8] x [5,3]", c.save(model_of(
        [helper.make_node("MatMul", ["input", "Bw"], ["output"], name="mm0")],
        [vi("input", ["batch", 8])], [vi("output", ["batch", 3])],
        [numpy_helper.from_array(np.ones((5, 3), np.float32), "Bw")])))
    c = Case(root, "add_broadcast_mismatch", says=["node 'add0' (Add)", "[batch,4]", "[3]"])
    c.run("Add [N,4] + [3]", c.save(model_of(
        [helper.make_node("Add", ["input", "K"], ["output"], name="add0")], [x], [y],
        [numpy_helper.from_array(np.ones(3, np.float32), "K")])))
    c = Case(root, "add_dtype_mismatch", says=["node 'add0' (Add)", "int64", "float32"])
    c.run("Add float + int64", c.save(model_of(
        [helper.make_node("Add", ["input", "K"], ["output"], name="add0")], [x], [y],
        [numpy_helper.from_array(np.ones(4, np.int64), "K")])))

    # Initializers whose sizes lie.
    def bad_init_model(t):
        return model_of([helper.make_node("Add", ["input", "K"], ["output"], name="add0")], [x], [y], [t])

    c = Case(root, "init_dims_product_overflow", says=["initializer 'K'", "1099511627776"])
    t = raw_tensor("K", F, [2 ** 40, 2 ** 40], b"\0\0\0\0")
    c.run("initializer dims [2^40, 2^40] with 4 bytes of raw_data", c.save(bad_init_model(t)))
    c = Case(root, "init_dims_huge_no_overflow", says=["initializer 'K'", "2147483648"])
    t = raw_tensor("K", F, [2 ** 31, 2 ** 20], b"\0\0\0\0")
    c.run("initializer dims [2^31, 2^20] (8 TiB) with 4 bytes", c.save(bad_init_model(t)))
    c = Case(root, "init_negative_dim", says=["initializer 'K'", "-1"])
    t = raw_tensor("K", F, [-1, 4], np.ones(4, np.float32).tobytes())
    c.run("initializer dims [-1, 4]", c.save(bad_init_model(t)))
    c = Case(root, "init_raw_data_size_mismatch", says=["initializer 'K'", "10 bytes", "16"])
    t = raw_tensor("K", F, [4], b"\0" * 10)
    c.run("4 floats declared, 10 bytes of raw_data", c.save(bad_init_model(t)))
    c = Case(root, "init_float_data_count_mismatch", says=["initializer 'K'", "3 values", "4"])
    c.run("4 floats declared, 3 in float_data", c.save(bad_init_model(raw_tensor("K", F, [4], floats=[1.0, 2.0, 3.0]))))
    c = Case(root, "init_unknown_data_type", says=["initializer 'K'", "999"])
    t = raw_tensor("K", 999, [4], np.ones(4, np.float32).tobytes())
    c.run("initializer data_type 999", c.save(bad_init_model(t)))

    # Sizes computed at run time that no memory could hold.
    c = Case(root, "constant_of_shape_huge", says=["node 'cos0' (ConstantOfShape)", "[4611686018427387904]", "2^40"])
    c.run("ConstantOfShape [2^62]", c.save(model_of(
        [helper.make_node("ConstantOfShape", ["shape"], ["z"], name="cos0"),
         helper.make_node("ReduceSum", ["z"], ["output"], name="sum0", keepdims=0)],
        [vi("input", ["batch", 4])], [vi("output", [])],
        [numpy_helper.from_array(np.array([2 ** 62], np.int64), "shape")])))
    c = Case(root, "expand_huge_shape", says=["node 'expand0' (Expand)", "[1099511627776,1099511627776,4]", "2^40"])
    c.run("Expand [N,4] to [2^40, 2^40, 4]", c.save(model_of(
        [helper.make_node("Expand", ["input", "shape"], ["output"], name="expand0")], [x], [vi("output", None)],
        [numpy_helper.from_array(np.array([2 ** 40, 2 ** 40, 4], np.int64), "shape")])))

    # Inputs: valid model, bad data.
    model = small_cnn()

    def input_case(name, says, what, fname, data):
        c = Case(root, name, says=says)
        mp = c.save(model)
        if data is not None:
            with open(c.path(fname), "wb") as f:
                f.write(data)
        c.run(what, mp, "--input", "input=" + c.path(fname))

    def npy(a):
        p = os.path.join(root, "_tmp.npy")
        np.save(p, a)
        with open(p, "rb") as f:
            b = f.read()
        os.unlink(p)
        return b

    input_case("input_wrong_dtype_int32", ["input 'input'", "float32", "int32"], ".npy int32 for a float input", "x.npy", npy(good_x.astype(np.int32)))
    input_case("input_wrong_dtype_float64", ["input 'input'", "float32", "float64"], ".npy float64 for a float input", "x.npy", npy(good_x.astype(np.float64)))
    input_case("input_wrong_rank", ["input 'input'", "rank 4", "rank 3"], ".npy [1,3,8] for a rank-4 input", "x.npy", npy(good_x[:, :, 0]))
    input_case("input_wrong_static_channel_dim", ["input 'input'", "dim 1", "3", "[1,4,8,8]"], ".npy [1,4,8,8] for [N,3,8,8]", "x.npy",
               npy(np.zeros((1, 4, 8, 8), np.float32)))
    input_case("input_wrong_static_spatial_dim", ["input 'input'", "dim 2", "8", "[1,3,9,8]"], ".npy [1,3,9,8] for [N,3,8,8]", "x.npy",
               npy(np.zeros((1, 3, 9, 8), np.float32)))
    input_case("npy_header_claims_larger_shape", ["x.npy", "768", "40"], "header (1,3,8,8) float32 with 40 bytes of data", "x.npy",
               npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 8, 8), }", b"\0" * 40))
    input_case("npy_header_shape_overflow", ["x.npy", "1099511627776"], "header (2^40, 2^40, 8, 8) with 40 bytes of data", "x.npy",
               npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d, 8, 8), }" % (2 ** 40, 2 ** 40),
                         b"\0" * 40))
    input_case("npy_header_negative_dim", ["x.npy", "negative", "-1"], "header shape (-1, 3, 8, 8)", "x.npy",
               npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3, 8, 8), }", b"\0" * 768))
    input_case("npy_garbage_header", ["x.npy", "not a dict"], "magic + version, then a header of random bytes", "x.npy",
               b"\x93NUMPY\x01\x00" + struct.pack("<H", 118) + RNG.integers(0, 256, 118, dtype=np.uint8).tobytes()
               + b"\0" * 768)
    input_case("npy_header_length_beyond_file", ["x.npy", "65535", "200"], "header length 65535 in a 200-byte file", "x.npy",
               b"\x93NUMPY\x01\x00" + struct.pack("<H", 65535) + b" " * 190)
    input_case("npy_object_dtype", ["x.npy", "'|O'"], "a pickled object array (descr |O)", "x.npy",
               npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (1, 3, 8, 8), }", b"\x80\x04N." * 8))
    input_case("npy_random_bytes", ["x.npy", "magic"], "input file of random bytes named .npy", "x.npy",
               RNG.integers(0, 256, 1000, dtype=np.uint8).tobytes())
    input_case("npy_empty_file", ["x.npy", ("empty", "magic")], "0-byte .npy", "x.npy", b"")
    input_case("npy_missing_file", ["x.npy", "not found"], "--input names a file that does not exist", "x.npy", None)
    pb = numpy_helper.from_array(good_x, "input").SerializeToString()
    input_case("pb_truncated", ["x.pb", "TensorProto"], "TensorProto .pb cut at half", "x.pb", pb[: len(pb) // 2])
    input_case("pb_wrong_dtype_int64", ["input 'input'", "float32", "int64"], "TensorProto int64 for a float input", "x.pb",
               numpy_helper.from_array(good_x.astype(np.int64), "input").SerializeToString())
    c = Case(root, "input_unknown_name", says=["'nosuch'", "no input"])
    np.save(c.path("x.npy"), good_x)
    c.run("--input names a tensor the model lacks", c.save(model), "--input", "nosuch=" + c.path("x.npy"))
    c = Case(root, "input_one_of_two_missing", says=["input 'b'", "no --input"])
    two = model_of([helper.make_node("Add", ["a", "b"], ["output"], name="add0")],
                   [vi("a", ["batch", 4]), vi("b", ["batch", 4])], [vi("output", ["batch", 4])])
    np.save(c.path("a.npy"), np.ones((1, 4), np.float32))
    c.run("two-input model given only a", c.save(two), "--input", "a=" + c.path("a.npy"))
    c = Case(root, "input_batch_mismatch_between_inputs", says=["input 'b'", "'batch'", "3", "2"])
    np.save(c.path("b.npy"), np.ones((3, 4), np.float32))
    np.save(c.path("a.npy"), np.ones((2, 4), np.float32))
    c.run("a has batch 2, b batch 3, both [batch,4]", c.save(two),
          "--input", "a=" + c.path("a.npy"), "--input", "b=" + c.path("b.npy"))

    # infera check: a malformed or wrong test must be counted as failed, never crash or pass.
    def check_case(name, says, model_valid, what, model_bytes, ins, outs):
        c = Case(root, name, says=says)
        t = c.path("test_x")
        ds = os.path.join(t, "test_data_set_0")
        os.makedirs(ds)
        with open(os.path.join(t, "model.onnx"), "wb") as f:
            f.write(model_bytes)
        for i, b in enumerate(ins):
            with open(os.path.join(ds, "input_%d.pb" % i), "wb") as f:
                f.write(b)
        for i, b in enumerate(outs):
            with open(os.path.join(ds, "output_%d.pb" % i), "wb") as f:
                f.write(b)
        c.add(what, ["check", t], kind="check", model_valid=model_valid)

    relu = model_of([helper.make_node("Relu", ["input"], ["output"], name="relu0")], [x], [y])
    xi = RNG.standard_normal((2, 4)).astype(np.float32)
    tin = numpy_helper.from_array(xi, "input").SerializeToString()
    tout = numpy_helper.from_array(np.maximum(xi, 0), "output").SerializeToString()
    c = Case(root, "check_control_valid_test")
    check_case_ok = c.path("test_x")
    os.makedirs(os.path.join(check_case_ok, "test_data_set_0"))
    with open(os.path.join(check_case_ok, "model.onnx"), "wb") as f:
        f.write(relu.SerializeToString())
    with open(os.path.join(check_case_ok, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(tin)
    with open(os.path.join(check_case_ok, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(tout)
    c.add("a correct Relu test passes", ["check", check_case_ok], expect=0, kind="check")
    check_case("check_wrong_expected_values", ["output 0", "'output'", "elements outside", "got 0, want 1"], True, "expected output off by 1: must be reported as failed",
               relu.SerializeToString(), [tin],
               [numpy_helper.from_array(np.maximum(xi, 0) + 1, "output").SerializeToString()])
    check_case("check_expected_shape_mismatch", ["output 0", "shape [2,4]", "expected [4,2]"], True, "expected output [4,2] for a [2,4] result",
               relu.SerializeToString(), [tin],
               [numpy_helper.from_array(np.maximum(xi, 0).reshape(4, 2), "output").SerializeToString()])
    check_case("check_garbage_model", ["model.onnx", "not a valid ONNX model"], False, "model.onnx of random bytes",
               RNG.integers(0, 256, 512, dtype=np.uint8).tobytes(), [tin], [tout])
    check_case("check_garbage_output_pb", ["output_0.pb", "TensorProto"], True, "output_0.pb of random bytes",
               relu.SerializeToString(), [tin], [RNG.integers(0, 256, 97, dtype=np.uint8).tobytes()])
    check_case("check_missing_input_pb", ["test_data_set_0", "missing input 'input'"], True, "test_data_set_0 without input_0.pb", relu.SerializeToString(), [], [tout])
    c = Case(root, "check_missing_dir", says=["nothere", "not a folder"])
    c.add("check on a folder that does not exist", ["check", c.path("nothere")], kind="run")
    c = Case(root, "check_dir_without_tests", says=["empty", "no model.onnx"])
    os.makedirs(c.path("empty"))
    c.add("check on a folder with no tests: nothing passed is not a pass", ["check", c.path("empty")], kind="run")

    import cases_quant  # tests/badinput/cases_quant.py: the quantization operators' cases
    cases_quant.build(root, Case)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder to create (replaced if it exists)")
    args = ap.parse_args()
    root = os.path.abspath(args.out)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    build(root)
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    unstated = [c["name"] for c in CASES if c["expect"] != 0 and not c["says"]]
    assert not unstated, "malformed cases without the words their error must contain: %s" % unstated
    with open(os.path.join(root, "cases.json"), "w") as f:
        json.dump(CASES, f, indent=1)
    bad = sum(1 for c in CASES if c["expect"] != 0)
    print("wrote %d cases (%d malformed, %d controls) to %s" % (len(CASES), bad, len(CASES) - bad, root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
