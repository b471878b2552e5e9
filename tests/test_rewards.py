"""Hand-computed rewards, consensus tie-breaks and the CONCEDE rule, with scripted answers."""

import numpy as np
import pytest
from helpers import FixedTask, ScriptedSolver

import deliberation_env as de
from deliberation_env.meta.core import (
    leave_one_out_winners,
    plurality_winner,
    same_decision,
    tie_draws,
)

P, R, C = de.MetaAction.PERSIST, de.MetaAction.REFINE, de.MetaAction.CONCEDE


def make(solver, n_agents=3, **kwargs):
    env = de.parallel_env(task=FixedTask(), team=solver, n_agents=n_agents, **kwargs)
    obs, infos = env.reset(seed=0, options={"problem_index": 0})  # "What is 3 + 4?" -> 7
    return env, obs, infos


def step(env, *actions):
    return env.step(dict(zip(env.agents, actions, strict=True)))


def test_leave_one_out_global_reward():
    # 7 is correct. Plurality 5 is wrong; without agent 1 (or 2), 7 and 5 tie 1-1 and 7's
    # confidence 0.9 beats 0.3, so the consensus becomes correct: r_global = 0 - 1 = -1.
    solver = ScriptedSolver(["7", "5", "5"], confidence={"7": 0.9, "5": 0.3})
    env, _, infos = make(solver)
    assert not infos["agent_0"]["consensus_correct"]
    _, rewards, _, _, infos = step(env, P, P, P)
    assert rewards == {"agent_0": 0.0, "agent_1": -1.0, "agent_2": -1.0}
    assert infos["agent_1"]["reward_components"] == {"local": 0.0, "global": -1.0, "token_cost": 0.0}


def test_local_reward_and_weights():
    # Agent 1 refines from 5 to 7: r_local = +1, and the consensus turns correct (7 has 2 votes).
    solver = ScriptedSolver(["7", "5", "5"], refine={1: "7"}, confidence={"7": 0.9, "5": 0.3})
    env, _, _ = make(solver, reward_scale=10.0, w_local=0.5, w_global=2.0, lambda_tok=1.0)
    _, rewards, _, _, infos = step(env, P, R, P)
    parts = infos["agent_1"]["reward_components"]
    # Without agent 1: 7 (0.9) vs 5 (0.3) -> 7, correct; with it 7 wins: r_global = 1 - 1 = 0.
    assert parts["local"] == 1.0 and parts["global"] == 0.0
    spent = infos["agent_1"]["tokens"]["total"]
    assert spent == 10 + 5 + 3 + 1  # refine (prompt, completion) + introspection
    assert parts["token_cost"] == pytest.approx(spent / 1000)
    assert rewards["agent_1"] == pytest.approx(10.0 * (0.5 * 1.0 + 2.0 * 0.0 - spent / 1000))
    # Agent 2 is still wrong; without it the consensus is 7 either way: r_global = 0.
    assert rewards["agent_2"] == 0.0
    assert infos["agent_0"]["tokens"]["total"] == 0  # persisting costs nothing


def test_consensus_ties_broken_by_summed_confidence_then_a_fair_draw():
    codes = np.array([[0, 0, 1, 1], [0, 1, -1, -1], [-1, -1, -1, -1]])
    conf = np.array([[0.4, 0.4, 0.9, 0.9], [0.5, 0.5, 0.9, 0.9], [0.1, 0.2, 0.3, 0.4]])
    same = same_decision(codes)
    draw = np.array([[9, 0, 0, 0], [0, 5, 0, 0], [0, 0, 0, 0]])
    winner = plurality_winner(codes, conf, same, draw)
    assert winner[0] in (2, 3)  # 2-2 tie, summed confidence 1.8 > 0.8, whatever the draws
    assert winner[1] == 1  # full tie: the higher draw, not the lower index
    assert plurality_winner(codes, conf, same, draw[:, ::-1].copy())[1] == 0
    assert winner[2] == -1  # nothing parseable: no consensus
    loo = leave_one_out_winners(codes, conf, same, draw)
    assert loo[0, 2] in (0, 1) and loo[0, 0] in (2, 3)  # removing a voter breaks the tie
    assert loo[1, 0] == 1 and loo[1, 1] == 0


def test_a_full_tie_goes_to_each_decision_about_equally_often():
    """Each of k decisions tied in votes and confidence wins with chance 1/k, whichever
    seat holds it: over many episodes' draws, a 1-1-1 tie's winners split about evenly."""
    seeds = np.arange(3000, dtype=np.uint64)
    draw = tie_draws(seeds, 3, np.zeros(3000, dtype=np.int64))
    codes = np.tile([[0, 1, 2]], (3000, 1))
    wins = np.bincount(plurality_winner(codes, np.full((3000, 3), 0.5), same_decision(codes), draw), minlength=3)
    assert wins.min() > 900  # 1000 each expected; the lowest index took all 3000 before


def test_leave_one_out_is_the_vote_of_the_team_without_the_agent_exactly():
    """Each leave-one-out winner is :func:`plurality_winner` of the team without agent i,
    ties included: sums of confidences equal but for rounding (0.1 + 0.2 and 0.3) tie, and
    the lowest index wins them, as in the full vote."""
    codes = np.array([[1, 1, 2], [2, 0, 2], [0, 0, 1]])
    conf = np.array([[0.2, 0.4, 0.2], [0.0, 0.0, 0.1], [0.1, 0.2, 0.3]])
    same = same_decision(codes)
    low_first = np.array([[3, 2, 1]] * 3)  # the draws favour the lowest index, as a check
    loo = leave_one_out_winners(codes, conf, same, low_first)
    assert loo[0, 1] == 0 and loo[1, 2] == 0  # 1-1 ties of equal confidence: the draws
    assert plurality_winner(codes, conf, same, low_first)[2] == 0  # 0.1 + 0.2 against 0.3: a 2-1 vote, no tie
    tie = np.array([[0, 0, 1, 1]]), np.array([[0.1, 0.2, 0.3, 0.0]])
    assert plurality_winner(*tie, same_decision(tie[0]), np.array([[1, 0, 2, 0]]))[0] == 2  # 2-2, 0.1 + 0.2 == 0.3: a tie
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 6))
        codes, conf = rng.integers(-1, 3, size=(1, n)), rng.integers(0, 11, size=(1, n)) / 10
        draw = rng.integers(0, 2**62, size=(1, n))
        loo = leave_one_out_winners(codes, conf, same_decision(codes), draw)
        for i in range(n):
            without = codes.copy()
            without[0, i] = -1
            assert loo[0, i] == plurality_winner(without, conf, same_decision(without), draw)[0]


def test_unparseable_answers_do_not_vote():
    solver = ScriptedSolver([None, None, "7"], confidence={None: 0.99, "7": 0.1})
    _, obs, infos = make(solver)
    assert infos["agent_0"]["decision"] is None and infos["agent_0"]["consensus_correct"]
    assert obs["agent_0"]["self"][3] == 0.0 and obs["agent_2"]["self"][3] == 1.0  # parse_ok


def test_concede_adopts_most_confident_differing_peer():
    solver = ScriptedSolver(["7", "5", "6"], confidence={"7": 0.9, "5": 0.2, "6": 0.3})
    env, _, _ = make(solver)
    _, rewards, _, _, infos = step(env, C, C, P)
    assert infos["agent_1"]["decision"] == "7"  # most confident peer with a different answer
    assert infos["agent_0"]["decision"] == "6"  # 6 (0.3) beats 5 (0.2); 5 was agent 1's old answer
    # After: 6, 7, 6 -> consensus 6, wrong, with or without agent 1: r_global = 0.
    assert rewards["agent_1"] == 1.0 and infos["agent_1"]["reward_components"]["local"] == 1.0
    assert infos["agent_0"]["reward_components"]["local"] == -1.0


def test_concede_ties_go_to_lowest_index_and_all_agree_means_persist():
    solver = ScriptedSolver(["7", "5", "6", "7"], confidence={"7": 0.5, "5": 0.4, "6": 0.4})
    env, _, _ = make(solver, n_agents=4)
    _, _, _, _, infos = step(env, C, P, P, P)
    assert infos["agent_0"]["decision"] == "5"  # agents 1 and 2 tie at 0.4: lowest index
    unanimous = ScriptedSolver(["7", "7", "7"])
    env, _, _ = make(unanimous)
    calls_before = len(unanimous.calls)
    _, _, _, _, infos = step(env, C, C, C)
    assert [infos[a]["decision"] for a in env.agents] == ["7", "7", "7"]
    assert len(unanimous.calls) == calls_before  # nothing changed: no introspection call
    assert all(infos[a]["tokens"]["total"] == 0 for a in env.agents)


def test_plurality_concede_rule():
    solver = ScriptedSolver(["7", "5", "5", "6"], confidence={"7": 0.5, "5": 0.1, "6": 0.9})
    env, _, _ = make(solver, n_agents=4, concede_rule="plurality")
    _, _, _, _, infos = step(env, C, P, P, P)
    assert infos["agent_0"]["decision"] == "5"  # two votes beat one confident vote


def test_team_reward_and_termination():
    solver = ScriptedSolver(["7", "7", "5"])
    env, _, _ = make(solver, max_rounds=2)
    _, _, terms, _, infos = step(env, P, P, P)
    assert not any(terms.values()) and infos["agent_0"]["team_reward"] == 0.0
    _, _, terms, _, infos = step(env, P, P, P)
    assert all(terms.values()) and infos["agent_0"]["team_reward"] == 1.0
    assert env.agents == []


def test_stop_on_consensus():
    solver = ScriptedSolver(["7", "7", "5"], refine={2: "7"})
    env, _, _ = make(solver, max_rounds=5, stop_on_consensus=True)
    _, _, terms, _, infos = step(env, P, P, R)
    assert all(terms.values()) and infos["agent_0"]["round"] == 1


def test_one_batched_call_per_phase():
    solver = ScriptedSolver(["7", "5", "6"], refine={0: "5", 1: "7", 2: "7"})
    venv = de.vector_env(4, task=FixedTask(), team=solver, n_agents=3)
    venv.reset(seed=0)
    assert solver.calls == [("solve", 12), ("introspect", 12)]
    venv.step({a: np.full(4, R) for a in venv.agents})
    assert solver.calls[2:] == [("refine", 12), ("introspect", 12)]


def test_heterogeneous_team_gets_one_call_per_member():
    a, b = ScriptedSolver(["7", "5", "6"]), ScriptedSolver(["7", "5", "6"])
    env = de.parallel_env(task=FixedTask(), team=[a, b, a], n_agents=3)
    env.reset(seed=0)
    assert a.calls[0] == ("solve", 2) and b.calls[0] == ("solve", 1)


def test_a_full_tie_in_the_env_is_a_draw_that_favours_no_seat_and_replays_alike():
    """Three answers at equal confidence: the consensus is each with chance 1/3, whichever
    seat holds the right one, and the same episode seed draws the same winner."""

    def right_share(answers):
        wins = 0
        for seed in range(60):
            env = de.parallel_env(task=FixedTask(), team=ScriptedSolver(answers), n_agents=3)
            _, infos = env.reset(seed=seed, options={"problem_index": 0})  # "What is 3 + 4?" -> 7
            wins += infos["agent_0"]["consensus_correct"]
        return wins / 60

    first, last = right_share(["7", "5", "6"]), right_share(["5", "6", "7"])
    assert 0.15 < first < 0.55 and 0.15 < last < 0.55  # 1/3 each; the lowest index gave 1.0 and 0.0
    replays = {make(ScriptedSolver(["7", "5", "6"]))[2]["agent_0"]["consensus_correct"] for _ in range(3)}
    assert len(replays) == 1
