"""FunctionProtocol: a custom task from plain prompt, reward and feedback functions."""

from __future__ import annotations

import json

import pytest

import deliberation_env as de
from algorithms.text import TextMAGRPOConfig, train
from algorithms.text.config import text_run
from deliberation_env.text.config import TextEnvConfig
from deliberation_env.text.env import build_protocol
from deliberation_env.text.protocols import FunctionProtocol, TextProtocol

QUESTIONS = [{"question": f"Name the colour number {k}.", "answer": colour} for k, colour in enumerate(["red", "blue"] * 6)]


def colour_protocol(path, **kwargs):
    task = de.tasks.get("jsonl", path=str(path), answers="text")

    def prompt(problem, agent, previous, feedback):
        return f"{problem.question}\nAnswer: <colour>" + (f"\nLast time: {feedback}" if feedback else "")

    def reward(problem, texts):
        return {"said_answer": sum(problem.answer in t for t in texts) / len(texts), "short": 0.5 * all(len(t) < 40 for t in texts)}

    def feedback(problem, texts):
        return [f"agent {k} wrote {len(t)} characters" for k, t in enumerate(texts)]

    return FunctionProtocol(task, prompt=prompt, reward=reward, feedback=feedback, reward_range=(0.0, 1.5), **kwargs)


@pytest.fixture
def questions(tmp_path):
    path = tmp_path / "colours.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return path


def test_the_functions_make_the_prompt_the_reward_and_the_feedback(questions):
    protocol = colour_protocol(questions)
    assert isinstance(protocol, TextProtocol)
    env = de.text_env(protocol=protocol, max_turns=2)
    obs, _ = env.reset(seed=0, options={"problem_index": 0})
    problem = protocol.problems("train")[0]
    assert problem.question in obs["agent_0"]
    obs, rewards, _, _, infos = env.step({"agent_0": f"Answer: {problem.answer}", "agent_1": "no idea " * 10})
    assert infos["agent_0"]["reward_components"]["said_answer"] == 0.5
    assert infos["agent_0"]["reward_components"]["short"] == 0.0
    assert rewards["agent_0"] == rewards["agent_1"] == 0.5
    assert "agent 1 wrote 80 characters" in obs["agent_1"]


def test_a_function_protocol_refuses_what_it_cannot_seat_or_score(questions):
    with pytest.raises(ValueError, match="seats n_agents=2"):
        de.text_env(protocol=colour_protocol(questions), n_agents=3).reset(seed=0)
    with pytest.raises(TypeError, match="reward must be a function"):
        FunctionProtocol({"train": [], "test": []}, prompt=lambda *a: "", reward=3)
    over = FunctionProtocol(colour_protocol(questions), prompt=lambda *a: "q", reward=lambda p, t: 7.0)
    env = de.text_env(protocol=over)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not a finite number in"):
        env.step({"agent_0": "a", "agent_1": "b"})


@pytest.mark.parametrize("made", ["1.0", None, {"part": "high"}, {"part": True}], ids=["str", "None", "str part", "bool part"])
def test_a_reward_function_returning_no_number_is_named(questions, made):
    env = de.text_env(protocol=FunctionProtocol(colour_protocol(questions), prompt=lambda *a: "q", reward=lambda p, t: made))
    env.reset(seed=0)
    with pytest.raises(TypeError, match=r"protocol 'function': the reward function returned .*: return a number, or"):
        env.step({"agent_0": "a", "agent_1": "b"})


@pytest.mark.parametrize("made", [None, 5, [], ["hello"]], ids=["None", "int", "empty", "list of str"])
def test_a_prompt_function_returning_no_prompt_is_named(questions, made):
    protocol = FunctionProtocol(colour_protocol(questions), prompt=lambda *a: made, reward=lambda p, t: 0.0)
    with pytest.raises(TypeError, match=r"protocol 'function': the prompt function returned .*: return the user message"):
        de.text_env(protocol=protocol)  # the env renders every prompt once, to bound the observation


def test_a_team_size_other_than_the_envs_default_names_both(questions):
    with pytest.raises(ValueError, match="seats n_agents=3, got 2: give the env n_agents=3 too"):
        de.text_env(protocol=colour_protocol(questions, n_agents=3)).reset(seed=0)
    assert de.text_env(protocol=colour_protocol(questions, n_agents=3), n_agents=3).reset(seed=0)


def test_the_cli_names_a_protocol_by_import_path(questions, tmp_path, monkeypatch):
    module = tmp_path / "my_colours.py"
    module.write_text(
        "from test_function_protocol import colour_protocol\n"
        f"protocol = colour_protocol({str(questions)!r}, name='colours')\nnot_a_protocol = 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    assert build_protocol(TextEnvConfig(protocol="my_colours:protocol")).name == "colours"
    with pytest.raises(TypeError, match="is a int, not a TextProtocol"):
        TextEnvConfig(protocol="my_colours:not_a_protocol")
    with pytest.raises(ValueError, match="cannot import 'nothing'"):
        TextEnvConfig(protocol="my_colours:nothing")


def test_a_function_protocol_trains_for_one_update_with_the_tiny_model_and_resumes(questions, tmp_path):
    """Also the CoMLRL user's crash: a protocol instance in a run_dir's summary and
    checkpoint (recorded by its name), and a resumed run with a new instance of it."""
    settings = {"model": "tiny", "groups_per_update": 2, "group_size": 2, "max_new_tokens": 6, "micro_batch_size": 4}

    def config(name: str, updates: int, resume: bool = True) -> TextMAGRPOConfig:
        env = TextEnvConfig(protocol=colour_protocol(questions, name=name))
        run = text_run(updates=updates, progress=False, run_dir=str(tmp_path / "run"), resume=resume)
        return TextMAGRPOConfig(env=env, run=run, **settings)

    result = train(config("colours", 1, resume=False))
    assert len(result.history) == 1
    assert {"rewards/joint/mean", "rewards/said_answer/mean", "rewards/short/mean"} <= set(result.history[0])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["config"]["protocol"] == "<protocol colours>"
    resumed = train(config("colours", 2))
    assert [m["charts/update"] for m in resumed.history] == [1.0, 2.0]  # the run's updates, the first from its log
    with pytest.raises(ValueError, match=r"protocol is '<protocol colours>' there and '<protocol other>' here"):
        train(config("other", 3))


def test_the_deliberate_command_finds_a_protocol_module_in_the_working_directory(questions, tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "my_task.py").write_text(
        "import deliberation_env as de\nfrom deliberation_env.text.protocols import FunctionProtocol\n"
        f"task = de.tasks.get('jsonl', path={str(questions)!r}, answers='text')\n"
        "protocol = FunctionProtocol(task, prompt=lambda p, a, prev, fb: p.question, reward=lambda p, t: 0.25)\n"
    )
    deliberate = shutil.which("deliberate", path=str(Path(sys.executable).parent))
    done = subprocess.run(
        [deliberate, "train", "text", "grpo", "--protocol", "./my_task.py:protocol", "--model", "tiny",
         "--updates", "1", "--groups-per-update", "1", "--group-size", "2", "--max-new-tokens", "4", "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "0.250" in done.stdout  # the last update's joint reward, from the module's reward function


def test_a_cut_completion_is_played_as_the_neutral_text_unless_told(questions):
    """Red team: a completion cut after "Answer: red" earned the full reward, where the math
    protocol counts a cut answer as none (the env's ``text_if_cut`` info was None)."""
    env = de.text_env(protocol=colour_protocol(questions, neutral="(no answer)"))
    _, infos = env.reset(seed=0, options={"problem_index": 0})
    assert infos["agent_0"]["text_if_cut"] == "(no answer)"
    env = de.text_env(protocol=colour_protocol(questions, play_cut=True))
    _, infos = env.reset(seed=0, options={"problem_index": 0})
    assert infos["agent_0"]["text_if_cut"] is None
