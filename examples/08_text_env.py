"""08: the text-action env: a frozen team writes the actions, the env scores them.

In the meta-action env (examples 01-07) the LLMs are part of the environment. Here they
are the agents: each action is a completion. A frozen team is any backend behind
``agents.TextPolicy``. The default is one coding episode on HumanEval (the MAGRPO
paper's collaboration): a helper agent writes ``aux``, a main agent writes the entry
point; the sandbox's trusted verdict counts the hidden tests, and the next prompt shows
what the program returned on the tests' calls (never what the tests expect).
``--task arithmetic`` plays the math protocol instead.

The scripted backends run instantly (the coder's helper is right, its first main
function is off by one on a one-element list, and it fixes that once the feedback shows
its result on one);
``--backend smollm2`` uses SmolLM2 (responses cached in SQLite).

    python examples/08_text_env.py [--task humaneval|arithmetic] [--episodes 1] [--max-turns 2]
        [--backend scripted|smollm2]

Runtime: about 3 s on 2 CPU cores with the scripted backends (measured once, 2026-11-25, on
a shared 2-core Intel Xeon).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tyro

from agents import Generation
from agents.specs import backend_from_spec
from agents.text_policy import TextPolicy
from deliberation_env.text import text_env


class ScriptedSolver:
    """A text backend for arithmetic sums: right, or off by one when its seed says so."""

    model_id = "scripted:sum"
    supports_logprobs = False

    def generate(self, requests):
        completions = []
        for request in requests:
            question = request.messages[-1]["content"]
            total = sum(map(int, re.findall(r"\d+", question.split("?")[0])))
            slip = 1 if request.seed % 3 == 0 else 0
            completions.append(Generation(f"Adding the numbers gives {total + slip}. The answer is {total + slip}.", 0, 0, "stop"))
        return completions

    def next_token_logprobs(self, requests):
        raise NotImplementedError("the scripted solver has no log-probabilities")


class ScriptedCoder:
    """A text backend for HumanEval/8 (sum_product): a product helper, and a main function
    that gets a one-element list wrong until its feedback shows its result on one."""

    model_id = "scripted:coder"
    supports_logprobs = False

    def generate(self, requests):
        completions = []
        for request in requests:
            prompt = request.messages[-1]["content"]
            if "Write a helper function" in prompt:
                code = "def aux(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return product"
            else:
                slip = " + (len(numbers) == 1)" if "sum_product([10]) -> (11, 10)" not in prompt else ""
                code = f"def sum_product(numbers):\n    total = sum(numbers){slip}\n    return (total, aux(numbers))"
            completions.append(Generation(f"```python\n{code}\n```", 0, 0, "stop"))
        return completions

    def next_token_logprobs(self, requests):
        raise NotImplementedError("the scripted coder has no log-probabilities")


@dataclass
class Args:
    task: str = "humaneval"
    """``humaneval`` (the coding protocol: helper + main) or ``arithmetic`` (the math protocol)."""
    episodes: int = 1
    """Episodes (problems) to play."""
    n_agents: int = 3
    """Solvers in the math team (the coding protocol seats 2)."""
    max_turns: int = 2
    """Turns per episode; from turn 2 on each prompt shows the peers' answers."""
    backend: str = "scripted"
    """``scripted`` (instant) or ``smollm2`` (SmolLM2-135M-Instruct, the default team's backend)."""
    seed: int = 0
    """Seed of the env (problems and episode seeds)."""


def main(args: Args) -> None:
    coding = args.task == "humaneval"
    if args.backend == "scripted":
        backend = ScriptedCoder() if coding else ScriptedSolver()
    else:
        backend = backend_from_spec("smollm2")  # cached in SQLite
    policy = TextPolicy(backend, max_tokens=256 if coding else 128)
    n_agents = 2 if coding else args.n_agents
    env = text_env(task=args.task, n_agents=n_agents, max_turns=args.max_turns, split="test", render_mode="ansi")
    # The scripted coder knows one problem (HumanEval/8); SmolLM2 and the math team take any.
    options = {"problem_id": "HumanEval/8"} if coding and args.backend == "scripted" else None
    obs, infos = env.reset(seed=args.seed, options=options)
    for episode in range(args.episodes):
        print(f"=== episode {episode}: problem {infos['agent_0']['problem_id']} ===")
        while env.agents:
            for agent in env.agents:
                print(f"--- prompt of {agent} ({infos[agent]['role']}), turn {infos[agent]['turn']} ---\n{obs[agent]}\n")
            actions = policy.act(obs, infos)
            for agent, text in actions.items():
                print(f"--- completion of {agent} ---\n{text}\n")
            obs, rewards, _, _, infos = env.step(actions)
            print(env.render())
            parts = {k: round(v, 3) for k, v in infos["agent_0"]["reward_components"].items() if k not in ("contribution", "shapley")}
            contributions = {a: round(infos[a]["reward_components"]["contribution"], 3) for a in env.possible_agents}
            print(f"reward {rewards['agent_0']:.3f}; parts {parts}")
            print(f"leave-one-out contributions {contributions}\n")
        obs, infos = env.reset(options=options)


if __name__ == "__main__":
    main(tyro.cli(Args))
