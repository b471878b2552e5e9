"""Mixed-adapter batches: each row of one batch through its own agent's LoRA adapter on the
shared base (:meth:`~agents.trainable_lm.sampling.Sampling.sample_joint`).

peft does this when each forward call gets ``adapter_names=[...]``: on every call it
registers a pre-hook on each of the model's modules, and in each LoRA layer it lists each
adapter's rows in Python, gathers them with a list index (on CUDA, the list is first copied
from host memory) and scatters the update back. That is a fixed cost per decoded token.

:func:`routed_adapters` gives each LoRA layer a forward of its own for the decode
(installed once per decode, not per step): the base layer's product, then the rows'
updates added to it in place, in one of two ways:

- **by slices**: a batch lists its rows agent by agent, so each adapter's rows are
  consecutive runs, and each run's update is added to its slice of the layer's
  output, ``out[rows] += B(A(dropout(x[rows]))) * scaling``, computed in the adapter's
  dtype and added in the output's, as peft's own mixed path computes it: peft's numbers
  bit for bit, four kernels per agent and layer;
- **stacked** (:func:`_add_stacked_updates`): every adapter of a layer side by side, one
  product for all rows and a mask that keeps each row's own adapter, three kernels per
  layer whatever the number of agents, in the base's dtype: the same numbers up to
  rounding.

On two CPU cores, a 28-layer model of Qwen2.5's layout with LoRA on its 196 linear layers
and almost no arithmetic (width 64) took 125 ms per step for two rows through peft's path,
52 ms by slices and 37 ms stacked (BENCHMARKS.md, "Mixed-adapter batches"; hooks then, not
the installed forwards below). Models peft
treats otherwise (DoRA and other LoRA variants, LoRA on embeddings or convolutions,
``modules_to_save``, merged adapters) keep peft's path, and a team with DoRA adapters,
which peft cannot mix (:func:`mixable`), samples agent by agent.

The installed forward (:func:`_routed_forward`) calls neither peft's ``lora.Linear.forward``
nor a forward hook: a LoRA layer of a decoding step is the base's ``F.linear`` and the
update's kernels, with no Python of peft's (its checks of the call's arguments, the
adapter toggles) or of torch's hook dispatch between them. An eager step of a GPU is
mostly such Python and launches at these sizes (38 ms for two rows of Qwen2.5-1.5B's
layout on an H200, 45 ms for 512: BENCHMARKS.md, "On a GPU"); on the CPU the installed
forward cut about 15% of a stacked step's time for that layout (BENCHMARKS.md,
"Mixed-adapter batches"); on a GPU its gain is not yet measured.
"""

from __future__ import annotations

import contextlib
import itertools
import weakref
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import torch

from agents.devices import Decoding, Routing, resolve_routing

Route = Callable[[Sequence[str]], dict[str, Any]]
"""The keyword arguments a forward call of rows with these adapters (one name per row) needs."""


def peft_route(names: Sequence[str]) -> dict[str, Any]:
    """peft's own mixed-adapter batch: the rows' names, passed to every forward call."""
    return {"adapter_names": list(names)}


def runs(names: Sequence[str]) -> list[tuple[str, int, int]]:
    """``names`` as runs of equal consecutive names, ``(name, start, stop)``.

    >>> runs(["a", "a", "b", "a"])
    [('a', 0, 2), ('b', 2, 3), ('a', 3, 4)]
    """
    result, start = [], 0
    for name, group in itertools.groupby(names):
        count = sum(1 for _ in group)
        result.append((name, start, start + count))
        start += count
    return result


def mixable(model: torch.nn.Module) -> bool:
    """Whether one batch may mix ``model``'s adapters at all (peft refuses DoRA's)."""
    return not any(any(getattr(module, "use_dora", {}).values()) for module in model.modules())


def _sliceable_layers(model: torch.nn.Module) -> list[torch.nn.Module] | None:
    """The model's LoRA layers when every one is a plain LoRA ``Linear`` (no variant such as
    DoRA, not merged) and nothing else of peft routes rows (``modules_to_save``); else None."""
    from peft.tuners.lora.layer import Linear
    from peft.tuners.tuners_utils import BaseTunerLayer
    from peft.utils import ModulesToSaveWrapper

    layers = []
    for module in model.modules():
        if (
            type(module) is Linear
            and not getattr(module, "lora_variant", None)
            and not module.merged
        ):
            layers.append(module)
        elif isinstance(module, (BaseTunerLayer, ModulesToSaveWrapper)):
            return None
    return layers


Add = Callable[[torch.Tensor, torch.Tensor], None]
"""``add(x, output)``: adds the updates of a LoRA layer's rows, from its input ``x``, to its
base layer's ``output``, in place."""

Factors = tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, float, torch.nn.Module | None]
"""One adapter of one layer: A's weight, B's weight and bias, the scaling, the dropout (None: none)."""


def _factors(layer: torch.nn.Module) -> dict[str, Factors]:
    """Each adapter of ``layer`` as :data:`Factors`, read once per decode (not per step)."""
    return {
        name: (
            layer.lora_A[name].weight,
            layer.lora_B[name].weight,
            layer.lora_B[name].bias,
            layer.scaling[name],
            None
            if isinstance(layer.lora_dropout[name], torch.nn.Identity)
            else layer.lora_dropout[name],
        )
        for name in layer.lora_A
    }


def _add_updates(
    layer: torch.nn.Module, rows: list[tuple[str, int, int]]
) -> Add:
    """:data:`Add` of ``layer`` adding each run of ``rows`` (filled in later) its adapter's
    update, with the arithmetic of peft's ``lora.Linear`` (``nn.Linear`` is ``F.linear``)."""
    factors = _factors(layer)
    linear = torch.nn.functional.linear

    def add(x: torch.Tensor, output: torch.Tensor) -> None:
        for name, start, stop in rows:
            adapter = factors.get(name)
            if adapter is None:
                continue
            a, b, bias, scaling, dropout = adapter
            part = x[start:stop]
            if part.dtype != a.dtype:
                part = part.to(a.dtype)
            if dropout is not None:
                part = dropout(part)
            update = linear(linear(part, a), b, bias) * scaling
            output[start:stop].add_(  # in place on the slice (``+=`` would copy it back too)
                update if update.dtype == output.dtype else update.to(output.dtype)
            )

    return add


def _stackable(layers: Sequence[torch.nn.Module]) -> bool:
    """Whether every adapter of ``layers`` can be stacked (:func:`_add_stacked_updates`): no
    bias on B, no dropout that acts, one dtype for all of a layer's factors."""
    for layer in layers:
        dtypes = set()
        for a, b, bias, _, dropout in _factors(layer).values():
            if bias is not None or (dropout is not None and dropout.training and dropout.p > 0):
                return False
            dtypes |= {a.dtype, b.dtype}
        if len(dtypes) > 1:
            return False
    return True


Layout = tuple[tuple[str, int, float], ...]
"""A layer's adapters in stacking order: name, rank and scaling of each."""


def _add_stacked_updates(
    layer: torch.nn.Module, masks: dict[Layout, torch.Tensor]
) -> tuple[Layout, Add, torch.Tensor]:
    """``layer``'s adapters stacked, and :data:`Add` adding every row's update at once:
    with A = [A_1; ...; A_n] (R x d_in, R the ranks' sum) and B = [B_1 ... B_n]
    (d_out x R), ``out += ((x A^T) * M) B^T``, where row i of the mask M (filled in later,
    one per layout in ``masks``) holds its adapter's scaling in that adapter's R-block and
    zeros elsewhere: so row i gets ``B_k A_k x_i * scaling_k`` for its adapter k. Three
    kernels per layer whatever the number of agents (slices take four per agent).

    The stacked factors take the base layer's dtype (a bfloat16 base's adapters are kept
    in float32 for training): so the product reads the layer's input and adds into its
    output as they are, where casting both ways would double the kernels. Sampling only:
    the loss scores the completions again with the adapters' own dtype. Also returns the
    stacked A (the masks are made like it)."""
    factors = _factors(layer)
    layout = tuple((name, f[0].shape[0], float(f[3])) for name, f in factors.items())
    base = layer.get_base_layer().weight.dtype
    dtype = base if base.is_floating_point else next(iter(factors.values()))[0].dtype
    stacked_a = torch.cat([f[0] for f in factors.values()]).t().to(dtype)  # d_in x R
    a_t = _kept(_STACKED_A, layer, stacked_a)
    b_t = _kept(_STACKED_B, layer, torch.cat([f[1] for f in factors.values()], dim=1).t().to(dtype))  # R x d_out
    mm, matmul = torch.mm, torch.matmul

    def add(x: torch.Tensor, output: torch.Tensor) -> None:
        if x.dtype != a_t.dtype:
            x = x.to(a_t.dtype)
        mask = masks[layout]  # rows x 1 x R
        hidden = matmul(x, a_t)  # x's leading axes x R
        hidden.view(mask.shape[0], -1, mask.shape[2]).mul_(mask)  # (any leading axes: rows first)
        hidden = hidden.view(-1, mask.shape[2])
        out = output.view(-1, output.shape[-1])
        if out.dtype == b_t.dtype:
            out.addmm_(hidden, b_t)
        else:
            out.add_(mm(hidden, b_t).to(out.dtype))

    return layout, add, a_t


def _routed_forward(layer: torch.nn.Module, add: Add, compiled: bool = False) -> Callable[..., torch.Tensor]:
    """The forward of ``layer`` (a plain LoRA ``Linear``) while a decode routes its rows: its
    base layer's output, then ``add``. A plain ``nn.Linear`` base is its ``F.linear`` on the
    base's own parameters, read once (frozen under LoRA), as ``nn.Linear.forward`` computes
    it; any other base layer, and every base layer of a ``compiled`` decode, is called as a
    module, as peft calls it: traced so, its weights are the module's parameters, which a
    CUDA graph reads where they lie (the compiler may take tensors that a closure holds for
    inputs a CUDA graph copies in at every replay: :func:`_kept` marks the stacked factors
    static for that reason)."""
    base = layer.get_base_layer()
    if type(base) is torch.nn.Linear and not compiled:
        linear, weight, bias = torch.nn.functional.linear, base.weight, base.bias

        def forward(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            output = linear(x, weight, bias)
            add(x, output)
            return output

    else:

        def forward(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            output = base(x, *args, **kwargs)
            add(x, output)
            return output

    return forward


_STACKED_A: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STACKED_B: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MASKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _kept(store: MutableMapping[Any, torch.Tensor], key: Any, value: torch.Tensor) -> torch.Tensor:
    """``value`` in the tensor ``store`` keeps under ``key`` from call to call, refilled in
    place where its shape, dtype and device still fit, else a new contiguous copy (kept).

    A compiled decoding step (:mod:`agents.trainable_lm.steps`) reads these tensors as
    inputs: under CUDA graphs an input at a fixed address is read where it lies (marked
    with ``torch._dynamo.mark_static_address``, as transformers marks its static cache),
    where a new tensor each call would be copied into the graph's own at every step."""
    kept = store.get(key)
    if kept is not None and (kept.shape, kept.dtype, kept.device) == (value.shape, value.dtype, value.device):
        return kept.copy_(value)
    kept = value.contiguous()
    if kept.device.type == "cuda":
        torch._dynamo.mark_static_address(kept)
    store[key] = kept
    return kept


def _masks(
    layouts: Mapping[Layout, torch.Tensor], names: Sequence[str], model: torch.nn.Module
) -> dict[Layout, torch.Tensor]:
    """Each layout's mask of :func:`_add_stacked_updates` for rows ``names`` (rows x 1 x R,
    made like the layout's tensor in ``layouts``: its dtype and device), kept for
    ``model`` and the number of rows from call to call (:func:`_kept`: a static batch and
    the smaller ones it moves into each keep their own, :mod:`agents.trainable_lm.steps`)."""
    masks, kept = {}, _MASKS.setdefault(model, {})
    for layout, like in layouts.items():
        columns, start = {}, 0
        for name, rank, scaling in layout:
            columns[name] = (start, start + rank, scaling)
            start += rank
        mask = torch.zeros((len(names), 1, start), dtype=like.dtype)
        for row, name in enumerate(names):
            if name in columns:
                first, stop, scaling = columns[name]
                mask[row, 0, first:stop] = scaling
        masks[layout] = _kept(kept, (layout, len(names)), mask.to(like.device))
    return masks


@contextlib.contextmanager
def routed_adapters(
    model: torch.nn.Module, routing: Routing = "auto", decoding: Decoding = "dynamic"
) -> Iterator[Route]:
    """For the block (inference only: the updates add in place), a :data:`Route` for forward
    calls of ``model`` (a peft model with several LoRA adapters) whose rows each go through
    their own adapter (module docstring): ``stacked`` (all adapters of a layer in one
    product, where no adapter has a bias or an active dropout), ``slices``, or ``peft``
    (peft's ``adapter_names``); models that only peft can route take peft's path whatever
    ``routing`` asks. Afterwards each LoRA layer has peft's forward again, and every
    parameter's ``requires_grad`` is as before (peft's ``set_adapter``, which a compiled
    decode calls, resets ``requires_grad``).

    Args:
        model: The shared base with every agent's adapter (a ``PeftModel``).
        routing: ``stacked``, ``slices``, ``peft``, or ``auto`` (:func:`resolve_routing`
            on the model's device, for ``decoding``).
        decoding: How the batch steps (:mod:`agents.trainable_lm.steps`).

    Yields:
        ``route(names)``: the keyword arguments of a forward call of rows ``names``.

    Raises:
        ValueError: On an unknown ``routing``.
    """
    routing = resolve_routing(routing, next(model.parameters()).device, decoding)  # checks the spelling
    layers = _sliceable_layers(model) if routing != "peft" else None
    if not layers:
        yield peft_route
        return
    if routing == "stacked" and not _stackable(layers):
        routing = "slices"
    rows: list[tuple[str, int, int]] = []
    masks: dict[Layout, torch.Tensor] = {}
    layouts: dict[Layout, torch.Tensor] = {}  # a layout's A: the dtype and device of its mask
    adds = []
    for layer in layers:
        if routing == "stacked":
            layout, add, stacked_a = _add_stacked_updates(layer, masks)
            layouts.setdefault(layout, stacked_a)
        else:
            add = _add_updates(layer, rows)
        adds.append(add)
    last: list[tuple[str, ...]] = [()]

    def route(names: Sequence[str]) -> dict[str, Any]:
        if routing == "slices":
            rows[:] = runs(names)
        elif tuple(names) != last[0]:  # the masks change only when rows leave
            masks.update(_masks(layouts, names, model))
            last[0] = tuple(names)
        return {}

    trains = [(p, p.requires_grad) for p in model.parameters()]
    active = getattr(model, "active_adapter", None)
    if decoding == "compiled" and isinstance(active, str):  # the compiled graph guards on it: one for any agent
        model.set_adapter(min(model.peft_config))  # (a loss pass between decodes sets another: a recompile)
    own = [layer.__dict__.get("forward") for layer in layers]  # an instance's own, if any
    try:
        for layer, add in zip(layers, adds, strict=True):
            layer.forward = _routed_forward(layer, add, compiled=decoding == "compiled")
        yield route
    finally:
        for layer, forward in zip(layers, own, strict=True):
            if forward is None:
                layer.__dict__.pop("forward", None)
            else:
                layer.forward = forward
        if decoding == "compiled" and isinstance(active, str):
            model.set_adapter(active)
        for parameter, flag in trains:
            parameter.requires_grad_(flag)
