"""Trainable agents on different base models: a heterogeneous team as one policy.

:class:`TrainableTeam` holds one :class:`~agents.trainable_lm.TrainableLM` per agent, each
with its own base model, tokenizer and adapter (e.g. a SmolLM2 helper beside a Gemma
main agent), and answers the learners exactly as one ``TrainableLM`` does: every call
names its agent and goes to that agent's model. Training one agent never touches another
agent's weights, so the others' adapters stay unchanged by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from agents.trainable_lm import BASE_FOLDER, Completion, TrainableLM


class TrainableTeam:
    """One trainable model per agent, behind :class:`~agents.trainable_lm.TrainableLM`'s
    interface (``sample``, ``logprobs``, ``parameters``, ``state_dict``, ``save_adapters``).

    Args:
        members: ``{agent: TrainableLM}``, each playing exactly that one agent.

    Raises:
        ValueError: If a member does not play exactly its own agent.
    """

    def __init__(self, members: Mapping[str, TrainableLM]) -> None:
        wrong = {agent: lm.agents for agent, lm in members.items() if lm.agents != [agent]}
        if not members or wrong:
            raise ValueError(f"each member of a TrainableTeam plays exactly its own agent, got {wrong or members!r}")
        self.members = dict(members)

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

    def sample(self, agent: str, chats: Sequence[Any], seeds: Sequence[int], **kwargs: Any) -> list[Completion]:
        """:meth:`TrainableLM.sample` of ``agent``'s model."""
        return self._member(agent).sample(agent, chats, seeds, **kwargs)

    def logprobs(self, agent: str, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`TrainableLM.logprobs` of ``agent``'s model."""
        return self._member(agent).logprobs(agent, *args, **kwargs)

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
        """Each member's :meth:`TrainableLM.save_adapters` into ``directory``, its base
        model (LoRA) in ``directory / "base_<agent>"``."""
        return [
            folder
            for agent, lm in self.members.items()
            for folder in lm.save_adapters(directory, base_folder=f"{BASE_FOLDER}_{agent}")
        ]

    def load_adapters(self, directory: str | Path) -> None:
        """Load what :meth:`save_adapters` wrote."""
        for lm in self.members.values():
            lm.load_adapters(directory)

    def __repr__(self) -> str:
        return f"TrainableTeam({', '.join(f'{agent}: {lm!r}' for agent, lm in self.members.items())})"
