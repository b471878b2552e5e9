"""LLM-weight learners sampling on Ray rollout workers: the weights shipped each update,
the same training as in-process, a killed worker replayed, another base refused."""

from __future__ import annotations

import dataclasses
import functools
import json

import pytest
import torch
from helpers import kill_and_wait
from text_learner_fakes import HashProtocol

from algorithms.text import TextMAGRPO, TextMAGRPOConfig
from algorithms.text.config import text_run
from algorithms.text.train import build_lm
from deliberation_env.ray_pool import WorkerError
from deliberation_env.text import text_vector_env

ray = pytest.importorskip("ray", reason="Ray is in the 'ray' extra")
from algorithms.text.rollout_workers import RolloutWorkers, base_fingerprint

pytestmark = pytest.mark.timeout(300)
AGENTS = ["agent_0", "agent_1"]
CONFIG = TextMAGRPOConfig(
    model="tiny", groups_per_update=2, group_size=2, max_new_tokens=6, micro_batch_size=4, lora_rank=4,
    run=text_run(progress=False),
)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def learner(sampler_workers: int = 0, kill_after: int | None = None):
    """A MAGRPO learner on the tiny model; with ``sampler_workers``, sampling on that many
    Ray workers. Returns the learner and its metrics over 3 updates (a worker killed after
    update ``kill_after``)."""
    lm = build_lm(CONFIG, AGENTS)
    sampler = None
    if sampler_workers:
        sampler = RolloutWorkers(functools.partial(build_lm, CONFIG, AGENTS), sampler_workers, lm, threads=1)
    venv = text_vector_env(CONFIG.num_envs, protocol=HashProtocol(), n_agents=2, max_turns=CONFIG.env.max_turns)
    subject = TextMAGRPO(CONFIG, lm, venv, sampler=sampler)
    history = []
    for update in range(3):
        history.append({k: v for k, v in subject.train_step().items() if k != "charts/seconds" and not k.startswith("perf/")})
        if kill_after == update:
            kill_and_wait(sampler.handles[0], restart=True)
    return subject, history


def test_rollout_workers_train_as_in_process_through_a_killed_worker():
    local, local_history = learner()
    remote, remote_history = learner(sampler_workers=2, kill_after=0)
    for remote_metrics, local_metrics in zip(remote_history, local_history, strict=True):
        assert remote_metrics == pytest.approx(local_metrics)  # stale weights would sample other texts
    assert local_history[0] != local_history[1]  # the updates moved the policy
    for agent, weights in local.lm.state_dict().items():
        for name, tensor in weights.items():
            assert torch.allclose(tensor, remote.lm.state_dict()[agent][name], atol=1e-6), name
    remote.sampler.close()


def test_workers_that_build_another_base_are_refused():
    lm = build_lm(CONFIG, AGENTS)
    other = dataclasses.replace(CONFIG, seed=1)  # another random tiny model
    assert base_fingerprint(lm) != base_fingerprint(build_lm(other, AGENTS))
    with pytest.raises(WorkerError, match=r"Ray worker 0 of 1 \(a copy of the policy.*another base model"):
        RolloutWorkers(functools.partial(build_lm, other, AGENTS), 1, lm, threads=1)
    workers = RolloutWorkers(functools.partial(build_lm, CONFIG, AGENTS), 1, lm, threads=1)
    with pytest.raises(RuntimeError, match="before sync"):
        workers.sample("agent_0", [({"role": "user", "content": "1 + 1?"},)], [0])
    workers.sync(lm.state_dict(), 0)
    with pytest.raises(ValueError, match=r"Ray worker 0 of 1 \(a copy of the policy.*could not sample requests 0..0 of agent_0: .*min_new_tokens"):
        workers.sample("agent_0", [({"role": "user", "content": "1 + 1?"},)], [0], max_new_tokens=2, min_new_tokens=3)
    workers.close()


def test_deliberate_train_text_with_workers_learns_what_it_learns_in_process(tmp_path):
    from algorithms import cli

    tiny = ["train", "text", "grpo", "--model", "tiny", "--groups-per-update", "1",
            "--group-size", "2", "--max-new-tokens", "4", "--no-progress", "--updates", "2"]  # fmt: skip
    cli.main([*tiny, "--run-dir", str(tmp_path / "local")])
    cli.main([*tiny, "--rollout-workers", "2", "--run-dir", str(tmp_path / "ray")])
    local, remote = (
        [json.loads(line) for line in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
        for run in ("local", "ray")
    )
    for a, b in zip(local, remote, strict=True):
        timings = ("time", "charts/seconds", "perf/")  # clocks, and the perf/* metrics measured with them
        assert {k: v for k, v in a.items() if not k.startswith(timings)} == pytest.approx(
            {k: v for k, v in b.items() if not k.startswith(timings)}
        )
    assert json.loads((tmp_path / "ray" / "summary.json").read_text())["config"]["workers"] == 2
