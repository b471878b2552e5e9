"""One vector step scores every team of the turn in one batch: the coding protocol sends
all programs (and their leave-one-out variants) to the sandbox in one ``judge_many`` call,
with the results of stepping the envs one by one; protocols without a batch method work
as before; a faulty batch is named and changes nothing."""

from __future__ import annotations

import pytest
from test_text_coding import FENCE, HELPER, HOSTILE_MAINS, MAIN, PROBLEM

from deliberation_env.tasks import Problem
from deliberation_env.text import text_env, text_vector_env
from deliberation_env.text.protocols import coding
from deliberation_env.text.protocols.base import BatchScoring, Outcome, TextProtocol, chat

WRONG = MAIN.replace("    total = sum(numbers)", "    total = sum(numbers) + (len(numbers) == 1)")
SYNTAX_ERROR = MAIN.replace("    total = sum(numbers)", "    total = sum(numbers")
NEVER_CALLS = f"{FENCE}python\ndef sum_product(numbers):\n    p = 1\n    for n in numbers:\n        p *= n\n    return (sum(numbers), p)\n{FENCE}"
TEAMS = [
    (HELPER, MAIN),  # correct, cooperating: R = 4
    (HELPER, WRONG),  # 4 of 5 tests
    (HELPER, SYNTAX_ERROR),  # never judged
    (HELPER, f"{FENCE}python\n{HOSTILE_MAINS['forges records on every descriptor']}{FENCE}"),
    (HELPER, f"{FENCE}python\n{HOSTILE_MAINS['equal to everything']}{FENCE}"),
    ("no code at all", NEVER_CALLS),  # correct alone, no helper
]


@pytest.fixture
def judge_calls(monkeypatch):
    """The number of requests of every ``judge_many`` call the coding protocol makes."""
    calls = []
    real = coding.judge.judge_many

    def recording(requests, *args, **kwargs):
        requests = list(requests)
        calls.append(len(requests))
        return real(requests, *args, **kwargs)

    monkeypatch.setattr(coding.judge, "judge_many", recording)
    return calls


def test_a_vector_step_judges_every_program_in_one_call_with_the_results_of_single_envs(judge_calls):
    venv = text_vector_env(len(TEAMS), task="humaneval", split="test", max_turns=2)
    venv.reset(options={"problem_id": [PROBLEM] * len(TEAMS), "episode_seed": list(range(len(TEAMS)))})
    actions = {agent: [team[i] for team in TEAMS] for i, agent in enumerate(venv.agents)}
    v_obs, v_rewards, v_terms, _, v_infos = venv.step(actions)
    # every env's team and leave-one-out programs in one batch, then, in a second, the one team
    # whose bonuses hang on whether its helper's results matter, judged with them altered (with
    # them withheld it is the team without its helper, judged in the first batch: red team 36),
    # and with the helper alone as the entry point (whether the main's own work matters)
    assert judge_calls == [judge_calls[0], 2]
    vector = list(judge_calls)

    env = text_env(task="humaneval", split="test", max_turns=2)
    for e, team in enumerate(TEAMS):
        env.reset(options={"problem_id": PROBLEM, "episode_seed": e})
        obs, rewards, terms, _, infos = env.step(dict(zip(env.agents, team, strict=True)))
        assert obs == {agent: v_obs[agent][e] for agent in env.agents}
        assert rewards == {agent: pytest.approx(float(v_rewards[agent][e])) for agent in env.agents}
        assert terms == {agent: bool(v_terms[agent][e]) for agent in env.agents}
        assert infos == v_infos[e]
    single = judge_calls[len(vector) :]
    assert len(single) == len(TEAMS) + 1 and sum(single) == sum(vector)  # the same programs, a call per env (two for the first)

    rewards = [float(v_rewards["agent_0"][e]) for e in range(len(TEAMS))]
    parts = [v_infos[e]["agent_0"]["reward_components"] for e in range(len(TEAMS))]
    assert rewards[0] == 4.0 and parts[1]["tests"] == 0.8 and parts[2]["syntax"] == 0.0
    assert parts[3]["tests"] == parts[4]["tests"] == 0.0  # hostile programs: the verdict only
    assert parts[5]["tests"] == 1.0 and parts[5]["cooperation"] == 0.0


class CountingProtocol:
    """R = the share of agents whose text is ``"yes"``; no batch method (a user's protocol)."""

    name = "counting"
    reward_range = (0.0, 1.0)

    def __init__(self):
        self.scored = 0
        self._problems = [Problem(f"p{k}", f"question {k}", "yes") for k in range(3)]

    def roles(self, n_agents):
        return ("voter",) * n_agents

    def problems(self, split):
        return self._problems

    def prompt(self, problem, roles, agent, previous, feedback):
        return chat("Say yes.", problem.question + (f"\n{feedback}" if feedback else ""))

    def score(self, problem, texts):
        self.scored += 1
        yes = sum(text == "yes" for text in texts)
        return Outcome(yes / len(texts), {"yes": float(yes)}, tuple(f"{yes} yes" for _ in texts), None)

    def neutral_text(self, problem, agent):
        return ""


class BatchCountingProtocol(CountingProtocol):
    """The same rewards, scored by a batch method that records its calls."""

    name = "batch-counting"

    def __init__(self, drop=0):
        super().__init__()
        self.batches: list[list[tuple[str, tuple[str, ...]]]] = []
        self.drop = drop

    def score_many(self, teams):
        self.batches.append([(problem.id, tuple(texts)) for problem, texts in teams])
        outcomes = [self.score(problem, texts) for problem, texts in teams]
        return outcomes[: len(outcomes) - self.drop]


def play(protocol):
    venv = text_vector_env(2, protocol=protocol, n_agents=3)
    venv.reset(options={"problem_index": [0, 2], "episode_seed": [1, 2]})
    return venv.step({"agent_0": ["yes", "no"], "agent_1": ["yes", "yes"], "agent_2": ["no", "no"]})


def test_a_protocol_without_a_batch_method_still_works_in_the_vector_env():
    protocol = CountingProtocol()
    assert isinstance(protocol, TextProtocol) and not isinstance(protocol, BatchScoring)
    _, rewards, _, _, infos = play(protocol)
    assert rewards["agent_0"].tolist() == pytest.approx([2 / 3, 1 / 3])
    assert [infos[0][a]["reward_components"]["contribution"] for a in ("agent_0", "agent_1", "agent_2")] == (
        pytest.approx([1 / 3, 1 / 3, 0.0])
    )
    assert protocol.scored == 2 * (1 + 3)  # each env: the team and 3 leave-one-outs


def test_a_batch_protocol_gets_every_team_of_the_turn_in_one_call_with_the_same_results():
    batch = BatchCountingProtocol()
    assert isinstance(batch, BatchScoring)
    batched, plain = play(batch), play(CountingProtocol())
    assert batched[1]["agent_0"].tolist() == plain[1]["agent_0"].tolist()
    assert batched[4] == plain[4] and batched[0] == plain[0]
    assert batch.batches == [
        [
            ("p0", ("yes", "yes", "no")), ("p0", ("", "yes", "no")), ("p0", ("yes", "", "no")), ("p0", ("yes", "yes", "")),
            ("p2", ("no", "yes", "no")), ("p2", ("", "yes", "no")), ("p2", ("no", "", "no")), ("p2", ("no", "yes", "")),
        ]
    ]  # fmt: skip


def test_a_batch_of_the_wrong_length_is_named_and_changes_nothing():
    protocol = BatchCountingProtocol(drop=1)
    venv = text_vector_env(2, protocol=protocol, n_agents=2, max_turns=2)
    venv.reset(seed=3)
    actions = {"agent_0": ["yes", "no"], "agent_1": ["yes", "yes"]}
    with pytest.raises(ValueError, match="protocol 'batch-counting': score_many returned 5 outcomes for 6 teams"):
        venv.step(actions)
    protocol.drop = 0
    _, rewards, terms, _, infos = venv.step(actions)  # the failed step played nothing: this is turn 1
    assert [info["agent_0"]["turn"] for info in infos] == [1, 1] and not terms["agent_0"].any()
    assert rewards["agent_0"].tolist() == [1.0, 0.5]
