"""13: your own task in 20 lines: prompt and reward functions on your JSONL, two agents trained.

A :class:`~deliberation_env.text.protocols.FunctionProtocol` takes what CoMLRL calls the
formatters (one prompt function), the reward function and, optionally, the external
transition (the feedback of the next turn), and is a protocol like the built-in ones:
``de.text_env``, the learners' configs and the CLI (``--protocol ./my_module.py:protocol``)
take it. Here two agents answer short questions from a JSONL file of
``{"question": ..., "answer": ...}`` lines (yours: ``python examples/13_function_protocol.py
my.jsonl``; else a small file of capitals is written), and the joint reward is the share
of agents that give the answer in the asked "Answer: X" form. MAGRPO trains one LoRA
adapter per agent.

    python examples/13_function_protocol.py [FILE.jsonl] [--model ""] [--updates 4]

``--model tiny`` (the default here) is a tiny random model: it checks the wiring in about
10 seconds and writes random bytes, so its rewards come from luck. ``--model ""`` is
SmolLM2-135M-Instruct (at the benchmark's settings, 4 problems x 4 joint rollouts of up to
96 tokens, larger than this example's, an update takes 72 to 92 s on 2 CPU cores:
BENCHMARKS.md, "LLM-weight learning").

Runtime: about 12 s on 2 CPU cores with the tiny model (measured once, 2026-11-25, on a
shared 2-core Intel Xeon).
"""

import argparse
import json
import tempfile
from pathlib import Path

import deliberation_env as de
from algorithms.text import TextMAGRPOConfig, train
from algorithms.text.config import text_run
from deliberation_env.text.protocols import FunctionProtocol

CAPITALS = {"France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Egypt": "Cairo", "Peru": "Lima", "Spain": "Madrid",
            "Kenya": "Nairobi", "Chile": "Santiago", "Cuba": "Havana", "Iran": "Tehran", "Mali": "Bamako", "Fiji": "Suva"}


def example_file() -> Path:
    """A JSONL file of questions and answers, as a user brings one."""
    path = Path(tempfile.mkdtemp()) / "capitals.jsonl"
    path.write_text("".join(json.dumps({"question": f"What is the capital of {c}?", "answer": a}) + "\n"
                            for c, a in CAPITALS.items()))
    return path


def main(path: Path, model: str, updates: int) -> None:
    # ---- the 20 lines: your data, your prompt, your reward, two agents trained
    task = de.tasks.get("jsonl", path=str(path), answers="text")  # split into train/test by a hash

    def prompt(problem, agent, previous, feedback):
        return f"{problem.question}\nReply with one line of the form 'Answer: X'."

    def reward(problem, texts):  # the joint reward: the share of agents answering right
        return sum(task.is_correct(problem, task.parse(problem, text)) for text in texts) / len(texts)

    protocol = FunctionProtocol(task, prompt=prompt, reward=reward, n_agents=2, name="capitals")
    config = TextMAGRPOConfig(env=de.TextEnvConfig(protocol=protocol), run=text_run(updates=updates), model=model,
                              groups_per_update=2, group_size=4, max_new_tokens=16)  # progress: a bar on stderr
    result = train(config)
    for metrics in result.history:
        print(f"update {metrics['charts/update']:.0f}: joint reward {metrics['rewards/joint/mean']:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, help="a JSONL file of question/answer lines")
    parser.add_argument("--model", default="tiny", help='"tiny", "" (SmolLM2) or a local model')
    parser.add_argument("--updates", type=int, default=4)
    args = parser.parse_args()
    main(args.path or example_file(), args.model, args.updates)
