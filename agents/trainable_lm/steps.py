"""How a decoding batch steps from one token to the next (:meth:`Sampling._decode
<agents.trainable_lm.sampling.Sampling>`), three ways (``TrainableLM(decoding=...)``):

- ``dynamic`` (:class:`DynamicSteps`): transformers' growing cache; a row that has
  finished leaves the batch, so the later steps run only the rows still decoding;
- ``static`` (:class:`StaticSteps`): a ``StaticCache`` of fixed shape, the batch padded to
  a power of two and the cache to a multiple of :data:`LENGTH_BUCKET` positions; finished
  rows stay in the batch (their outputs unread) until the live ones fit a bucket of half
  the rows or less (down to :data:`MIN_COMPACT_ROWS`), when they move into a static cache
  of that bucket: so the shapes repeat from call to call, and a batch whose rows end at
  different lengths does not run its finished rows to the longest one's end;
- ``compiled``: the static step through ``torch.compile(fullgraph=True, dynamic=False)``,
  with CUDA graphs on a GPU (``mode="reduce-overhead"``, as transformers' own ``generate``
  compiles a static cache), attending on the key/value heads of a grouped-query model
  without copying the cache to the query heads (:mod:`agents.trainable_lm.attention`).
  What it compiles is its scope (:func:`compile_scope`): on the CPU one decoder layer
  (``layers``, regional compilation, :func:`compiled_layers`: dynamo traces a layer once
  per shape and its code serves all the others; the embedding, mask, final norm and head
  stay eager around them), on CUDA the whole step as one CUDA graph (``step``; per-layer
  graphs have not been measured on a GPU); :data:`SCOPE_VARIABLE` overrides either. It
  compiles once per shape (rows bucket x length bucket) and model (on two CPU cores, for a
  28-block model, cold: a fraction of the whole step's two minutes, BENCHMARKS.md,
  "Decoding ways"), then serves every later call of that shape, whatever its prompts,
  adapters' weights or rows' adapters. A mixed-adapter batch reaches its adapters through the stacked route's LoRA forwards
  (:mod:`agents.trainable_lm.mixed`), whose tensors the graph reads as inputs.

Each way runs each distinct prompt once (:func:`~agents.trainable_lm.batches.prefill`).
The static ways copy its cache into the static one, and attend over the whole cache with
the left padding masked out; they give the dynamic way's tokens up to floating-point
noise (attention over more, masked, positions), which the tests bound.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from typing import Any, Self

import torch

from agents.devices import SCOPES, synchronize
from agents.trainable_lm.attention import use_packed_attention
from agents.trainable_lm.batches import prefill
from agents.trainable_lm.mixed import Route, peft_route

LENGTH_BUCKET = 128
"""A static cache holds a multiple of this many positions (prompt plus new tokens, rounded
up), so prompts of similar length share one compiled shape."""
CACHES_KEPT = 8
"""Static caches a policy keeps for reuse, the most recent shapes: a decode's bucket and
the smaller ones its live rows move into (a new cache per call would give a compiled step
new input addresses, which CUDA graphs re-record). Each halving holds half the rows, so
the smaller caches together hold about as much as the first."""
MIN_COMPACT_ROWS = 8
"""A static batch moves its live rows into a smaller bucket only down to this many rows
(below it the saved arithmetic is small beside another compiled shape)."""
WARMUP_CALLS = {"cuda": 2}
"""The calls of a compiled shape that build it rather than run it, by device type (1
elsewhere): the first compiles, the second records the CUDA graph on CUDA;
:attr:`StaticSteps.warmup_seconds` times them."""
_CALLS: dict[tuple[str, int, str, int, int], int] = {}
"""Calls so far of each compiled shape (device type, model, active adapter, rows, length),
in this process."""
RECOMPILE_LIMIT = 64
"""Compiled shapes kept per step function during a decode (torch's default, 8, would fall
back to eager after a few row and length buckets of several models)."""


def bucket_rows(rows: int) -> int:
    """The static batch for ``rows`` requests: the next power of two.

    >>> [bucket_rows(n) for n in (1, 2, 3, 8, 9)]
    [1, 2, 4, 8, 16]
    """
    return 1 << (rows - 1).bit_length()


def bucket_length(positions: int) -> int:
    """The static cache's length for ``positions``: the next multiple of :data:`LENGTH_BUCKET`.

    >>> [bucket_length(n) for n in (1, 128, 129)]
    [128, 128, 256]
    """
    return -(-positions // LENGTH_BUCKET) * LENGTH_BUCKET


def static_cacheable(model: torch.nn.Module) -> bool:
    """Whether ``model``'s attention fits a plain ``StaticCache``: no sliding-window or
    other layer kinds (those keep the dynamic way)."""
    config = _config(model)
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    return kinds == {"full_attention"} and not getattr(config, "use_sliding_window", False)


def _config(model: torch.nn.Module) -> Any:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.config


def _forward(
    model: torch.nn.Module,
    cache: Any,
    ids: torch.Tensor,
    positions: torch.Tensor,
    cache_position: torch.Tensor | None,
    mask: torch.Tensor,
    **per_row: Any,
) -> torch.Tensor:
    """One decoding step of every row: the next token's logits (rows x vocabulary, float32);
    ``cache_position`` None: the cache's own (a growing cache); ``per_row``: a route's
    per-call arguments (peft's ``adapter_names``; eager only)."""
    output = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        cache=cache,
        cache_position=cache_position,
        use_cache=True,
        **per_row,
    )
    return output.logits[:, -1, :].float()


_COMPILED: dict[str, Any] = {}
COMPILERS = ("g++", "c++", "clang++")
"""The C++ compilers inductor can build a CPU step with (any one on ``PATH``)."""


def check_compilable(device: torch.device) -> None:
    """Refuse compiled decoding on a CPU without a C++ compiler (inductor writes C++ there;
    on CUDA it writes Triton kernels).

    Raises:
        RuntimeError: Naming what to install or choose instead.
    """
    if device.type == "cpu" and not any(map(shutil.which, COMPILERS)):
        raise RuntimeError(
            "decoding='compiled' on the CPU needs a C++ compiler (g++ or clang++) for "
            "torch.compile: install one, or decode 'static' or 'dynamic' (--decoding)"
        )


def compiled_forward(device: torch.device) -> Any:
    """:func:`_forward` compiled for ``device`` (module docstring), made once per process."""
    mode = "reduce-overhead" if device.type == "cuda" else None
    key = mode or "default"
    if key not in _COMPILED:
        compiled = torch.compile(_forward, fullgraph=True, dynamic=False, mode=mode)

        def forward(*args: Any, **kwargs: Any) -> torch.Tensor:
            with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
                return compiled(*args, **kwargs)

        _COMPILED[key] = forward
    return _COMPILED[key]


COMPILE_SCOPES = tuple(scope for scope in SCOPES if scope != "auto")
"""What ``decoding="compiled"`` compiles (:func:`compile_scope`): ``layers``, one decoder
layer (its LoRA layers' routed forwards inside), once per shape, its code then serving every layer
(:func:`compiled_layers`, regional compilation); ``step``, the whole step in one graph
(:func:`compiled_forward`)."""
DEFAULT_SCOPES = {"cuda": "step"}
"""The default :data:`COMPILE_SCOPES` entry by device type (``layers`` elsewhere): on CUDA
the whole step is one CUDA graph, replayed at once (per-layer graphs were not measured
on a GPU); on the CPU a layer compiles in a fraction of the step's time (BENCHMARKS.md,
"Decoding ways")."""
SCOPE_VARIABLE = "DELIBERATION_COMPILE_SCOPE"
"""The environment variable that overrides :data:`DEFAULT_SCOPES` (``layers`` or ``step``)
where the policy asks for ``auto`` (``TrainableLM(compile_scope=...)``, ``--compile-scope``)."""


def compile_scope(device: torch.device, asked: str = "auto") -> str:
    """What the compiled way compiles on ``device``: ``asked`` unless ``auto``, else
    :data:`SCOPE_VARIABLE` when set, else :data:`DEFAULT_SCOPES`.

    Raises:
        ValueError: On a scope not in :data:`COMPILE_SCOPES`.
    """
    chosen = os.environ.get(SCOPE_VARIABLE) or DEFAULT_SCOPES.get(device.type, "layers")
    scope = chosen if asked == "auto" else asked
    if scope not in COMPILE_SCOPES:
        where = f" ({SCOPE_VARIABLE})" if asked == "auto" else ""
        raise ValueError(f"the compile scope{where} must be one of {COMPILE_SCOPES}, not {scope!r}")
    return scope


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList | None:
    """The decoder layers of ``model`` (peft's or a plain transformers model) that
    :func:`compiled_layers` can compile one for all: a ``ModuleList`` of one class whose
    attention reads its cache by ``layer_idx``; None if there is none."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    for module in base.modules():
        if (
            isinstance(module, torch.nn.ModuleList)
            and len(module)
            and all(
                type(layer) is type(module[0])
                and hasattr(getattr(layer, "self_attn", None), "layer_idx")
                for layer in module
            )
        ):
            return module
    return None


class _OneLayerCache:
    """The cache a compiled decoder layer sees: its own layer of the static cache, whatever
    index its attention asks for (so one compiled code serves every layer)."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer

    def update(
        self, keys: torch.Tensor, values: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any
    ) -> Any:
        """The static layer's ``update`` (``layer_idx`` unread)."""
        return self.layer.update(keys, values, *args, **kwargs)


def _layer_forward(layer: torch.nn.Module, *args: Any, **kwargs: Any) -> torch.Tensor:
    """One decoder layer's forward (the region compiled); its submodules' routed forwards run inside."""
    return type(layer).forward(layer, *args, **kwargs)


def _compiled_layer(device: torch.device) -> Any:
    """:func:`_layer_forward` compiled for ``device``, made once per process."""
    mode = "reduce-overhead" if device.type == "cuda" else None
    key = "layer-" + (mode or "default")
    if key not in _COMPILED:
        _COMPILED[key] = torch.compile(_layer_forward, fullgraph=True, dynamic=False, mode=mode)
    return _COMPILED[key]


@contextlib.contextmanager
def compiled_layers(model: torch.nn.Module, device: torch.device) -> Iterator[None]:
    """For the block, every decoder layer of ``model`` (:func:`decoder_layers`) runs through
    one compiled layer (regional compilation): dynamo traces a layer once per shape and
    reuses its code for the others, which differ only in their tensors (weights, stacked
    LoRA factors, cache). Each layer is given a :class:`_OneLayerCache` of its own static
    cache layer, and every attention's ``layer_idx`` reads 0 meanwhile (a different
    constant per layer would compile each layer apart). The embedding, rotary embedding,
    mask, final norm and head stay eager around them. A decode enters it once
    (:class:`StaticSteps` is its block), not once per token: the swap is Python work over
    every layer (about 0.5 ms for 28 layers on the CPU)."""
    layers = decoder_layers(model)
    compiled = _compiled_layer(device)
    saved = [(layer, layer.self_attn.layer_idx, layer.__dict__.get("forward")) for layer in layers]

    def region(layer: torch.nn.Module, index: int) -> Any:
        def forward(*args: Any, cache: Any = None, **kwargs: Any) -> torch.Tensor:
            view = None if cache is None else _OneLayerCache(cache.layers[index])
            return compiled(layer, *args, cache=view, **kwargs)

        return forward

    try:
        for layer, index, _ in saved:
            layer.forward = region(layer, index)
            layer.self_attn.layer_idx = 0
        with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
            yield
    finally:
        for layer, index, forward in saved:
            layer.self_attn.layer_idx = index
            if forward is None:
                del layer.forward
            else:
                layer.forward = forward


def _static_cache(
    caches: dict[tuple[int, int, int], Any], model: torch.nn.Module, rows: int, length: int
) -> Any:
    """The kept ``StaticCache`` of ``model`` for ``rows`` x ``length``, or a new one (kept;
    the oldest dropped beyond :data:`CACHES_KEPT`). Its old contents need no clearing: each
    call overwrites the prompts' positions, and a step attends only to positions written
    before it (causal) outside the masked padding."""
    from transformers import StaticCache

    key = (id(model), rows, length)
    cache = caches.pop(key, None)
    if cache is None:
        cache = StaticCache(config=_config(model), max_cache_len=length)
    caches[key] = cache  # now the most recent
    while len(caches) > CACHES_KEPT:
        del caches[next(iter(caches))]
    return cache


class DynamicSteps:
    """The growing cache's steps (module docstring). :attr:`logits` holds the next token's
    logits of the live rows, in their order. A decode steps it in a ``with`` block, as
    :class:`StaticSteps` (here the block installs nothing)."""

    def __init__(
        self,
        model: torch.nn.Module,
        prompts: list[list[int]],
        pad_id: int,
        device: torch.device,
        adapters: Sequence[str] | None,
        route: Route = peft_route,
    ) -> None:
        self.model, self.device, self.adapters, self.route = model, device, adapters, route
        output, self.mask, self.positions, owner = prefill(
            model, prompts, pad_id, device, adapters, route
        )
        self.cache, self.logits = output.cache, output.logits[owner, -1, :].float()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exception: object) -> None:
        return None

    def drop(self, keep: torch.Tensor, live: list[int]) -> None:
        """Keep only rows ``keep`` (indices into the previous live rows); ``live``: the rows left."""
        self.cache.batch_select_indices(keep)
        self.mask, self.positions = self.mask[keep], self.positions[keep]

    def step(self, chosen: torch.Tensor, live: list[int]) -> torch.Tensor:
        """Feed the live rows' ``chosen`` tokens; the next logits of the live rows."""
        per_row = {} if self.adapters is None else self.route([self.adapters[row] for row in live])
        ones = torch.ones((len(live), 1), dtype=self.mask.dtype, device=self.device)
        self.mask = torch.cat([self.mask, ones], dim=1)
        self.positions = self.positions[:, -1:] + 1
        return _forward(self.model, self.cache, chosen[:, None], self.positions, None, self.mask, **per_row)


class StaticSteps:
    """The static cache's steps, eager or compiled (module docstring). Same interface as
    :class:`DynamicSteps`; finished rows stay in the batch, unread, until :meth:`drop` moves
    the live ones into a smaller bucket. Its steps run in its ``with`` block, which installs
    the compiled layers of the ``layers`` scope for the decode (:func:`compiled_layers`)
    and takes them out when it ends, however it ends.

    ``route`` must give no per-call arguments in ``compiled`` mode (the stacked route's
    forwards do not; :func:`agents.devices.check_decoding` refuses the others); ``scope`` is
    what that mode compiles, as :func:`compile_scope` reads it."""

    def __init__(
        self,
        model: torch.nn.Module,
        prompts: list[list[int]],
        pad_id: int,
        device: torch.device,
        adapters: Sequence[str] | None,
        route: Route,
        max_new_tokens: int,
        compiled: bool,
        caches: dict[tuple[int, int, int], Any],
        scope: str = "auto",
    ) -> None:
        rows = bucket_rows(len(prompts))
        padded = list(prompts) + [prompts[0]] * (rows - len(prompts))  # copies, unread
        names = None if adapters is None else list(adapters) + [adapters[0]] * (rows - len(prompts))
        output, mask, positions, owner = prefill(model, padded, pad_id, device, names, route)
        width = mask.shape[1]
        self.model, self.caches, self.route, self.adapters = model, caches, route, adapters
        self.length = bucket_length(width + max_new_tokens)
        self.cache = _static_cache(caches, model, rows, self.length)
        for static, grown in zip(self.cache.layers, output.cache.layers, strict=True):
            if not static.is_initialized:
                static.lazy_initialization(grown.keys, grown.values)
            static.keys[:, :, :width].copy_(grown.keys)
            static.values[:, :, :width].copy_(grown.values)
            static.cumulative_length.fill_(width)
        self.mask = torch.ones((rows, self.length), dtype=mask.dtype, device=device)
        self.mask[:, :width] = mask
        self.positions = positions[:, -1:]
        self.cache_position = torch.tensor([width - 1], device=device)
        self.ids = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.held = list(range(len(prompts))) + [0] * (rows - len(prompts))  # each static row's request
        self.per_row = {} if names is None else route(names)
        if compiled and self.per_row:
            raise ValueError("compiled decoding routes mixed-adapter rows by the stacked route only")
        if compiled:
            use_packed_attention(_config(model))  # no copy of the cache per head group and step
        self.scope = None
        if compiled:
            self.scope = compile_scope(device, scope) if decoder_layers(model) is not None else "step"
        self.forward = compiled_forward(device) if self.scope == "step" else _forward
        self._regions: contextlib.ExitStack | None = None  # the with block's, while it runs
        self.compiled, self.warmup_seconds = compiled, 0.0
        self.adapter = str(getattr(model, "active_adapter", None))  # a graph per active adapter (peft's single-agent path)
        self.live = torch.arange(len(prompts), device=device)
        self.logits = output.logits[owner, -1, :].float()[self.live]

    def __enter__(self) -> Self:
        """Install the ``layers`` scope's compiled layers for the steps to come."""
        self._regions = contextlib.ExitStack()
        if self.scope == "layers":
            self._regions.enter_context(compiled_layers(self.model, self.ids.device))
        return self

    def __exit__(self, *exception: object) -> None:
        """Give every layer its own forward back."""
        regions, self._regions = self._regions, None
        if regions is not None:
            regions.close()

    def drop(self, keep: torch.Tensor, live: list[int]) -> None:
        """Only requests ``live`` are read from now on (``keep``: unused). While the batch is
        larger than :data:`MIN_COMPACT_ROWS` and the live requests fit a smaller bucket, they
        move into a static cache of that bucket (a shape of its own, compiled once)."""
        rows = max(bucket_rows(len(live)), MIN_COMPACT_ROWS)
        slot = {request: row for row, request in reversed(list(enumerate(self.held)))}
        if rows < len(self.held):
            self._compact([slot[request] for request in live] + [slot[live[0]]] * (rows - len(live)))
            slot = {request: row for row, request in enumerate(self.held[: len(live)])}
        self.live = torch.tensor([slot[request] for request in live], dtype=torch.long, device=self.ids.device)

    def _compact(self, rows: list[int]) -> None:
        """Keep static rows ``rows`` (in this order) in a cache of ``len(rows)`` rows."""
        index = torch.tensor(rows, dtype=torch.long, device=self.ids.device)
        cache = _static_cache(self.caches, self.model, len(rows), self.length)
        for new, old in zip(cache.layers, self.cache.layers, strict=True):
            if not new.is_initialized:  # shapes from a view: no copy
                new.lazy_initialization(old.keys[:1].expand(len(rows), -1, -1, -1), old.values[:1].expand(len(rows), -1, -1, -1))
            torch.index_select(old.keys, 0, index, out=new.keys)
            torch.index_select(old.values, 0, index, out=new.values)
            new.cumulative_length.copy_(old.cumulative_length)
        self.cache, self.held = cache, [self.held[row] for row in rows]
        self.mask, self.positions, self.ids = self.mask[index], self.positions[index], self.ids[index]
        if self.adapters is not None:
            self.per_row = self.route([self.adapters[request] for request in self.held])

    def step(self, chosen: torch.Tensor, live: list[int]) -> torch.Tensor:
        """Feed the live rows' ``chosen`` tokens (finished rows repeat their last); the next
        logits of the live rows."""
        self.ids[self.live, 0] = chosen
        self.positions = self.positions + 1
        self.cache_position = self.cache_position + 1
        warming = False
        if self.compiled:  # eager steps build nothing: no key to make per token
            shape = (self.ids.device.type, id(self.model), self.adapter, self.ids.shape[0], self.length)
            warming = _CALLS.get(shape, 0) < WARMUP_CALLS.get(shape[0], 1)
        if warming:
            synchronize(self.ids.device)
            started = time.perf_counter()
        if self._regions is None:
            raise RuntimeError("StaticSteps steps in its with block (which installs the compiled layers)")
        logits = self.forward(
            self.model, self.cache, self.ids, self.positions, self.cache_position, self.mask, **self.per_row
        )
        if warming:  # a shape's compilation, timed apart from decoding
            synchronize(self.ids.device)
            self.warmup_seconds += time.perf_counter() - started
            _CALLS[shape] = _CALLS.get(shape, 0) + 1
        return logits[self.live]
