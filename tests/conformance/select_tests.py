#!/usr/bin/env python3
"""Pick the ONNX node tests of infera's operators, from Debian's testdata or from the onnx wheel.

Run with the PATH python3 (PyPI onnx + numpy):
    python3 tests/conformance/select_tests.py --debian /usr/share/libonnx-testdata/data/node --out DIR
        DIR gets one symlink per selected test folder (model.onnx + test_data_set_*).
    python3 tests/conformance/select_tests.py --onnx-wheel --out DIR
        DIR gets the selected node tests of the installed onnx package, written from its case scripts
        (the PyPI wheel ships no node test data, and its `backend-test-tools generate-data` only writes
        the model tests, so we write them here, in the same layout).

Selection is by the ops in each test's graph, not by name (test_reduce_log_sum_* and
test_softmax_cross_entropy_* use ReduceSum/Softmax but test other ops). A test is selected iff
  - every node is a default-domain op in OPS below, and
  - for an `_expanded[_verN]` test (a function op written out in basic ops), the op of its base test is
    in OPS too (so test_softmax_cross_entropy_*_expanded, made of Softmax/..., is not ours), and
  - the graph's inputs and outputs are tensors (infera has no sequence or optional values, so
    test_identity_sequence and test_identity_opt are not ours).
Skips are not decided here: they live in tests/conformance/skips.txt, each with its reason.
Prints the number of selected tests and, with --list, their names.
"""
import argparse
import collections
import os
import re
import sys

try:
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    sys.stderr.write("select_tests.py: needs PyPI onnx (run with the PATH python3): %s\n" % e)
    sys.exit(1)

# The operator list of issue #2 (CPU, FP32) and the extra ones registered. Keep in step with the
# README's "Supported operators".
OPS = set("""
Abs Add And ArgMax ArgMin AveragePool BatchNormalization Cast Ceil Clip Concat Constant ConstantOfShape
Conv ConvTranspose DepthToSpace Div Dropout Elu Equal Erf Exp Expand Flatten Floor Gather Gemm
GlobalAveragePool GlobalMaxPool Greater HardSigmoid HardSwish Identity InstanceNormalization LeakyRelu
Less Log LRN MatMul Max MaxPool Mean Min Mul Neg Not Or Pad Pow PRelu Range Reciprocal ReduceMax
ReduceMean ReduceMin ReduceSum Relu Reshape Resize Selu Shape Sigmoid Slice Softmax Softplus
SpaceToDepth Split Sqrt Squeeze Sub Sum Tanh Tile TopK Transpose Unsqueeze Upsample Where
""".split()) | set("""
GreaterOrEqual LessOrEqual Xor Mod Sign Softsign Round Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh
Atanh Celu Mish Gelu ThresholdedRelu IsNaN IsInf CastLike Size ReduceProd ReduceL1 ReduceL2
ReduceSumSquare ReduceLogSum ReduceLogSumExp LogSoftmax Hardmax LayerNormalization
QuantizeLinear DequantizeLinear DynamicQuantizeLinear QLinearConv QLinearMatMul ConvInteger MatMulInteger
""".split())  # the operators infera registers beyond issue #2's list (README lists them too)

EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


def graph_ops(graph):
    """(domain, op_type) of every node, subgraphs included."""
    out = []
    for n in graph.node:
        out.append((n.domain, n.op_type))
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                out += graph_ops(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    out += graph_ops(g)
    return out


def all_ours(ops):
    return bool(ops) and all(d in ("", "ai.onnx") and t in OPS for d, t in ops)


def tensors_only(graph):
    return all(v.type.HasField("tensor_type") for v in list(graph.input) + list(graph.output))


def select(tests):
    """tests: dict name -> list of (domain, op), or None when not a tensor-only graph."""
    chosen = []
    for name, ops in tests.items():
        if ops is None or not all_ours(ops):
            continue
        if EXPANDED.search(name):
            base = EXPANDED.sub("", name)
            if not tests.get(base) or not all_ours(tests[base]):
                continue
        chosen.append(name)
    return sorted(chosen)


def op_of(ops):
    core = [t for d, t in ops if t != "Constant"] or [t for d, t in ops]
    return core[-1]


def from_debian(src, out, args):
    tests = {}
    for name in sorted(os.listdir(src)):
        model = os.path.join(src, name, "model.onnx")
        if not os.path.isfile(model):
            continue
        try:
            m = onnx.load(model, load_external_data=False)
        except Exception as e:
            sys.stderr.write("select_tests.py: cannot read %s: %s\n" % (model, e))
            continue
        tests[name] = graph_ops(m.graph) if tensors_only(m.graph) else None
    chosen = select(tests)
    for name in chosen:
        os.symlink(os.path.abspath(os.path.join(src, name)), os.path.join(out, name))
    return chosen, tests


def write_tensor(path, value, name):
    if isinstance(value, onnx.TensorProto):
        data = value.SerializeToString()
    else:
        data = numpy_helper.from_array(value, name).SerializeToString()
    with open(path, "wb") as f:
        f.write(data)


def from_wheel(out, args):
    import warnings
    import onnx.backend.test.case.node as node_cases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [c for c in node_cases.collect_testcases(None) if c.kind == "node" and c.model]
    by_name = {c.name: c for c in cases}
    tests = {c.name: graph_ops(c.model.graph) if tensors_only(c.model.graph) else None for c in cases}
    chosen = select(tests)
    written = []
    for name in chosen:
        c = by_name[name]
        g = c.model.graph
        d = os.path.join(out, name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(c.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(c.data_sets):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds)
            for j, v in enumerate(inputs):
                write_tensor(os.path.join(ds, "input_%d.pb" % j), v, g.input[j].name)
            for j, v in enumerate(outputs):
                write_tensor(os.path.join(ds, "output_%d.pb" % j), v, g.output[j].name)
        written.append(name)
    return written, tests


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--debian", metavar="NODE_DIR", help="e.g. /usr/share/libonnx-testdata/data/node")
    src.add_argument("--onnx-wheel", action="store_true", help="the installed onnx package's node tests")
    ap.add_argument("--out", required=True, help="folder to create (must not exist or be empty)")
    ap.add_argument("--list", action="store_true", help="print the selected test names")
    ap.add_argument("--per-op", action="store_true", help="print how many tests each op got")
    args = ap.parse_args()

    if os.path.isdir(args.out) and os.listdir(args.out):
        sys.stderr.write("select_tests.py: %s is not empty\n" % args.out)
        return 2
    os.makedirs(args.out, exist_ok=True)
    if args.debian:
        if not os.path.isdir(args.debian):
            sys.stderr.write("select_tests.py: no folder %s (install libonnx-testdata)\n" % args.debian)
            return 1
        chosen, tests = from_debian(args.debian, args.out, args)
        source = args.debian
    else:
        chosen, tests = from_wheel(args.out, args)
        source = "onnx %s wheel (%s)" % (onnx.__version__, os.path.dirname(onnx.__file__))
    if args.list:
        print("\n".join(chosen))
    if args.per_op:
        count = collections.Counter(op_of(tests[n]) for n in chosen if not EXPANDED.search(n))
        for op in sorted(OPS):
            print("%-22s %d" % (op, count.get(op, 0)))
    print("selected %d of %d node tests from %s" % (len(chosen), len(tests), source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
