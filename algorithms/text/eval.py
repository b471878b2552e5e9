"""The text family's evaluation: a learner's held-out play, frozen-team baselines, and the
metrics of the protocols.

**A learner's evaluation** (:func:`evaluate`, exported as :func:`algorithms.text.evaluate`,
of the same shape and result type as the meta family's :func:`algorithms.meta.evaluate`):
greedy play of held-out problems, once each, as an
:class:`~algorithms.core.evaluation.Evaluation` whose ``metrics`` are the ``eval/*``
numbers a run logs.

**Metrics** (pure functions, hand-checked in ``tests/text/test_text_eval.py``):

- :func:`pass_at_k`: the unbiased estimator of Chen et al. (2021), used by the MAGRPO
  paper and CoMLRL's evaluation: with n samples of a problem of which c pass every test,
  pass@k = 1 - C(n - c, k) / C(n, k).
- :func:`accuracy_at_k`: the same estimator for a graded score (the fraction of tests
  passed): the expected best score of k samples drawn without replacement from the n,
  sum_i s_(i) C(i - 1, k - 1) / C(n, k) with s_(1) <= ... <= s_(n). On 0/1 scores it is
  pass@k.
- :func:`summarize_baseline`: per baseline, the mean joint reward and of each reward part (math:
  ``correct`` is the accuracy; writing: its structure and style metrics), each agent's
  mean leave-one-out contribution, tokens per problem, and for code pass@k and
  accuracy@k over the samples of each problem; beside them, over every completion,
  ``truncated_share`` (the share cut at the token budget) and ``mean_completion_tokens``,
  and on the math protocol ``asked_form_share`` (its ``format`` part: the share of
  answers stated in the form the prompt asks for). A learner's evaluation logs, on the
  coding protocol, ``eval/pass_rate``: the share of problems whose program passes every
  test (its greedy pass@1).

**Baselines** (the MAGRPO paper's, on the coding protocol; any frozen backend behind
:class:`agents.TextPolicy`; every team's texts are scored by the env):

- ``single``: one agent writes the whole function (HumanEval's own prompt); the helper's
  text is the protocol's neutral text (no helper).
- ``concatenation``: the helper and the main agent write at the same time, each from its
  role's prompt, and their codes are concatenated (the env's first turn).
- ``pipeline``: the helper writes first; the main agent's prompt also shows the helper's code.
- ``discussion``: the concatenation's turn, then one more turn in which each agent sees its
  own code and its partner's (no test results) and writes again; the second turn is scored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rich.table import Table
from tqdm.auto import tqdm

from agents import TextPolicy
from agents.base import Backend, Generation, GenerationRequest, Message
from agents.progress import reporting
from agents.seeding import derive_seed
from algorithms.core.evaluation import Evaluation
from deliberation_env.tasks import problem_count
from deliberation_env.tasks.humaneval import HUMANEVAL_INSTRUCTIONS
from deliberation_env.text import CodingProtocol, text_vector_env
from deliberation_env.text.protocols.base import chat, quote

BASELINES = ("single", "concatenation", "pipeline", "discussion")
"""The coding baselines, in the order of the table."""
SINGLE_SYSTEM = "You are a Python programmer."


def evaluate(learner: Any, venv: Any, problem_indices: Sequence[int], seed: int = 0, progress: bool = True) -> Evaluation:
    """Play ``learner``'s agents greedily once on each problem: the text family's evaluation.

    Args:
        learner: A :class:`~algorithms.text.base.TextPolicyGradientLearner` (its
            ``play_held_out``).
        venv: A text vector env with the learner's agents (e.g. the test split); problems are
            played ``venv.num_envs`` at a time (under ``torchrun``, the ranks share them and
            every rank returns the same evaluation).
        problem_indices: The problems to play, once each.
        seed: Seeds the episode seeds (they matter to sampling frozen agents only).
        progress: Show, on stderr, a bar of the problems played and the completions done of
            each batched sampling call (under ``torchrun``, on rank 0 only).

    Returns:
        The :class:`~algorithms.core.evaluation.Evaluation`; its ``metrics``: ``eval/{part}``,
        the mean over problems of each reward part of the last turn (``eval/correct`` is the
        team's accuracy on the math protocol, a tied vote counting as a fair coin would
        settle it), ``eval/joint``; beside them, over the
        trainable agents' completions, ``eval/truncated_share`` (the share cut at the token
        budget) and ``eval/mean_completion_tokens``, and on the math protocol
        ``eval/asked_form_share`` (its ``format`` part: the share of the last turn's answers
        stated in the form the prompt asks for; a cut one is not, under strict scoring), and
        on the coding protocol ``eval/pass_rate`` (the share of problems whose program passes
        every test: greedy pass@1, the MAGRPO paper's measure; ``eval/tests`` is the mean
        share of tests passed).
    """
    finals, (made, cut, tokens) = learner.play_held_out(venv, problem_indices, seed, progress)
    metrics = {f"eval/{name}": float(np.mean(values)) for name, values in finals.items()}
    metrics["eval/truncated_share"] = float(cut / made)
    metrics["eval/mean_completion_tokens"] = float(tokens / made)
    if "format" in finals:
        metrics["eval/asked_form_share"] = metrics["eval/format"]
    accuracy = metrics.get("eval/correct")
    if accuracy is None and "tests" in finals:  # coding: the code passes every test
        accuracy = float(np.mean([value == 1.0 for value in finals["tests"]]))
        metrics["eval/pass_rate"] = accuracy
    return Evaluation(
        accuracy=accuracy,
        answered_share=metrics.get("eval/asked_form_share"),
        cut_share=metrics["eval/truncated_share"],
        tokens_per_answer=metrics["eval/mean_completion_tokens"],
        metrics=metrics,
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k).

    >>> pass_at_k(4, 2, 1), pass_at_k(5, 0, 3), pass_at_k(4, 2, 3)
    (0.5, 0.0, 1.0)

    Raises:
        ValueError: Unless 0 <= c <= n and 1 <= k <= n.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def accuracy_at_k(scores: Sequence[float], k: int) -> float:
    """Expected best of k of the n ``scores`` drawn without replacement (module docstring).

    >>> accuracy_at_k([0.0, 0.5, 1.0], 1), accuracy_at_k([0.0, 0.5, 1.0], 2)
    (0.5, 0.8333333333333334)

    Raises:
        ValueError: Unless 1 <= k <= len(scores) and every score is finite.
    """
    n = len(scores)
    if not 1 <= k <= n:
        raise ValueError(f"accuracy@k needs 1 <= k <= n = {n} samples, got k={k}")
    ordered = np.sort(np.asarray(scores, dtype=float))
    if not np.isfinite(ordered).all():
        raise ValueError(f"accuracy@k needs finite scores, got {list(scores)}")
    weights = [math.comb(i, k - 1) for i in range(n)]  # C(i - 1, k - 1) for the 1-based rank i
    return float(np.dot(ordered, weights) / math.comb(n, k))


@dataclass(frozen=True)
class Episode:
    """One scored team episode.

    Attributes:
        problem_id: The problem.
        reward: The joint reward R of the scored turn (unscaled).
        parts: The protocol's reward parts.
        contributions: Each agent's leave-one-out contribution.
        tokens: Completion tokens the team generated for it.
        completions: Completions the team generated for it.
        cut: How many of them were cut at the token budget.
    """

    problem_id: str
    reward: float
    parts: Mapping[str, float]
    contributions: tuple[float, ...]
    tokens: float
    completions: float
    cut: float


def summarize_baseline(name: str, episodes: Sequence[Episode], ks: Sequence[int] = (1,)) -> dict[str, Any]:
    """The metrics of one baseline's episodes (module docstring).

    pass@k and accuracy@k (for episodes with a ``tests`` part) use every k of ``ks`` not
    larger than the fewest samples of a problem.

    Raises:
        ValueError: If there is no episode.
    """
    if not episodes:
        raise ValueError(f"baseline {name!r}: no episode to summarize")
    by_problem: dict[str, list[Episode]] = {}
    for episode in episodes:
        by_problem.setdefault(episode.problem_id, []).append(episode)
    summary: dict[str, Any] = {
        "baseline": name,
        "problems": len(by_problem),
        "samples_per_problem": min(len(group) for group in by_problem.values()),
        "reward": float(np.mean([e.reward for e in episodes])),
        "parts": {part: float(np.mean([e.parts[part] for e in episodes])) for part in episodes[0].parts},
        "contributions": np.mean([e.contributions for e in episodes], axis=0).tolist(),
        "tokens_per_problem": sum(e.tokens for e in episodes) / len(by_problem),
        "truncated_share": sum(e.cut for e in episodes) / sum(e.completions for e in episodes),
        "mean_completion_tokens": sum(e.tokens for e in episodes) / sum(e.completions for e in episodes),
    }
    if "format" in summary["parts"]:
        summary["asked_form_share"] = summary["parts"]["format"]
    if "tests" in episodes[0].parts:
        usable = [k for k in ks if k <= summary["samples_per_problem"]]
        for k in usable:
            summary[f"pass@{k}"] = float(
                np.mean([pass_at_k(len(g), sum(e.parts["tests"] == 1.0 for e in g), k) for g in by_problem.values()])
            )
            summary[f"accuracy@{k}"] = float(
                np.mean([accuracy_at_k([e.parts["tests"] for e in g], k) for g in by_problem.values()])
            )
    return summary


class TokenCounter:
    """A backend that counts the completions of another (a :class:`~agents.base.Backend`):
    ``completions``, how many were ``cut`` at the token budget, and their ``tokens``."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.model_id = backend.model_id
        self.supports_logprobs = backend.supports_logprobs
        self.tokens = self.completions = self.cut = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """The inner backend's generations; they are counted."""
        generations = self.backend.generate(requests)
        self.tokens += sum(g.completion_tokens for g in generations)
        self.completions += len(generations)
        self.cut += sum(g.finish_reason == "length" for g in generations)
        return generations

    def counts(self) -> np.ndarray:
        """``[tokens, completions, cut]`` so far."""
        return np.array([self.tokens, self.completions, self.cut], dtype=float)

    def next_token_logprobs(self, requests):
        """The inner backend's log-probabilities."""
        return self.backend.next_token_logprobs(requests)


def complete(policy: TextPolicy, chats: Sequence[tuple[Message, ...]], seeds: Sequence[int]) -> list[str]:
    """One completion per chat, with its seed, in one backend call (through ``policy``)."""
    keys = [str(k) for k in range(len(chats))]
    infos = {key: {"messages": messages, "seed": seed, "active": True} for key, messages, seed in zip(keys, chats, seeds, strict=True)}
    texts = policy.act(dict.fromkeys(keys, ""), infos)
    return [texts[key] for key in keys]


@dataclass
class CodingBaselines:
    """The coding baselines (module docstring) with one frozen policy for both agents.

    Attributes:
        protocol: The coding protocol (its task's problems and sandbox limits).
        policy: The frozen team member.
        counter: The token counter inside ``policy``'s backend.
        problem_indices: Problems of ``split`` to evaluate.
        samples: Samples per problem (pass@k needs k <= samples).
        seed: Episode seeds derive from it, the problem and the sample.
        split: ``"train"`` or ``"test"``.
    """

    protocol: CodingProtocol
    policy: TextPolicy
    counter: TokenCounter
    problem_indices: Sequence[int]
    samples: int = 1
    seed: int = 0
    split: str = "test"
    _runs: dict[str, Callable] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples}")
        self._runs = {
            "single": self._single,
            "concatenation": self._concatenation,
            "pipeline": self._pipeline,
            "discussion": self._discussion,
        }

    def run(self, baseline: str) -> list[Episode]:
        """Every (problem, sample) episode of ``baseline``.

        Raises:
            ValueError: On an unknown baseline, naming the known ones.
        """
        if baseline not in self._runs:
            raise ValueError(f"unknown baseline {baseline!r}; known: {', '.join(BASELINES)}")
        cells = [(index, sample) for index in self.problem_indices for sample in range(self.samples)]
        venv = text_vector_env(
            len(cells), protocol=self.protocol, max_turns=2 if baseline == "discussion" else 1, split=self.split
        )
        obs, infos = venv.reset(options={
            "problem_index": [index for index, _ in cells],
            "episode_seed": [derive_seed(self.seed, baseline, index, sample) for index, sample in cells],
        })
        before = self.counter.counts()
        infos = self._runs[baseline](venv, obs, infos)
        # Per episode: every episode of a baseline makes as many completions.
        tokens, completions, cut = ((self.counter.counts() - before) / len(cells)).tolist()
        return [
            Episode(
                problem_id=info["agent_0"]["problem_id"],
                reward=info["agent_0"]["reward_components"]["joint"],
                parts={k: v for k, v in info["agent_0"]["reward_components"].items() if k not in ("joint", "contribution", "shapley")},
                contributions=tuple(info[a]["reward_components"]["contribution"] for a in venv.possible_agents),
                tokens=tokens,
                completions=completions,
                cut=cut,
            )
            for info in infos
        ]

    def _single(self, venv, obs, infos):
        chats = [
            chat(SINGLE_SYSTEM, f"{problem.meta['prompt']}\n\n{HUMANEVAL_INSTRUCTIONS}")
            for problem in self._problems(infos, venv)
        ]
        mains = complete(self.policy, chats, [info["agent_1"]["seed"] for info in infos])
        return venv.step({"agent_0": [""] * len(infos), "agent_1": mains})[4]

    def _concatenation(self, venv, obs, infos):
        return venv.step(self.policy.act_vector(obs, infos))[4]

    def _pipeline(self, venv, obs, infos):
        helpers = complete(self.policy, [i["agent_0"]["messages"] for i in infos], [i["agent_0"]["seed"] for i in infos])
        chats = [
            _with_note(
                info["agent_1"]["messages"],
                f"Your partner's helper:\n```python\n{quote(self.protocol.codes(problem, [helper, ''])[0])}\n```",
            )
            for info, helper, problem in zip(infos, helpers, self._problems(infos, venv), strict=True)
        ]
        mains = complete(self.policy, chats, [info["agent_1"]["seed"] for info in infos])
        return venv.step({"agent_0": helpers, "agent_1": mains})[4]

    def _discussion(self, venv, obs, infos):
        first = self.policy.act_vector(obs, infos)
        _, _, _, _, later = venv.step(first)
        texts = {agent: [] for agent in venv.possible_agents}
        for agent, partner in (("agent_0", "agent_1"), ("agent_1", "agent_0")):
            chats = [
                _with_note(
                    start[agent]["messages"],
                    f"Your code:\n```python\n{quote(own)}\n```\n\nYour partner's code:\n```python\n{quote(other)}\n```\n\n"
                    "Discuss by revising: write your function again.",
                )
                for start, own, other in zip(infos, first[agent], first[partner], strict=True)
            ]
            texts[agent] = complete(self.policy, chats, [info[agent]["seed"] for info in later])
        return venv.step(texts)[4]

    def _problems(self, infos, venv):
        by_id = {problem.id: problem for problem in venv.problems}
        return [by_id[info["agent_0"]["problem_id"]] for info in infos]


def _with_note(messages: Sequence[Message], note: str) -> tuple[Message, ...]:
    """``messages`` with ``note`` appended to the last (user) message."""
    *head, last = messages
    return (*head, {"role": last["role"], "content": f"{last['content']}\n\n{note}"})



def evaluate_baselines(
    protocol: CodingProtocol,
    backend: Backend,
    n_problems: int,
    *,
    baselines: Sequence[str] = BASELINES,
    samples: int = 1,
    seed: int = 0,
    split: str = "test",
    max_tokens: int = 256,
    temperature: float = 0.3,
    top_p: float = 0.95,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """The summaries (:func:`summarize_baseline`) of ``baselines`` on the first ``n_problems`` of ``split``.

    ``progress`` shows, on stderr, a bar of the baselines done and, below it, one of the
    requests done of each batched generation (:mod:`agents.progress`).

    Raises:
        ValueError: On ``n_problems`` < 1 or an unknown baseline, naming it.
    """
    if n_problems < 1:
        raise ValueError(f"n_problems must be >= 1, got {n_problems}")
    unknown = [name for name in baselines if name not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baselines {unknown}; known: {', '.join(BASELINES)}")
    counter = TokenCounter(backend)
    policy = TextPolicy(counter, max_tokens=max_tokens, temperature=temperature, top_p=top_p)
    runner = CodingBaselines(
        protocol, policy, counter, range(problem_count(n_problems, len(protocol.problems(split)), split)), samples, seed, split
    )
    ks = [k for k in (1, 2, 3, 5, 10) if k <= samples]
    summaries = []
    with tqdm(baselines, desc="coding baselines", unit="baseline", disable=not progress) as bar, reporting(progress):
        for name in bar:
            bar.set_postfix_str(name)
            summaries.append(summarize_baseline(name, runner.run(name), ks))
    return summaries


def results_table(summaries: Sequence[Mapping[str, Any]], title: str) -> Table:
    """A rich table of baseline summaries: pass@k, accuracy@k, R, its main parts, the
    leave-one-out contributions, tokens and the share of completions cut at the token
    budget (every part, and the mean completion length, is in ``results.json``)."""
    ks = [key for key in summaries[0] if key.startswith(("pass@", "accuracy@"))]
    parts = [part for part in ("syntax", "tests", "cooperation") if part in summaries[0]["parts"]]
    table = Table(title=title)
    headers = [k.replace("accuracy", "acc") for k in ks] + ["R", *parts, "helper LOO", "main LOO", "tokens", "cut"]
    table.add_column("baseline", no_wrap=True)
    for header in headers:
        table.add_column(header, justify="right")
    for s in summaries:
        table.add_row(
            s["baseline"], *(f"{s[k]:.3f}" for k in ks), f"{s['reward']:.2f}", *(f"{s['parts'][p]:.2f}" for p in parts),
            *(f"{c:+.2f}" for c in s["contributions"]), f"{s['tokens_per_problem']:,.0f}",
            f"{s['truncated_share']:.2f}",
        )
    table.caption = (
        "R: CoMLRL's level reward (0-4); parts: mean shares (tests: fraction passed); LOO: mean leave-one-out "
        "contribution; tokens: completion tokens per problem; cut: share of completions cut at the token budget"
    )
    return table

