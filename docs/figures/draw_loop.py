"""Draw the two seats of the LLM: the deliberation loop and the text seat.

Writes ``docs/figures/deliberation_loop.png``, the figure that README.md and
docs/tutorial.md show. Run it from the repository root after changing the picture:

    .venv/bin/python docs/figures/draw_loop.py

The figure is a diagram, not a result: it holds no numbers.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

OUT = Path(__file__).with_name("deliberation_loop.png")

ENV = "#dbe9f6"  # the environment's work
POLICY = "#fde2c8"  # what acts
LEARN = "#d9f0d3"  # what learns
EDGE = "#4a4a4a"

COLUMN_X, COLUMN_W = 1.3, 5.65  # the loop's column, in axis units (a panel is 10 wide)
STEP_H, STEP_GAP = 0.95, 0.3  # a step's height, and the space between two steps
TOP = 6.5  # the first step's lower edge
LEARNER_X, LEARNER_W, LEARNER_H = 7.25, 2.7, 1.55


Box = tuple[float, float, float, float]  # x, y, width, height


def box(ax: Axes, x: float, y: float, width: float, height: float, title: str,
        body: tuple[str, ...], color: str) -> Box:
    """A rounded box with a bold title line and a body of ``body``'s lines."""
    ax.add_patch(FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0.02,rounding_size=0.12",
                                facecolor=color, edgecolor=EDGE, linewidth=1.1))
    ax.text(x + 0.15, y + height - 0.17, title, fontsize=10.5, fontweight="bold", va="top")
    ax.text(x + 0.15, y + height - 0.47, "\n".join(body), fontsize=9, va="top", linespacing=1.3)
    return x, y, width, height


def arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], dashed: bool = False,
          rad: float = 0.0) -> None:
    """An arrow from ``start`` to ``end``, straight or curved by ``rad``."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, color=EDGE,
                                 linewidth=1.3, linestyle="--" if dashed else "-",
                                 connectionstyle=f"arc3,rad={rad}", shrinkA=2, shrinkB=2, clip_on=False))


def label(ax: Axes, x: float, y: float, text: str, ha: str = "left") -> None:
    """An italic note beside an arrow."""
    ax.text(x, y, text, fontsize=9, style="italic", va="center", ha=ha, color="#333333")


def panel(ax: Axes, title: str, subtitle: str, steps: list[tuple[str, tuple[str, ...], str]],
          loop: tuple[int, int, str], learner: tuple[str, tuple[str, ...]], writes: int) -> None:
    """One seat: a column of steps, the loop back up on the left, the learner on the right.

    Args:
        ax: The panel's axes.
        title: Bold line at the top.
        subtitle: What the seat is, and its entry points.
        steps: (title, body, color) of each step, top to bottom.
        loop: (from step, back to step, label) of the loop arrow.
        learner: (title, body) of the learner's box.
        writes: The step whose weights the learner updates.
    """
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.2, 8.6)
    ax.axis("off")
    ax.text(0.2, 8.55, title, fontsize=13.5, fontweight="bold", va="top")
    ax.text(0.2, 8.05, subtitle, fontsize=9.5, va="top", color="#333333", linespacing=1.35)
    boxes = [
        box(ax, COLUMN_X, TOP - k * (STEP_H + STEP_GAP), COLUMN_W, STEP_H, head, body, color)
        for k, (head, body, color) in enumerate(steps)
    ]
    middle = COLUMN_X + COLUMN_W / 2
    for upper, lower in itertools.pairwise(boxes):
        arrow(ax, (middle, upper[1]), (middle, lower[1] + lower[3]))
    # the loop: out of the left side of the last step, back into the left side of an earlier one
    src, dst, text = loop
    start, end = boxes[src][1] + STEP_H / 2, boxes[dst][1] + STEP_H / 2
    arrow(ax, (COLUMN_X, start), (COLUMN_X, end), rad=-1.2 / (end - start))  # bulges 0.6 to the left
    label(ax, 0.3, (start + end) / 2, text, ha="center")
    # the learner: reads groups of rollouts from the rewards, updates the policy's weights
    last = boxes[-1]
    learner_y = last[1] + 0.9
    box(ax, LEARNER_X, learner_y, LEARNER_W, LEARNER_H, *learner, LEARN)
    arrow(ax, (COLUMN_X + COLUMN_W, last[1] + STEP_H / 2), (LEARNER_X + LEARNER_W / 2, learner_y), rad=0.25)
    label(ax, LEARNER_X + LEARNER_W / 2 + 0.1, last[1] + 0.35, "groups of\nrollouts")
    target = boxes[writes]
    arrow(ax, (LEARNER_X + LEARNER_W / 2, learner_y + LEARNER_H),
          (COLUMN_X + COLUMN_W, target[1] + STEP_H / 2), dashed=True, rad=0.25)
    label(ax, LEARNER_X + LEARNER_W / 2 + 0.1, target[1] + 0.15, "updates\nthe weights")


def main() -> Path:
    """Draw both panels and save the figure."""
    fig, (meta, text) = plt.subplots(1, 2, figsize=(17, 8.8))
    panel(
        meta,
        "The meta-action seat (MPDF paper)",
        "The LLMs are part of the environment; a small network learns how to deliberate.\n"
        "de.parallel_env, de.vector_env",
        [
            ("1. Problem", ("one per episode, from a task (arithmetic, GSM8K, MATH, ...)",), ENV),
            ("2. Round 0: every LLM agent solves it", ("answer -> decision; confidence (the LLM as critic);",
              "reasoning profile"), ENV),
            ("3. Observation of agent i", ("own features + one row per peer (confidence, agreement);",
              "never the ground truth"), ENV),
            ("4. Meta-policy: one action per agent", ("PERSIST (keep), REFINE (re-solve, seeing the peers),",
              "CONCEDE (adopt the most confident other answer)"), POLICY),
            ("5. The env runs the actions with the LLMs", ("one batched LLM call for every refining agent;",
              "consensus = plurality vote of the decisions"), ENV),
            ("6. Rewards of agent i", ("r_local: its own correctness change",
              "r_global: consensus right, minus consensus without i right"), ENV),
        ],
        loop=(5, 2, "next\nround"),
        learner=("Learner", ("SoftRankPO, GRPO,", "MAGRPO, SFT, or yours:", "returns -> advantages", "-> loss")),
        writes=3,
    )
    panel(
        text,
        "The text seat (MAGRPO paper)",
        "The LLM is the policy: its completion is the action, its weights learn.\n"
        "de.text_env, de.text_vector_env",
        [
            ("1. Problem and protocol", ("the task, and how the team works on it",
              "(math: a vote; coding: a helper and a main function)"), ENV),
            ("2. Prompt of agent i", ("role, task, the turns so far, feedback",
              "(e.g. what the team's program returned)"), ENV),
            ("3. The LLM writes a completion", ("one base model, one LoRA adapter per agent;",
              "the completion is the action (any text)"), POLICY),
            ("4. The protocol combines the texts", ("into the team's output: the voted answer,",
              "or the program of helper + main"), ENV),
            ("5. Verdict", ("the task's checker, or the sandbox runs the hidden tests;",
              "unparseable or hostile text is data, never a crash"), ENV),
            ("6. Rewards", ("joint reward R to every agent, its named parts,",
              "and each agent's leave-one-out contribution"), ENV),
        ],
        loop=(5, 1, "next\nturn"),
        learner=("LLM-weight learner", ("TextMAGRPO, TextGRPO,", "TextSoftRankPO:", "G completions a prompt",
                                        "-> LoRA update")),
        writes=2,
    )
    fig.tight_layout()
    fig.savefig(OUT, dpi=100)
    plt.close(fig)
    return OUT


if __name__ == "__main__":
    print(f"wrote {main()}")
