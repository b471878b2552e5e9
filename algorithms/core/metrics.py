"""Metric logging: one JSON object per line (JSONL); TensorBoard and Weights & Biases optional.

TensorBoard (``tensorboard=True``, the ``tensorboard`` extra) and Weights & Biases
(``wandb_project=NAME``, the ``wandb`` extra; ``WANDB_MODE=offline`` keeps it on disk,
under ``<run_dir>/wandb``) get every metric of a record under the same name as the JSONL
file, at the record's ``step``.

Every record has ``step`` (the learner update), ``episodes`` (training episodes so far)
and ``time`` (seconds since the logger opened), plus any of these metrics:

==============================  ==========================================================
name                            meaning
==============================  ==========================================================
``rewards/total/mean``          mean per-agent episode return (the scalar reward)
``rewards/local/mean``          mean per-agent episode sum of r_local
``rewards/global/mean``         mean per-agent episode sum of r_global
``rewards/token_cost/mean``     mean per-agent episode sum of the token-cost term
``rewards/team/mean``           share of training episodes whose final consensus is correct
``actions/persist_share``       share of PERSIST among training actions (likewise refine,
                                concede: ``actions/refine_share``, ``actions/concede_share``)
``tokens/episode``              mean tokens per training episode (all agents)
``losses/policy``               clipped policy-gradient loss (mean over the update's steps,
                                as the next four)
``losses/kl``                   mean KL(pi || pi_ref) to the reference policy
``losses/approx_kl``            mean KL(pi_old || pi), the step size of the update
``losses/clip_frac``            share of samples whose ratio is clipped where clipping bites
                                (``clip_frac_low``, ``clip_frac_high``: below, above the range)
``losses/grad_norm``            the gradient's global norm before clipping (mean over steps)
``losses/bc``                   SFT: cross-entropy to the teacher's actions (last epoch)
``losses/bc_agreement``         SFT: share of visited states where the greedy policy picks
                                the teacher's action (before the update)
``teacher/persist_share``       SFT: share of PERSIST among the teacher's labels (likewise
                                ``teacher/refine_share``, ``teacher/concede_share``)
``adv/abs_mean``                mean |advantage| over the batch
``eval/accuracy``               held-out: mean per-agent final accuracy
``eval/consensus_accuracy``     held-out: share of problems whose consensus is correct
``eval/tokens``                 held-out: mean tokens per problem
``eval/persist_share``          held-out: share of PERSIST (likewise refine, concede)
``charts/sps``                  environment steps per second
``charts/learning_rate``        the learning rate the update stepped at (``lr_schedule``)
==============================  ==========================================================
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import secrets
import time
from pathlib import Path
from types import ModuleType
from typing import Any

METRICS = "metrics.jsonl"
"""The metric log's file name in a run directory."""
LOG_FIELDS = ("step", "episodes", "time")
"""The fields of a metric record that :meth:`MetricLogger.log` adds to the metrics."""


class MetricLogger:
    """Appends metric records to ``<run_dir>/metrics.jsonl`` (and TensorBoard or Weights &
    Biases if asked).

    Appending means a resumed run continues the same file.

    Args:
        run_dir: Directory of the run; created if missing.
        tensorboard: Also write TensorBoard events to ``run_dir`` (the ``tensorboard`` extra).
        wandb_project: Also log to this Weights & Biases project (the ``wandb`` extra);
            ``""``: not at all.
        config: The run's settings, recorded as the Weights & Biases run's config.

    Raises:
        ImportError: When an asked-for logger's extra is not installed, naming the extra;
            nothing is created then.
    """

    def __init__(
        self,
        run_dir: str | Path,
        tensorboard: bool = False,
        wandb_project: str = "",
        config: dict[str, Any] | None = None,
    ):
        board = _import_extra("torch.utils.tensorboard", "tensorboard") if tensorboard else None
        wandb = _import_extra("wandb", "wandb", option="wandb_project") if wandb_project else None
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / METRICS
        self.start = time.perf_counter() - _logged_time(self.path)  # a resumed run's clock goes on
        self.writer = board.SummaryWriter(str(self.run_dir)) if board else None
        self.wandb_run = None
        if wandb is not None:
            try:
                run_id = wandb_run_id(self.run_dir)
                self.wandb_run = wandb.init(
                    project=wandb_project, dir=str(self.run_dir), name=self.run_dir.name, config=config,
                    id=run_id, resume="allow",
                )  # fmt: skip
                (self.run_dir / WANDB_ID).write_text(run_id + "\n", encoding="utf-8")  # once it started: a failed start stays one
            except wandb.errors.Error as error:  # no API key, no server: the user's to fix, in one line
                raise ValueError(
                    f"--wandb-project: Weights & Biases refused to start: {error} (run `wandb login`, or log "
                    "locally with WANDB_MODE=offline)"
                ) from None

    def log(self, step: int, episodes: int, metrics: dict[str, float]) -> dict[str, Any]:
        """Write one record and return it."""
        values = {name: float(value) for name, value in metrics.items()}
        record = {
            "step": step,
            "episodes": episodes,
            "time": round(time.perf_counter() - self.start, 3),
            **values,
        }
        with self.path.open("a") as file:
            file.write(json.dumps(record) + "\n")
        if self.writer is not None:
            for name, value in values.items():
                self.writer.add_scalar(name, value, step)
        if self.wandb_run is not None:
            self.wandb_run.log(values, step=step)
        return record

    def close(self) -> None:
        """Flush and close TensorBoard and Weights & Biases, if open."""
        if self.writer is not None:
            self.writer.close()
        if self.wandb_run is not None:
            self.wandb_run.finish()


WANDB_ID = Path("wandb", "run_id")
"""Where a run folder keeps the id of its Weights & Biases run (:func:`wandb_run_id`)."""


def wandb_run_id(run_dir: Path) -> str:
    """The id of the Weights & Biases run of the run in ``run_dir``: made on its first start
    and kept in :data:`WANDB_ID`, so a resumed run logs into the same W&B run (TRL's
    ``resume_from_checkpoint`` leaves that to the user's ``WANDB_RUN_ID``; an id set there
    wins); a new id where the folder keeps none (the logger writes it once W&B started)."""
    if os.environ.get("WANDB_RUN_ID"):
        return os.environ["WANDB_RUN_ID"]
    path = run_dir / WANDB_ID
    return path.read_text(encoding="utf-8").strip() if path.is_file() else secrets.token_hex(4)


def _import_extra(module: str, extra: str, option: str = "") -> ModuleType:
    """``module``, or an ImportError saying that ``option`` (default: ``extra``) needs ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"{option or extra} needs the {extra!r} extra: pip install 'deliberation-env[{extra}]' ({error})"
        ) from error


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All records of a ``metrics.jsonl`` file, in order."""
    with Path(path).open() as file:
        return [json.loads(line) for line in file if line.strip()]


def check_loggers(tensorboard: bool, wandb_project: str) -> None:
    """Before a run writes anything: raise an ``ImportError`` naming the extra that
    ``--tensorboard`` or ``--wandb-project`` needs when it is not installed."""
    for asked, flag, module, extra in (
        (tensorboard, "--tensorboard", "tensorboard", "tensorboard"),
        (bool(wandb_project), "--wandb-project", "wandb", "wandb"),
    ):
        if asked and importlib.util.find_spec(module) is None:
            raise ImportError(
                f"{flag} needs the {extra!r} extra: pip install 'deliberation-env[{extra}]'"
            )


def _logged_time(path: Path) -> float:
    """The ``time`` of the last record of the metrics file ``path`` (0 without one): where a
    resumed run's clock starts, so that ``time`` grows over the whole run (the time between
    the stop and the resume not counted)."""
    try:
        with path.open("rb") as file:
            file.seek(max(0, file.seek(0, 2) - 65536))
            lines = file.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return 0.0
    for line in reversed(lines):
        try:
            return float(json.loads(line)["time"])
        except (ValueError, KeyError, TypeError):
            continue
    return 0.0

