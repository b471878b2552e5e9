"""Rollouts sampled by CTranslate2: the learner's policy handed to a fast engine each update.

Sampling is what an update of the LLM-weight learners costs (:mod:`algorithms.text.base`).
CTranslate2 decodes a batch faster than torch on the CPU, but only from weights it has
loaded, so :class:`CTranslate2Sampler` hands it the policy of each update: the first time,
an agent's weights with its LoRA adapter merged in (:meth:`TrainableLM.merged_state_dict`)
become a plain ``transformers`` model, CTranslate2's converter turns it into a float32
model in a work directory (:func:`agents.ctranslate2_convert.convert_model`), and a
``ctranslate2.Generator`` loads it. It samples agent by agent: against torch's sampler
before it shared a group's prompt, stopped sorting the vocabulary at every token and
decoded both agents in one batch, it took 2.5x to 3.2x less time on 2 cores; against
today's, at 16 completions of 32 tokens, 1.7x more (BENCHMARKS.md, "Speed against TRL's
GRPOTrainer", ``benchmarks/text_speed.py``).

**On-policy.** The learner calls :meth:`sync` with the version of its weights before each
collection; a new version makes the converted models stale, and each agent's is brought up
to date on its first sampling call. An adapter changes only the weights of the layers it
adapts, so only those are handed over again: their merged values are written over the old
ones in the converted model's ``model.bin``, where the converter wrote them verbatim (the
projections of a Llama-family model, :data:`LLAMA_WEIGHTS`; checked against the first
conversion, byte for byte). Where that does not hold (full fine-tuning, another
architecture, a layer not found as written) the whole model is converted again. Either
way the converted model is, byte for byte, what converting the current weights gives. A
completion always comes from the weights of its update; :attr:`CTranslate2Sampler.handover_seconds`
sums the time spent handing weights over.

**The same policy as** :meth:`TrainableLM.sample`: the chat template of the policy's
tokenizer, the ``top_k`` likeliest tokens (0: the whole vocabulary), then the temperature,
then top-p, the policy's
stop tokens (kept at the end of the completion), ``min_new_tokens`` before a stop token
may come. Merged float32 weights compute the adapted model's logits up to about 1e-4.

**Seeds: per call, not per request.** CTranslate2 draws all rows of a batch from one
random stream. Each sampling call loads its own copy of the converted model and seeds its
stream from the call's seeds, in order, so the same call (same requests and seeds, same
weights, same threads) gives the same completions, but a request's completion also depends
on the other requests of its call. :meth:`TrainableLM.sample` gives a request the same
completion whatever its batch; use it where that matters.

**Log-probabilities** (:attr:`Completion.logprobs`, under softmax(logits / temperature),
softmax(logits) when greedy, as :meth:`TrainableLM.sample` records them): CTranslate2's own
at temperature 1 and greedy (they match torch's to about 2e-5, top-p or not); at other
temperatures CTranslate2 reports them at temperature 1, and with ``min_new_tokens`` after
banning the stop tokens, so then torch scores the completions instead
(:meth:`TrainableLM.logprobs`), which costs about as much as CTranslate2's sampling
(BENCHMARKS.md). The learners never read these (their loss scores with torch), so
:func:`algorithms.text.train.train` builds the sampler with ``exact_logprobs=False``: in
those two cases the log-probabilities are then NaN, never another distribution's.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import shutil
import struct
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from agents.base import Message
from agents.ctranslate2_backend import CALLS, SEEDING_LOCK, generate_batch, load_copy, stream_seed
from agents.ctranslate2_convert import convert_model
from agents.local import usable_cpus
from agents.sampling import POLICY_TEMPERATURE
from agents.trainable_lm import Completion, TrainableLM, check_sample_arguments

LLAMA_WEIGHTS = {
    "self_attn.q_proj": ("self_attention/linear_0", 0),
    "self_attn.k_proj": ("self_attention/linear_0", 1),
    "self_attn.v_proj": ("self_attention/linear_0", 2),
    "self_attn.o_proj": ("self_attention/linear_1", 0),
    "mlp.gate_proj": ("ffn/linear_0", 0),
    "mlp.up_proj": ("ffn/linear_0_noact", 0),
    "mlp.down_proj": ("ffn/linear_1", 0),
}
"""Where CTranslate2's converter writes the projections of layer i of a Llama-family model
(``model.layers.{i}.<projection>.weight``): into the variable ``decoder/layer_{i}/<variable>/weight``,
as part k of the rows (q, k and v are fused in this order: ``LlamaLoader.set_decoder``)."""


class CTranslate2Sampler:
    """Samples a :class:`TrainableLM`'s completions with CTranslate2 (module docstring).

    Give it to a learner as ``sampler=``; it samples as :meth:`TrainableLM.sample` does
    (same arguments).

    Args:
        lm: The learner's policy (the same object the learner trains).
        threads: CPU threads of CTranslate2 (default every CPU this process may use).
        work_dir: Where the converted models go (default a temporary directory, removed
            by :meth:`close`); each takes the model's float32 size on disk.
        exact_logprobs: Score with torch where CTranslate2's log-probabilities are not the
            policy's (module docstring); False: NaN there.

    Raises:
        ImportError: If the ``ctranslate2`` extra is not installed.
    """

    def __init__(
        self,
        lm: TrainableLM,
        *,
        threads: int | None = None,
        work_dir: str | Path | None = None,
        exact_logprobs: bool = True,
    ) -> None:
        if importlib.util.find_spec("ctranslate2") is None:
            raise ImportError("CTranslate2Sampler needs ctranslate2: pip install 'deliberation-env[ctranslate2]'")
        self.lm = lm
        self.threads = threads or usable_cpus()
        self.exact_logprobs = exact_logprobs
        self._owned = work_dir is None
        self.work_dir = Path(tempfile.mkdtemp(prefix="ct2-sampler-") if work_dir is None else work_dir)
        self.version: int | None = None
        self.handover_seconds = 0.0
        """Seconds spent handing weights over (checking, converting, patching), summed over the calls."""
        self._converted: dict[tuple[int, str | None], Path] = {}
        self._layouts: dict[tuple[int, str | None], dict[str, int] | None] = {}
        self._current: set[tuple[int, str | None]] = set()
        stop_ids = sorted(lm._stop_ids)
        self._stop_ids = set(stop_ids)
        self._end_tokens = lm.tokenizer.convert_ids_to_tokens(stop_ids)

    # ------------------------------------------------------------------ weights
    def sync(self, weights: Mapping[str, Mapping[str, torch.Tensor]], version: int) -> None:
        """Take version ``version`` of the learner's weights (a no-op when already current).

        The weights are read from ``lm`` itself when an agent first samples in this
        version; ``weights`` (the learner's ``lm.state_dict()``) is checked against them.

        Raises:
            ValueError: If ``weights`` are not ``lm``'s current weights (a sampler built
                on another policy than the learner's).
        """
        if version == self.version:
            return
        start = time.perf_counter()
        current = self.lm.state_dict()
        if sorted(weights) != sorted(current) or any(
            sorted(weights[agent]) != sorted(current[agent])
            or any(not torch.equal(weights[agent][name], tensor) for name, tensor in current[agent].items())
            for agent in current
        ):
            raise ValueError(
                "CTranslate2Sampler samples from the TrainableLM it was built with, and these weights are "
                "not its weights: build the sampler on the learner's lm"
            )
        self._current.clear()
        self.version = version
        self.handover_seconds += time.perf_counter() - start

    def _model_dir(self, agent: str) -> Path:
        """The converted model ``agent`` acts with in the current version (brought up to date
        on first use: its adapted layers patched, or the whole model converted)."""
        seat = self.lm.seats[agent]
        key = (id(seat.model), seat.adapter)
        if key in self._current:
            return self._converted[key]
        start = time.perf_counter()
        merged = self.lm.merged_state_dict(agent)
        layout = self._layouts.get(key)
        if layout is not None:
            _patch(self._converted[key] / "model.bin", layout, merged)
        else:
            self._converted[key] = self._convert(seat.model.config, merged, self._converted.get(key))
            if seat.adapter is not None and key not in self._layouts:  # found once, or known absent
                self._layouts[key] = _layout(self._converted[key] / "model.bin", merged, self.lm.adapted_weights(agent))
        self._current.add(key)
        self.handover_seconds += time.perf_counter() - start
        return self._converted[key]

    def _convert(self, config: Any, merged: Mapping[str, torch.Tensor], previous: Path | None) -> Path:
        """Convert a plain model holding ``merged`` (into ``previous``'s work directory, or a new one)."""
        from transformers import AutoModelForCausalLM

        with torch.device("meta"):
            plain = AutoModelForCausalLM.from_config(config)
        # the converter takes the model apart: a throwaway one over the merged tensors
        plain.load_state_dict(merged, assign=True)
        plain.requires_grad_(False)
        work = previous.parent if previous is not None else self.work_dir / str(len(self._converted))
        return convert_model(plain, self.lm.tokenizer, work)

    def _drop_converted(self) -> None:
        for directory in self._converted.values():
            shutil.rmtree(directory.parent, ignore_errors=True)
        self._converted.clear()
        self._layouts.clear()
        self._current.clear()

    # ------------------------------------------------------------------ sampling
    def sample(
        self,
        agent: str,
        chats: Sequence[Sequence[Message]],
        seeds: Sequence[int],
        *,
        max_new_tokens: int = 128,
        temperature: float = POLICY_TEMPERATURE,
        top_p: float = 1.0,
        min_new_tokens: int = 0,
        top_k: int = 0,
    ) -> list[Completion]:
        """One completion per chat, as ``agent``: :meth:`TrainableLM.sample`'s arguments and
        checks, seeded per call (module docstring).

        Raises:
            KeyError: If ``lm`` does not play ``agent``.
            RuntimeError: If :meth:`sync` was never called.
            ValueError: On mismatched lengths or a bad sampling setting.
        """
        import ctranslate2

        if agent not in self.lm.seats:
            raise KeyError(f"the sampler's TrainableLM plays {self.lm.agents}, not {agent!r}")
        if self.version is None:
            raise RuntimeError("CTranslate2Sampler.sync(weights, version) must come before sample")
        check_sample_arguments(chats, seeds, max_new_tokens, temperature, top_p, min_new_tokens, top_k)
        if not chats:
            return []
        model_dir = self._model_dir(agent)
        prompts = [self.lm.encode(chat) for chat in chats]
        tokens = [self.lm.tokenizer.convert_ids_to_tokens(prompt) for prompt in prompts]
        if temperature == 0:
            sampling: dict[str, Any] = {"sampling_topk": 1}
        else:
            sampling = {"sampling_topk": top_k, "sampling_topp": top_p, "sampling_temperature": temperature}
        logprobs: list[list[float]] = [[] for _ in prompts]
        # CTranslate2's step log-probabilities are those of temperature 1, after min_length's ban
        rescore = temperature not in (0, 1) or min_new_tokens > 0
        options: dict[str, Any] = {}
        if not rescore:

            def record(step: Any) -> bool:
                logprobs[step.batch_id].append(float(step.log_prob))
                return False

            options = {"return_scores": True, "callback": record}  # return_scores fills step.log_prob
        # the copy's threads release the callback before generate_batch returns and are joined
        # before the call ends, even when decoding raised (agents.ctranslate2_backend, "Threads and exit")
        with CALLS.call(), SEEDING_LOCK:
            ctranslate2.set_random_seed(stream_seed(seeds))
            generator = load_copy(str(model_dir), device="cpu", compute_type="float32", intra_threads=self.threads)
            try:
                results = generate_batch(
                    generator,
                    tokens,
                    max_length=max_new_tokens,
                    min_length=min_new_tokens,
                    end_token=self._end_tokens,
                    return_end_token=True,
                    include_prompt_in_result=False,
                    **sampling,
                    **options,
                )
            finally:
                del generator
        sequences = [tuple(result.sequences_ids[0]) for result in results]
        if rescore and not self.exact_logprobs:
            logprobs = [[math.nan] * len(ids) for ids in sequences]
        elif rescore:
            with torch.no_grad():
                scored, _ = self.lm.logprobs(agent, prompts, sequences, temperature=temperature or 1.0)
            logprobs = [row[: len(ids)].tolist() for row, ids in zip(scored, sequences, strict=True)]
        completions = []
        for prompt, ids, scores in zip(prompts, sequences, logprobs, strict=True):
            stopped = bool(ids) and ids[-1] in self._stop_ids
            completions.append(
                Completion(
                    text=self.lm.tokenizer.decode(list(ids), skip_special_tokens=True),
                    prompt_ids=tuple(prompt),
                    token_ids=ids,
                    logprobs=tuple(scores),
                    finish_reason="stop" if stopped else "length",
                )
            )
        return completions

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Remove the converted models (and the work directory if this sampler made it)."""
        self._drop_converted()
        if self._owned:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __repr__(self) -> str:
        return f"CTranslate2Sampler(agents={self.lm.agents}, threads={self.threads}, version={self.version})"


FLOAT32 = 0
"""CTranslate2's type id of float32 in ``model.bin``."""


def _variables(model_bin: Path) -> dict[str, tuple[int, tuple[int, ...], int]]:
    """Each variable of a CTranslate2 ``model.bin``: the byte offset of its values, its
    shape and its type id (the format ``ctranslate2.specs.ModelSpec`` writes)."""
    with model_bin.open("rb") as file:

        def read(layout: str) -> tuple[Any, ...]:
            return struct.unpack(layout, file.read(struct.calcsize(layout)))

        def string() -> str:
            (length,) = read("H")
            return file.read(length)[:-1].decode()

        read("I")  # binary version
        string()  # model name
        read("I")  # revision
        (count,) = read("I")
        variables = {}
        for _ in range(count):
            name = string()
            (rank,) = read("B")
            shape = read(f"{rank}I")
            (dtype,) = read("B")
            (size,) = read("I")
            variables[name] = (file.tell(), shape, dtype)
            file.seek(size, os.SEEK_CUR)
    return variables


def _layout(model_bin: Path, merged: Mapping[str, torch.Tensor], names: Sequence[str]) -> dict[str, int] | None:
    """The byte offset in ``model_bin`` of each weight of ``names``, where :data:`LLAMA_WEIGHTS`
    places it and ``model_bin`` holds ``merged``'s values verbatim; None if one is not so."""
    variables = _variables(model_bin)
    layout = {}
    with model_bin.open("rb") as file:
        for name in names:
            found = re.fullmatch(r"model\.layers\.(\d+)\.(.+)\.weight", name)
            if found is None or found[2] not in LLAMA_WEIGHTS or merged[name].dtype != torch.float32:
                return None
            layer, (variable, part) = found[1], LLAMA_WEIGHTS[found[2]]
            fused = [projection for projection, (other, _) in LLAMA_WEIGHTS.items() if other == variable]
            rows_before = sum(merged[f"model.layers.{layer}.{projection}.weight"].shape[0] for projection in fused[:part])
            entry = variables.get(f"decoder/layer_{layer}/{variable}/weight")
            values = merged[name].detach().contiguous().numpy().tobytes()
            if entry is None or entry[2] != FLOAT32:
                return None
            offset = entry[0] + rows_before * merged[name].shape[1] * 4
            file.seek(offset)
            if file.read(len(values)) != values:
                return None
            layout[name] = offset
    return layout


def _patch(model_bin: Path, layout: Mapping[str, int], merged: Mapping[str, torch.Tensor]) -> None:
    """Write ``merged``'s values of the weights of ``layout`` at their offsets in ``model_bin``."""
    with model_bin.open("r+b") as file:
        for name, offset in layout.items():
            file.seek(offset)
            file.write(merged[name].detach().contiguous().numpy().tobytes())
