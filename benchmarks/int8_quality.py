"""How much of float32's answers each int8 format of the bundled SmolLM2 keeps, and whether
the default team's backend answers as often right as the others (issue 14).

Part ``greedy``: three
CTranslate2 models of the bundled SmolLM2-135M-Instruct GGUF, converted once as the
backend converts them (under the user's cache directory):

- ``float32``: the reference (``CTranslate2Backend()``).
- ``int8-8bit``: the float32 model loaded with ``compute_type="int8"``: CTranslate2 quantizes
  every weight row to [-127, 127] as it loads (its own int8).
- ``int8-7bit``: the backend's int8 model (``CTranslate2Backend(quantization="int8")``),
  weight rows in [-63, 63] (:data:`agents.ctranslate2_convert.INT8_WEIGHT_LEVELS`).

Measured for each:

- **KL**: the mean KL divergence ``KL(p_float32 || p_variant)`` of the next-token
  distributions, teacher-forced on float32's greedy answer to each of the first
  ``--kl-problems`` prompts (its first ``--kl-tokens`` tokens), over every answer position.
- **top-1**: how often the variant's most likely next token there is float32's.
- **right**: greedy answers (temperature 0, at most ``--max-tokens`` new tokens, one
  ``generate`` call) to the first ``--problems`` arithmetic test problems that the task's
  verifier accepts, and the greedy call's tokens per second.

Whether 8-bit int8 keeps the answers depends on the CPU: without VNNI, CTranslate2's int8
products saturate (see ``INT8_WEIGHT_LEVELS``), so the script prints the CPU's int8 features.

Part ``sampled``: each of ``--backends`` (team specs) answers the same solve requests, as the
default team samples them (temperature 0.3, top-k 50, at most 256 tokens), for the first
``--sampled-problems`` problems with ``--seeds`` seeds each, in one ``generate`` call: the
share of right answers (one standard error in parentheses) and the call's tokens per second.

Writes ``benchmarks/results/int8_quality.json``.

    python benchmarks/int8_quality.py [--parts greedy sampled] [--problems 72] [--kl-problems 48]
        [--variants float32 int8-7bit] [--sampled-problems 120] [--seeds 3]
        [--backends ctranslate2-int8 llamacpp]
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tyro
from results import write_results
from scipy.special import log_softmax

import deliberation_env as de
from agents import SMOLLM2_TEMPERATURE, SMOLLM2_TOP_K, make_backend, prompts
from agents.base import Backend, GenerationRequest, Turn
from agents.ctranslate2_backend import CTranslate2Backend
from agents.ctranslate2_convert import converted_model_dir
from agents.llamacpp_backend import default_model_path
from agents.specs import SMOLLM2_BACKEND, parse_spec


@dataclass
class Args:
    problems: int = 72
    """Arithmetic test problems answered greedily."""
    kl_problems: int = 48
    """Of those, the first ones whose float32 answers are teacher-forced for KL and top-1."""
    kl_tokens: int = 64
    """Answer tokens teacher-forced per problem."""
    max_tokens: int = 96
    """Most new tokens of a greedy answer."""
    difficulty: int = 1
    """Arithmetic difficulty (the main job's is 1)."""
    variants: tuple[str, ...] = ("float32", "int8-8bit", "int8-7bit")
    """Models compared with float32 (which is always measured first)."""
    chunk: int = 8
    """Sequences per teacher-forced forward pass (each holds positions x vocabulary floats)."""
    parts: tuple[str, ...] = ("greedy", "sampled")
    """Which measurements to run."""
    sampled_problems: int = 120
    """Problems of part ``sampled``."""
    seeds: int = 3
    """Sampled answers per problem in part ``sampled``."""
    backends: tuple[str, ...] = ("ctranslate2-int8", "ctranslate2", "llamacpp")
    """Team specs of part ``sampled`` (``smollm2`` is ``ctranslate2-int8``)."""


def format_backend(variant: str) -> CTranslate2Backend:
    """The CTranslate2 backend of one variant, on one copy of the model."""
    if variant == "float32":
        return CTranslate2Backend(replicas=1)
    if variant == "int8-7bit":
        return CTranslate2Backend(quantization="int8", replicas=1)
    if variant == "int8-8bit":
        return CTranslate2Backend(converted_model_dir(default_model_path()), quantization="int8", replicas=1)
    raise ValueError(f"unknown variant {variant!r}: float32, int8-8bit or int8-7bit")


def cpu_int8_features() -> str:
    """The CPU's int8 dot-product features (VNNI adds 8-bit products without saturating)."""
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    found = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8") if f in flags]
    return ", ".join(found) or "none of avx2, avx512f, avx512_vnni, avx_vnni, amx_int8"


def solve_request(task: de.tasks.Task, problem: de.tasks.Problem, seed: int, **sampling: Any) -> GenerationRequest:
    """A round-0 solve request of ``problem``, as a team member sends it."""
    turn = Turn(problem.question, task.instructions, parse=lambda text: None, agent=0, round=0, seed=seed)
    return GenerationRequest(prompts.solve_messages(turn), seed=seed, **sampling)


def answer(backend: Backend, task: de.tasks.Task, problems: list, requests: list) -> tuple[list[str], int, float]:
    """``requests`` (one per entry of ``problems``) in one call: the texts, the right answers
    and the tokens per second (after an untimed warm-up request)."""
    backend.generate(requests[:1])
    start = time.perf_counter()
    generations = backend.generate(requests)
    seconds = time.perf_counter() - start
    texts = [g.text for g in generations]
    right = sum(task.is_correct(p, task.parse(p, text)) for p, text in zip(problems, texts, strict=True))
    return texts, right, sum(g.completion_tokens for g in generations) / seconds


def greedy(backend: Backend, task: de.tasks.Task, problems: list, args: Args) -> tuple[list[str], int, float]:
    """Greedy answers to ``problems``: their texts, the right ones and tokens/s."""
    requests = [solve_request(task, p, i, max_tokens=args.max_tokens, temperature=0.0) for i, p in enumerate(problems)]
    return answer(backend, task, problems, requests)


def teacher_forced(backend: CTranslate2Backend, sequences: list[list[str]], starts: list[int], chunk: int) -> list[np.ndarray]:
    """Next-token log-probabilities at each answer position of each sequence (float64 rows)."""
    import ctranslate2

    generator = ctranslate2.Generator(str(backend.model_dir), device="cpu", compute_type=backend.quantization)
    rows = []
    for first in range(0, len(sequences), chunk):
        part = sequences[first : first + chunk]
        logits = np.asarray(generator.forward_batch(part))
        for offset, sequence in enumerate(part):
            start = starts[first + offset]
            rows.append(log_softmax(logits[offset, start - 1 : len(sequence) - 1].astype(np.float64), axis=-1))
    return rows


def sampled(task: de.tasks.Task, args: Args) -> list[dict]:
    """Part ``sampled``: right answers of each backend to the same sampled solve requests."""
    problems = list(task.problems("test")[: args.sampled_problems]) * args.seeds
    requests = [
        solve_request(
            task, p, i, max_tokens=256, temperature=SMOLLM2_TEMPERATURE, top_k=SMOLLM2_TOP_K
        )
        for i, p in enumerate(problems)
    ]
    print(
        f"\n| backend | right of {len(requests)} sampled answers | tokens/s |\n|---|---:|---:|",
        flush=True,
    )
    rows = []
    for spec in args.backends:
        name, kwargs = parse_spec(SMOLLM2_BACKEND if spec == "smollm2" else spec)
        backend = make_backend(name, **kwargs)
        _, right, speed = answer(backend, task, problems, requests)
        share = right / len(requests)
        error = (share * (1 - share) / len(requests)) ** 0.5
        print(f"| {spec}: {backend.model_id} | {right} = {share:.3f} ({error:.3f}) | {speed:.0f} |", flush=True)
        rows.append(
            {
                "backend": spec,
                "model_id": backend.model_id,
                "right": right,
                "answers": len(requests),
                "share": share,
                "standard_error": error,
                "tokens_per_s": speed,
            }
        )
        del backend
    return rows


def compare_formats(task: de.tasks.Task, args: Args) -> list[dict]:
    """Part ``greedy``: KL, top-1 and greedy right answers of each int8 format against float32."""
    problems = list(task.problems("test")[: args.problems])
    print(
        f"\n| variant | KL to float32 | top-1 | right of {len(problems)} | greedy tokens/s |\n"
        "|---|---:|---:|---:|---:|",
        flush=True,
    )
    reference = format_backend("float32")
    texts, right, speed = greedy(reference, task, problems, args)
    sequences, starts = [], []
    for problem, text in zip(problems[: args.kl_problems], texts, strict=False):
        prompt = reference._prompt_tokens(solve_request(task, problem, 0).messages)  # as generation renders it
        completion = reference.tokenizer.tokenize(text, add_special_tokens=False)[: args.kl_tokens]
        if completion:
            sequences.append(prompt + completion)
            starts.append(len(prompt))
    reference_rows = teacher_forced(reference, sequences, starts, args.chunk)
    positions = sum(len(rows) for rows in reference_rows)
    print(f"| float32 | 0 | 1 | {right} | {speed:.0f} |", flush=True)
    rows = [{"variant": "float32", "kl": 0.0, "top1": 1.0, "right": right, "tokens_per_s": speed}]
    del reference
    for variant in args.variants:
        if variant == "float32":
            continue
        backend = format_backend(variant)
        _, right, speed = greedy(backend, task, problems, args)
        kl = top1 = 0.0
        for p, q in zip(reference_rows, teacher_forced(backend, sequences, starts, args.chunk), strict=True):
            kl += float((np.exp(p) * (p - q)).sum())
            top1 += float((p.argmax(axis=-1) == q.argmax(axis=-1)).sum())
        print(
            f"| {variant} | {kl / positions:.4f} | {top1 / positions:.3f} | {right} | {speed:.0f} |",
            flush=True,
        )
        rows.append(
            {"variant": variant, "kl": kl / positions, "top1": top1 / positions, "right": right, "tokens_per_s": speed}
        )
        del backend
    return rows


def main(args: Args) -> None:
    task = de.tasks.get("arithmetic", difficulty=args.difficulty)
    features = cpu_int8_features()
    print(f"CPU int8 features: {features}", flush=True)
    record = {"args": dataclasses.asdict(args), "cpu_int8_features": features}
    if "greedy" in args.parts:
        record["greedy"] = compare_formats(task, args)
    if "sampled" in args.parts:
        record["sampled"] = sampled(task, args)
    write_results("int8_quality", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
