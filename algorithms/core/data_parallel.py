"""Data-parallel training through ``torch.distributed``, launched by ``torchrun``: one
process (rank) per GPU, or per CPU core group with ``gloo``, on one node or several.

How an update is shared (the text learners, :mod:`algorithms.text.base`):

- **Rollouts.** Every rank draws the same problems and episode seeds from the learner's
  seeded RNG, plays only its share of the update's groups (group b on rank
  ``b % world_size``), then the ranks exchange what they played
  (:func:`all_gather_objects`), so each holds the whole batch in the one-process order
  and computes the same returns and advantages.
- **Gradients.** In each minibatch every rank runs the forward and backward passes of its
  share of the rows, with the whole minibatch's token weights; the gradients are summed
  over the ranks (:func:`all_reduce_gradients`). The weights already normalise the loss
  over the whole minibatch, so the sum *is* the one-process gradient (no division by the
  world size), and every rank clips and steps identically. The same seed thus gives the
  same update on 1 or N processes, up to floating-point noise of other batch shapes.
- **Writing.** Rank 0 alone writes metrics, checkpoints, adapters and the run folder
  (:attr:`Ranks.writes`); every rank reads the checkpoint to resume, so a run resumes
  from any world size, and on several nodes the run folder must be one every node sees.

Why no ``DistributedDataParallel``: only the adapters train, their gradients are a few
megabytes, and the loss is accumulated over chunks of a minibatch whose row count differs
between ranks (a rank may have no row of some agent). DDP's bucketed hooks fire once per
backward pass and expect every rank to run the same passes; one explicit all-reduce after
the last chunk is simpler and exact.

Object collectives (:func:`all_gather_objects`, :func:`broadcast_object`) pickle what they
send. They only ever carry this job's own data between its own ranks (token ids, rewards,
metrics), which is the trust the ranks of one job share anyway (they already exchange
gradients that become the weights).

Outside ``torchrun`` (``WORLD_SIZE`` unset or 1) nothing here starts a process group and
every function is the identity of one process.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.rendezvous import rendezvous

from agents.devices import resolve
from algorithms.core.run_dirs import holds_run


@dataclass(frozen=True)
class Ranks:
    """This process's place in the job.

    Attributes:
        rank: Its global rank, 0 to ``world_size - 1``.
        world_size: How many processes train together.
        local_rank: Its rank on its node (its GPU's index).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def writes(self) -> bool:
        """Whether this rank writes the run's files and prints progress (rank 0 alone)."""
        return self.rank == 0

    def share(self, count: int) -> list[int]:
        """This rank's items of ``count`` (item k on rank ``k % world_size``).

        >>> Ranks(1, 2).share(5)
        [1, 3]
        """
        return list(range(self.rank, count, self.world_size))


COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=30)
"""How long a rank waits for the others at a collective before the job fails: TRL's
``ddp_timeout`` default (torch's is 10 minutes for NCCL), room for rank 0's writes of a
full fine-tuning's checkpoint and a slow first download of the model on one node."""


def from_environment() -> Ranks:
    """The ranks ``torchrun`` gives this process (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``);
    one process outside it."""
    return Ranks(int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("LOCAL_RANK", "0")))


def current() -> Ranks:
    """The ranks of the process group this process is in (one process without one)."""
    if not dist.is_initialized():
        return Ranks()
    return Ranks(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def restarted() -> bool:
    """Whether ``torchrun`` restarted this job's workers after one failed
    (``TORCHELASTIC_RESTART_COUNT`` > 0): the run continues from its last checkpoint."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0


def may_restart() -> bool:
    """Whether ``torchrun`` will restart failed workers (``--max-restarts`` > 0)."""
    return int(os.environ.get("TORCHELASTIC_MAX_RESTARTS", "0")) > 0


def restarted_run(folder: str | None, flag: str = "--run-dir") -> bool:
    """Whether this process is a worker ``torchrun`` restarted (``--max-restarts``) after one
    failed, with ``folder`` holding the run (or comparison): it then continues from its last
    checkpoint, as with ``resume`` (the same settings are checked).

    Raises:
        ValueError: Under ``torchrun --max-restarts`` > 0 without ``folder`` (a restarted
            worker would start over in a new folder), naming ``flag``.
    """
    if may_restart() and not folder:
        raise ValueError(f"torchrun --max-restarts continues a failed run from its folder: give {flag}")
    return restarted() and holds_run(Path(folder))


@contextlib.contextmanager
def process_group(device: str | torch.device = "cpu") -> Iterator[Ranks]:
    """Join ``torchrun``'s process group for the block: ``nccl`` when ``device`` is CUDA
    (each rank then uses GPU ``LOCAL_RANK``: ``cuda`` means that one), ``gloo`` on the CPU.
    Starts nothing outside ``torchrun`` (``WORLD_SIZE`` 1) or inside a group already
    joined (which the caller that joined it leaves).

    Args:
        device: Where the model trains (``auto``: CUDA where there is one, ``cpu``, ``cuda``).

    Yields:
        This process's :class:`Ranks`.

    Raises:
        ValueError: On ``cuda:N`` under ``torchrun`` (every process would use GPU N).
    """
    ranks = from_environment()
    if ranks.world_size > 1 and str(device).startswith("cuda:"):
        raise ValueError(
            f"device {device!r} under torchrun: every process uses its own GPU (LOCAL_RANK), "
            "give --device cuda or auto (CUDA_VISIBLE_DEVICES chooses the GPUs)"
        )
    if ranks.world_size == 1 or dist.is_initialized():
        yield current()
        return
    cuda = resolve(str(device))[0].type == "cuda"
    if cuda:
        torch.cuda.set_device(ranks.local_rank)
    store, rank, world_size = next(rendezvous("env://"))
    # torchrun keeps one store for all its attempts: restarted workers would read the
    # addresses the failed attempt left there (gloo: "connection refused") without a prefix.
    attempt = dist.PrefixStore(f"attempt-{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", store)
    dist.init_process_group(
        "nccl" if cuda else "gloo", store=attempt, rank=rank, world_size=world_size, timeout=COLLECTIVE_TIMEOUT
    )
    try:
        yield current()
    finally:
        dist.destroy_process_group()


def all_gather_objects(value: Any) -> list[Any]:
    """Every rank's ``value``, in rank order (``[value]`` in one process); pickled between
    this job's own ranks (the module docstring)."""
    if not dist.is_initialized():
        return [value]
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    return gathered


def broadcast_object(value: Any) -> Any:
    """Rank 0's ``value`` on every rank (``value`` in one process)."""
    if not dist.is_initialized():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier() -> None:
    """Wait until every rank is here (nothing in one process)."""
    if dist.is_initialized():
        dist.barrier()


def all_reduce_gradients(parameters: Sequence[torch.nn.Parameter]) -> None:
    """Sum ``parameters``' gradients over the ranks, in place (nothing in one process).

    A parameter without a gradient on a rank (no row of its agent there) counts as zero;
    one without a gradient on every rank keeps none, as in one process (Adam then leaves
    it alone). One flat all-reduce per dtype and device, plus one of the presence flags.

    Args:
        parameters: The trainable weights, in the same order on every rank.
    """
    if not dist.is_initialized() or not parameters:
        return
    present = torch.tensor([p.grad is not None for p in parameters], dtype=torch.float32, device=parameters[0].device)
    dist.all_reduce(present)
    for p, anywhere in zip(parameters, present.tolist(), strict=True):
        if anywhere and p.grad is None:
            p.grad = torch.zeros_like(p)
    with_grad = [p for p, anywhere in zip(parameters, present.tolist(), strict=True) if anywhere]
    groups: dict[tuple[torch.dtype, torch.device], list[torch.nn.Parameter]] = {}
    for p in with_grad:
        groups.setdefault((p.grad.dtype, p.grad.device), []).append(p)
    for group in groups.values():
        flat = torch.cat([p.grad.reshape(-1) for p in group])
        dist.all_reduce(flat)
        for p, part in zip(group, flat.split([p.numel() for p in group]), strict=True):
            p.grad.copy_(part.view_as(p.grad))


def sum_over_ranks(values: dict[str, float]) -> dict[str, float]:
    """``values`` summed key by key over the ranks (a key missing on a rank counts 0)."""
    if not dist.is_initialized():
        return values
    total: dict[str, float] = {}
    for part in all_gather_objects(values):
        for name, value in part.items():
            total[name] = total.get(name, 0.0) + value
    return total
