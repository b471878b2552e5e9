"""The meta-action env's arguments, in one place: :class:`EnvConfig`.

``de.parallel_env(**kwargs)`` and ``de.vector_env(num_envs, **kwargs)`` build an
``EnvConfig(**kwargs)``; the training harness and the ``deliberate`` command line nest it
(``deliberate run --task gsm8k --path data/gsm8k --team llamacpp:model.gguf``,
``deliberate train meta softrankpo --team simulated``), so every entry point takes the same arguments
with the same defaults, documentation and checks. A bad argument raises an error naming
it before anything is built. A config is data and checks; it builds nothing: the team is
built by :func:`deliberation_env.meta.team.build_team`, the task by
:func:`deliberation_env.arguments.build_task`, a vector env by ``de.vector_env_from(config, n)``.

>>> config = EnvConfig(task="arithmetic", team="simulated", difficulty=2, max_rounds=2)
>>> config.task_arguments()
{'difficulty': 2}
>>> EnvConfig(team="no-such-backend")
Traceback (most recent call last):
...
ValueError: bad team spec 'no-such-backend': use one of simulated, smollm2, llamacpp[:<gguf>], \
ctranslate2[:<gguf or model dir>[#chat_template_kwargs=<JSON>]], \
ctranslate2-int8[:<gguf or model dir>[#chat_template_kwargs=<JSON>]], \
transformers:<model>[#device=<device>][#dtype=<dtype>][#chat_template_kwargs=<JSON>], \
openai:<base_url>#<model>, vllm:<model>[#chat_template_kwargs=<JSON>]
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
import tyro
from tyro.constructors import PrimitiveConstructorSpec

from agents.base import Backend, Solver
from agents.specs import check_spec
from deliberation_env.arguments import DEFAULT_TASK, task_arguments, with_max_cycles
from deliberation_env.meta.core import CONCEDE_RULES, RewardConfig
from deliberation_env.task_config import TaskFields
from deliberation_env.tasks import Task
from deliberation_env.tasks.base import SPLITS, check_scoring
from deliberation_env.values import is_integer, is_number

TeamMember = str | Backend | Solver
TeamSpec = TeamMember | Sequence[TeamMember]
OBSERVATIONS = ("vector", "text", "both", "flat")
DEFAULT_MAX_ROUNDS = 3


TEAM_ON_THE_COMMAND_LINE = PrimitiveConstructorSpec(
    nargs="+",
    metavar="SPEC [SPEC ...]",
    instance_from_str=lambda specs: specs[0] if len(specs) == 1 else tuple(specs),
    is_instance=lambda team: True,
    str_from_instance=lambda team: [team] if isinstance(team, str) else [str(member) for member in team],
)
"""``--team a`` is one spec for every agent; ``--team a b c`` one spec per agent."""
TASK_ON_THE_COMMAND_LINE = PrimitiveConstructorSpec(
    nargs=1,
    metavar="NAME",
    instance_from_str=lambda args: args[0],
    is_instance=lambda task: True,
    str_from_instance=lambda task: [task if isinstance(task, str) else task.name],
)
"""``--task NAME``: a task name (a Task instance is for Python callers)."""


@dataclass(frozen=True)
class SimulatedTeamConfig:
    """Knobs of the simulated team (:mod:`agents.simulated`); one value per agent or one for all
    (a shorter sequence is cycled: agent i takes its value i mod its length)."""

    skill: tuple[float, ...] = (0.8, 0.55, 0.35)
    """P(correct first answer) per agent."""
    refine_gain: tuple[float, ...] = (0.6,)
    """How strongly REFINE pulls a wrong agent to the peers' correct answer."""
    self_fix: tuple[float, ...] = (0.1,)
    """P(a wrong agent fixes its answer alone when refining)."""
    corruption: tuple[float, ...] = (0.3,)
    """How strongly wrong peers pull a correct refining agent away."""
    calibration: float = 1.5
    """Logit separation of confidence between correct and wrong answers (0: uninformative)."""
    confidence_noise: float = 1.0
    """Standard deviation of the confidence logit noise."""


@dataclass
class EnvConfig(TaskFields):
    """Every argument of the meta-action env (``de.parallel_env``, ``de.vector_env``), but
    the front-ends' own ``render_mode`` and ``infos``. Documented in :mod:`deliberation_env.meta.env`.
    The task fields (``task``, ``path``, ``difficulty``, ``task_kwargs``, ``split``,
    ``scoring``, ``n_agents``, ``max_cycles``, ``reward_scale``) are
    those of :class:`~deliberation_env.task_config.TaskFields`.
    """

    # Task fields where this family differs: a task name always, no task_kwargs on the command line, 3 agents
    task: Annotated[str | Task, TASK_ON_THE_COMMAND_LINE] = DEFAULT_TASK
    """Task name (``deliberate tasks list``); from Python also a :class:`Task` instance."""
    task_kwargs: tyro.conf.Suppress[dict[str, Any] | None] = None
    """Further keyword arguments of a task given by name (``de.tasks.get(task, **task_kwargs)``)."""
    n_agents: int = 3
    """Agents in the team (>= 2)."""

    # Team
    team: Annotated[TeamSpec, TEAM_ON_THE_COMMAND_LINE] = "smollm2"
    """One spec for every agent or one per agent (heterogeneous team): ``simulated``,
    ``smollm2``, ``ctranslate2[:<gguf or model dir>]``, ``ctranslate2-int8[:...]``,
    ``llamacpp[:<gguf>]``, ``transformers:<model>``, ``openai:<base_url>#<model>``,
    ``vllm:<model>`` (:mod:`agents.specs`); from Python also a Backend or a Solver. After
    a ``transformers:`` model, ``#device=<d>`` and ``#dtype=<t>``; after a
    ``transformers:``, ``ctranslate2:<model>`` or ``vllm:`` model,
    ``#chat_template_kwargs=<JSON object>``, the variables its chat template reads (TRL's
    ``chat_template_kwargs``; ``#chat_template_kwargs={"enable_thinking": false}`` for
    Qwen3, the spec in quotes for the shell)."""
    temperature: float | None = None
    """Sampling temperature of the LLM members given by spec (None: the member's default)."""
    max_tokens: int | None = None
    """Most completion tokens per LLM answer of members given by spec (None: the default)."""
    top_k: int | None = None
    """LLM members given by spec sample among their ``top_k`` most likely tokens (0: all;
    None: the member's default, 50 for ``smollm2``)."""
    cache: str | None = None
    """SQLite response cache of LLM members given by spec (None: ``~/.cache/deliberation_env/``)."""
    offline: bool = False
    """Serve every LLM call of members given by spec from the cache; a miss is an error."""
    simulated: SimulatedTeamConfig = field(default_factory=SimulatedTeamConfig)
    """The simulated team's knobs (members given as ``simulated``; from Python also a dict of
    its fields). Set on a team without such a member they would change nothing: a warning
    says so."""

    # Episode
    max_rounds: int | None = None
    """Deliberation rounds per episode (>= 1; None: 3)."""
    concede_rule: str = "most_confident"
    """Whose answer CONCEDE adopts: ``most_confident`` or ``plurality``."""
    stop_on_consensus: bool = False
    """End an episode once all agents hold the same valid decision."""
    observation: str = "vector"
    """``vector`` (a Dict), ``flat`` (one vector), ``text`` or ``both``."""

    # Reward: r = reward_scale (w_local r_local + w_global r_global - lambda_tok tokens / 1000)
    w_local: float = 1.0
    """Weight of r_local (own correctness change)."""
    w_global: float = 1.0
    """Weight of r_global (leave-one-out consensus contribution)."""
    lambda_tok: float = 0.0
    """Token cost per 1000 tokens spent in a step (>= 0)."""

    # Scale-out
    workers: Annotated[int, tyro.conf.arg(name="env_workers")] = 0
    """Ray workers that run a vector env's episodes, ``--env-workers`` on the command line (0: in this process; the ``ray`` extra,
    :mod:`deliberation_env.distributed`); a single env always runs in this process."""

    def __post_init__(self) -> None:
        self.task_arguments()  # the task first: its name, its data, then its arguments
        self.max_rounds = with_max_cycles("max_rounds", self.max_rounds, self.max_cycles, DEFAULT_MAX_ROUNDS)
        self.max_cycles = None  # folded into max_rounds, so that dataclasses.replace keeps working
        self._check_numbers()
        for name, value, choices in (
            ("concede_rule", self.concede_rule, CONCEDE_RULES),
            ("observation", self.observation, OBSERVATIONS),
        ):
            if value not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {value!r}")
        if self.split not in SPLITS:
            raise ValueError(f"split must be 'train' or 'test', got {self.split!r}")
        check_scoring(self.scoring)
        if not isinstance(self.stop_on_consensus, bool | np.bool_):
            raise TypeError(f"stop_on_consensus must be a bool, got {self.stop_on_consensus!r}")
        self.stop_on_consensus = bool(self.stop_on_consensus)
        self.reward_config()
        self._check_team()
        self._check_sampling()
        self._check_simulated()

    def _check_numbers(self) -> None:
        for name, low in (("n_agents", 2), ("max_rounds", 1), ("max_tokens", 1), ("top_k", 0), ("workers", 0)):
            value = getattr(self, name)
            if value is None and name in ("max_tokens", "top_k"):
                continue
            if not is_integer(value):
                raise TypeError(f"{name} must be an integer, got {value!r}")
            if value < low:
                raise ValueError(f"{name} must be >= {low}, got {value}")
            setattr(self, name, int(value))
        if self.temperature is not None and not (is_number(self.temperature) and 0 <= self.temperature < np.inf):
            raise ValueError(f"temperature must be a finite number >= 0 or None, got {self.temperature!r}")

    def _check_team(self) -> None:
        members = self.members()
        if len(members) != self.n_agents:
            raise ValueError(f"team lists {len(members)} members but n_agents is {self.n_agents}")
        for member in members:
            if isinstance(member, str):
                check_spec(member)
            elif not isinstance(member, Backend | Solver):
                raise TypeError(
                    f"a team member must be a spec string, a Backend or a Solver, got {type(member).__name__}"
                )

    def _check_sampling(self) -> None:
        llm_specs = [m for m in self.members() if isinstance(m, str) and m != "simulated"]
        given = [name for name in ("temperature", "max_tokens", "top_k") if getattr(self, name) is not None]
        if given and not llm_specs:
            unset = " ".join(f"--{name.replace('_', '-')} None" for name in given)
            raise ValueError(
                f"{' and '.join(given)} apply to LLM members given by spec, and team {self.team!r} has none "
                f"(where a config file sets them, {unset} unsets them)"
            )

    def _check_simulated(self) -> None:
        """Take ``simulated`` as a :class:`SimulatedTeamConfig` or a dict of its fields, and
        warn where it is set but no member is ``simulated`` (not an error: runs recorded with
        such settings must still resume)."""
        if isinstance(self.simulated, Mapping):
            known = [f.name for f in dataclasses.fields(SimulatedTeamConfig)]
            unknown = sorted(set(self.simulated) - set(known))
            if unknown:
                raise ValueError(f"simulated has no setting {', '.join(unknown)}; known: {', '.join(known)}")
            self.simulated = SimulatedTeamConfig(**self.simulated)
        if not isinstance(self.simulated, SimulatedTeamConfig):
            raise TypeError(
                f"simulated must be a SimulatedTeamConfig or a dict of its fields, got {type(self.simulated).__name__}"
            )
        if self.simulated != SimulatedTeamConfig() and not any(
            isinstance(member, str) and member == "simulated" for member in self.members()
        ):
            changed = [
                f.name
                for f in dataclasses.fields(SimulatedTeamConfig)
                if getattr(self.simulated, f.name) != getattr(SimulatedTeamConfig(), f.name)
            ]
            warnings.warn(
                f"the simulated team's settings ({', '.join(f'simulated.{name}' for name in changed)}) change "
                f"nothing: team {self.team!r} has no member 'simulated'",
                UserWarning,
                stacklevel=2,
            )

    def members(self) -> list[TeamMember]:
        """The team as one spec, Backend or Solver per agent (not yet built)."""
        if isinstance(self.team, str | Backend | Solver):
            return [self.team] * self.n_agents
        if not isinstance(self.team, Sequence):
            raise TypeError(
                f"team must be a spec string, a Backend, a Solver or a list of them, got {type(self.team).__name__}"
            )
        return list(self.team)

    def reward_config(self) -> RewardConfig:
        """The validated reward weights."""
        return RewardConfig(self.reward_scale, self.w_local, self.w_global, self.lambda_tok)

    def task_arguments(self) -> dict[str, Any]:
        """The keyword arguments of the task given by name (:func:`task_arguments`)."""
        return task_arguments(self.task, self.task_kwargs, self.path, self.difficulty)

    def kwargs(self) -> dict[str, Any]:
        """The arguments as keywords of ``de.parallel_env`` / ``de.vector_env`` (not copied)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
