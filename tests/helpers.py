"""Test doubles: a fixed task and a scripted solver whose answers the test chooses."""

from __future__ import annotations

import ast
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from agents.base import Answer, Confidence, Turn
from agents.llamacpp_backend import default_model_path
from deliberation_env.tasks import Problem
from deliberation_env.tasks.numeric import NumericTask


class FixedTask(NumericTask):
    """A numeric task with the given (question, answer) problems in both splits."""

    name = "fixed"

    def __init__(self, items: Sequence[tuple[str, str]] = (("What is 3 + 4?", "7"), ("What is 2 + 2?", "4"))):
        self._problems = tuple(Problem(f"fixed-{k}", q, a) for k, (q, a) in enumerate(items))

    def problems(self, split: str) -> Sequence[Problem]:
        return self._problems


class ScriptedSolver:
    """Answers chosen by the test.

    Args:
        solve: Decision per agent at round 0 (``None``: an unparseable text).
        refine: Decision per agent after a REFINE (default: unchanged).
        confidence: Confidence per decision value (default 0.5), so a conceding agent
            takes the confidence that its new decision has.
    """

    model_id = "scripted"

    def __init__(self, solve, refine=None, confidence=None, tokens=(10, 5)):
        self.solve_decisions, self.refine_decisions = list(solve), refine
        self.confidence = confidence or {}
        self.tokens = tokens
        self.calls: list[tuple[str, int]] = []

    def _answer(self, turn: Turn, decision: str | None) -> Answer:
        text = "I give up." if decision is None else f"The answer is {decision}."
        return Answer(text, turn.parse(text), (0.5,) * 6, *self.tokens)

    def solve(self, turns):
        self.calls.append(("solve", len(turns)))
        return [self._answer(t, self.solve_decisions[t.agent]) for t in turns]

    def refine(self, turns):
        self.calls.append(("refine", len(turns)))
        table = self.refine_decisions or {}
        return [self._answer(t, table.get(t.agent, t.previous.decision)) for t in turns]

    def introspect(self, turns):
        self.calls.append(("introspect", len(turns)))
        return [Confidence(self.confidence.get(t.previous.decision, 0.5), "scripted", 3, 1) for t in turns]


def run_benchmark(script: str, *args: str) -> subprocess.CompletedProcess:
    """``python benchmarks/SCRIPT ARGS`` from the repository's root, as a user runs it;
    asserts it exited 0 (its stderr's tail as the message) and returns it."""
    done = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *args],
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def wait_until(condition: Callable[[], object], timeout_s: float = 60.0) -> None:
    """Poll ``condition`` every 50 ms until it holds or ``timeout_s`` has passed.

    Returns as soon as the condition holds, so a generous deadline costs nothing on a fast
    machine and keeps a loaded one from failing; the caller asserts the condition after.
    """
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The error line of ``deliberate ARGS``, which must exit with status 2 and print one
    line and no traceback."""
    from algorithms import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(list(args))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and "__tyro" not in err
    assert "\n" not in err, err
    return err


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def llama_server(log_dir: Path, alias: str, n_ctx: int) -> Iterator[tuple[str, subprocess.Popen]]:
    """``python -m llama_cpp.server`` with the cached SmolLM2 GGUF on a free local port,
    serving it as ``alias``; yields its OpenAI-compatible base URL and its process."""
    port = free_port()
    log = log_dir / "server.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
         "--model_alias", alias, "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", str(n_ctx), "--verbose", "false"],
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base_url}/models", timeout=1).read()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
    try:
        yield base_url, process
    finally:
        process.terminate()
        process.wait(timeout=10)


def kill_and_wait(handle, restart: bool) -> None:
    """Kill a Ray actor and return once its process is gone, so that the next call meets the
    death (or the restarted actor), never the old process: ``ray.kill`` only asks the GCS,
    and a call sent right after it can still run on the actor it was meant to kill."""
    import ray

    def pid(_actor) -> int:  # local: pickled by value, the worker need not import this module
        import os

        return os.getpid()

    old = ray.get(handle.__ray_call__.remote(pid))
    ray.kill(handle, no_restart=not restart)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # a poll: Ray says nothing when the kill lands
        try:
            if ray.get(handle.__ray_call__.remote(pid)) != old:
                return
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
            return
        time.sleep(0.1)
    raise AssertionError(f"actor {handle} (pid {old}) still ran 120 s after ray.kill")


def unsandboxed(program: str, call: str) -> object:
    """What ``call`` returns in a plain interpreter (the sandbox attacks' controls)."""
    code = f"{program}\nprint(repr({call}))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return ast.literal_eval(done.stdout)


def stopped_run(run: Path, folder: Path) -> Path:
    """``folder``: the run in ``run`` as it was before its first checkpoint (its
    ``config.json`` and ``metrics.jsonl``, no checkpoint)."""
    folder.mkdir()
    for name in ("config.json", "metrics.jsonl"):
        shutil.copy(run / name, folder / name)
    return folder
