"""Metric logging: one JSON object per line (JSONL), TensorBoard optional.

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
``losses/policy``               clipped policy-gradient loss (last epoch's mean)
``losses/kl``                   mean KL(pi || pi_ref) to the reference policy
``losses/approx_kl``            mean KL(pi_old || pi), the step size of the update
``losses/clip_frac``            share of clipped importance ratios
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
==============================  ==========================================================
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


class MetricLogger:
    """Appends metric records to ``<run_dir>/metrics.jsonl`` (and TensorBoard if asked).

    Appending means a resumed run continues the same file.

    Args:
        run_dir: Directory of the run; created if missing.
        tensorboard: Also write TensorBoard events to ``run_dir`` (needs ``tensorboard``).
    """

    def __init__(self, run_dir: str | Path, tensorboard: bool = False):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / "metrics.jsonl"
        self.start = time.perf_counter()
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter  # optional dependency

            self.writer = SummaryWriter(str(self.run_dir))

    def log(self, step: int, episodes: int, metrics: dict[str, float]) -> dict[str, Any]:
        """Write one record and return it."""
        record = {
            "step": step,
            "episodes": episodes,
            "time": round(time.perf_counter() - self.start, 3),
        }
        record.update({name: float(value) for name, value in metrics.items()})
        with self.path.open("a") as file:
            file.write(json.dumps(record) + "\n")
        if self.writer is not None:
            for name, value in metrics.items():
                self.writer.add_scalar(name, float(value), step)
        return record

    def close(self) -> None:
        """Flush and close TensorBoard, if open."""
        if self.writer is not None:
            self.writer.close()


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All records of a ``metrics.jsonl`` file, in order."""
    with Path(path).open() as file:
        return [json.loads(line) for line in file if line.strip()]
