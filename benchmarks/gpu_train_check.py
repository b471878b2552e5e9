"""The GPU check of the whole text learner (issue 32): ``deliberate train text grpo`` as a
user types it, on the device, in one process and under ``torchrun`` (``nccl`` there: one
rank per GPU), and the two runs' updates compared.

``benchmarks/gpu_check.py`` times the model work; this runs the rest on the device too: the
env, rollouts through :meth:`agents.TrainableLM.sample_joint`, rewards, the GRPO update with
a KL term, checkpoints, the held-out evaluation and resume. The model is the tiny random
Llama (``--model tiny``) and the task the test suite's hash protocol, whose reward always
varies (``tests/algorithms/text/text_learner_fakes.py``), so every update moves the
weights. It reports whether each run finished, whether the ``torchrun`` run made the
one-process run's updates (the weights within 1e-4, the logged rewards and losses), and
whether a run resumed on the device continues.

``--checks determinism`` runs instead two runs of one seed in bfloat16 with
``--full-determinism``, ``--cast-lm-head-to-fp32`` and ``--rollout tree``, and reports
whether they trained the same weights bit for bit, and the warnings of ops that have no
deterministic kernel on the device (``torch.use_deterministic_algorithms``'s, warn only).

    python benchmarks/gpu_train_check.py            # on a GPU (CUDA, nccl)
    python benchmarks/gpu_train_check.py --smoke    # the same on the CPU (gloo)
    python benchmarks/gpu_train_check.py --checks determinism

Prints the outcome and writes ``benchmarks/results/gpu_train_check.json``
(``gpu_train_check_determinism.json`` for that check; nothing with ``--smoke``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import tyro
from results import REPO, write_results

FAKES = REPO / "tests" / "algorithms" / "text"
PROTOCOL = "from text_learner_fakes import HashProtocol\n\nprotocol = HashProtocol()\n"
SETTINGS = ["--model", "tiny", "--protocol", "./hash_task.py:protocol", "--groups-per-update", "3", "--group-size", "2",
            "--max-new-tokens", "6", "--max-turns", "2", "--update-epochs", "2", "--num-minibatches", "2",
            "--kl-coef", "0.1", "--learning-rate", "0.003", "--checkpoint-interval", "1", "--eval-problems", "4",
            "--no-progress"]  # fmt: skip


@dataclass
class Args:
    updates: int = 3
    """Updates of each run."""
    smoke: bool = False
    """On the CPU with ``gloo`` (what a test can run)."""
    checks: tuple[str, ...] = ("updates",)
    """``updates``: one process, ``torchrun`` and a resume compared; ``determinism``: two
    runs of one seed under ``--full-determinism`` (module docstring)."""


def run(folder: Path, program: list[str], *, torchrun: bool) -> dict[str, object]:
    """``deliberate PROGRAM`` in ``folder``: a plain process, or one rank under ``torchrun``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAKES), str(folder), str(REPO), os.environ.get("PYTHONPATH", "")])}
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1"] if torchrun else []
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *launcher, "-m", "algorithms.cli", *program], cwd=folder, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    return {"returncode": done.returncode, "seconds": round(time.perf_counter() - started, 1),
            "stderr_tail": done.stderr[-1500:] if done.returncode else "",
            "warnings": [line for line in done.stderr.splitlines() if "Warning" in line]}  # fmt: skip


def weights(run_dir: Path) -> dict[str, torch.Tensor]:
    from algorithms.core.checkpoints import load_checkpoint

    state = load_checkpoint(run_dir / "checkpoint.safetensors")
    return {f"{agent}/{name}": tensor for agent, part in state["weights"].items() for name, tensor in part.items()}


def metrics(run_dir: Path) -> list[dict[str, float]]:
    """The metrics of each update (the step-0 line, the evaluation before the first update, left out)."""
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [line for line in lines if line["step"] > 0]


def largest_difference(ours: Path, reference: Path) -> float:
    """The largest absolute difference of any trained weight between two runs' checkpoints."""
    a, b = weights(ours), weights(reference)
    assert a.keys() == b.keys()
    return max(float((a[name].float() - b[name].float()).abs().max()) for name in a)


DETERMINISTIC = ["--dtype", "bfloat16", "--full-determinism", "--cast-lm-head-to-fp32", "--rollout", "tree"]
"""The settings of the determinism check's two runs."""


def main(args: Args) -> None:
    device = "cpu" if args.smoke else "cuda"
    unknown = sorted(set(args.checks) - {"updates", "determinism"})
    if unknown:
        raise SystemExit(f"--checks: unknown {unknown}; give updates and/or determinism")
    record: dict[str, object] = {"device": device, "updates": args.updates}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        (folder / "hash_task.py").write_text(PROTOCOL)

        def train(run_dir: str, updates: int, *extra: str, torchrun: bool = False) -> dict[str, object]:
            program = ["train", "text", "grpo", *SETTINGS, "--device", device, "--updates", str(updates),
                       "--run-dir", run_dir, *extra]  # fmt: skip
            return run(folder, program, torchrun=torchrun)

        if "determinism" in args.checks:
            record["determinism"] = check_determinism(folder, train, args.updates)
        if "updates" in args.checks:
            check_updates(folder, train, args.updates, record)
    print(json.dumps({k: v for k, v in record.items() if k != "summary"}, indent=1, default=str))
    if not args.smoke:
        write_results("gpu_train_check" + ("" if "updates" in args.checks else "_determinism"), record)


def _comparable(lines: list[dict[str, float]]) -> list[dict[str, float]]:
    """Metrics without what the clock and the memory measure."""
    return [{k: v for k, v in line.items() if not k.startswith(("perf/", "charts/seconds", "time"))} for line in lines]


def check_determinism(folder: Path, train, updates: int) -> dict[str, object]:
    """Two runs of one seed under :data:`DETERMINISTIC`: the same weights bit for bit?"""
    runs = {name: train(name, updates, *DETERMINISTIC) for name in ("same-a", "same-b")}
    outcome: dict[str, object] = {"runs": runs, "settings": DETERMINISTIC}
    if all(run["returncode"] == 0 for run in runs.values()):
        outcome["max_weight_difference"] = largest_difference(folder / "same-b", folder / "same-a")
        outcome["metrics_equal"] = _comparable(metrics(folder / "same-a")) == _comparable(metrics(folder / "same-b"))
        outcome["nondeterministic_op_warnings"] = sorted(
            {line.strip()[:300] for run in runs.values() for line in run["warnings"] if "determinis" in line}
        )
    return outcome


def check_updates(folder: Path, train, updates: int, record: dict[str, object]) -> None:
    """One process, ``torchrun`` and a resume: finished, and the same updates?"""
    record["one_process"] = train("one", updates)
    record["torchrun"] = train("ranked", updates, torchrun=True)
    record["resumed"] = train("halves", updates - 1)
    if record["resumed"]["returncode"] == 0:
        record["resumed"] = train("halves", updates, "--resume")
    finished = all(record[key]["returncode"] == 0 for key in ("one_process", "torchrun", "resumed"))
    record["finished"] = finished
    if finished:
        one, ranked, halves = folder / "one", folder / "ranked", folder / "halves"
        record["torchrun_max_weight_difference"] = largest_difference(ranked, one)
        record["resumed_max_weight_difference"] = largest_difference(halves, one)
        record["joint_reward"] = {
            name: [round(line["rewards/joint/mean"], 6) for line in metrics(path)]
            for name, path in (("one_process", one), ("torchrun", ranked), ("resumed", halves))
        }
        record["summary"] = json.loads((one / "summary.json").read_text())
        config = json.loads((one / "config.json").read_text())
        record["recorded_placement"] = {key: config.get(key) for key in ("resolved_device", "resolved_dtype")}


if __name__ == "__main__":
    main(tyro.cli(Args))
