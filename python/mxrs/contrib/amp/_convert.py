"""The graph pass behind ``convert_symbol``: a copy of a float32 graph with ``amp_cast`` and
``amp_multicast`` nodes added where the op lists want another type (MXNet 1.9.1's
``ReducePrecision`` pass).

Nodes are visited inputs first. The pass knows, for some node outputs, that they are float32
or of the target type, and keeps one cast per output and type, shared by its consumers:

* float32 operators and excluded nodes take float32 inputs (variables are assumed float32);
  their outputs are float32;
* target-type operators take target-type inputs, but for auxiliary states, inputs that stay
  float32 (BatchNorm's parameters) and, with ``cast_optional_params``, parameters (they are
  stored in the target type instead); their outputs are of the target type;
* widest-type operators take inputs of one type: float32 if any input is float32, else the
  target type; when some input's type is not known, all go through one ``amp_multicast``;
* conditional float32 operators (``Activation`` with ``act_type='softrelu'``...) cast every
  input, variables included, to float32;
* any other operator is copied; when its first input's type is known, its outputs' types
  follow it.

Graph outputs not known to be float32 are cast to float32. A cast is named after what it casts:
``<node><suffix>_amp_cast_<type>``, the suffix being empty for a variable, ``_<output name>``
for the operators MXNet names outputs of and ``_<index>`` for the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...symbol import Symbol
from ...symbol.graph import DTYPE_CODES, Node, topo
from ...symbol.infer import _FP32_PARAMS, _output_types
from ...symbol.opinfo import aux_positions, visible_outputs

__all__ = ["reduce_precision"]

Entry = tuple[Node, int]

#: Operators whose outputs MXNet names (``pool1_output``); others are numbered (``flat_0``).
_NAMED_OUTPUTS = frozenset({
    "Activation", "BatchNorm", "BatchNorm_v1", "_contrib_BatchNormWithReLU", "BilinearSampler",
    "Concat", "Convolution", "Correlation", "Crop", "Deconvolution", "Dropout", "FullyConnected",
    "GridGenerator", "GroupNorm", "IdentityAttachKLSparseReg", "InstanceNorm", "L2Normalization",
    "LRN", "LayerNorm", "LeakyReLU", "MakeLoss", "Pad", "Pooling", "RNN", "ROIPooling",
    "SVMOutput", "SequenceLast", "SequenceMask", "SequenceReverse", "SliceChannel",
    "SoftmaxActivation", "SoftmaxOutput", "SpatialTransformer", "SwapAxis", "UpSampling",
    "elemwise_add", "softmax", "softmin",
})  # fmt: skip
_F32 = np.dtype(np.float32)


def _suffix(entry: Entry) -> str:
    node, i = entry
    if node.op is None:
        return ""
    if node.op in _NAMED_OUTPUTS:
        names = visible_outputs(node.op, node.attrs)
        if i < len(names):
            return "_" + names[i]
    return f"_{i}"


class _Pass:
    """One run of the pass over a graph (see the module's description)."""

    def __init__(
        self,
        target: np.dtype,
        lowp: set[str],
        fp32: set[str],
        widest: set[str],
        conditional: dict[str, dict[str, list[str]]],
        excluded: set[str],
        data_names: set[str],
        cast_optional: bool,
    ) -> None:
        self.target, self.lowp, self.fp32, self.widest = target, lowp, fp32, widest
        self.conditional, self.excluded = conditional, excluded
        self.data_names, self.cast_optional = data_names, cast_optional
        self.mirror: dict[int, Node] = {}
        self.as_f32: dict[tuple[int, int], Entry] = {}
        self.as_low: dict[tuple[int, int], Entry] = {}

    # ------------------------------------------------------------- helpers
    def _copy(self, entry: Entry) -> Entry:
        return (self.mirror[id(entry[0])], entry[1])

    def _cast(self, entry: Entry, dtype: np.dtype) -> Entry:
        """The shared cast of ``entry`` to ``dtype`` (made on first use)."""
        known = self.as_f32 if dtype == _F32 else self.as_low
        key = (id(entry[0]), entry[1])
        if key not in known:
            name = f"{entry[0].name}{_suffix(entry)}_amp_cast_{dtype.name}"
            cast = Node("amp_cast", name, {"dtype": dtype.name}, [self._copy(entry)])
            known[key] = (cast, 0)
        return known[key]

    def _type_of(self, entry: Entry) -> np.dtype | None:
        key = (id(entry[0]), entry[1])
        if key in self.as_low:
            return self.target
        return _F32 if key in self.as_f32 else None

    def _record(self, node: Node, new: Node, types: Sequence[Any]) -> None:
        for i, t in enumerate(types):
            if t is None:
                continue
            if np.dtype(t) == self.target:
                self.as_low[(id(node), i)] = (new, i)
            elif np.dtype(t) == _F32:
                self.as_f32[(id(node), i)] = (new, i)

    def _is_conditional(self, node: Node) -> bool:
        rules = self.conditional.get(node.op or "")
        return bool(rules) and any(node.attrs.get(k) in v for k, v in rules.items())  # type: ignore[union-attr]

    # ------------------------------------------------------------- the branches
    def _float32(self, node: Node, new: Node, keep_variables: bool) -> None:
        aux = set(aux_positions(node.op or "", node.attrs, len(node.inputs)))
        self._record(node, new, [_F32] * len(node.output_names()))
        for i, e in enumerate(node.inputs):
            if self._type_of(e) == _F32 or i in aux or (keep_variables and e[0].op is None):
                new.inputs.append(self.as_f32.get((id(e[0]), e[1]), self._copy(e)))
            else:
                new.inputs.append(self._cast(e, _F32))

    def _low(self, node: Node, new: Node) -> None:
        aux = set(aux_positions(node.op or "", node.attrs, len(node.inputs)))
        keep_f32 = node.op in _FP32_PARAMS
        self._record(node, new, [self.target] * len(node.output_names()))
        for i, e in enumerate(node.inputs):
            param = e[0].op is None and e[0].name not in self.data_names
            if self._type_of(e) == self.target:
                new.inputs.append(self.as_low[(id(e[0]), e[1])])
            elif (self.cast_optional and param) or i in aux or (keep_f32 and i > 0):
                new.inputs.append(self._copy(e))
                if self.cast_optional and e[0].op is None:
                    self.as_low[(id(e[0]), e[1])] = self._copy(e)
            else:
                new.inputs.append(self._cast(e, self.target))

    def _widest(self, node: Node, new: Node) -> None:
        types = [self._type_of(e) for e in node.inputs]
        if any(t is None for t in types):
            first = node.inputs[0]
            name = f"{first[0].name}{_suffix(first)}_amp_multicast"
            n = len(node.inputs)
            multi = Node("amp_multicast", name, {"num_outputs": str(n)}, [])
            multi.inputs = [self._copy(e) for e in node.inputs]
            new.inputs = [(multi, i) for i in range(n)]
            return
        common = _F32 if any(t == _F32 for t in types) else self.target
        self._record(node, new, [common] * len(node.output_names()))
        for e, t in zip(node.inputs, types, strict=True):
            known = self.as_f32 if common == _F32 else self.as_low
            same = known.get((id(e[0]), e[1])) if t == common else None
            new.inputs.append(same if same is not None else self._cast(e, common))

    def _other(self, node: Node, new: Node) -> None:
        first = self._type_of(node.inputs[0]) if node.inputs else None
        if first is not None:
            ins = [first.type] * len(node.inputs)
            self._record(node, new, _output_types(node, ins, first.type))
        new.inputs = [self._copy(e) for e in node.inputs]

    # ------------------------------------------------------------- the pass
    def run(self, outputs: list[Entry]) -> list[Entry]:
        for node in topo(outputs):
            new = Node(node.op, node.name, dict(node.attrs), [])
            op = node.op
            if node.name in self.excluded or (op is not None and op in self.fp32):
                self._float32(node, new, keep_variables=True)
            elif op is not None and op in self.lowp:
                self._low(node, new)
            elif op is not None and op in self.widest and node.inputs:
                self._widest(node, new)
            elif op is not None and self._is_conditional(node):
                self._float32(node, new, keep_variables=False)
            else:
                self._other(node, new)
            self.mirror[id(node)] = new
        heads = []
        for e in outputs:
            key = (id(e[0]), e[1])
            heads.append(self.as_f32[key] if key in self.as_f32 else self._cast(e, _F32))
        return heads


def reduce_precision(
    sym: Symbol,
    target: np.dtype,
    lowp: Sequence[str],
    fp32: Sequence[str],
    widest: Sequence[str],
    conditional: Sequence[tuple[str, str, Sequence[str]]],
    excluded: Sequence[str],
    data_names: Sequence[str],
    cast_optional: bool,
) -> Symbol:
    """The converted copy of ``sym`` (see the module's description), with each model
    parameter's type (float32, or the target type where ``cast_optional`` stores it so) in its
    ``__dtype__`` attribute."""
    rules: dict[str, dict[str, list[str]]] = {}
    for op, attr, values in conditional:
        rules.setdefault(op, {})[attr] = list(values)
    p = _Pass(
        target, set(lowp), set(fp32), set(widest), rules, set(excluded), set(data_names),
        bool(cast_optional),
    )  # fmt: skip
    out = Symbol(p.run(list(sym._outputs)))
    params = [n for n in out.list_inputs() if n not in set(data_names)]
    if params:
        for node in out._nodes():  # the types given before conversion no longer hold
            if node.op is None and node.name in params:
                node.attrs.pop("__dtype__", None)
        known = {d: _F32 for d in data_names if d in set(out.list_inputs())}
        arg_t, _, aux_t = out.infer_type(**known)
        names = out.list_arguments() + out.list_auxiliary_states()
        found = dict(zip(names, arg_t + aux_t, strict=True))
        for node in out._nodes():
            if node.op is None and node.name in params:
                node.attrs["__dtype__"] = str(DTYPE_CODES[np.dtype(found[node.name]).name])
    return out
