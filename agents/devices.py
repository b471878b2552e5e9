"""Where the trainable models run and in what precision: the one place that names a device.

A run asks for a ``device`` and a ``dtype`` by name; :func:`resolve` turns the names into
torch's objects, and every model, tensor and checkpoint of the run follows them:

==========  =======================================================================
device      ``auto`` (CUDA when this machine has it, else the CPU), ``cpu``, ``cuda``
            (the current CUDA device), ``cuda:N`` (CUDA device N)
dtype       ``auto`` (on CUDA bfloat16, or float16 on a GPU without native bfloat16,
            compute capability under 8 such as the T4 and V100; float32 on the CPU),
            ``float32``, ``bfloat16``, ``float16``: the weights' dtype (LoRA adapters
            stay float32: peft keeps them so on a half-precision base)
routing     how one batch of several agents' rows reaches each row's LoRA adapter
            (:func:`agents.trainable_lm.mixed.routed_adapters`): ``auto`` (``stacked``
            on CUDA, ``slices`` elsewhere), ``stacked``, ``slices``, ``peft``
decoding    how a decoding batch steps from token to token
            (:mod:`agents.trainable_lm.steps`): ``dynamic`` (a growing cache; finished
            rows leave), ``static`` (a static cache of bucketed shape), ``compiled``
            (the static step through ``torch.compile``, CUDA graphs on a GPU)
==========  =======================================================================

>>> check_names("cuda:1", "bfloat16")
>>> check_names("gpu", "auto")
Traceback (most recent call last):
...
ValueError: device (--device) must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'

The spelling is checked without torch (:func:`check_names`: configs check it when they are
built, and ``--help`` stays fast); whether the machine has the device is checked by
:func:`resolve`. The helpers below give the learners' ``perf/*`` metrics what they read
from the device: its peak memory (:func:`peak_memory_gb`) and its peak FLOPS
(:func:`peak_flops`, from :data:`PEAK_FLOPS`).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

Dtype = Literal["auto", "float32", "bfloat16", "float16"]
"""The dtypes a run may ask for."""
DTYPES: tuple[str, ...] = ("auto", "float32", "bfloat16", "float16")
Routing = Literal["auto", "stacked", "slices", "peft"]
"""The routes a mixed-adapter batch may ask for (module table)."""
ROUTINGS: tuple[str, ...] = ("auto", "stacked", "slices", "peft")
Decoding = Literal["dynamic", "static", "compiled"]
"""The ways a decoding batch may step (module table)."""
DECODINGS: tuple[str, ...] = ("dynamic", "static", "compiled")
CompileScope = Literal["auto", "layers", "step"]
"""What compiled decoding may compile (:func:`agents.trainable_lm.steps.compile_scope`):
one decoder layer for all, the whole step, or ``auto``, the device's default."""
SCOPES: tuple[str, ...] = ("auto", "layers", "step")
DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")
"""The devices a run may ask for."""

PEAK_FLOPS: tuple[tuple[str, float], ...] = (
    ("H200", 989e12),
    ("H100 PCIe", 756e12),
    ("H100 NVL", 835e12),
    ("H100", 989e12),  # SXM
    ("H800", 989e12),
    ("A100", 312e12),
    ("A800", 312e12),
    ("L40S", 362e12),
    ("L40", 181e12),  # before "L4", which "NVIDIA L40" also contains
    ("L4", 121e12),
    ("A10G", 125e12),
    ("A10", 125e12),  # after "A100" and "A10G", which contain it
    ("RTX 4090", 165e12),
    ("V100-PCIE", 112e12),  # float16 only: no bfloat16 tensor cores before compute capability 8
    ("V100", 125e12),  # SXM2
    ("T4", 65e12),
)
"""Dense bfloat16/float16 tensor-core FLOPS per second of known GPUs (the vendors' data
sheets, without sparsity), by a part of the name ``torch.cuda.get_device_name`` gives;
the first that the name contains counts (so ``H100 PCIe`` before ``H100``)."""


def check_names(device: str, dtype: str) -> None:
    """Refuse a device or dtype name that is none of the module table's (no torch needed).

    Raises:
        ValueError: Naming the accepted spellings.
    """
    if not DEVICE_PATTERN.fullmatch(device):
        raise ValueError(f"device (--device) must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype (--dtype) must be one of {', '.join(DTYPES)}, got {dtype!r}")


def check_routing(routing: str) -> None:
    """Refuse a routing name that is none of the module table's.

    Raises:
        ValueError: Naming the accepted spellings.
    """
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {', '.join(ROUTINGS)}, got {routing!r}")


def check_decoding(decoding: str, routing: str = "auto", scope: str = "auto") -> None:
    """Refuse a decoding name that is none of the module table's, ``compiled`` with
    peft's route (whose per-call ``adapter_names`` a compiled step cannot take), and a
    compile scope other than ``auto`` for a decoding that compiles nothing.

    Raises:
        ValueError: Naming the accepted spellings.
    """
    if decoding not in DECODINGS:
        raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
    check_routing(routing)
    if decoding == "compiled" and routing == "peft":
        raise ValueError(
            "decoding 'compiled' routes mixed-adapter batches by the stacked route: use the routing "
            "(--mixed-routing) 'stacked' or 'auto' (stacked then), not 'peft'"
        )
    if scope not in SCOPES:
        raise ValueError(f"compile scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if scope != "auto" and decoding != "compiled":
        raise ValueError(
            f"the compile scope {scope!r} (--compile-scope) is what decoding 'compiled' compiles: "
            f"add --decoding compiled, or leave the scope 'auto' (decoding {decoding!r} compiles nothing)"
        )


def resolve_routing(routing: str, device: torch.device, decoding: str = "dynamic") -> str:
    """The route ``routing`` asks for on ``device``: ``auto`` is ``stacked`` on CUDA, where
    a decoded token's cost is its kernels (stacked runs three per LoRA layer whatever the
    number of agents), and under ``compiled`` decoding (one graph for any rows' adapters);
    ``slices`` elsewhere (peft's numbers bit for bit; on the CPU stacked is faster too,
    BENCHMARKS.md "Mixed-adapter batches", but slices keep the samples of runs made before
    it exactly)."""
    check_routing(routing)
    if routing == "auto":
        return "stacked" if device.type == "cuda" or decoding == "compiled" else "slices"
    return routing


def resolve(device: str = "auto", dtype: str = "auto") -> tuple[torch.device, torch.dtype]:
    """The torch device and dtype that the names ask for on this machine.

    Args:
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        dtype: ``auto``, ``float32``, ``bfloat16`` or ``float16``.

    Raises:
        ValueError: On a name of neither table, or CUDA (or CUDA device N) where this
            machine has none, saying what to ask for instead.
    """
    import torch

    check_names(device, dtype)
    why = unavailable(device)
    if why:
        raise ValueError(f"device {device!r}: {why}: use 'cpu' or 'auto'")
    resolved = torch.device(device if device != "auto" else "cuda" if torch.cuda.is_available() else "cpu")
    if dtype == "auto":
        dtype = "float32" if resolved.type != "cuda" else "bfloat16" if native_bfloat16(resolved) else "float16"
    return resolved, getattr(torch, dtype)


def native_bfloat16(device: torch.device) -> bool:
    """Whether the CUDA ``device`` computes in bfloat16 natively (compute capability 8 or
    more: the A100, A10, L4, H100 and later); older GPUs (the T4, V100) emulate it slowly,
    so ``auto`` gives them float16 (trained with loss scaling:
    :func:`algorithms.core.optimizers.loss_scaler`)."""
    import torch

    return torch.cuda.get_device_capability(device)[0] >= 8


def unavailable(device: str) -> str:
    """Why this machine cannot run on ``device`` (a name :func:`check_names` accepts), or
    ``""`` when it can."""
    import torch

    if not device.startswith("cuda"):
        return ""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.partition(":")[2] or 0)
    if index < count:
        return ""
    has = f"{count} CUDA device(s)" if count else "no CUDA (torch.cuda.is_available() is False)"
    return f"it asks for CUDA device {index}, and this machine has {has}"


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"``: how runs record a dtype."""
    return str(dtype).removeprefix("torch.")


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously), so that a clock read
    next measures it; nothing on the CPU."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory_gb(device: torch.device) -> float:
    """The most memory used so far, in GB (10^9 bytes): on CUDA the tensors' peak since the
    last :func:`reset_peak_memory` (``torch.cuda.max_memory_allocated``); on the CPU the
    process's peak resident set size since it started (``getrusage``'s ``ru_maxrss``, which
    cannot be reset)."""
    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 1e9
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e9 if sys.platform == "darwin" else peak * 1024 / 1e9  # macOS counts bytes, Linux KiB


def reset_peak_memory(device: torch.device) -> None:
    """Start a new window of :func:`peak_memory_gb` (CUDA only; the CPU's peak is the process's)."""
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_flops(device: torch.device, dtype: torch.dtype) -> float | None:
    """The device's dense peak FLOPS per second at ``dtype`` (:data:`PEAK_FLOPS`), or None
    where unknown: the CPU, a GPU not in the table, and float32 (whose peak depends on
    whether TF32 tensor cores are allowed), and bfloat16 where the GPU emulates it
    (:func:`native_bfloat16`)."""
    import torch

    if device.type != "cuda" or dtype not in (torch.bfloat16, torch.float16):
        return None
    if dtype == torch.bfloat16 and not native_bfloat16(device):
        return None
    name = torch.cuda.get_device_name(device)
    return next((flops for part, flops in PEAK_FLOPS if part in name), None)


DETERMINISTIC_ENVIRONMENT = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "FLASH_ATTENTION_DETERMINISTIC": "1"}
"""What :func:`full_determinism` sets in the environment: cuBLAS's fixed workspace
(without it, ``torch.use_deterministic_algorithms`` refuses cuBLAS products on CUDA 10.2 and
later) and the flash-attention package's deterministic backward pass."""


@contextlib.contextmanager
def full_determinism() -> Iterator[None]:
    """Within it, this process's torch computations repeat bit for bit on the same machine
    (transformers' ``enable_full_determinism`` without its seeding: every run seeds its own
    generators from ``seed``), and as it was after it: :data:`DETERMINISTIC_ENVIRONMENT`,
    ``torch.use_deterministic_algorithms(True, warn_only=True)`` (an op PyTorch has no
    deterministic kernel for warns, naming itself, instead of stopping the run: on some
    PyTorch versions CUDA's floating-point ``cumsum``, which the sampler's top-p draw
    uses), cuDNN's deterministic kernels and no cuDNN benchmarking. On the CPU no op of the
    text learners (dynamic, static and compiled decoding, the loss, the KL) lacks a
    deterministic kernel. Enter it before the models load: cuBLAS reads its workspace
    setting once, when a process first uses it.
    """
    import torch

    environment = {name: os.environ.get(name) for name in DETERMINISTIC_ENVIRONMENT}
    algorithms = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    cudnn = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    enable_full_determinism()
    try:
        yield
    finally:
        for name, value in environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        torch.use_deterministic_algorithms(algorithms[0], warn_only=algorithms[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn


def enable_full_determinism() -> None:
    """:func:`full_determinism`'s settings for the rest of this process (a Ray rollout
    worker's, which lives as long as the run)."""
    import torch

    os.environ.update(DETERMINISTIC_ENVIRONMENT)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
