"""Ray workers behind the vector env API: same episodes as in-process, faults replayed, errors named."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from helpers import kill_and_wait
from test_vector import play_by_protocol, same

import deliberation_env as de
from algorithms.cli import main, parse
from algorithms.meta import SoftRankPO, SoftRankPOConfig
from deliberation_env import ray_pool
from deliberation_env.distributed import RayVectorEnv, WorkerError
from deliberation_env.meta.vector import DeliberationVectorEnv
from deliberation_env.ray_pool import Call, LostState, PoolWorker, WorkerPool
from deliberation_env.vector_protocol import VectorEnv

ray = pytest.importorskip("ray", reason="Ray is in the 'ray' extra")

pytestmark = pytest.mark.timeout(180)  # a worker Ray cannot place waits forever: fail instead
META = {"task": "arithmetic", "team": "simulated", "max_rounds": 3}
TEXT = {"task": "arithmetic", "n_agents": 2, "max_turns": 2}


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def meta_actions(venv, rng):
    return {agent: rng.integers(3, size=venv.num_envs) for agent in venv.agents}


def text_actions(venv, rng):
    return {agent: [f"The answer is {k}." for k in rng.integers(20, size=venv.num_envs)] for agent in venv.agents}


def play(venv, actions, seed=3, kill=None):
    """Every result of one batch of episodes; ``kill``: kill this worker after the first step."""
    rng = np.random.default_rng(0)
    results = [venv.reset(seed=seed)]
    while venv.active.any():
        results.append(venv.step(actions(venv, rng)))
        if kill is not None and len(results) == 2:
            kill_and_wait(venv.handles[kill], restart=True)
    return results


@pytest.fixture(scope="module")
def meta_pair():
    """In-process and 2-worker meta envs whose episodes end at different rounds."""
    kwargs = dict(META, stop_on_consensus=True, observation="both")
    workers = de.vector_env(5, workers=2, **kwargs)
    yield de.vector_env(5, **kwargs), workers
    workers.close()


def test_meta_env_on_two_workers_plays_the_in_process_episodes(meta_pair):
    local, remote = meta_pair
    assert remote.nodes[0] and len(remote.handles) == 2
    assert remote.observation_space("agent_0") == local.observation_space("agent_0")
    expected, got = play(local, meta_actions), play(remote, meta_actions)
    assert len(expected) > 2 and same(got, expected)
    assert same(remote.state(), local.state())


def test_a_killed_worker_is_restarted_and_its_episodes_replayed(meta_pair):
    local, remote = meta_pair
    assert same(play(remote, meta_actions, seed=5, kill=1), play(local, meta_actions, seed=5))
    assert same(play(remote, meta_actions, seed=6), play(local, meta_actions, seed=6))  # and it goes on


def test_a_worker_dead_beyond_its_restarts_is_an_error_naming_it():
    venv = de.vector_env(2, workers=1, worker_options={"max_restarts": 0}, **META)
    venv.reset(seed=0)
    kill_and_wait(venv.handles[0], restart=False)  # for good
    with pytest.raises(WorkerError, match=r"Ray worker 0 of 1 \(envs 0..1.*could not step: .*Actor"):
        venv.step({agent: np.zeros(2, dtype=int) for agent in venv.agents})
    venv.close()


def test_bad_actions_name_the_worker_and_change_nothing(meta_pair):
    local, remote = meta_pair
    for venv in meta_pair:
        venv.reset(seed=7)
    bad = {agent: np.zeros(5, dtype=int) for agent in remote.agents}
    bad["agent_1"][4] = 9
    with pytest.raises(ValueError, match=r"Ray worker 1 of 2 \(envs 3..4.*must lie in 0..2"):
        remote.step(bad)
    with pytest.raises(ValueError, match="must be a sequence of 5 actions"):
        remote.step({agent: np.zeros(4, dtype=int) for agent in remote.agents})
    good = {agent: np.ones(5, dtype=int) for agent in remote.agents}
    assert same(remote.step(good), local.step(good))


def test_text_env_on_two_workers_plays_the_in_process_episodes():
    local, remote = de.text_vector_env(3, **TEXT), de.text_vector_env(3, workers=2, **TEXT)
    assert isinstance(remote, VectorEnv) and remote.episode_length == local.max_turns == 2
    options = {"problem_index": [4, 4, 9], "episode_seed": [1, 2, 3]}
    assert same(remote.reset(options=options), local.reset(options=options))
    assert same(play(remote, text_actions), play(local, text_actions))
    with pytest.raises(AttributeError, match=r"Ray worker 0 of 2 \(envs 0..1.*could not return its state: .*state"):
        remote.state()  # a meta-action env's API only
    remote.close()


def test_the_generic_loop_runs_on_workers_of_both_families_as_in_process():
    kwargs = dict(META, stop_on_consensus=True)
    pairs = [
        (de.vector_env(5, **kwargs), de.vector_env(5, workers=2, **kwargs)),
        (de.text_vector_env(3, **TEXT), de.text_vector_env(3, workers=2, **TEXT)),
    ]
    for local, remote in pairs:  # the protocol's contract holds on the workers, slices that ended early included
        assert play_by_protocol(remote, seed=8) == play_by_protocol(local, seed=8)
        remote.close()


def test_the_ray_env_takes_any_factory_of_a_vector_env():
    remote = RayVectorEnv(DeliberationVectorEnv.factory(**META, observation="flat"), 3, 2)
    local = DeliberationVectorEnv(3, **META, observation="flat")
    assert len(remote.nodes) == 2 and remote.starts.num_envs == 3 and remote.episode_length == 3
    assert same(play(remote, meta_actions), play(local, meta_actions))
    remote.close()


def test_softrankpo_trains_to_identical_metrics_on_two_workers():
    config = SoftRankPOConfig(
        groups_per_update=2, group_size=3, update_epochs=1, num_minibatches=1, hidden_size=16, num_heads=2
    )
    runs = []
    for venv in (de.vector_env(config.num_envs, **META), de.vector_env(config.num_envs, 2, **META)):
        learner = SoftRankPO(config, venv)
        metrics = [learner.train_step() for _ in range(2)]
        runs.append([{k: v for k, v in m.items() if k != "charts/sps"} for m in metrics])  # sps: wall time
    assert runs[0] == runs[1]


def test_env_config_make_runs_on_its_workers():
    config = de.EnvConfig(**META, workers=2)
    remote, local = de.vector_env_from(config, 4, split="test"), de.vector_env_from(de.EnvConfig(**META), 4, split="test")
    assert isinstance(remote, RayVectorEnv) and remote.workers == 2
    assert same(play(remote, meta_actions), play(local, meta_actions))
    remote.close()


def test_deliberate_train_with_workers_logs_the_in_process_run(tmp_path):
    tiny = ["--updates", "2", "--sft-updates", "0", "--eval-problems", "3", "--eval-interval", "1", "--no-progress"]
    tiny += ["--groups-per-update", "2", "--group-size", "2", "--hidden-size", "16"]
    main(["train", "meta", "softrankpo", *tiny, "--run-dir", str(tmp_path / "local")])
    main(["train", "meta", "softrankpo", *tiny, "--env-workers", "2", "--run-dir", str(tmp_path / "ray")])
    logs = []
    for run in ("local", "ray"):
        lines = (tmp_path / run / "metrics.jsonl").read_text().splitlines()
        logs.append([{k: v for k, v in json.loads(line).items() if k not in ("charts/sps", "time")} for line in lines])
    assert len(logs[0]) == 3 and logs[0] == logs[1]
    assert json.loads((tmp_path / "ray" / "config.json").read_text())["env"]["workers"] == 2


def test_env_workers_of_compare_and_run(capsys):
    assert parse(["compare", "meta", "--env-workers", "3"]).command.command.learner.env.workers == 3
    with pytest.raises(SystemExit):
        main(["run", "--env-workers", "2"])
    assert "deliberate run: error: run evaluates in this process" in capsys.readouterr().err


def test_a_worker_that_cannot_build_its_env_names_itself_and_the_cause(tmp_path):
    missing = tmp_path / "no-such-data"
    with pytest.raises(WorkerError, match=rf"Ray worker 0 of 2 \(envs 0..1.*could not build its env.*{missing}"):
        de.text_vector_env(4, workers=2, task="gsm8k", path=str(missing))


def test_bad_arguments_are_refused_before_any_worker_starts():
    with pytest.raises(ValueError, match=r"workers must be in \[0, num_envs=2\]"):
        de.vector_env(2, workers=3, **META)
    with pytest.raises(TypeError, match="workers must be an integer"):
        de.vector_env(2, workers=1.5, **META)
    with pytest.raises(ValueError, match="workers must be >= 0"):
        de.EnvConfig(**META, workers=-1)
    with pytest.raises(ValueError, match="workers=2 is an argument of de.vector_env"):
        de.parallel_env(**META, workers=2)
    with pytest.raises(ValueError, match="n_agents must be >= 2"):
        de.vector_env(2, workers=1, task="arithmetic", team="simulated", n_agents=1)


def test_without_ray_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"deliberation-env\[ray\]"):
        de.vector_env(2, workers=1, **META)


def test_the_wait_for_a_restarting_worker_is_bounded(monkeypatch):
    slept = []
    monkeypatch.setattr(ray_pool.time, "sleep", slept.append)
    monkeypatch.setattr(ray_pool, "RESTART_TIMEOUT_S", 1.0)
    waited = 0.0
    with pytest.raises(TimeoutError, match="not back after 1 s"):
        while True:
            waited = ray_pool.wait_for_restart(waited)
    assert waited == 1.0 and slept == [ray_pool.RESTART_POLL_S] * 2


# ------------------------------------------------------------------ the pool itself
def counter_class() -> type[PoolWorker]:
    """A worker holding a number (local: pickled by value, the worker need not import tests)."""

    class Counter(PoolWorker):
        def __init__(self) -> None:
            self.count: int | None = None

        def set(self, value: int) -> None:
            self.count = value

        def add(self, n: int) -> int:
            if self.count is None:
                raise LostState("restarted: no count")
            if n < 0:
                raise ValueError(f"n must be >= 0, got {n}")
            self.count += n
            return self.count

        def crash(self) -> None:
            raise RuntimeError("boom")

    return Counter


def test_the_pool_restores_a_restarted_worker_and_names_failures():
    counts, restored, undone = [10, 20], [], []

    def restore(k: int) -> None:
        restored.append(k)
        pool.run([Call(k, "set", (counts[k],), "set its count")])

    pool = WorkerPool(counter_class(), [(), ()], ["counter a", "counter b"], restore=restore, stateful=("add",))
    assert len(pool.start("start")) == 2 and all(pool.nodes)
    pool.run([Call(k, "set", (counts[k],), "set its count") for k in range(2)])
    counts = pool.run([Call(k, "add", (1,), "add 1") for k in range(2)])
    assert counts == [11, 21] and restored == []
    kill_and_wait(pool.handles[1], restart=True)  # it comes back without its count
    counts = pool.run([Call(k, "add", (2,), "add 2") for k in range(2)])
    assert counts == [13, 23] and restored == [1]  # restored, then the call sent again
    with pytest.raises(ValueError, match=r"Ray worker 0 of 2 \(counter a, node .*could not add -1: n must be >= 0"):
        pool.run([Call(0, "add", (-1,), "add -1"), Call(1, "add", (0,), "add 0")], undo=undone.append)
    assert undone == [1]  # the worker whose call succeeded is put back
    with pytest.raises(WorkerError, match=r"Ray worker 1 of 2 \(counter b.*could not crash: RuntimeError: boom"):
        pool.run([Call(1, "crash", (), "crash")])
    pool.close()


def test_a_pool_refuses_stateful_methods_without_a_restore():
    with pytest.raises(ValueError, match="need a restore"):
        WorkerPool(counter_class(), [()], ["counter"], stateful=("add",))
