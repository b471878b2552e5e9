"""Red team 39: what the meta seat's decomposed reward pays scripted strategies on the
simulated team, as a per-agent learner (GRPO, SoftRankPO) and as a summed joint return
(MAGRPO's ``joint_return="sum"``) see it."""

from functools import cache

import numpy as np

import deliberation_env as de

P, R, C = de.MetaAction.PERSIST, de.MetaAction.REFINE, de.MetaAction.CONCEDE
ROUNDS = 3


def oracle(env, infos, agent, played):
    """Honest play with the answers known: a right agent persists, a wrong one concedes to a
    right answer where CONCEDE would adopt one, else refines."""
    if infos[agent]["correct"]:
        return P
    target = infos[agent]["concede_target"]
    return C if target is not None and infos[env.possible_agents[target]]["correct"] else R


def delay_fix(env, infos, agent, played):
    """Persist (right or wrong) until the last round, then play honestly: blocks a consensus
    it could join, then flips."""
    return P if played < ROUNDS - 1 else oracle(env, infos, agent, played)


def constant(action):
    return lambda env, infos, agent, played: action


@cache
def simulated_team(n_agents):
    return de.parallel_env(
        task="arithmetic",
        team="simulated",
        n_agents=n_agents,
        max_rounds=ROUNDS,
        difficulty=3,
        split="test",
    )


def play(n_agents, teammates, problems, seat=0, own=None):
    """Per agent (mean over ``problems``), the episode return and the team's final accuracy.

    Args:
        n_agents: Team size.
        teammates: Every agent's strategy(env, infos, agent, rounds played) -> action.
        problems: Test problem indices (each played once, seeded by its index).
        seat: The agent that plays ``own`` instead, if given.
        own: That agent's strategy (``None``: it plays as its teammates).
    """
    env = simulated_team(n_agents)
    returns, team = np.zeros(n_agents), 0.0
    for k in problems:
        _, infos = env.reset(seed=k, options={"problem_index": k})
        played = 0
        while env.agents:
            actions = {
                a: (own if own is not None and i == seat else teammates)(env, infos, a, played)
                for i, a in enumerate(env.agents)
            }
            _, rewards, _, _, infos = env.step(actions)
            returns += [rewards[a] for a in env.possible_agents]
            played += 1
        team += infos["agent_0"]["team_reward"]
    return returns / len(problems), team / len(problems)


def test_no_unilateral_strategy_out_earns_honest_play_under_per_agent_credit():
    """A per-agent learner optimizes its own return: beside honest teammates (the oracle's
    rule, or always-REFINE), no seat earns more by persisting, conceding or refining
    always, or by blocking a consensus until the last round and then flipping, than by
    playing honestly itself (each seat deviating in turn, 60 problems, three rounds)."""
    problems = range(60)
    for n_agents in (2, 3):
        for teammates in (oracle, constant(R)):
            honest = [
                play(n_agents, teammates, problems, seat, oracle)[0][seat]
                for seat in range(n_agents)
            ]
            for deviation in (constant(P), constant(C), constant(R), delay_fix):
                for seat in range(n_agents):
                    deviated = play(n_agents, teammates, problems, seat, deviation)[0][seat]
                    assert deviated <= honest[seat], (n_agents, seat, deviated, honest[seat])


def test_summed_returns_pay_two_agents_that_never_move_over_honest_play_known_limitation():
    """The sum of the agents' returns (MAGRPO's ``joint_return="sum"``) is no team
    objective: r_global is paid at every round to each pivotal agent, so two agents that
    always PERSIST (a right one beside a wrong one is pivotal every round) out-earn the
    oracle, whose wrong agent joins the right one at once (0 thereafter), by more than
    twice, while their team ends right less often. Documented in
    ``MAGRPOConfig.joint_return``; the team reward (the default) and the per-agent returns
    (above) are not paid so."""
    problems = range(100)
    honest, honest_team = play(2, oracle, problems)
    persist, persist_team = play(2, constant(P), problems)
    assert persist.sum() > 2 * honest.sum() and persist_team < honest_team
