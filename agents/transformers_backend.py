"""Hugging Face ``transformers`` backend: true batched generation, CUDA when available.

Loads a local model directory, a GGUF file (transformers dequantizes it once into a folder
later loads read, :mod:`agents.dequantized_gguf`; needs the ``gguf`` package) or a Hugging Face model id (``ORG/NAME``: downloaded into the hub's cache once,
:func:`agents.hub.hub_folder`; ``HF_HUB_OFFLINE=1``, or a hub with no address here, reads the cache only; a path is never
looked up on the hub), then reads the folder with ``local_files_only=True``, on the ``device`` and
in the ``dtype`` it is given (:func:`agents.devices.resolve`: ``auto`` is CUDA with bfloat16
where present, else the CPU with float32; the team spec
``transformers:<model>#device=cuda:1#dtype=float16`` names them), attention through
PyTorch's SDPA. The model id names
the model, its weights' dtype and a hash of its directory's files (a GGUF's: its dequantized
folder's; ``transformers:agent_0-float32@sha256:...``, :mod:`agents.fingerprint`), so two models
saved under one name never share the response cache's rows. Requests are
rendered with the tokenizer's chat template, left-padded and decoded together in
batches of ``batch_size`` with a KV cache.

Sampling is done here rather than by ``model.generate`` so that every row has its own
random stream seeded by its request's seed: a request gives the same text whatever
else shares its batch (up to floating-point differences from padding).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents import progress
from agents.base import Generation, GenerationRequest, LogprobRequest, LogprobResult
from agents.chat_templates import check_chat_template_kwargs, model_id_with, render_chat
from agents.dequantized_gguf import dequantized
from agents.devices import dtype_name, resolve
from agents.fingerprint import directory_sha256, fingerprinted
from agents.hub import hub_folder, is_path

try:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the transformers backend needs transformers: pip install 'deliberation-env[transformers]'"
    ) from error


def model_name(name: str, dtype: torch.dtype, device: torch.device) -> str:
    """The backend's model id before its fingerprint: the model, the dtype and, off the CPU,
    the device type (another device's kernels write other floats, so its texts are its own
    cache rows; the CPU's keep the id they had before devices were an option).

    >>> model_name("Qwen2.5-0.5B", torch.bfloat16, torch.device("cuda", 1)), model_name("m", torch.float32, torch.device("cpu"))
    ('transformers:Qwen2.5-0.5B-bfloat16-cuda', 'transformers:m-float32')
    """
    on = "" if device.type == "cpu" else f"-{device.type}"
    return f"transformers:{name}-{dtype_name(dtype)}{on}"


class TransformersBackend:
    """A local causal LM run by ``transformers``.

    Args:
        model: A local model directory, a path to a ``.gguf`` file (then ``gguf_file`` is
            taken from it), or a Hugging Face model id (downloaded once into the Hugging Face
            cache; with ``HF_HUB_OFFLINE=1``, or where the hub has no address, only the cache is read).
        gguf_file: A GGUF file name inside the directory ``model``.
        device: ``auto`` (CUDA when available, else the CPU), ``cpu``, ``cuda``, ``cuda:N``.
        dtype: The weights' dtype: ``auto`` (bfloat16 on CUDA, float16 on a GPU
            without native bfloat16, float32 on the CPU),
            ``float32``, ``bfloat16``, ``float16``.
        batch_size: Most requests decoded together.
        chat_template_kwargs: Variables the chat template reads besides the messages (TRL's
            ``chat_template_kwargs``: ``{"enable_thinking": False}`` for Qwen3); the team
            spec's ``#chat_template_kwargs=<JSON object>``. Part of the model id.

    Raises:
        FileNotFoundError: If ``model`` is no local path and no hub model.
        ValueError: On a device this machine lacks, or a bad name.
    """

    supports_logprobs = True

    def __init__(
        self,
        model: str | Path,
        *,
        gguf_file: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 16,
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        path = Path(model).expanduser()
        if path.suffix == ".gguf" and gguf_file is None:
            path, gguf_file = path.parent, path.name
        if not path.exists() and is_path(str(model)):
            raise FileNotFoundError(
                f"transformers backend: no local model at {path} (a path is never looked up on the Hugging Face "
                "hub; a hub id is written ORG/NAME)"
            )
        if not path.exists():  # a hub id: its folder in the Hugging Face cache, downloaded once
            path = hub_folder("transformers backend", str(model))
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.device, self.dtype = resolve(device, dtype)
        self.batch_size = batch_size
        self.chat_template_kwargs = check_chat_template_kwargs(chat_template_kwargs or {})
        name = Path(gguf_file).stem if gguf_file else path.name
        if gguf_file is not None:  # read from its dequantized folder, written once
            path, gguf_file = dequantized(path / gguf_file), None
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(
            path, dtype=self.dtype, local_files_only=True, attn_implementation="sdpa"
        ).to(self.device)
        self.model.eval()
        self._stop_ids = set(
            _eos_ids(self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id)
        )
        self.model_id = model_id_with(  # a GGUF's model by its dequantized folder's files: what was loaded
            fingerprinted(model_name(name, self.dtype, self.device), directory_sha256(path)),
            self.chat_template_kwargs,
        )

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate one completion per request, ``batch_size`` requests at a time."""
        out: list[Generation] = []
        with progress.call(len(requests), "generate") as advance:
            for start in range(0, len(requests), self.batch_size):
                out.extend(self._generate_batch(requests[start : start + self.batch_size], advance))
        return out

    @torch.inference_mode()
    def _generate_batch(self, requests: Sequence[GenerationRequest], advance: progress.Advance) -> list[Generation]:
        ids, mask = self._encode([r.messages for r in requests])
        prompt_tokens = mask.sum(dim=1).tolist()
        generators = [torch.Generator().manual_seed(r.seed) for r in requests]
        temperature = torch.tensor([r.temperature for r in requests], device=self.device)
        top_p = torch.tensor([r.top_p for r in requests], device=self.device)
        top_k = torch.tensor([r.top_k for r in requests], device=self.device)
        budget = max(r.max_tokens for r in requests)
        new_tokens: list[list[int]] = [[] for _ in requests]
        finish = [""] * len(requests)

        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        output = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
        )
        for _ in range(budget):
            uniforms = torch.tensor(
                [torch.rand((), generator=g).item() for g in generators], device=self.device
            )
            chosen = _sample(output.logits[:, -1, :].float(), temperature, top_p, uniforms, top_k).tolist()
            for row, token in enumerate(chosen):
                if finish[row]:
                    continue
                if token in self._stop_ids:
                    finish[row] = "stop"
                else:
                    new_tokens[row].append(token)
                    if _hits_stop(self.tokenizer, new_tokens[row], requests[row].stop):
                        finish[row] = "stop"
                    elif len(new_tokens[row]) >= requests[row].max_tokens:
                        finish[row] = "length"
                if finish[row]:
                    advance(1, len(new_tokens[row]))
            if all(finish):
                break
            step = torch.tensor(chosen, device=self.device).unsqueeze(1)
            mask = torch.cat([mask, torch.ones_like(step)], dim=1)
            positions = positions[:, -1:] + 1
            output = self.model(
                input_ids=step,
                attention_mask=mask,
                position_ids=positions,
                cache=output.cache,
                use_cache=True,
            )
        return [
            Generation(
                text=_cut_at_stop(
                    self.tokenizer.decode(tokens, skip_special_tokens=True), request.stop
                ),
                prompt_tokens=int(n_prompt),
                completion_tokens=len(tokens),
                finish_reason=reason or "length",
            )
            for tokens, n_prompt, reason, request in zip(
                new_tokens, prompt_tokens, finish, requests, strict=True
            )
        ]

    # ------------------------------------------------------------------ log-probs
    @torch.inference_mode()
    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Log-probabilities of each candidate's first token, ``batch_size`` prompts per pass."""
        out: list[LogprobResult] = []
        with progress.call(len(requests), "score") as advance:
            for start in range(0, len(requests), self.batch_size):
                batch = requests[start : start + self.batch_size]
                ids, mask = self._encode([r.messages for r in batch])
                positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
                logits = self.model(
                    input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=1
                ).logits[:, -1, :]
                logprobs = torch.log_softmax(logits.float(), dim=-1).cpu()
                for row, request in enumerate(batch):
                    scores = tuple(
                        float(logprobs[row, self._first_token(c)]) for c in request.candidates
                    )
                    out.append(LogprobResult(scores, prompt_tokens=int(mask[row].sum())))
                advance(len(batch), 0)
        return out

    # -------------------------------------------------------------------- helpers
    def _encode(self, chats: list[tuple[dict[str, str], ...]]) -> tuple[torch.Tensor, torch.Tensor]:
        texts = [render_chat(self.tokenizer, chat, self.chat_template_kwargs) for chat in chats]
        encoded = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        return encoded["input_ids"].to(self.device), encoded["attention_mask"].to(self.device)

    def _first_token(self, candidate: str) -> int:
        return self.tokenizer.encode(candidate, add_special_tokens=False)[0]

    def __repr__(self) -> str:
        return f"TransformersBackend({self.model_id}, device={self.device}, batch_size={self.batch_size})"


def _eos_ids(*values: int | list[int] | None) -> list[int]:
    ids: list[int] = []
    for value in values:
        if isinstance(value, int):
            ids.append(value)
        elif value:
            ids.extend(value)
    return ids


def _sample(
    logits: torch.Tensor,
    temperature: torch.Tensor,
    top_p: torch.Tensor,
    uniforms: torch.Tensor,
    top_k: torch.Tensor | None = None,
    min_p: float = 0.0,
) -> torch.Tensor:
    """One token per row: greedy where temperature is 0, else drawn from the row's support
    (:func:`agents.sampling.sampling_support`: temperature, then top-k where > 0, then
    top-p; with ``min_p`` > 0 only the tokens of probability at least ``min_p`` times the
    likeliest's stay, as transformers' ``MinPLogitsWarper`` after top-p leaves them) by
    inverting its CDF at the row's uniform number (so each row uses only its own stream)."""
    greedy = logits.argmax(dim=-1)
    probs = torch.softmax(logits / temperature.clamp(min=1e-6).unsqueeze(1), dim=-1)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    if top_k is not None:
        k = top_k.unsqueeze(1)
        ranks = torch.arange(sorted_probs.shape[1], device=sorted_probs.device).unsqueeze(0)
        sorted_probs = sorted_probs.masked_fill((k > 0) & (ranks >= k), 0.0)
        sorted_probs = sorted_probs / sorted_probs.sum(dim=-1, keepdim=True)  # top-p within the top-k
    cumulative = sorted_probs.cumsum(dim=-1)
    outside = (cumulative - sorted_probs) >= top_p.unsqueeze(1)  # keeps at least the top token
    if min_p > 0:
        outside |= sorted_probs < min_p * sorted_probs[:, :1]
    sorted_probs = sorted_probs.masked_fill(outside, 0.0)
    cdf = sorted_probs.cumsum(dim=-1)
    targets = (uniforms * cdf[:, -1]).unsqueeze(1)
    picked = torch.searchsorted(cdf, targets).clamp(max=cdf.shape[1] - 1)
    sampled = order.gather(1, picked).squeeze(1)
    return torch.where(temperature > 0, sampled, greedy)


def _hits_stop(tokenizer, tokens: list[int], stop: tuple[str, ...]) -> bool:
    return bool(stop) and any(s in tokenizer.decode(tokens, skip_special_tokens=True) for s in stop)


def _cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    cuts = [text.index(s) for s in stop if s in text]
    return text[: min(cuts)] if cuts else text
