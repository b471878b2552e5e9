"""TextPolicy: one backend call per turn, seeds per (episode, problem, agent, turn), cache replay."""

from __future__ import annotations

import pytest
from text_fakes import SeededBackend

from agents import CachedBackend, SimulatedTeam
from agents.base import BackendError, Generation
from agents.seeding import derive_seed
from agents.text_policy import TextPolicy
from deliberation_env.text import text_env


def play(policy, episode_seed=5, max_turns=3):
    env = text_env(task="arithmetic", n_agents=3, max_turns=max_turns)
    obs, infos = env.reset(options={"problem_index": 2, "episode_seed": episode_seed})
    texts = []
    while env.agents:
        actions = policy.act(obs, infos)
        texts.append(actions)
        obs, _, _, _, infos = env.step(actions)
    return texts


def test_one_call_per_turn_with_every_agents_prompt_and_seed():
    backend = SeededBackend()
    env = text_env(task="arithmetic", n_agents=3)
    obs, infos = env.reset(seed=0)
    TextPolicy(backend, max_tokens=64, temperature=0.2).act(obs, infos)
    (requests,) = backend.calls
    assert [r.messages for r in requests] == [infos[a]["messages"] for a in env.possible_agents]
    assert [r.seed for r in requests] == [derive_seed(infos[a]["seed"], infos[a]["messages"]) for a in env.possible_agents]
    assert {(r.max_tokens, r.temperature) for r in requests} == {(64, 0.2)}


def test_same_episode_same_texts_other_episode_seed_other_texts():
    first = play(TextPolicy(SeededBackend(modulo=10**9)))
    assert play(TextPolicy(SeededBackend(modulo=10**9))) == first
    assert play(TextPolicy(SeededBackend(modulo=10**9)), episode_seed=6) != first
    turns = [set(actions.values()) for actions in first]
    assert all(len(texts) == 3 for texts in turns)  # agents differ within a turn
    assert turns[0] != turns[1]  # and a turn differs from the last


def test_a_cached_backend_replays_an_episode_without_generating(tmp_path):
    inner = SeededBackend()
    cache = tmp_path / "responses.sqlite"
    first = play(TextPolicy(CachedBackend(inner, path=cache)))
    assert len(inner.calls) == 3
    replay = SeededBackend()
    assert play(TextPolicy(CachedBackend(replay, path=cache))) == first
    assert replay.calls == []


def test_only_active_agents_are_asked():
    backend = SeededBackend()
    info = {"messages": ({"role": "user", "content": "hi"},), "seed": 1}
    actions = TextPolicy(backend).act({"a": "", "b": ""}, {"a": {**info, "active": True}, "b": {**info, "active": False}})
    assert list(actions) == ["a"] and len(backend.calls[0]) == 1


def test_the_simulated_team_is_not_a_text_backend():
    with pytest.raises(TypeError, match="SimulatedTeam"):
        TextPolicy(SimulatedTeam())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"max_tokens": 0}, "max_tokens"), ({"temperature": -1}, "temperature"), ({"top_p": 0}, "top_p"), ({"top_k": -1}, "top_k")],
)
def test_bad_sampling_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TextPolicy(SeededBackend(), **kwargs)


def test_a_backend_returning_too_few_completions_is_named():
    class Short(SeededBackend):
        model_id = "fake:short"

        def generate(self, requests):
            return [Generation("1", 1, 1, "stop")]

    env = text_env(task="arithmetic", n_agents=2)
    obs, infos = env.reset(seed=0)
    with pytest.raises(BackendError, match="fake:short.*1 completions for 2 requests"):
        TextPolicy(Short()).act(obs, infos)
