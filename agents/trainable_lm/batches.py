"""How token sequences meet the model in batches: padding, and the prompt pass that
sampling (:mod:`agents.trainable_lm.sampling`) and scoring (:mod:`agents.trainable_lm.scoring`)
share, which runs each distinct prompt once and gives its rows copies of its cache."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from agents.trainable_lm.mixed import Route, peft_route


def left_pad(
    prompts: list[list[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (N, width) padded on the left with ``pad_id``, and their mask, on ``device``
    (built on the CPU, then moved in one copy)."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device)


def right_pad(
    sequences: list[list[int]], width: int, pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (N, width) padded on the right with ``pad_id``, and their mask, on ``device``."""
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        mask[row, : len(sequence)] = 1
    return ids.to(device), mask.to(device)


def prefill(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    pad_id: int,
    device: torch.device,
    adapters: Sequence[str] | None = None,
    route: Route = peft_route,
) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run each distinct prompt once (left-padded with ``pad_id``, on ``device``; the logits
    of its last position only) and give every row a copy of its prompt's cache; with
    ``adapters`` (each row's adapter of a mixed-adapter batch, routed by ``route``:
    :mod:`agents.trainable_lm.mixed`), each distinct (adapter, prompt) once.

    Returns:
        ``(output, mask, positions, owner)``: the model's output on the distinct prompts
        (its ``cache`` now one row per prompt of ``prompts``), the rows' attention mask
        and position ids (N, P), and each row's index among the distinct prompts (N,).
    """
    names = [None] * len(prompts) if adapters is None else list(adapters)
    distinct: dict[tuple[str | None, tuple[int, ...]], int] = {}
    owners = [
        distinct.setdefault((name, tuple(prompt)), len(distinct))
        for name, prompt in zip(names, prompts, strict=True)
    ]
    ids, mask = left_pad([list(prompt) for _, prompt in distinct], pad_id, device)
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    per_row = {} if adapters is None else route([name for name, _ in distinct])
    output = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        use_cache=True,
        logits_to_keep=1,
        **per_row,
    )
    owner = torch.tensor(owners, dtype=torch.long, device=device)
    output.cache.batch_select_indices(owner)
    return output, mask[owner], positions[owner], owner
