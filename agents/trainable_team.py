"""Trainable agents on different base models: a heterogeneous team as one policy.

:class:`TrainableTeam` holds one :class:`~agents.trainable_lm.TrainableLM` per agent, each
with its own base model, tokenizer and adapter (e.g. a SmolLM2 helper beside a Gemma
main agent), and answers the learners exactly as one ``TrainableLM`` does: every call
names its agent and goes to that agent's model. Training one agent never touches another
agent's weights, so the others' adapters stay unchanged by construction. Every member
runs on the team's one device in its one dtype (``TrainableLM.from_pretrained(...,
device=..., dtype=...)`` of each, as :func:`algorithms.text.train.build_lm` builds them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from agents.trainable_lm import Completion, Meter, TrainableLM


class TrainableTeam:
    """One trainable model per agent, behind :class:`~agents.trainable_lm.TrainableLM`'s
    interface (``sample``, ``logprobs``, ``parameters``, ``state_dict``, ``save_adapters``).

    Args:
        members: ``{agent: TrainableLM}``, each playing exactly that one agent.

    Raises:
        ValueError: If a member does not play exactly its own agent, or the members run on
            different devices or dtypes.
    """

    def __init__(self, members: Mapping[str, TrainableLM]) -> None:
        wrong = {agent: lm.agents for agent, lm in members.items() if lm.agents != [agent]}
        if not members or wrong:
            raise ValueError(f"each member of a TrainableTeam plays exactly its own agent, got {wrong or members!r}")
        placements = {(str(lm.device), str(lm.dtype)) for lm in members.values()}
        if len(placements) > 1:
            raise ValueError(f"the members of a TrainableTeam run on one device in one dtype, got {sorted(placements)}")
        self.members = dict(members)
        first = next(iter(self.members.values()))
        self.device, self.dtype = first.device, first.dtype

    @property
    def agents(self) -> list[str]:
        """The agents this team plays."""
        return list(self.members)

    def _member(self, agent: str) -> TrainableLM:
        if agent not in self.members:
            raise KeyError(f"TrainableTeam plays {self.agents}, not {agent!r}")
        return self.members[agent]

    def parameters(self, agent: str) -> list[torch.nn.Parameter]:
        """The weights that training ``agent`` changes (its own model's)."""
        return self._member(agent).parameters(agent)

    def tokenizer_of(self, agent: str) -> Any:
        """The tokenizer of ``agent``'s own model."""
        return self._member(agent).tokenizer

    def sample(self, agent: str, chats: Sequence[Any], seeds: Sequence[int], **kwargs: Any) -> list[Completion]:
        """:meth:`TrainableLM.sample` of ``agent``'s model."""
        return self._member(agent).sample(agent, chats, seeds, **kwargs)

    def logprobs(self, agent: str, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`TrainableLM.logprobs` of ``agent``'s model."""
        return self._member(agent).logprobs(agent, *args, **kwargs)

    def read_meter(self) -> Meter:
        """Every member's :meth:`TrainableLM.read_meter`, added up."""
        return sum((lm.read_meter() for lm in self.members.values()), Meter())

    def state_dict(self) -> dict[str, dict[str, torch.Tensor]]:
        """Every member's trainable weights, keyed by agent."""
        return {agent: lm.state_dict()[agent] for agent, lm in self.members.items()}

    def load_state_dict(self, state: Mapping[str, Mapping[str, torch.Tensor]]) -> None:
        """Restore :meth:`state_dict`'s output.

        Raises:
            ValueError: If ``state`` holds other agents than this team's.
        """
        if sorted(state) != sorted(self.members):
            raise ValueError(f"weights are for agents {sorted(state)}, this TrainableTeam plays {sorted(self.members)}")
        for agent, lm in self.members.items():
            lm.load_state_dict({agent: state[agent]})

    def save_adapters(self, directory: str | Path) -> list[Path]:
        """Each member's :meth:`TrainableLM.save_adapters` into ``directory`` (each adapter
        names its own member's base)."""
        return [folder for lm in self.members.values() for folder in lm.save_adapters(directory)]

    def load_adapters(self, directory: str | Path) -> None:
        """Load what :meth:`save_adapters` wrote."""
        for lm in self.members.values():
            lm.load_adapters(directory)

    def __repr__(self) -> str:
        return f"TrainableTeam({', '.join(f'{agent}: {lm!r}' for agent, lm in self.members.items())})"
