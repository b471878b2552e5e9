"""How far one seed's result moves under changes that leave the method the same, beside
how far the seeds spread (issue 34, item 3).

How many rows the sampler decodes together, or which sampler draws the rollouts, changes
no part of the method, but it changes float-level results, and after one optimizer step a
run follows another path. This script runs the learning table's learners and seeds again
under each such change (each change a setting of ``benchmarks/text_learning.py``, whose
runs it stores, reads back and commits as that script does) and prints, per learner, each
seed's held-out accuracy under each change beside the table's own run, and the seeds'
spread beside it. A difference between two optimizers must exceed both widths to mean
something::

    OMP_NUM_THREADS=1 taskset -c 0 nice python benchmarks/incidental_spread.py --algos softrankpo magrpo \\
        --seeds 0 1 --updates 16 --eval-problems 48 --changes sample_batch_size=8 sampler=torch --commit

Writes ``benchmarks/results/incidental_spread.json``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import tyro
from results import write_results
from text_learning import Args, finished, settings_dir, summary_path, table_args, trained_run


@dataclass
class SpreadArgs(Args):
    """The learning table's settings (``text_learning.py``'s), and the changes to try."""

    changes: tuple[str, ...] = ("sample_batch_size=8", "sampler=torch")
    """Incidental changes, each ``field=value`` of the table's settings."""
    run: bool = True
    """Make the runs that have not finished (``--no-run``: tabulate what has)."""
    table_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """The table's seeds whose spread is shown beside (their stored runs, read back)."""


def parse_change(change: str) -> tuple[str, object]:
    """``"sample_batch_size=8"`` -> ``("sample_batch_size", 8)``: an int where it reads as
    one, else the text.

    >>> parse_change("sample_batch_size=8"), parse_change("sampler=torch")
    (('sample_batch_size', 8), ('sampler', 'torch'))
    """
    field, _, value = change.partition("=")
    names = {f.name for f in dataclasses.fields(Args)}
    if field not in names or not value:
        raise SystemExit(f"--changes takes field=value of the table's settings, got {change!r}")
    return field, int(value) if value.lstrip("-").isdigit() else value


def spread(base: dict[tuple[str, int], float], *changes: dict[tuple[str, int], float]) -> dict[str, float]:
    """The same seed's difference under a change: mean and largest absolute value over the
    (learner, seed) runs that the base and a change both have (several changes: pooled).

    >>> spread({("a", 0): 0.3, ("a", 1): 0.2}, {("a", 0): 0.25, ("a", 1): 0.3})
    {'runs': 2, 'mean_abs': 0.075, 'max_abs': 0.1}
    >>> spread({("a", 0): 0.3}, {("a", 0): 0.25}, {("a", 0): 0.4})["max_abs"]
    0.1
    """
    both = [(key, changed) for changed in changes for key in sorted(set(base) & set(changed))]
    differences = np.abs([changed[key] - base[key] for key, changed in both])
    return {
        "runs": len(both),
        "mean_abs": round(float(differences.mean()), 6) if both else float("nan"),
        "max_abs": round(float(differences.max()), 6) if both else float("nan"),
    }


def main(args: SpreadArgs) -> None:
    table = table_args(args)
    settings = {"table": table, **{change: dataclasses.replace(table, **dict([parse_change(change)])) for change in args.changes}}
    accuracy: dict[str, dict[tuple[str, int], float]] = {}
    for name, setting in settings.items():
        out = settings_dir(setting)
        accuracy[name] = {}
        for seed in args.seeds:
            for algo in args.algos:
                path = summary_path(setting, f"{algo}-seed{seed}")
                run = trained_run(setting, algo, seed, out) if args.run else finished(path)
                if run is not None:
                    accuracy[name][algo, seed] = run["after"]["eval/correct"]
    print("| learner | seed | " + " | ".join(settings) + " |")
    print("|---|---:|" + "---:|" * len(settings))
    for algo in args.algos:
        for seed in args.seeds:
            cells = [f"{accuracy[name][algo, seed]:.3f}" if (algo, seed) in accuracy[name] else "-" for name in settings]
            print(f"| {algo} | {seed} | " + " | ".join(cells) + " |")
    changes = {change: spread(accuracy["table"], accuracy[change]) for change in args.changes}
    pooled = spread(accuracy["table"], *(accuracy[change] for change in args.changes))
    seeds = {}
    for algo in args.algos:
        stored = (finished(summary_path(table, f"{algo}-seed{seed}")) for seed in args.table_seeds)
        values = [run["after"]["eval/correct"] for run in stored if run is not None]
        seeds[algo] = {
            "runs": len(values),
            "sd": float(np.std(values, ddof=1)) if len(values) > 1 else float("nan"),
            "range": float(np.ptp(values)) if values else float("nan"),
        }
    print("\nthe same seed under a change, |difference| of held-out accuracy:")
    for change, stat in changes.items():
        print(f"  {change}: mean {stat['mean_abs']:.3f}, largest {stat['max_abs']:.3f} over {stat['runs']} runs")
    print(f"  all changes: mean {pooled['mean_abs']:.3f}, largest {pooled['max_abs']:.3f} over {pooled['runs']} runs")
    print("the seeds' spread (the table's runs):")
    for algo, stat in seeds.items():
        print(f"  {algo}: standard deviation {stat['sd']:.3f}, range {stat['range']:.3f} over {stat['runs']} seeds")
    accuracies = {name: {f"{a}-seed{s}": v for (a, s), v in values.items()} for name, values in accuracy.items()}
    write_results("incidental_spread", {"args": dataclasses.asdict(args), "accuracy": accuracies, "changes": changes, "pooled": pooled, "seeds": seeds})


if __name__ == "__main__":
    main(tyro.cli(SpreadArgs))
