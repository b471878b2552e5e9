"""The team of a meta-action env, built from its :class:`~deliberation_env.meta.config.EnvConfig`.

>>> from deliberation_env.meta.config import EnvConfig
>>> team = build_team(EnvConfig(team="simulated", n_agents=2))
>>> len(team), team[0] is team[1]
(2, True)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agents.base import Backend, Solver
from agents.llm_agent import LLMAgent
from agents.specs import member_from_spec
from deliberation_env.meta.config import EnvConfig, TeamMember


def build_team(config: EnvConfig) -> list[Solver]:
    """One solver per agent; agents given the same spec or object share one solver (and so
    one batched call per phase)."""
    members = config.members()
    built: dict[Any, Solver] = {}
    for member in members:
        key = member if isinstance(member, str) else id(member)
        if key not in built:
            built[key] = build_member(config, member)
    return [built[m if isinstance(m, str) else id(m)] for m in members]


def build_member(config: EnvConfig, member: TeamMember) -> Solver:
    """One member: a Solver as given, a Backend as an :class:`~agents.llm_agent.LLMAgent`,
    a spec with the config's sampling, cache and simulated-team settings."""
    if isinstance(member, Solver):
        return member
    if isinstance(member, Backend):
        return LLMAgent(member)
    if member == "simulated":
        return member_from_spec(member, simulated=dataclasses.asdict(config.simulated))
    return member_from_spec(
        member,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        top_k=config.top_k,
        cache=config.cache,
        offline=config.offline,
    )
