"""How :class:`~agents.trainable_lm.TrainableLM` scores completions for the loss
(:meth:`Scoring.logprobs`).

Per micro-batch of ``micro_batch_size`` sequences, one left-padded forward pass of its
distinct prompts, then the completions continuing from their prompts' caches (logits only
where a completion's token is predicted), in segments of positions that each completion
leaves once it has ended (:func:`segments`; ``segmented_scoring=False``: one pass padded to
the longest); differentiable (the gradient through a shared prompt
sums over its completions, as separate passes would), or under the reference policy with
``reference=True`` (no gradient). With ``gradient_checkpointing`` each layer's activations
are recomputed in the backward pass (``use_reentrant=False``) and a differentiable pass
runs each completion with its prompt in one pass without a cache (a cache written in a
checkpointed layer would be written again by its recomputation); the passes without a
gradient (the reference policy, the old policy) run so too, so that equal weights score
equal log-probabilities (by :meth:`Scoring._score` they differed in rounding, and the KL
term moved an agent with no reward signal).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch

from agents.sampling import POLICY_TEMPERATURE
from agents.trainable_lm.batches import left_pad, prefill, right_pad
from agents.trainable_lm.extra import MISSING_EXTRA
from agents.trainable_lm.token_logprobs import token_logprobs

if MISSING_EXTRA is None:
    from transformers.modeling_layers import GradientCheckpointingLayer


PASS_OVERHEAD = {"cpu": 16.0}
"""What one more forward pass costs, in positions of one row (:func:`segments`), by device
type. On a CPU the arithmetic of the positions dominates and a pass's fixed cost is a few
positions' worth; on other devices (a GPU runs a few hundred positions in the time of one)
:data:`OTHER_PASS_OVERHEAD`."""
OTHER_PASS_OVERHEAD = 256.0
"""The pass overhead on a device not in :data:`PASS_OVERHEAD`: a guess, not measured."""


class Scoring:
    """:class:`~agents.trainable_lm.TrainableLM`'s scoring (see the module docstring): its
    methods, on the state the class sets up (seats, device, micro-batch size, meter)."""

    def _segments(self, lengths: Sequence[int]) -> list[int]:
        """Where the completion passes end (:func:`segments` with this device's
        :data:`PASS_OVERHEAD`; one pass unless ``segmented_scoring``)."""
        if not self.segmented_scoring:
            return [max(lengths)]
        return segments(lengths, PASS_OVERHEAD.get(self.device.type, OTHER_PASS_OVERHEAD))

    def logprobs(
        self,
        agent: str,
        prompt_ids: Sequence[Sequence[int]],
        token_ids: Sequence[Sequence[int]],
        *,
        temperature: float = POLICY_TEMPERATURE,
        reference: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        r"""log pi(token) of given completions, :math:`\pi = \mathrm{softmax}(\mathrm{logits} / T)`.

        Args:
            agent: The agent whose policy scores them.
            prompt_ids: Per sequence, the prompt's token ids.
            token_ids: Per sequence, the completion's token ids (at least one).
            temperature: T > 0, as when sampling.
            reference: Score under the reference policy (the base), without gradient.

        Returns:
            ``(logp, mask)``, both (N, T_max) float32: log-probabilities (differentiable
            unless ``reference``), 0 at padding, and 1 where a token is.

        Raises:
            ValueError: On mismatched lengths, an empty completion or T <= 0.
        """
        if len(prompt_ids) != len(token_ids) or any(len(t) == 0 for t in token_ids):
            raise ValueError("logprobs needs one non-empty completion per prompt")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0 to score completions, got {temperature}")
        longest = max(len(t) for t in token_ids)
        logp = torch.zeros(len(token_ids), longest, device=self.device)
        mask = torch.zeros(len(token_ids), longest, device=self.device)
        grad = torch.no_grad() if reference else contextlib.nullcontext()
        with self._acting(agent, reference) as model, grad:
            trained = torch.is_grad_enabled()
            recompute = trained and self.gradient_checkpointing
            for start in range(0, len(token_ids), self.micro_batch_size):
                stop = start + self.micro_batch_size
                prompts, completions = prompt_ids[start:stop], token_ids[start:stop]
                if recompute:
                    with _recomputing(model):
                        block = self._score_whole(model, prompts, completions, temperature)
                elif self.gradient_checkpointing:  # the reference and old policy as the policy is scored:
                    block = self._score_whole(model, prompts, completions, temperature)  # a KL of equal weights is 0
                else:
                    block = self._score(model, prompts, completions, temperature)
                for offset, row in enumerate(block):
                    logp[start + offset, : len(row)] = row
                    mask[start + offset, : len(row)] = 1.0
                if trained:
                    run = (
                        prompts
                        if recompute
                        else list({tuple(prompt): prompt for prompt in prompts}.values())
                    )
                    tokens = sum(map(len, run)) + sum(map(len, completions))
                    self._meter.trained_tokens += tokens
                    self._meter.trained_flops += tokens * self.train_flops_per_token
        return logp, mask

    def _score(
        self,
        model: torch.nn.Module,
        prompts: Sequence[Sequence[int]],
        completions: Sequence[Sequence[int]],
        temperature: float,
    ) -> list[torch.Tensor]:
        """Each distinct prompt runs once (:func:`~agents.trainable_lm.batches.prefill`: a
        group's G completions share theirs, and the gradient through it sums over them, as G
        separate passes would); the completions continue from its cache, right-padded, so
        logits are computed only where a completion's token is predicted: its first token at
        the prompt's last position, token k at the position of token k - 1.

        With ``segmented_scoring`` (the default), the completions run in segments of
        positions (:func:`segments`): a segment's pass takes only the rows still running
        and continues from the cache of the passes before, so a completion cut at the
        budget beside short ones does not pad them all to its length. Each token's
        log-probability is what one padded pass gives, up to floating-point rounding
        (another shape sums in another order)."""
        output, mask, positions, owner = prefill(model, prompts, self._pad_id, self.device)
        first = output.logits[owner, -1:, :]
        inputs = [list(c[:-1]) for c in completions]  # token k - 1 predicts token k
        longest = max(map(len, inputs))
        if longest == 0:
            return self._completion_logprobs(first, completions, temperature)
        ids, ids_mask = right_pad(inputs, longest, self._pad_id, self.device)
        rows = list(range(len(inputs)))  # the rows of the cache, in order
        logp: list[list[torch.Tensor]] = [[piece] for piece in self._completion_logprobs(first, [c[:1] for c in completions], temperature)]
        start = 0
        for stop in self._segments([len(i) for i in inputs]):
            running = [row for row in rows if len(inputs[row]) > start]
            if len(running) < len(rows):
                keep = torch.tensor([rows.index(row) for row in running], dtype=torch.long, device=self.device)
                output.cache.batch_select_indices(keep)
                rows = running
            index = torch.tensor(rows, dtype=torch.long, device=self.device)
            logits = model(
                input_ids=ids[index, start:stop],
                attention_mask=torch.cat([mask[index], ids_mask[index, :stop]], dim=1),
                position_ids=positions[index, -1:] + 1 + torch.arange(start, stop, device=self.device),
                cache=output.cache,
                use_cache=True,
            ).logits
            targets = [completions[row][start + 1 : stop + 1] for row in rows]
            for row, piece in zip(rows, self._completion_logprobs(logits, targets, temperature), strict=True):
                logp[row].append(piece)
            start = stop
        return [torch.cat(pieces) for pieces in logp]

    def _score_whole(
        self,
        model: torch.nn.Module,
        prompts: Sequence[Sequence[int]],
        completions: Sequence[Sequence[int]],
        temperature: float,
    ) -> list[torch.Tensor]:
        """What :meth:`_score` gives, in one pass without a cache (gradient checkpointing's
        scoring): each row is its left-padded prompt followed by its right-padded completion
        (but its last token), so every row's completion starts at the same column and the
        logits of the last ``longest`` positions predict the completions' tokens."""
        longest = max(len(c) for c in completions)
        ids, mask = left_pad([list(p) for p in prompts], self._pad_id, self.device)
        inputs, inputs_mask = right_pad(
            [list(c[:-1]) for c in completions], longest - 1, self._pad_id, self.device
        )
        ids, mask = torch.cat([ids, inputs], dim=1), torch.cat([mask, inputs_mask], dim=1)
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        logits = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=False,
            logits_to_keep=longest,
        ).logits
        return self._completion_logprobs(logits, completions, temperature)

    def _completion_logprobs(
        self, logits: torch.Tensor, completions: Sequence[Sequence[int]], temperature: float
    ) -> list[torch.Tensor]:
        """Each completion's tokens' log-probabilities from ``logits`` (N, T_max, V), whose
        position k predicts token k; in a differentiable pass the policy's entropy at those
        positions goes to the meter once the backward pass has computed it
        (:attr:`~agents.trainable_lm.model.Meter.entropies`)."""
        targets, present = right_pad([list(c) for c in completions], logits.shape[1], 0, self.device)
        entropies = None
        if torch.is_grad_enabled():  # the backward pass fills them (NaN: a pass without one, left out)
            entropies = torch.full(targets.shape, float("nan"), device=self.device)
            self._meter.entropies.append((entropies, present))
        logp = token_logprobs(logits, targets, temperature, entropies)  # in float32, without a float32 copy of the logits
        return [logp[row, : len(completion)] for row, completion in enumerate(completions)]


def segments(lengths: Sequence[int], overhead: float) -> list[int]:
    """Where the completion passes of :meth:`Scoring._score` end: the ends (exclusive, in
    positions) that minimize the positions run, ``sum over segments of (rows still
    running) x (segment length)``, plus ``overhead`` positions per pass (what one more
    pass costs, in positions of one row). Every end is a row's length, the last the
    longest; an exact search over the few distinct lengths of a micro-batch.

    >>> segments([96, 20, 22, 25], overhead=8)  # a cut completion beside three short ones
    [25, 96]
    >>> segments([96, 20, 22, 25], overhead=1000)  # passes are dear: one padded pass
    [96]
    >>> segments([5, 5, 5], overhead=0)
    [5]

    Raises:
        ValueError: Unless ``overhead`` is finite and >= 0.
    """
    if not 0 <= overhead < float("inf"):
        raise ValueError(f"a pass's overhead must be finite and >= 0, got {overhead}")
    ends = sorted({n for n in lengths if n > 0})
    best = {0: (0.0, [])}  # an end -> (the cheapest cost of the positions before it, its segments)
    for end in ends:
        best[end] = min(
            (cost + sum(n > start for n in lengths) * (end - start) + overhead, [*cuts, end])
            for start, (cost, cuts) in best.items()
            if start < end
        )
    return best[ends[-1]][1] if ends else []


@contextlib.contextmanager
def _recomputing(model: torch.nn.Module) -> Iterator[None]:
    """``model``'s checkpointed layers in training mode, which ``transformers`` checkpoints
    only then; only the layers' own flag is set, so their submodules (attention, dropout)
    stay in eval mode and the pass computes what an eval pass does."""
    layers = [
        module for module in model.modules() if isinstance(module, GradientCheckpointingLayer)
    ]
    for layer in layers:
        layer.training = True
    try:
        yield
    finally:
        for layer in layers:
            layer.training = False
