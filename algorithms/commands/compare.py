"""``deliberate compare [meta|text]``: learners x seeds on the same env, problems and budget,
then a table of held-out results with 95% confidence intervals and the files written.

Each family's driver does the work (``compare meta``: :func:`algorithms.meta.compare.compare`,
the meta-policy learners, reward scales and heuristic baselines; ``compare text``:
:func:`algorithms.text.compare.compare`, the LLM-weight learners); this module checks the
command line's settings, gives the comparison a folder of its own,
``runs/compare/<family>-<algos>-<time>`` (unless ``--out-dir`` names one), and prints the
table and the files. Both write the same files (:mod:`algorithms.core.compare`), and
``--algos`` takes a learner of one's own by import path (``--algos softrankpo ./mine.py:Mine``).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from algorithms.commands.common import console, quiet_libraries, wrote_folder
from algorithms.core.compare import check_per_run_settings, learner_label
from algorithms.core.metrics import check_loggers
from algorithms.core.run_dirs import CONFIG, check_resume, new_run_dir
from algorithms.meta.config import CompareConfig, PolicyGradientConfig
from algorithms.text.compare import TextCompare
from algorithms.text.config import TextLearnerConfig


def with_folder(cfg: Any, family: str) -> Any:
    """``cfg`` with its ``out_dir``: the one given, else a new one (not made yet: the driver
    makes it once the settings are checked)."""
    if cfg.out_dir:
        return cfg
    return replace(cfg, out_dir=str(new_run_dir("compare", family, "+".join(map(learner_label, cfg.algos)))))


def compare_meta(cfg: CompareConfig) -> dict[str, Any]:
    """``deliberate compare``: every learner x seed x reward scale and the baselines
    (:func:`algorithms.meta.compare.compare`); print the held-out table and the files written;
    return the summary."""
    from algorithms.meta.compare import compare, compare_table

    check_per_run_settings(cfg.learner, PolicyGradientConfig(), ("run.resume_from", "run.run_dir"))  # compare() refuses the others
    check_loggers(cfg.learner.run.tensorboard, cfg.learner.run.wandb_project)
    check_resume(cfg.learner.run.resume, cfg.out_dir, flag="--out-dir")
    cfg = with_folder(cfg, "meta")
    started = time.perf_counter()
    summary = compare(cfg)
    recorded = json.loads((Path(cfg.out_dir) / CONFIG).read_text())["learner"]["run"]["eval_problems"]
    cfg = replace(cfg, learner=replace(cfg.learner, run=replace(cfg.learner.run, eval_problems=recorded)))
    console.print(compare_table(summary, cfg))  # the number evaluated: at most the test split's
    wrote_folder(Path(cfg.out_dir), time.perf_counter() - started)
    return summary


def compare_text(cfg: TextCompare) -> dict[str, Any]:
    """``deliberate compare text``: every learner x seed (:func:`algorithms.text.compare.compare`);
    print the table and the files written; return the summary."""
    from algorithms.core import data_parallel
    from algorithms.text.compare import compare, compare_table

    check_per_run_settings(cfg.learner, TextLearnerConfig(), ("run.resume_from", "run.run_dir"))
    quiet_libraries(cfg.learner.run.progress)
    check_loggers(cfg.learner.run.tensorboard, cfg.learner.run.wandb_project)
    check_resume(cfg.learner.run.resume, cfg.out_dir, flag="--out-dir")
    data_parallel.restarted_run(cfg.out_dir, "--out-dir")  # torchrun --max-restarts needs a folder given to continue
    cfg = with_folder(cfg, "text")  # under torchrun, rank 0's is the one used
    started = time.perf_counter()
    summary = compare(cfg)
    if data_parallel.from_environment().writes:  # rank 0 alone prints, as it alone writes
        console.print(compare_table(summary, cfg))
        wrote_folder(Path(cfg.out_dir), time.perf_counter() - started)
    return summary
