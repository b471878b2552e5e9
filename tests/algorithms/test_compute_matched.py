"""Compute-matched baselines: a single agent and self-consistency at the team's token budget."""

from __future__ import annotations

import json

from agents.simulated import SimulatedTeam
from algorithms import baselines, cli
from algorithms.meta.compute_matched import OneAgent, compute_matched
from algorithms.meta.evaluate import evaluate_rounds
from deliberation_env.factory import vector_env_from
from deliberation_env.meta.config import EnvConfig

CONFIG = EnvConfig(team="simulated", split="test", max_rounds=2)
PROBLEMS = range(40)


def test_one_agent_answers_every_seat_as_agent_zero():
    # Skill 1 for agent 0, 0 for the others: k samples of agent 0 are all right, while the
    # team's other seats are all wrong.
    member = SimulatedTeam(skill=(1.0, 0.0, 0.0), parse_failure=0.0)
    team = evaluate_rounds(baselines.get("independent"), vector_env_from(CONFIG, 8, team=member), PROBLEMS, progress=False)
    assert team.accuracy[0] == 1 / 3
    single, votes = compute_matched(member, CONFIG, [team], PROBLEMS, seed=0, num_envs=8)
    assert single.policy == "single agent" and single.accuracy == [1.0, 1.0]
    assert votes.consensus_accuracy[0] == 1.0
    assert OneAgent(member).model_id == member.model_id


def test_self_consistency_spends_the_costliest_rows_tokens():
    member = SimulatedTeam()
    venv = vector_env_from(CONFIG, 8, team=member)
    team = [evaluate_rounds(baselines.get(name), venv, PROBLEMS, progress=False) for name in ("independent", "debate")]
    single, votes = compute_matched(member, CONFIG, team, PROBLEMS, seed=0, num_envs=8)
    budget = max(r.tokens_per_problem for r in team)
    k = int(votes.policy.removeprefix("self-consistency k="))
    assert k == max(2, round(budget / single.tokens_per_problem)) and k > 3  # debate costs more than 3 answers
    # Samples differ a little in length, so the budget is matched to within a few percent.
    assert abs(votes.tokens_per_problem - budget) < 0.1 * budget


def test_every_meta_run_table_has_the_compute_matched_rows(tmp_path, capsys):
    cli.main(["run", "--team", "simulated", "--n-problems", "8", "--policies", "debate",
              "--run-dir", str(tmp_path / "r")])
    record = json.loads((tmp_path / "r" / "results.json").read_text())
    names = [r["policy"] for r in record["compute_matched"]]
    assert names[0] == "single agent" and names[1].startswith("self-consistency k=")
    out = capsys.readouterr().out
    assert "single agent" in out and "self-consistency" in out
