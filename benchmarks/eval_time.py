"""Seconds of the learning table's held-out evaluation under each decoding layout, and
what the layout changes in the answers (issue 34, item 4).

The table's evaluation (``benchmarks/text_learning.py``) plays the first ``eval_problems``
test problems greedily, ``envs`` problems at a time: each batch is one call of the
team's sampler, ``2 x envs`` completions (both agents') decoded ``sample_batch_size``
rows at a time, and a decoding loop runs until its longest row stops. A layout is
``ENVSxROWS``: the table's is ``16x32`` (three loops of 32 rows for 48 problems); ``48x96``
decodes all 96 completions in one loop, so the long tail of answers cut at the budget is
paid once. Rows of another layout are padded beside other rows, so a greedy answer can
change by floating-point noise: the script counts the answers that differ from the
first layout's, beside the metrics.

The layouts run interleaved, ``repeats`` times each, on one loaded learner per layout:
the untrained pair, or a trained run's checkpoint (``--run-dir``, a run folder of
``text_learning.py``: ``OUT_DIR/<settings>/<algo>-seed<N>``)::

    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/eval_time.py --updates 16 --eval-problems 48 \\
        --run-dir runs/benchmarks/text-learning/d84e0e244c05/magrpo-seed1 --layouts 16x32 48x96

Writes ``benchmarks/results/eval_time_untrained.json`` (or ``eval_time_trained.json``, with ``--run-dir``).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass

import tyro
from results import write_results
from text_learning import Args, built_learner, config_of, run_seed, table_args

from algorithms.text import evaluate
from algorithms.text.train import build_env


@dataclass
class EvalTimeArgs(Args):
    """The learning table's settings (``text_learning.py``'s), and the layouts to time."""

    layouts: tuple[str, ...] = ("16x32", "48x96")
    """``ENVSxROWS``: problems per batch, and rows decoded together."""
    run_dir: str = ""
    """A trained run's folder (its ``checkpoint.safetensors`` is loaded); "": the untrained pair."""
    algo: str = "magrpo"
    """The learner of ``run_dir`` (its config must match the checkpoint's)."""
    repeats: int = 2
    """Timed evaluations per layout, interleaved."""


def parse_layout(layout: str) -> tuple[int, int]:
    """``"16x32"`` -> ``(16, 32)``.

    >>> parse_layout("48x96")
    (48, 96)
    """
    envs, _, rows = layout.partition("x")
    if not (envs.isdigit() and rows.isdigit() and int(envs) > 0 and int(rows) > 0):
        raise SystemExit(f"--layouts takes ENVSxROWS, e.g. 16x32, got {layout!r}")
    return int(envs), int(rows)


def recorded(lm) -> list[tuple[str, str, str]]:
    """Record every completion ``lm.sample_joint`` returns as ``(agent, prompt, text)``
    (the evaluation's answers); returns the list it fills."""
    answers: list[tuple[str, str, str]] = []
    sample_joint = lm.sample_joint

    def recording(requests, **settings):
        joint = sample_joint(requests, **settings)
        for agent, completions in joint.items():
            answers.extend((agent, str(c.prompt_ids), c.text) for c in completions)
        return joint

    lm.sample_joint = recording
    return answers


def main(args: EvalTimeArgs) -> None:
    table = table_args(args)
    problems = list(range(args.eval_problems))
    layouts = {name: parse_layout(name) for name in args.layouts}
    learners = {}
    for name, (_, rows) in layouts.items():
        config = config_of(dataclasses.replace(table, sample_batch_size=rows), args.algo, run_seed(args.run_dir), None)
        learner = built_learner(config, args.run_dir)
        learners[name] = (config, learner)
    seconds: dict[str, list[float]] = {name: [] for name in layouts}
    metrics, answers = {}, {}
    for _ in range(args.repeats):
        for name, (envs, _) in layouts.items():
            config, learner = learners[name]
            venv = build_env(config, envs, split="test")
            log = recorded(learner.lm)
            start = time.perf_counter()
            metrics[name] = evaluate(learner, venv, problems, progress=False).metrics
            seconds[name].append(time.perf_counter() - start)
            answers[name] = {(agent, prompt): text for agent, prompt, text in log}
            del learner.lm.sample_joint  # the class's own again
            print(f"{name}: {seconds[name][-1]:.1f} s, accuracy {metrics[name]['eval/correct']:.3f}", flush=True)
    first = next(iter(layouts))
    record = {"args": dataclasses.asdict(args), "layouts": {}}
    print(f"\n| layout | seconds (median of {args.repeats}) | accuracy | cut | tokens/answer | answers differing from {first} |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in layouts:
        differing = sum(answers[name].get(key) != text for key, text in answers[first].items())
        row = {
            "seconds": seconds[name],
            "median_seconds": statistics.median(seconds[name]),
            "metrics": metrics[name],
            "answers": len(answers[name]),
            "differing": differing,
        }
        record["layouts"][name] = row
        m = metrics[name]
        print(
            f"| {name} | {row['median_seconds']:.1f} | {m['eval/correct']:.3f} | {m['eval/truncated_share']:.0%} "
            f"| {m['eval/mean_completion_tokens']:.1f} | {differing} of {len(answers[first])} |"
        )
    write_results("eval_time_trained" if args.run_dir else "eval_time_untrained", record)


if __name__ == "__main__":
    main(tyro.cli(EvalTimeArgs))
