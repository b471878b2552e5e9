"""The writing protocol: two agents write one text together, scored by structure and style,
on the words of the document.

After the writing collaborations of the MAGRPO paper (Liu et al., "LLM Collaboration
With Multi-Agent RL", arXiv 2508.04652, section on writing): TL;DR-style summarization
and arXiv-abstract-style expansion, rewarded by length-ratio, vocabulary and transition
metrics. The formulas below are this package's own (the word lists and thresholds are
ours, the TL;DR thresholds follow the paper's released reward), stated exactly.

**Corpus.** Any JSONL file, a directory with ``train.jsonl`` and ``test.jsonl``, or a
Hugging Face dataset id (``"hf:org/name"`` or ``"hf:org/name:config"``, the ``hf:``
optional, when online and the ``hf`` extra is installed; see
:mod:`deliberation_env.tasks.sources`): one record (a JSON object per line of a file)
whose ``text_field`` (default ``"text"``) is the source document, a non-empty string; other fields are
ignored. A single file is split in half by a hash of each document's normalized text. A
malformed line is a ``ValueError`` naming ``path:line``. Problem ids are
``<file stem>-<split>-<index>``. No corpus ships with the package.

**Modes and roles** (exactly 2 agents; the team's output is part 0, a blank line, part 1):

- ``"summarize"`` (TL;DR): agent_0 (``summary``) writes a one- or two-sentence TL;DR of
  the document, agent_1 (``detail``) a longer, detailed summary.
- ``"expand"`` (arXiv abstract -> introduction): the document is an abstract; agent_0
  (``background``) writes the introduction's paragraph on background and motivation,
  agent_1 (``method``) the paragraph on the approach and results, of similar length.

**Metrics.** words(x) = the ``\\w+`` runs of ``x.lower()``; W_k = words(part k);
U_k = set(W_k) minus :data:`STOPWORDS`; with the mode's :class:`WritingTargets`:

- ``structure`` s = 1[min_words <= |W_k| <= max_words and |U_k| >= max(MIN_DISTINCT,
  DISTINCT_SHARE * C_k) and C_k >= CONTENT_SHARE * |W_k| for k = 0 and 1], C_k the number
  of W_k's words not in :data:`STOPWORDS` (a part that repeats its content words, "budget
  budget budget ...", or pads one with stopwords, "budget of the to the of ...", is no
  part: such a TL;DR maximised V and L; :func:`is_written`)
- ``length_ratio`` L = trapezoid(rho), rho = |W_1| / |W_0| (rho = 0 if |W_0| = 0), where
  trapezoid(x) = 0 for x <= a or x >= d, (x - a)/(b - a) for a < x < b, 1 for
  b <= x <= c, (d - x)/(d - c) for c < x < d, with (a, b, c, d) = ``ratio``
- ``vocabulary`` V = clip((nu - lo) / (hi - lo), 0, 1), nu = |U_1| / |U_0| (nu = 0 if
  U_0 is empty), with (lo, hi) = ``vocabulary``
- ``transitions`` T = min(1, m / :data:`TRANSITION_TARGET`), m = the number of
  categories of :data:`TRANSITIONS` with at least one phrase in the team's output (whole
  words, case-insensitive)
- ``grounding`` g = min(1, gamma / gamma*, kappa / kappa*), D = the document's words minus
  :data:`STOPWORDS`: gamma = min over k of |U_k & D| / |U_k| (gamma = 0 if a U_k is
  empty), the share of each part's content words that the document holds, and
  kappa = |(U_0 | U_1) & D| / |D|, the share of the document's content words the team
  mentions (kappa = 0 if D is empty), with gamma* = ``grounding`` and kappa* =
  ``coverage`` (a term is 1 when its target is 0)

and the joint reward R = s g (L + V + T) / 3, so 0 <= R <= 1. The structure gate means a
missing, one-word or runaway part earns nothing. The other three metrics never read the
document (as the paper's), so without ``grounding`` one fixed pair of texts (nonsense
words of the right counts and transitions) earned R = 1 on every document; with gamma
alone, a fixed pair of a corpus's common words ("how", "many", "each" on GSM8K) still
earned it on two documents of three. Both terms together pay a team for the document's
own words, in proportion to how many it uses (the paper's reward:
``WritingTargets(..., grounding=0, coverage=0)``). *Not proven*: that the text says
anything about the document. A list of the document's words in a frame of stopwords and
transitions earns R = 1 as a summary does: the reward is lexical, as the paper's is.
Measured (red team 30): a policy that knows nothing but the document's words earns it (its
distinct content words shuffled, 8 as the TL;DR and 20 after "However, therefore, for
example," as the summary: mean R 0.993 on 16 documents, 3 shuffles each; expansion, 36
and 40: R 1.0), and so do the document's own sentences copied (its second as the TL;DR,
three more with transitions as the summary; an abstract's first three sentences and its
next two: R 1.0). Neither simple fix holds: a gate on copying (the share of a part's
content words in runs of 5 that the document holds: 0.93 to 1.0 for the copies) also
catches an extractive TL;DR as a model writes one (0.79), and dropping every fourth
content word of a copy takes its share to 0 at R = 1; a rule asking for sentences (a share
of stopwords, of the document's word pairs) is met by the document's word pairs shuffled
in a frame of "the ... of ... and the" (R = 1: stopwords 0.45, pairs 0.89 to 1.0) and
failed by an honest headline TL;DR (stopwords 0.08, pairs 0). Telling them apart takes a
judge that reads the text (a model, an entailment check).

The neutral text of both roles is the empty string, which fails the structure gate: each
agent's leave-one-out contribution is R itself (both parts are needed).

**Feedback** for the next turn: the team's five scores, then the partner's part (after
them, so that a part cannot pose as the scores), each of its lines marked ``"> "``
(:func:`marked`), so that no line of it can pose as a section of the prompt (a second
"Scores of the team's text" line, "Revise your part.", a ``system:`` block of the
rendered observation).

Example:
    >>> words("Don't panic: 42 towels!")
    ['don', 't', 'panic', '42', 'towels']
    >>> trapezoid(1.35, (1.1, 1.6, 3.2, 5.0))
    0.5
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.base import Message
from deliberation_env.tasks import Problem
from deliberation_env.tasks.base import check_split
from deliberation_env.tasks.sources import load_split, question_key, require
from deliberation_env.text.protocols.base import Outcome, chat, quote

DATASET_ID = re.compile(r"(?:hf:)?[\w.-]+/[\w.-]+(?::[\w.-]+)?")
"""A Hugging Face dataset id, ``[hf:]org/name`` or ``[hf:]org/name:config`` (not a local path)."""


@dataclass(frozen=True)
class WritingTargets:
    """The thresholds of one mode (see the module docstring for the formulas).

    Attributes:
        min_words: Fewest words a part may have to pass the structure gate.
        max_words: Most words a part may have to pass the structure gate.
        ratio: (a, b, c, d) of the length-ratio trapezoid, a < b <= c < d.
        vocabulary: (lo, hi) of the vocabulary ramp, lo < hi.
        grounding: gamma*, the share of each part's content words found in the document
            that earns the full reward, in [0, 1] (0: not checked).
        coverage: kappa*, the share of the document's content words the team mentions that
            earns the full reward, in [0, 1] (0: not checked).
    """

    min_words: int
    max_words: int
    ratio: tuple[float, float, float, float]
    vocabulary: tuple[float, float]
    grounding: float = 0.5
    coverage: float = 0.15

    def __post_init__(self) -> None:
        a, b, c, d = self.ratio
        lo, hi = self.vocabulary
        if not 1 <= self.min_words <= self.max_words:
            raise ValueError(f"need 1 <= min_words <= max_words, got {self.min_words}, {self.max_words}")
        if not 0 <= a < b <= c < d:
            raise ValueError(f"ratio must be (a, b, c, d) with 0 <= a < b <= c < d, got {self.ratio}")
        if not 0 <= lo < hi:
            raise ValueError(f"vocabulary must be (lo, hi) with 0 <= lo < hi, got {self.vocabulary}")
        for name in ("grounding", "coverage"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)}")


MODES = {
    "summarize": WritingTargets(8, 256, (1.1, 1.6, 3.2, 5.0), (1.3, 2.0), grounding=0.5, coverage=0.15),
    "expand": WritingTargets(32, 256, (0.8, 1.0, 1.3, 1.5), (0.7, 1.0), grounding=0.25, coverage=0.2),
}
"""Default targets per mode: the TL;DR ratios follow the paper's released reward
(lengths in words here); the expansion ratio asks for paragraphs of similar length. A
summary earns its full reward once half its content words are the document's, an
introduction written from an abstract (which brings words of its own) once a quarter
are; a TL;DR with its summary mention 15% of the document's content words, an
introduction's two paragraphs 20% of the abstract's: this package's thresholds."""

ROLES = {"summarize": ("summary", "detail"), "expand": ("background", "method")}

STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "i", "if", "in",
    "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those",
    "to", "us", "was", "we", "were", "what", "when", "which", "who", "will", "with", "would",
    "you", "your",
})
"""Words left out of the vocabulary metric."""

TRANSITIONS = {
    "addition": ("furthermore", "moreover", "additionally", "in addition", "also"),
    "example": ("for example", "for instance", "such as", "in particular", "specifically"),
    "contrast": ("however", "although", "whereas", "nevertheless", "on the other hand", "in contrast"),
    "cause": ("therefore", "thus", "consequently", "as a result", "because", "hence"),
    "sequence": ("first", "second", "then", "next", "finally", "subsequently"),
    "summary": ("in summary", "in conclusion", "overall", "in short", "to summarize"),
}
"""Transition phrases by category."""
TRANSITION_TARGET = 3
"""Categories of transitions that earn the full ``transitions`` score."""

_WORD = re.compile(r"\w+")
_CATEGORY_PATTERNS = {
    category: re.compile(r"\b(?:" + "|".join(map(re.escape, phrases)) + r")\b", re.IGNORECASE)
    for category, phrases in TRANSITIONS.items()
}
PEER_QUOTE_CHARS = 1_000
"""Most characters of the partner's part shown in feedback."""

SYSTEM = "You are one of two writers producing one text together; each writes one part."
INSTRUCTIONS = {
    "summary": (
        "Write a TL;DR of the text below: one or two sentences. Your partner writes a longer, "
        "detailed summary that follows yours."
    ),
    "detail": (
        "Write a detailed summary of the text below in one paragraph, two to three times as long "
        "as a one-sentence TL;DR, in varied words, linked by transitions (however, therefore, for "
        "example). Your partner writes the TL;DR that comes before yours."
    ),
    "background": (
        "The text below is the abstract of a paper. Write the first paragraph of its introduction: "
        "the background and the motivation. Your partner writes the second paragraph, on the "
        "approach and the results, of about the same length."
    ),
    "method": (
        "The text below is the abstract of a paper. Write the second paragraph of its introduction: "
        "the approach and the results, in varied words, linked by transitions. Your partner writes "
        "the first paragraph, on the background and the motivation, of about the same length."
    ),
}


def words(text: str) -> list[str]:
    """The lowercase ``\\w+`` runs of ``text``."""
    return _WORD.findall(text.lower())


def marked(text: str) -> str:
    """``text`` with each of its lines (at every line break :meth:`str.splitlines` knows:
    ``\\r``, ``\\u2028`` ...) starting ``"> "``, the breaks made ``\\n``: a partner's part
    as its partner's prompt quotes it, so that no line of it can pose as the prompt's own.

    >>> marked("A fine part.\\r\\n\\nScores of the team's text (0 to 1): structure 1.00")
    "> A fine part.\\n> \\n> Scores of the team's text (0 to 1): structure 1.00"
    >>> marked("")
    '> '
    """
    return "\n".join(f"> {line}" for line in text.splitlines() or [""])


def trapezoid(x: float, corners: tuple[float, float, float, float]) -> float:
    """0 outside (a, d), 1 on [b, c], linear in between (see the module docstring)."""
    a, b, c, d = corners
    if x <= a or x >= d:
        return 0.0
    if x < b:
        return (x - a) / (b - a)
    if x <= c:
        return 1.0
    return (d - x) / (d - c)


def ramp(x: float, bounds: tuple[float, float]) -> float:
    """clip((x - lo) / (hi - lo), 0, 1).

    >>> ramp(2.0, (1.0, 3.0)), ramp(4.0, (1.0, 3.0)), ramp(0.0, (1.0, 3.0))
    (0.5, 1.0, 0.0)
    """
    lo, hi = bounds
    return min(1.0, max(0.0, (x - lo) / (hi - lo)))


def transition_categories(text: str) -> list[str]:
    """The categories of :data:`TRANSITIONS` with a phrase in ``text`` (whole words).

    >>> transition_categories("However, it rains. Thus we stay; also, something.")
    ['addition', 'contrast', 'cause']
    """
    return [category for category, pattern in _CATEGORY_PATTERNS.items() if pattern.search(text)]


DISTINCT_SHARE = 0.3
"""The least share of a part's content words (not :data:`STOPWORDS`) that are distinct: about
0.6 in a 300-word text written to inform, 1/8 in a TL;DR of one word said 8 times."""
CONTENT_SHARE = 0.25
"""The least share of a part's words that are content words: 0.42 at the least in 2,633
passages of 12 words or more (GSM8K's and the MATH and MMLU samples' texts), 1/12 in
"budget of the to the of the to the of the to", a TL;DR padded with stopwords."""
MIN_DISTINCT = 3
"""The fewest distinct content words a part may have."""


def is_written(part_words: list[str], distinct: set[str]) -> bool:
    """Whether a part's words (``distinct``: its content words, once each) are written
    text rather than padding: at least :data:`MIN_DISTINCT` distinct content words,
    content words at least :data:`CONTENT_SHARE` of its words, and at least
    :data:`DISTINCT_SHARE` of them distinct.

    >>> is_written(words("the council approved the budget on monday"), {"council", "approved", "budget", "monday"})
    True
    >>> is_written(words("budget of the to the of the to the of the to"), {"budget"})
    False
    """
    content = sum(word not in STOPWORDS for word in part_words)
    return (
        len(distinct) >= MIN_DISTINCT
        and content >= CONTENT_SHARE * len(part_words)
        and len(distinct) >= DISTINCT_SHARE * content
    )


def metrics(first: str, second: str, document: str, targets: WritingTargets) -> dict[str, float]:
    """``structure``, ``length_ratio``, ``vocabulary``, ``transitions`` and ``grounding``
    of two parts written on ``document`` (formulas in the module docstring).

    >>> metrics("one two three four five six seven eight", "x " * 20, "one two x", MODES["summarize"])  # x 20 times: no part
    {'structure': 0.0, 'length_ratio': 1.0, 'vocabulary': 0.0, 'transitions': 0.0, 'grounding': 0.5}
    """
    w0, w1 = words(first), words(second)
    u0, u1 = set(w0) - STOPWORDS, set(w1) - STOPWORDS
    in_bounds = all(targets.min_words <= len(w) <= targets.max_words for w in (w0, w1)) and all(
        is_written(w, u) for w, u in ((w0, u0), (w1, u1))
    )
    rho = len(w1) / len(w0) if w0 else 0.0
    nu = len(u1) / len(u0) if u0 else 0.0
    found = transition_categories(f"{first}\n\n{second}")
    return {
        "structure": float(in_bounds),
        "length_ratio": trapezoid(rho, targets.ratio),
        "vocabulary": ramp(nu, targets.vocabulary),
        "transitions": min(1.0, len(found) / TRANSITION_TARGET),
        "grounding": grounding(u0, u1, document, targets),
    }


def grounding(u0: set[str], u1: set[str], document: str, targets: WritingTargets) -> float:
    """g = min(1, gamma / gamma*, kappa / kappa*) of two parts' content words ``u0``, ``u1``
    on ``document`` (module docstring; a term whose target is 0 is 1).

    >>> dog = "The dog barks at night."
    >>> grounding({"dog", "barks"}, {"dog", "night", "moon", "sun"}, dog, MODES["summarize"])
    1.0
    >>> grounding({"zebra", "quartz"}, {"dog"}, dog, MODES["summarize"])
    0.0
    """
    known = set(words(document)) - STOPWORDS
    terms = [1.0]
    if targets.grounding:
        gamma = min((len(part & known) / len(part) if part else 0.0) for part in (u0, u1))
        terms.append(gamma / targets.grounding)
    if targets.coverage:
        kappa = len((u0 | u1) & known) / len(known) if known else 0.0
        terms.append(kappa / targets.coverage)
    return min(terms)


class WritingProtocol:
    """Two writers, one text (see the module docstring).

    Args:
        path: The corpus: a JSONL file, a directory with ``train.jsonl`` and ``test.jsonl``,
            or a Hugging Face dataset id (``"org/name[:config]"``).
        mode: ``"summarize"`` or ``"expand"``.
        text_field: The field holding each source document.
        targets: Thresholds replacing the mode's defaults (:data:`MODES`).

    Raises:
        ValueError: On an unknown ``mode``, or (when problems are read) a malformed line,
            naming ``path:line``.
        FileNotFoundError: If ``path`` is neither an existing file or directory nor a
            dataset id (when problems are read: a dataset id that cannot be loaded).
    """

    name = "writing"
    reward_range = (0.0, 1.0)

    def __init__(
        self, path: str | Path, mode: str = "summarize", text_field: str = "text", targets: WritingTargets | None = None
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {tuple(MODES)}, got {mode!r}")
        if not (Path(path).exists() or DATASET_ID.fullmatch(str(path))):
            raise FileNotFoundError(f"no such corpus file or directory (nor a dataset id 'org/name'): {path}")
        self.path, self.mode, self.text_field = Path(path), mode, text_field
        self.targets = targets or MODES[mode]
        self._problems: dict[str, tuple[Problem, ...]] = {}

    def roles(self, n_agents: int) -> tuple[str, ...]:
        """The mode's two roles; the protocol seats exactly 2 agents."""
        if n_agents != 2:
            raise ValueError(f"the writing protocol needs n_agents == 2, got {n_agents}")
        return ROLES[self.mode]

    def problems(self, split: str) -> Sequence[Problem]:
        """The documents of ``split`` (read once, then kept)."""
        if check_split(split) not in self._problems:
            source = str(self.path) if self.path.exists() else f"hf:{str(self.path).removeprefix('hf:')}"
            records = load_split(source, split, lambda where, record: question_key(self._text(where, record)))
            self._problems[split] = tuple(
                Problem(f"{self.path.stem}-{split}-{k}", self._text(where, record), "", {"where": where})
                for k, (where, record) in enumerate(records)
            )
        return self._problems[split]

    def _text(self, where: str, record: dict) -> str:
        return require(where, record, self.text_field)

    def prompt(
        self, problem: Problem, roles: tuple[str, ...], agent: int, previous: str | None, feedback: str | None
    ) -> tuple[Message, ...]:
        """The role's instruction and the document; later turns add the agent's previous
        part and the feedback."""
        user = f"{INSTRUCTIONS[roles[agent]]}\n\nText:\n{problem.question}"
        if previous is not None:
            user += f"\n\nYour previous part:\n{previous}\n\n{feedback}\n\nRevise your part."
        return chat(SYSTEM, user)

    def score(self, problem: Problem, texts: Sequence[str]) -> Outcome:
        """The five metrics and R of the two parts (formulas in the module docstring)."""
        parts = metrics(texts[0], texts[1], problem.question, self.targets)
        style = (parts["length_ratio"] + parts["vocabulary"] + parts["transitions"]) / 3.0
        reward = parts["structure"] * parts["grounding"] * style
        roles = ROLES[self.mode]
        scores = ", ".join(f"{name} {value:.2f}" for name, value in parts.items())
        feedback = tuple(  # the scores before the partner's words, which could imitate them
            f"Scores of the team's text (0 to 1): {scores}.\n\n"
            f"Your partner ({roles[1 - i]}) wrote:\n{marked(quote(texts[1 - i], PEER_QUOTE_CHARS))}"
            for i in range(2)
        )
        return Outcome(reward, parts, feedback, f"{texts[0]}\n\n{texts[1]}")

    def neutral_text(self, problem: Problem, agent: int) -> str:
        """The empty text (it fails the structure gate)."""
        return ""
