"""Periodic held-out evaluation during training (CoMLRL's eval_interval)."""

from __future__ import annotations

import json

import pytest

from algorithms.text import TextGRPOConfig, train
from algorithms.text.config import text_run

SMALL = {"model": "tiny", "groups_per_update": 2, "group_size": 2, "max_new_tokens": 4, "micro_batch_size": 4}


def test_held_out_metrics_join_every_interval_th_update_and_the_metrics_file(tmp_path):
    result = train(TextGRPOConfig(**SMALL, run=text_run(updates=4, eval_problems=3, eval_interval=2, run_dir=str(tmp_path), progress=False)))
    evaluated = [m["charts/update"] for m in result.history if "eval/correct" in m]
    assert evaluated == [2.0, 4.0]
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in logged if "eval/truncated_share" in line] == [0, 2, 4]  # first, every 2nd, last
    assert result.history[-1]["eval/correct"] == result.after["eval/correct"]  # the same greedy play
    assert logged[0]["eval/correct"] == result.before["eval/correct"]  # step 0: the evaluation before training


def test_eval_interval_needs_held_out_problems():
    with pytest.raises(ValueError, match="give eval_problems"):
        text_run(eval_interval=2)


@pytest.fixture
def rows_sampled(monkeypatch) -> list[int]:
    """The requests of each joint sampling call, every agent's together, as the test goes."""
    from agents.trainable_lm import TrainableLM

    rows: list[int] = []
    original = TrainableLM.sample_joint

    def counted(self, requests, **settings):
        rows.append(sum(len(chats) for chats, _ in requests.values()))
        return original(self, requests, **settings)

    monkeypatch.setattr(TrainableLM, "sample_joint", counted)
    return rows


def test_eval_envs_sets_the_problems_played_per_sampling_call(rows_sampled):
    calls = rows_sampled
    before = {}
    for envs in (1, 3):
        calls.clear()
        run = text_run(updates=0, eval_problems=3, progress=False)
        before[envs] = train(TextGRPOConfig(**SMALL, eval_envs=envs, run=run)).before
        assert max(calls) == 2 * envs  # both agents' requests of a turn: one call per envs problems
    assert before[1] == before[3]  # greedy: the layout changes the answers by float noise at most


def test_eval_envs_must_be_positive():
    with pytest.raises(ValueError, match="eval_envs"):
        TextGRPOConfig(**SMALL, eval_envs=0)


def test_a_test_split_smaller_than_the_envs_plays_each_problem_once(rows_sampled):
    """A client's run: ``--eval-problems 50 --eval-envs 16`` on a test split of 8 problems
    built 16 envs and played 8 of them only to throw their answers away."""
    from deliberation_env.text.config import TextEnvConfig

    rows = rows_sampled
    env = TextEnvConfig(task="gsm8k", path="sample")  # 8 problems in each split
    with pytest.warns(UserWarning, match="more than the 8 problems of the test split"):
        result = train(TextGRPOConfig(**SMALL, env=env, eval_envs=16, run=text_run(updates=0, eval_problems=50, progress=False)))
    assert rows == [2 * 8]  # both agents' requests of the one turn, for the 8 problems
    assert result.before["eval/joint"] is not None
