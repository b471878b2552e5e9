"""Where episodes start: the problem and episode seed that ``reset`` picks from its arguments.

Shared by both env families (meta-action and text-action), single and vector. A reset
validates everything and draws from a *copy* of the env's RNG; the env keeps the copy
only once the reset has succeeded, so a reset that raises consumes nothing.

Options (all optional): ``problem_index`` or ``problem_id`` picks the problem (else it is
drawn); ``episode_seed`` fixes the seed of every request of the episode (else it is
drawn). A vector env takes one value per env for each.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from deliberation_env.tasks import Problem
from deliberation_env.values import is_integer

RESET_OPTIONS = ("problem_index", "problem_id", "episode_seed")
EPISODE_SEED_LIMIT = 2**64


def check_seed(seed: Any) -> None:
    """Raise unless ``seed`` (of ``reset``) is None or a non-negative integer."""
    if seed is not None and not (is_integer(seed) and seed >= 0):
        raise ValueError(f"reset seed must be None or a non-negative integer, got {seed!r}")


def check_options(options: Any) -> dict[str, Any]:
    """The reset options as a dict; unknown keys warn (Gymnasium ignores them)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"reset options must be a dict or None, got {options!r}")
    unknown = set(options) - set(RESET_OPTIONS)
    if unknown:  # Gymnasium convention: unknown options are ignored (PettingZoo's tests pass some)
        warnings.warn(f"ignoring unknown reset options {sorted(unknown)}; known: {', '.join(RESET_OPTIONS)}", stacklevel=4)
    return dict(options)


def check_episode_seed(value: Any, where: str) -> int:
    """``value`` as an episode seed, or an error naming ``where`` it came from and the valid range."""
    if not (is_integer(value) and 0 <= value < EPISODE_SEED_LIMIT):
        raise ValueError(f"{where} must be an integer in [0, 2**64), got {value!r}")
    return int(value)


class Starts:
    """The problems of one split, and how a reset's ``seed`` and ``options`` pick among them.

    Args:
        problems: The split's problems.
        split: The split's name (for messages).
        task_name: The task's name (for messages).
        num_envs: Envs reset together (1 for a single env).
    """

    def __init__(self, problems: Sequence[Problem], split: str, task_name: str, num_envs: int) -> None:
        self.problems, self.split, self.task_name, self.num_envs = problems, split, task_name, num_envs
        self._ids = {p.id: k for k, p in enumerate(problems)}

    def draw(
        self, seed: Any, options: Any, rng: np.random.Generator, *, per_env: bool
    ) -> tuple[list[int], list[int], np.random.Generator]:
        """Problem indices and episode seeds, one per env, and the RNG to keep on success.

        Args:
            seed: ``reset``'s seed: a fresh RNG if given, else a copy of ``rng`` is drawn from.
            options: ``reset``'s options (see the module docstring).
            rng: The env's RNG; it is never changed here.
            per_env: Options hold one value per env (a vector env), else one value.

        Raises:
            TypeError, ValueError: On a bad ``seed`` or ``options``, naming the argument,
                the env and the valid range.
        """
        check_seed(seed)
        options = check_options(options)
        rng = np.random.default_rng(seed) if seed is not None else copy.deepcopy(rng)
        envs = range(self.num_envs) if per_env else [None]
        indices = [self._problem_index(options, rng, env) for env in envs]
        if "episode_seed" in options:
            seeds = [
                check_episode_seed(self._pick(options, "episode_seed", env), _where("episode_seed", env))
                for env in envs
            ]
        else:
            seeds = rng.integers(2**63 - 1, size=len(envs)).tolist()
        return indices, seeds, rng

    def _problem_index(self, options: Mapping[str, Any], rng: np.random.Generator, env: int | None) -> int:
        """The problem chosen by ``options``, else one drawn from ``rng``."""
        if "problem_index" in options and "problem_id" in options:
            raise ValueError("give options 'problem_index' or 'problem_id', not both")
        count = len(self.problems)
        if "problem_index" in options:
            index = self._pick(options, "problem_index", env)
            if not is_integer(index):
                raise TypeError(f"{_where('problem_index', env)} must be an integer in [0, {count}), got {index!r}")
            if not 0 <= index < count:
                raise ValueError(
                    f"{_where('problem_index', env)} {index} out of range [0, {count}) for split {self.split!r}"
                )
            return int(index)
        if "problem_id" in options:
            problem_id = self._pick(options, "problem_id", env)
            if not isinstance(problem_id, str):
                raise TypeError(f"{_where('problem_id', env)} must be a string, got {problem_id!r}")
            if problem_id not in self._ids:
                raise ValueError(
                    f"{_where('problem_id', env)}: unknown problem_id {problem_id!r} in split {self.split!r} "
                    f"of task {self.task_name!r}"
                )
            return self._ids[problem_id]
        return int(rng.integers(count))

    def _pick(self, options: Mapping[str, Any], key: str, env: int | None) -> Any:
        """``options[key]``, or its entry for ``env`` when one value per env is expected."""
        value = options[key]
        if env is None:
            return value
        if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray) or len(value) != self.num_envs:
            raise ValueError(f"options[{key!r}] must be a sequence of {self.num_envs} values (one per env), got {value!r}")
        return value[env]


def _where(key: str, env: int | None) -> str:
    return f"options[{key!r}]" if env is None else f"options[{key!r}][{env}]"
