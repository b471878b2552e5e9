"""Procedural arithmetic, from single-digit sums to multi-step word problems.

Difficulty levels:

=====  ==============================================  =====================
level  form                                            example
=====  ==============================================  =====================
1      sums of two or three single digits              What is 3 + 5 + 1?
2      two-digit sums and differences                  What is 47 - 18?
3      a x b + c with a two-digit factor               What is 23 * 7 + 15?
4      (a + b) x c - d, three steps                    What is (12 + 9) * 4 - 17?
5      multi-step word problems                        Tom has 23 apples. ...
=====  ==============================================  =====================

Problems are generated from fixed seeds, so every install sees the same problems; the
test split is generated first and the train split never repeats a test question, so the
splits are disjoint.
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Callable, Sequence
from functools import cache

from deliberation_env.tasks.base import Problem, check_scoring, check_split, positive_int
from deliberation_env.tasks.numeric import NumericTask

LEVELS = (1, 2, 3, 4, 5)
DEFAULT_DIFFICULTY = 1
"""Where the default SmolLM2-135M team is neither always wrong nor unanimous (BENCHMARKS.md)."""

_NAMES = ("Tom", "Ana", "Li", "Sara", "Omar", "Maya", "Ivan", "Zoe")
_ITEMS = ("apples", "stickers", "marbles", "books", "coins", "pencils", "cards", "shells")


def _level1(rng: random.Random) -> tuple[str, int]:
    terms = [rng.randint(0, 9) for _ in range(rng.choice((2, 3)))]
    return f"What is {' + '.join(map(str, terms))}?", sum(terms)


def _level2(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    if rng.random() < 0.5:
        return f"What is {a} + {b}?", a + b
    a, b = max(a, b), min(a, b)
    return f"What is {a} - {b}?", a - b


def _level3(rng: random.Random) -> tuple[str, int]:
    a, b, c = rng.randint(11, 49), rng.randint(3, 9), rng.randint(10, 99)
    return f"What is {a} * {b} + {c}?", a * b + c


def _level4(rng: random.Random) -> tuple[str, int]:
    a, b, c, d = rng.randint(10, 49), rng.randint(2, 29), rng.randint(3, 9), rng.randint(5, 60)
    return f"What is ({a} + {b}) * {c} - {d}?", (a + b) * c - d


def _level5(rng: random.Random) -> tuple[str, int]:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    have, bags, per_bag = rng.randint(5, 60), rng.randint(2, 9), rng.randint(3, 15)
    give = rng.randint(1, have + bags * per_bag - 1)
    question = (
        f"{name} has {have} {item}. {name} buys {bags} bags with {per_bag} {item} in each bag, "
        f"then gives away {give} {item}. How many {item} does {name} have now?"
    )
    return question, have + bags * per_bag - give


_GENERATORS: dict[int, Callable[[random.Random], tuple[str, int]]] = {
    1: _level1, 2: _level2, 3: _level3, 4: _level4, 5: _level5,
}


@cache
def _generate(level: int, n_train: int, n_test: int) -> dict[str, tuple[Problem, ...]]:
    generate = _GENERATORS[level]
    splits: dict[str, list[Problem]] = {}
    seen: set[str] = set()
    for split, size in (("test", n_test), ("train", n_train)):
        rng = random.Random(f"arithmetic-{level}-{split}")
        problems: list[Problem] = []
        attempts = 0
        while len(problems) < size:
            attempts += 1
            if attempts > 50 * size + 1000:
                raise ValueError(f"difficulty {level} has too few distinct problems for n_train={n_train} + n_test={n_test}")
            question, answer = generate(rng)
            if question in seen:
                continue
            seen.add(question)
            problems.append(Problem(f"arithmetic-{level}-{split}-{len(problems)}", question, str(answer), {"level": level}))
        splits[split] = problems
    return {split: tuple(problems) for split, problems in splits.items()}


class ArithmeticTask(NumericTask):
    """Procedural arithmetic (see the module docstring for the levels).

    Args:
        difficulty: Level 1 (single-digit sums) to 5 (multi-step word problems), an
            integer (NumPy integers too; not a float or a boolean, which would quietly
            seed other problems).
        n_train: Number of train problems, an integer >= 1.
        n_test: Number of test problems (disjoint from train), an integer >= 1.
        scoring: ``"strict"`` (only "The answer is N." counts) or ``"lenient"`` (the
            last number anywhere); see :mod:`deliberation_env.tasks.numeric`.

    Example:
        >>> task = ArithmeticTask(difficulty=1)
        >>> problem = task.problems("test")[0]
        >>> task.is_correct(problem, task.parse(problem, f"The answer is {problem.answer}."))
        True
        >>> task.parse(problem, f"It is {problem.answer}.") is None  # a number, but not stated
        True
    """

    name = "arithmetic"

    def __init__(
        self, difficulty: int = DEFAULT_DIFFICULTY, n_train: int = 800, n_test: int = 200, scoring: str = "strict"
    ) -> None:
        if isinstance(difficulty, bool) or not isinstance(difficulty, numbers.Integral) or difficulty not in LEVELS:
            raise ValueError(f"difficulty must be one of the integers {LEVELS}, got {difficulty!r}")
        self.difficulty = int(difficulty)
        self.scoring = check_scoring(scoring)
        self._problems = _generate(self.difficulty, positive_int("n_train", n_train), positive_int("n_test", n_test))

    def problems(self, split: str) -> Sequence[Problem]:
        """The fixed problems of ``split``."""
        return self._problems[check_split(split)]
