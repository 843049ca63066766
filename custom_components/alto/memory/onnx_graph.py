"""A few-node ONNX model written as protobuf bytes, for onnxruntime to run.

onnxruntime (installed with chromadb) runs serialized ``ModelProto`` bytes; the ``onnx`` package
that usually builds them is not installed, and a graph of two ``MatMulInteger`` nodes and a
``Sub`` needs only a handful of protobuf fields. Field numbers are those of ``onnx.proto``
(ModelProto, GraphProto, NodeProto, ValueInfoProto, TypeProto, TensorShapeProto,
OperatorSetIdProto); only varint (wire type 0) and length-delimited (wire type 2) fields occur.
"""

from __future__ import annotations

# TensorProto.DataType values.
UINT8 = 2
INT8 = 3
INT32 = 6

IR_VERSION = 8  # understood by every onnxruntime release since 1.10
OPSET = 13  # MatMulInteger (10) and Sub (13) as used here

type Dim = int | str  # a fixed size, or a symbolic name the caller chooses per run


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, data: bytes | str) -> bytes:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return _varint(field << 3 | 2) + _varint(len(raw)) + raw


def value_info(name: str, elem_type: int, shape: tuple[Dim, ...]) -> bytes:
    """A graph input or output: ValueInfoProto{name, TypeProto{Tensor{elem_type, shape}}}."""
    dims = b"".join(
        _bytes(1, _int(1, dim) if isinstance(dim, int) else _bytes(2, dim)) for dim in shape
    )
    tensor_type = _int(1, elem_type) + _bytes(2, dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def node(op_type: str, inputs: tuple[str, ...], output: str) -> bytes:
    """NodeProto{input..., output, op_type} in the default domain, without attributes."""
    fields = b"".join(_bytes(1, name) for name in inputs)
    return fields + _bytes(2, output) + _bytes(4, op_type)


def model(nodes: list[bytes], inputs: list[bytes], outputs: list[bytes]) -> bytes:
    """ModelProto{ir_version, graph, opset_import} of one graph."""
    graph = (
        b"".join(_bytes(1, item) for item in nodes)
        + _bytes(2, "alto")
        + b"".join(_bytes(11, item) for item in inputs)
        + b"".join(_bytes(12, item) for item in outputs)
    )
    opset = _bytes(1, "") + _int(2, OPSET)
    return _int(1, IR_VERSION) + _bytes(7, graph) + _bytes(8, opset)
