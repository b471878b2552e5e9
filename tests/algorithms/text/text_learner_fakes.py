"""Test doubles: a protocol whose joint reward is a hash of the texts (so groups of random
completions always differ), and a scripted frozen backend."""

from __future__ import annotations

from agents.base import Generation
from deliberation_env.tasks import Problem
from deliberation_env.text import Outcome
from deliberation_env.text.protocols.base import chat

PROBLEMS = [Problem(id=f"h{k}", question=f"Write something about {k}.", answer="") for k in range(6)]


class HashProtocol:
    """R = (sum of the code points of all texts) mod 97 / 96: in [0, 1], varied, deterministic."""

    name = "hash"
    reward_range = (0.0, 1.0)

    def roles(self, n_agents):
        return ("writer",) * n_agents

    def problems(self, split):
        return PROBLEMS

    def prompt(self, problem, roles, agent, previous, feedback):
        later = "" if previous is None else f"\nBefore: {previous}\n{feedback}"
        return chat("You write.", problem.question + later)

    def score(self, problem, texts):
        reward = sum(ord(ch) for text in texts for ch in text) % 97 / 96
        return Outcome(reward, {"hash": reward}, tuple(f"R was {reward:.2f}" for _ in texts), None)

    def neutral_text(self, problem, agent):
        return ""


class ScriptedBackend:
    """A frozen agent: writes 'ok <seed % 10>' and records every request."""

    model_id = "fake:scripted"
    supports_logprobs = False

    def __init__(self):
        self.requests = []

    def generate(self, requests):
        self.requests.extend(requests)
        return [Generation(f"ok {r.seed % 10}", 3, 2, "stop") for r in requests]

    def next_token_logprobs(self, requests):
        raise NotImplementedError
