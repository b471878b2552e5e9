"""LLM throughput: the vector env against raw batched calls, a naive loop, and the cache.

One workload throughout: round 0 (solve and introspection) of ``num_envs`` arithmetic
problems by a team of ``n_agents``, i.e. ``num_envs * n_agents`` generations in one
batched call plus as many critic scorings. Throughput is generated tokens per second.

(a) ``vector_env`` reset, against the same requests sent straight to the backend as one
    ``generate`` and one ``next_token_logprobs`` call (the requests are recorded from
    an untimed first env run, which also warms the backend up, so every timed run
    generates the same texts): the env's overhead.
(b) The same requests sent one at a time, as debate scripts loop over agents.
(c) The env run through :class:`agents.CachedBackend`: cold (empty cache) against warm.
(d) Batch scaling (issue 14): raw ``generate`` tokens/s at batch 1, 8, 24 and 72 (arithmetic
    solve prompts, temperature 0.3, one call per batch; "batch 1" sends 8 requests one at a
    time) for llama.cpp, transformers (fp32, batch_size = the batch) and CTranslate2 (float32, int8),
    in the same run; in parentheses, the same tokens per CPU second of the process.
(e) A refine phase (issue 14): the main job's first debate round, 24 problems x 3 agents,
    each prompt holding the agent's own round-0 solution (up to 256 tokens, generated first
    by CTranslate2, untimed) and its peers' answers: prompts of varied lengths. One
    ``generate`` call of the 72 requests, timed for llama.cpp, for CTranslate2 as one
    ``generate_batch`` (its behaviour before the sub-batches) and for CTranslate2 with
    its length-sorted sub-batches (:func:`agents.ctranslate2_backend.length_buckets`).

Backends: ``transformers`` (SmolLM2 GGUF, dequantized; at several batch sizes; CUDA
if present), ``openai`` against a ``llama_cpp.server`` started on 127.0.0.1, and the
in-process ``llamacpp`` default. Writes ``benchmarks/results/llm_throughput.json``.

    python benchmarks/llm_throughput.py [--max-tokens 64] [--num-envs 8] [--parts a b c d e]
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import tyro
from results import write_results

import deliberation_env as de
from agents import SMOLLM2_TEMPERATURE, SMOLLM2_TOP_K, CachedBackend, LLMAgent, prompts
from agents.base import (
    Answer,
    Backend,
    Generation,
    GenerationRequest,
    LogprobRequest,
    LogprobResult,
    PeerAnswer,
    Turn,
)
from agents.llamacpp_backend import LlamaCppBackend, default_model_path


@dataclass
class Args:
    max_tokens: int = 64
    """Most tokens per solution."""
    num_envs: int = 8
    """Problems solved together."""
    n_agents: int = 3
    """Team size."""
    difficulty: int = 2
    """Arithmetic difficulty of the problems."""
    batch_sizes: tuple[int, ...] = (8, 16, 24)
    """Batch sizes of the transformers backend."""
    backends: tuple[str, ...] = ("transformers", "openai", "llamacpp")
    """Backends for (a) and (b)."""
    parts: tuple[str, ...] = ("a", "b", "c", "d", "e")
    """Which measurements to run."""
    scaling_batches: tuple[int, ...] = (1, 8, 24, 72)
    """Batch sizes of part (d)."""
    scaling_backends: tuple[str, ...] = ("llamacpp", "transformers", "ctranslate2-1-copy", "ctranslate2", "ctranslate2-int8")
    """Backends of part (d): ``llamacpp-1-thread`` (llama-cpp-python's own default on 2 cores),
    ``llamacpp`` (every usable CPU), ``transformers``, ``ctranslate2-1-copy`` (one copy of
    the model on every CPU), ``ctranslate2`` (its default: float32, two copies that split a
    batch) and ``ctranslate2-int8`` (the same in int8)."""
    device: str | None = None
    """Device of the transformers backend (default: CUDA if present)."""
    refine_problems: int = 24
    """Problems of part (e) (the main job's 24; three agents each)."""
    refine_backends: tuple[str, ...] = ("llamacpp", "ctranslate2-one-batch", "ctranslate2-1-copy", "ctranslate2")
    """Backends of part (e): those of part (d) and ``ctranslate2-one-batch``."""


class Recorder:
    """A pass-through backend that records every batch and the tokens it generated."""

    def __init__(self, inner: Backend) -> None:
        self.inner, self.model_id, self.supports_logprobs = (
            inner,
            inner.model_id,
            inner.supports_logprobs,
        )
        self.generations: list[GenerationRequest] = []
        self.scorings: list[LogprobRequest] = []
        self.tokens = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.generations.extend(requests)
        out = self.inner.generate(requests)
        self.tokens += sum(g.completion_tokens for g in out)
        return out

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        self.scorings.extend(requests)
        return self.inner.next_token_logprobs(requests)


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def env_round(backend: Backend, args: Args) -> tuple[float, Recorder]:
    """Seconds of one vector-env reset (round 0) on ``backend``, and what it sent."""
    recorder = Recorder(backend)
    venv = de.vector_env(
        args.num_envs,
        task="arithmetic",
        task_kwargs={"difficulty": args.difficulty},
        team=LLMAgent(recorder, max_tokens=args.max_tokens),
        n_agents=args.n_agents,
        max_rounds=1,
        split="test",
    )
    seconds = timed(
        lambda: venv.reset(seed=0, options={"problem_index": list(range(args.num_envs))})
    )
    return seconds, recorder


def raw_round(backend: Backend, recorded: Recorder) -> float:
    """Seconds for the recorded requests as one generate and one scoring call."""
    return timed(
        lambda: (
            backend.generate(recorded.generations),
            backend.next_token_logprobs(recorded.scorings),
        )
    )


def naive_round(backend: Backend, recorded: Recorder) -> float:
    """Seconds for the recorded requests sent one at a time."""

    def loop() -> None:
        for request in recorded.generations:
            backend.generate([request])
        for scoring in recorded.scorings:
            backend.next_token_logprobs([scoring])

    return timed(loop)


def compare(label: str, backend: Backend, args: Args, parts: set[str]) -> list[dict]:
    """Parts (a) and/or (b) on one backend; one table row each, printed at once and returned."""
    _, recorded = env_round(backend, args)  # untimed: warms the backend up, records the requests
    env_s, _ = env_round(backend, args)
    tokens = recorded.tokens
    row = {"backend": label, "requests": len(recorded.generations), "tokens": tokens, "env_tokens_per_s": tokens / env_s}
    rows = []
    if "a" in parts:
        raw_s = raw_round(backend, recorded)
        print(
            f"| (a) {label} | {len(recorded.generations)} | {tokens} | {tokens / env_s:.1f} | "
            f"{tokens / raw_s:.1f} (raw batched) | {raw_s / env_s:.0%} of raw |",
            flush=True,
        )
        rows.append({"part": "a", **row, "raw_batched_tokens_per_s": tokens / raw_s, "env_share_of_raw": raw_s / env_s})
    if "b" in parts:
        naive_s = naive_round(backend, recorded)
        print(
            f"| (b) {label} | {len(recorded.generations)} | {tokens} | {tokens / env_s:.1f} | "
            f"{tokens / naive_s:.1f} (one at a time) | {naive_s / env_s:.1f}x faster |",
            flush=True,
        )
        rows.append({"part": "b", **row, "one_at_a_time_tokens_per_s": tokens / naive_s, "env_speedup_over_one_at_a_time": naive_s / env_s})
    return rows


def solve_requests(count: int, args: Args) -> list[GenerationRequest]:
    """Round-0 requests of ``count`` distinct arithmetic test problems, as the default team sends them."""
    task = de.tasks.get("arithmetic", difficulty=args.difficulty)
    problems = task.problems("test")[:count]
    return [
        GenerationRequest(
            prompts.solve_messages(
                Turn(p.question, task.instructions, parse=lambda text: None, agent=0, round=0, seed=i)
            ),
            max_tokens=args.max_tokens,
            temperature=SMOLLM2_TEMPERATURE,
            top_k=SMOLLM2_TOP_K,
            seed=i,
        )
        for i, p in enumerate(problems)
    ]


def make_scaling_backend(name: str, args: Args) -> Backend:
    """A backend of part (d) on the bundled SmolLM2."""
    if name == "llamacpp":
        return LlamaCppBackend()  # every usable CPU
    if name == "llamacpp-1-thread":
        return LlamaCppBackend(n_threads=1)
    if name == "transformers":
        from agents.transformers_backend import TransformersBackend

        return TransformersBackend(default_model_path(), device=args.device)
    from agents.ctranslate2_backend import CTranslate2Backend

    if name == "ctranslate2-int8":
        return CTranslate2Backend(quantization="int8")
    return CTranslate2Backend(replicas=1) if name == "ctranslate2-1-copy" else CTranslate2Backend()


def batch_scaling(args: Args) -> list[dict]:
    """Part (d): generated tokens per second of each backend at each batch size, and in
    parentheses per CPU second of this process (all its threads): on a machine shared with
    other jobs the wall-clock rate measures the scheduler as much as the backend."""
    sizes = sorted(args.scaling_batches)
    print(
        "\n| (d) backend, tokens/s | "
        + " | ".join(f"batch {b}" for b in sizes)
        + " |\n|---|"
        + "---:|" * len(sizes),
        flush=True,
    )
    requests = solve_requests(max(max(sizes), 8), args)
    rows = []
    for name in args.scaling_backends:
        backend = make_scaling_backend(name, args)
        backend.generate(requests[:2])  # untimed warm-up
        cells, batches_measured = [], []
        for size in sizes:
            if name == "transformers":
                backend.batch_size = size
            batches = [[r] for r in requests[:8]] if size == 1 else [requests[:size]]
            start, cpu_start = time.perf_counter(), time.process_time()
            tokens = sum(g.completion_tokens for batch in batches for g in backend.generate(batch))
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            cells.append(f"{tokens / wall:.0f} ({tokens / cpu:.0f})")
            batches_measured.append({"batch": size, "tokens_per_s": tokens / wall, "tokens_per_cpu_s": tokens / cpu})
        print(f"| {name}: {backend.model_id} | " + " | ".join(cells) + " |", flush=True)
        rows.append({"backend": name, "model_id": backend.model_id, "batches": batches_measured})
        del backend
    return rows


def refine_requests(problems: int) -> list[GenerationRequest]:
    """Part (e)'s requests: round 1 of a 3-agent debate on ``problems`` arithmetic problems
    (the main job's task and sampling), over round-0 solutions generated by CTranslate2."""
    from agents.ctranslate2_backend import CTranslate2Backend

    task = de.tasks.get("arithmetic")
    agents = 3
    solves = [
        Turn(p.question, task.instructions, parse=lambda text, p=p: task.parse(p, text), agent=a, round=0, seed=k * agents + a)
        for k, p in enumerate(task.problems("test")[:problems])
        for a in range(agents)
    ]
    sampling = {"max_tokens": 256, "temperature": SMOLLM2_TEMPERATURE, "top_k": SMOLLM2_TOP_K}
    texts = [
        g.text
        for g in CTranslate2Backend().generate(
            [GenerationRequest(prompts.solve_messages(t), seed=t.seed, **sampling) for t in solves]
        )
    ]
    answers = [Answer(text, turn.parse(text), profile=()) for turn, text in zip(solves, texts, strict=True)]
    requests = []
    for k, turn in enumerate(solves):
        group = k - turn.agent
        peers = tuple(
            PeerAnswer(answers[group + (turn.agent + d) % agents].text, answers[group + (turn.agent + d) % agents].decision, 0.5)
            for d in range(1, agents)
        )
        refine = Turn(turn.question, turn.instructions, turn.parse, turn.agent, 1, turn.seed + 1000, answers[k], peers)
        requests.append(GenerationRequest(prompts.refine_messages(refine), seed=refine.seed, **sampling))
    return requests


def refine_phase(args: Args) -> list[dict]:
    """Part (e): one refine phase of the main job, in one ``generate`` call per backend."""
    from agents import ctranslate2_backend as ct2

    requests = refine_requests(args.refine_problems)
    print(
        f"\n(e) refine phase: {len(requests)} requests, at most 256 new tokens, temperature {SMOLLM2_TEMPERATURE}, "
        f"top-k {SMOLLM2_TOP_K}\n"
        "| backend | prompt tokens min / median / max | generated tokens | wall s | tokens/s | sub-batches |\n"
        "|---|---|---:|---:|---:|---|",
        flush=True,
    )
    rows = []
    for name in args.refine_backends:
        one_batch = name == "ctranslate2-one-batch"
        backend = make_scaling_backend("ctranslate2" if one_batch else name, args)
        backend.generate(requests[:2])  # untimed warm-up
        split, sub_batches = "n/a", None
        if name.startswith("ctranslate2"):
            lengths = [len(backend._prompt_tokens(r.messages)) for r in requests]
            buckets = [list(range(len(requests)))] if one_batch else ct2.length_buckets(lengths, 256)
            sub_batches = [len(b) for b in buckets]
            split = ", ".join(map(str, sub_batches))
        whole = mock.patch.object(ct2, "length_buckets", lambda lengths, new_tokens: [list(range(len(lengths)))])
        with whole if one_batch else contextlib.nullcontext():
            start = time.perf_counter()
            done = backend.generate(requests)
            wall = time.perf_counter() - start
        prompt_tokens = sorted(g.prompt_tokens for g in done)
        tokens = sum(g.completion_tokens for g in done)
        print(
            f"| {name} | {prompt_tokens[0]} / {prompt_tokens[len(done) // 2]} / {prompt_tokens[-1]} "
            f"| {tokens} | {wall:.1f} | {tokens / wall:.0f} | {split} |",
            flush=True,
        )
        rows.append(
            {
                "backend": name,
                "prompt_tokens": {"min": prompt_tokens[0], "median": prompt_tokens[len(done) // 2], "max": prompt_tokens[-1]},
                "generated_tokens": tokens,
                "seconds": wall,
                "tokens_per_s": tokens / wall,
                "sub_batches": sub_batches,
            }
        )
        del backend
    return rows


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(gguf: Path) -> tuple[subprocess.Popen, str]:
    """A llama_cpp.server on a free local port, ready to answer."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--verbose",
            "false",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base_url}/models", timeout=1).read()
            return process, base_url
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("llama_cpp.server did not start in 120 s")


def main(args: Args) -> None:
    gguf = default_model_path()
    load = os.getloadavg()[0]
    print(
        f"# LLM throughput, {args.n_agents} agents x {args.num_envs} envs, max_tokens {args.max_tokens}, "
        f"arithmetic level {args.difficulty}, {platform.machine()} ({os.cpu_count()} cores), "
        f"load average {load:.1f}, {time.strftime('%Y-%m-%d')}"
    )
    record = {"args": dataclasses.asdict(args), "load_average_at_start": load, "env_against_calls": []}
    parts = {"a", "b"} & set(args.parts)
    if parts:
        print("| part, backend | requests | tokens | env tokens/s | other tokens/s | ratio |")
        print("|---|---:|---:|---:|---:|---:|", flush=True)
    if parts and "transformers" in args.backends:
        from agents.transformers_backend import TransformersBackend

        model = TransformersBackend(gguf, device=args.device)
        for size in sorted(args.batch_sizes):
            model.batch_size = (
                size  # the naive loop (b) does not depend on it: run once, at the largest
            )
            here = parts - {"b"} if size < max(args.batch_sizes) else parts
            record["env_against_calls"] += compare(f"transformers {model.device.type} batch {size}", model, args, here)
    if parts and "openai" in args.backends:
        from agents.openai_backend import OpenAIBackend

        process, base_url = start_server(gguf)
        try:
            backend = OpenAIBackend(base_url, "smollm2")
            record["env_against_calls"] += compare("openai, llama_cpp.server (1 slot), 8 in flight", backend, args, parts)
        finally:
            process.terminate()
            process.wait(timeout=30)
    if parts and "llamacpp" in args.backends:
        record["env_against_calls"] += compare("llamacpp in-process", LlamaCppBackend(), args, parts)

    if "c" in args.parts:
        with tempfile.TemporaryDirectory() as tmp:
            cached = CachedBackend(LlamaCppBackend(), Path(tmp) / "cache.sqlite")
            cold, recorded = env_round(cached, args)
            warm, _ = env_round(cached, args)
        print(
            "\n| (c) cache, llamacpp | requests | cold s | warm s | speed-up |\n|---|---:|---:|---:|---:|"
        )
        print(
            f"| vector_env round 0 | {len(recorded.generations)} | {cold:.2f} | {warm:.3f} | {cold / warm:,.0f}x |"
        )
        record["cache"] = {"requests": len(recorded.generations), "cold_seconds": cold, "warm_seconds": warm}
    if "d" in args.parts:
        record["batch_scaling"] = batch_scaling(args)
    if "e" in args.parts:
        record["refine_phase"] = refine_phase(args)
    write_results("llm_throughput", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
