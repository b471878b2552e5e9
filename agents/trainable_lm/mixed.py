"""Mixed-adapter batches: each row of one batch through its own agent's LoRA adapter on the
shared base (:meth:`~agents.trainable_lm.sampling.Sampling.sample_joint`).

peft does this when each forward call gets ``adapter_names=[...]``: on every call it
registers a pre-hook on each of the model's modules, and in each LoRA layer it lists each
adapter's rows in Python, gathers them with a list index (on CUDA, the list is first copied
from host memory) and scatters the update back. That is a fixed cost per decoded
token: on two CPU cores, a 28-layer model of Qwen2.5's layout with LoRA on its 196 linear
layers and almost no arithmetic (width 64) took 120 ms per step for two rows through peft's
mixed path, and 58 ms by slices (BENCHMARKS.md, "Mixed-adapter batches").

:func:`routed_adapters` does the same arithmetic on slices. A batch lists its rows agent by
agent, so each adapter's rows are consecutive runs; the base runs with the adapters
disabled, and a forward hook on each LoRA layer adds each run's update to its slice of the
layer's output: ``out[rows] += B(A(dropout(x[rows]))) * scaling``, computed in the
adapter's dtype and added in the output's, as peft's own mixed path computes it. The hooks
are registered once per decode, not per step. Models peft treats otherwise (DoRA and other
LoRA variants, LoRA on embeddings or convolutions, ``modules_to_save``, merged adapters)
keep peft's path, and a team with DoRA adapters, which peft cannot mix (:func:`mixable`),
samples agent by agent.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

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
) -> Callable[[torch.nn.Module, tuple[Any, ...], dict[str, Any], torch.Tensor], None]:
    """A forward hook of ``layer`` adding each run of ``rows`` (filled in later) its adapter's
    update, with the arithmetic of peft's ``lora.Linear`` (``nn.Linear`` is ``F.linear``)."""
    factors = _factors(layer)
    linear = torch.nn.functional.linear

    def hook(
        _: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: torch.Tensor
    ) -> None:
        x = args[0] if args else kwargs["x"]
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
            output[start:stop] += (
                update if update.dtype == output.dtype else update.to(output.dtype)
            )

    return hook


@contextlib.contextmanager
def routed_adapters(model: torch.nn.Module) -> Iterator[Route]:
    """For the block (inference only: the hooks add in place), a :data:`Route` for forward
    calls of ``model`` (a peft model with several LoRA adapters) whose rows each go through
    their own adapter: by slices (module docstring) where the model allows it, else peft's
    ``adapter_names``. Afterwards each LoRA layer is enabled or disabled, and every
    parameter's ``requires_grad`` is, as before (peft's toggles reset ``requires_grad``).

    Args:
        model: The shared base with every agent's adapter (a ``PeftModel``).

    Yields:
        ``route(names)``: the keyword arguments of a forward call of rows ``names``.
    """
    layers = _sliceable_layers(model)
    if not layers:
        yield peft_route
        return
    rows: list[tuple[str, int, int]] = []

    def route(names: Sequence[str]) -> dict[str, Any]:
        rows[:] = runs(names)
        return {}

    trains = [(p, p.requires_grad) for p in model.parameters()]
    disabled = [layer.disable_adapters for layer in layers]
    handles = [
        layer.register_forward_hook(_add_updates(layer, rows), with_kwargs=True) for layer in layers
    ]
    try:
        for layer in layers:  # the base alone; the hooks add the updates
            layer.enable_adapters(False)
        yield route
    finally:
        for handle in handles:
            handle.remove()
        for layer, was_disabled in zip(layers, disabled, strict=True):
            layer.enable_adapters(not was_disabled)
        for parameter, flag in trains:
            parameter.requires_grad_(flag)
