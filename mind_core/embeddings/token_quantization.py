"""The int8 graph: each weight MatMul of the fp32 export, with activations quantized per token.

Why per token: ``quantize_dynamic`` picks one activation scale per tensor, that is per model pass,
so a text's vector depended on the other texts (and their padding) in its pass: cosine 0.93 at
worst between a text embedded alone and in a pass of 16 (benchmarks/embed_batching.py). Here every
token's activation row gets its own scale (its largest magnitude maps to 127), computed from that
row alone, so a text gets the same vector whatever shares its pass and however far it is padded.
Static quantization (scales calibrated once at export) is independent of the pass too, but its
one scale per tensor lost too much: cosine to fp32 mean 0.92, min 0.71, against 0.995 / 0.97 here
(docs/performance.md, "Vectors independent of batching").

Weights: int8, symmetric, one scale per output column. Activations: int8 symmetric, shifted by 128
into uint8 with zero point 128, because uint8 x int8 is ONNX Runtime's fast integer kernel on x86.
``MatMulInteger`` gives exact int32 sums, scaled back to float by the token's scale and the
column's. Attention's two MatMuls (activations on both sides), the embeddings, layer norms and
softmax stay fp32. Only ``onnx`` and numpy are needed: no calibration data, and the result is a
pure function of the fp32 file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ACTIVATION_ZERO_POINT = 128
INT8_MAX = 127
SMALLEST_SCALE_INPUT = 1e-12  # a row of zeros gets this as its largest magnitude, not a division by 0


def quantize_weights(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K, N) float weights -> (int8 weights, float32 scale per column), symmetric."""
    scales = np.maximum(np.abs(weights).max(axis=0), SMALLEST_SCALE_INPUT) / INT8_MAX
    quantized = np.clip(np.round(weights / scales), -INT8_MAX, INT8_MAX).astype(np.int8)
    return quantized, scales.astype(np.float32)


def quantize_per_token(fp32_path: Path, out_path: Path) -> int:
    """Write the per-token int8 graph of ``fp32_path`` to ``out_path``; returns how many MatMuls
    were quantized (those whose second input is a 2-D weight initializer)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(fp32_path))
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    added: list[onnx.TensorProto] = []

    def constant(name: str, value: np.ndarray) -> str:
        if name not in {init.name for init in added}:
            added.append(numpy_helper.from_array(value, name))
        return name

    int8_max = constant("token_quant/int8_max", np.array(INT8_MAX, dtype=np.float32))
    floor = constant("token_quant/floor", np.array(SMALLEST_SCALE_INPUT, dtype=np.float32))
    one = constant("token_quant/one", np.array(1.0, dtype=np.float32))
    zero_point = constant("token_quant/zero_point", np.array(ACTIVATION_ZERO_POINT, dtype=np.uint8))
    last_axis = constant("token_quant/last_axis", np.array([-1], dtype=np.int64)) if opset >= 18 else None

    nodes: list[onnx.NodeProto] = []
    quantized_inputs: dict[str, tuple[str, str]] = {}  # activation -> (its uint8 rows, their scales)
    count = 0
    for node in graph.node:
        weight = initializers.get(node.input[1]) if node.op_type == "MatMul" else None
        if weight is None or len(weight.dims) != 2:
            nodes.append(node)
            continue
        activation = node.input[0]
        if activation not in quantized_inputs:  # query, key and value share one quantized input
            p = f"token_quant/{len(quantized_inputs)}"
            reduce_inputs = [f"{p}/abs"] + ([last_axis] if last_axis else [])
            reduce_axes = {} if last_axis else {"axes": [-1]}
            nodes += [
                helper.make_node("Abs", [activation], [f"{p}/abs"], name=f"{p}/Abs"),
                helper.make_node("ReduceMax", reduce_inputs, [f"{p}/max"], name=f"{p}/ReduceMax", keepdims=1, **reduce_axes),
                helper.make_node("Max", [f"{p}/max", floor], [f"{p}/max_floored"], name=f"{p}/Max"),
                helper.make_node("Div", [f"{p}/max_floored", int8_max], [f"{p}/scale"], name=f"{p}/Scale"),
                helper.make_node("Div", [int8_max, f"{p}/max_floored"], [f"{p}/inverse"], name=f"{p}/Inverse"),
                helper.make_node("Mul", [activation, f"{p}/inverse"], [f"{p}/scaled"], name=f"{p}/Scaled"),
                # round half to even, + 128, to uint8: one pass
                helper.make_node("QuantizeLinear", [f"{p}/scaled", one, zero_point], [f"{p}/uint8"], name=f"{p}/Quantize"),
            ]
            quantized_inputs[activation] = (f"{p}/uint8", f"{p}/scale")
        rows, row_scales = quantized_inputs[activation]
        weights, column_scales = quantize_weights(numpy_helper.to_array(weight).astype(np.float32))
        int8_weights = constant(f"{weight.name}/int8", weights)
        weight_scales = constant(f"{weight.name}/scale", column_scales)
        out = node.output[0]
        nodes += [
            helper.make_node("MatMulInteger", [rows, int8_weights, zero_point], [f"{out}/int32"], name=f"{node.name}/Integer"),
            helper.make_node("Cast", [f"{out}/int32"], [f"{out}/float"], name=f"{node.name}/Cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{out}/float", weight_scales], [f"{out}/columns"], name=f"{node.name}/ColumnScale"),
            helper.make_node("Mul", [f"{out}/columns", row_scales], [out], name=f"{node.name}/RowScale"),
        ]
        count += 1

    used = {name for node in nodes for name in node.input}
    kept = [init for init in graph.initializer if init.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + [init for init in added if init.name in used])
    onnx.checker.check_model(model)
    onnx.save(model, str(out_path))
    return count
