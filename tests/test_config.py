"""One home for the env's arguments (``deliberation_env.meta.config``) and team specs
(``agents.specs``): what the env, the vector env, the harness and the CLI all take."""

from __future__ import annotations

import dataclasses
import json

import pytest

import agents
import deliberation_env as de
from agents import LLMAgent
from agents.base import Generation, LogprobResult
from agents.cache import CachedBackend
from agents.simulated import SimulatedTeam
from agents.specs import backend_from_spec, parse_spec
from algorithms import cli
from algorithms.meta.config import GRPOConfig
from deliberation_env.meta.config import EnvConfig, SimulatedTeamConfig
from deliberation_env.meta.team import build_team


class FakeBackend:
    """A backend that answers ``The answer is 4.`` and is always half sure; records its calls."""

    model_id = "fake:model"
    supports_logprobs = True

    def __init__(self):
        self.calls = 0

    def generate(self, requests):
        self.calls += 1
        return [Generation("The answer is 4.", prompt_tokens=10, completion_tokens=5, finish_reason="stop") for _ in requests]

    def next_token_logprobs(self, requests):
        return [LogprobResult((-1.0, -1.0), prompt_tokens=10) for _ in requests]


def write_gsm8k(folder):
    """A two-split GSM8K folder of three problems each."""
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        lines = [
            {"question": f"What is {k} + {k}?", "answer": f"{k} plus {k}.\n#### {2 * k}"} for k in range(1, 4)
        ]
        (folder / f"{split}.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return folder


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("llamacpp", ("llamacpp", {})),
        ("llamacpp:/models/q.gguf", ("llamacpp", {"model_path": "/models/q.gguf"})),
        ("transformers:/models/qwen", ("transformers", {"model": "/models/qwen"})),
        ("vllm:Qwen/Qwen2.5-7B-Instruct", ("vllm", {"model": "Qwen/Qwen2.5-7B-Instruct"})),
        ("openai:http://h:8000/v1#Llama-3.1-8B", ("openai", {"base_url": "http://h:8000/v1", "model": "Llama-3.1-8B"})),
    ],
)
def test_backend_specs_parse_into_make_backend_arguments(spec, parsed):
    assert parse_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["gpt-9", "openai:http://h:8000/v1", "openai:#m", "transformers", "vllm:", ""])
def test_a_bad_spec_is_named_before_anything_is_built(spec):
    with pytest.raises(ValueError, match=f"bad team spec {spec!r}"):
        EnvConfig(team=spec)
    with pytest.raises(ValueError, match=f"bad team spec {spec!r}"):
        de.parallel_env(team=["simulated", spec, "simulated"])


def test_a_spec_builds_a_cached_llm_agent_with_the_sampling_settings(tmp_path, monkeypatch):
    made = []

    def fake_make_backend(name, **kwargs):
        made.append((name, kwargs))
        return FakeBackend()

    monkeypatch.setattr(agents.specs, "make_backend", fake_make_backend)
    backend_from_spec.cache_clear()
    spec = "openai:http://127.0.0.1:9/v1#tiny"
    config = EnvConfig(team=spec, temperature=0.2, max_tokens=64, cache=str(tmp_path / "c.db"))
    team = build_team(config)
    assert made == [("openai", {"base_url": "http://127.0.0.1:9/v1", "model": "tiny"})]
    member = team[0]
    assert all(solver is member for solver in team)
    assert isinstance(member, LLMAgent) and isinstance(member.backend, CachedBackend)
    assert (member.temperature, member.max_tokens, member.backend.path) == (0.2, 64, tmp_path / "c.db")
    build_team(dataclasses.replace(config, temperature=None))  # the same spec and cache: the same backend
    assert len(made) == 1
    backend_from_spec.cache_clear()


def test_the_default_team_is_the_bundled_model_in_int8_ctranslate2(tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr(agents.specs, "make_backend", lambda name, **kwargs: made.append((name, kwargs)) or FakeBackend())
    backend_from_spec.cache_clear()
    assert EnvConfig().team == "smollm2"
    build_team(EnvConfig(cache=str(tmp_path / "c.db")))
    backend_from_spec.cache_clear()
    agents.smollm2_agent(cache=tmp_path / "d.db")
    backend_from_spec.cache_clear()
    assert made == [("ctranslate2", {"quantization": "int8"})] * 2


def test_the_default_team_spec_samples_at_smollm2s_temperature_within_the_top_k(tmp_path, monkeypatch):
    monkeypatch.setattr(agents.specs, "make_backend", lambda name, **kwargs: FakeBackend())
    backend_from_spec.cache_clear()
    member = build_team(EnvConfig(team="smollm2", cache=str(tmp_path / "c.db")))[0]
    assert (member.temperature, member.top_k) == (agents.SMOLLM2_TEMPERATURE, agents.SMOLLM2_TOP_K) == (0.3, 50)
    member = build_team(EnvConfig(team="smollm2", temperature=0.9, top_k=0, cache=str(tmp_path / "c.db")))[0]
    assert (member.temperature, member.top_k) == (0.9, 0)
    backend_from_spec.cache_clear()
    with pytest.raises(ValueError, match="top_k must be >= 0"):
        EnvConfig(team="smollm2", top_k=-1)
    with pytest.raises(ValueError, match="top_k apply to LLM members given by spec"):
        EnvConfig(team="simulated", top_k=5)


def test_sampling_settings_without_an_llm_member_are_refused():
    with pytest.raises(ValueError, match="temperature apply to LLM members given by spec"):
        EnvConfig(team="simulated", temperature=0.5)


def test_heterogeneous_team_shares_one_solver_per_spec_or_object():
    backend = FakeBackend()
    team = build_team(EnvConfig(team=["simulated", backend, "simulated", backend], n_agents=4))
    assert team[0] is team[2] and isinstance(team[0], SimulatedTeam)
    assert team[1] is team[3] and isinstance(team[1], LLMAgent) and team[1].backend is backend
    venv = de.vector_env(2, team=["simulated", backend, "simulated", backend], n_agents=4, max_rounds=1)
    obs, _ = venv.reset(seed=0)
    assert obs["agent_3"]["peers"].shape == (2, 3, 11)
    assert backend.calls  # the fake member answered


def test_simulated_knobs_reach_the_team():
    config = EnvConfig(team="simulated", simulated=SimulatedTeamConfig(skill=(0.1,), calibration=0.0))
    assert build_team(config)[0].model_id == "simulated:skill=0.1,calibration=0"



def test_simulated_knobs_from_python_may_be_a_dict_of_their_fields():
    config = EnvConfig(team="simulated", simulated={"skill": (0.1,), "calibration": 0.0})
    assert config.simulated == SimulatedTeamConfig(skill=(0.1,), calibration=0.0)
    assert build_team(config)[0].model_id == "simulated:skill=0.1,calibration=0"
    with pytest.raises(ValueError, match="simulated has no setting skil; known: skill, refine_gain"):
        EnvConfig(team="simulated", simulated={"skil": (0.1,)})
    with pytest.raises(TypeError, match="simulated must be a SimulatedTeamConfig or a dict of its fields, got int"):
        EnvConfig(team="simulated", simulated=3)


def test_simulated_knobs_on_a_team_without_a_simulated_member_warn_that_they_change_nothing(recwarn):
    with pytest.warns(UserWarning, match=r"simulated.skill, simulated.calibration\) change nothing: team 'smollm2'"):
        EnvConfig(team="smollm2", simulated={"skill": (0.1,), "calibration": 0.0})
    with pytest.warns(UserWarning, match="simulated.skill"):
        cli.parse(["train", "meta", "grpo", "--team", "smollm2", "--simulated.skill", "0.5"])
    recwarn.clear()
    EnvConfig(team=["simulated", "smollm2"], n_agents=2, simulated={"skill": (0.1,)})  # a member uses them
    EnvConfig(team="smollm2")  # the defaults: nothing set
    assert not [w for w in recwarn if "simulated" in str(w.message)]

def test_path_and_difficulty_become_task_arguments(tmp_path):
    write_gsm8k(tmp_path)
    env = de.parallel_env(task="gsm8k", path=str(tmp_path), team="simulated", split="test")
    assert [p.id for p in env.problems] == ["gsm8k-test-0", "gsm8k-test-1", "gsm8k-test-2"]
    assert de.parallel_env(task="arithmetic", difficulty=5, team="simulated").task.difficulty == 5
    with pytest.raises(ValueError, match="difficulty is an argument of task 'arithmetic' only, got task 'gsm8k'"):
        EnvConfig(task="gsm8k", path=str(tmp_path), difficulty=2)
    with pytest.raises(ValueError, match="path is given twice"):
        EnvConfig(task="gsm8k", path=str(tmp_path), task_kwargs={"path": str(tmp_path)})


def test_the_harness_and_the_cli_nest_the_same_config():
    assert EnvConfig is de.EnvConfig
    assert [f.name for f in dataclasses.fields(GRPOConfig().env)] == [f.name for f in dataclasses.fields(EnvConfig)]
    train = cli.parse(["train", "meta", "grpo", "--team", "simulated", "simulated", "--n-agents", "2"]).command.command.learner
    assert train.env.team == ("simulated", "simulated")
    run = cli.parse(["run", "--task", "gsm8k", "--path", "data", "--team", "llamacpp:m.gguf"]).command.command
    assert (run.env.task, run.env.path, run.env.team) == ("gsm8k", "data", "llamacpp:m.gguf")
    assert run.env.split == "test"


def test_run_defaults_its_problem_count_per_family():
    assert cli.parse(["run"]).command.command.n_problems == 24
    assert cli.parse(["run", "text"]).command.command.n_problems == 8
    assert cli.parse(["run", "text", "--n-problems", "3"]).command.command.n_problems == 3


def test_deliberate_run_takes_any_task_with_its_data(tmp_path, capsys):
    data = write_gsm8k(tmp_path / "gsm8k")
    cli.main([
        "run", "--task", "gsm8k", "--path", str(data), "--team", "simulated", "--n-problems", "3",
        "--policies", "independent", "debate", "--run-dir", str(tmp_path / "g"),
    ])
    record = json.loads((tmp_path / "g" / "results.json").read_text())
    assert record["config"]["env"]["task"] == "gsm8k"
    assert [r["policy"] for r in record["results"]] == ["independent", "debate"]
    assert all(r["n_problems"] == 3 for r in record["results"])
    assert "on gsm8k" in capsys.readouterr().out


def test_deliberate_run_names_a_bad_team_spec(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--team", "simulated", "simulatd", "simulated", "--run-dir", str(tmp_path / "r")])
    assert "bad team spec 'simulatd'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_main_job_steps_every_problem_at_once_with_the_same_episodes(tmp_path, monkeypatch):
    """By default one vector env holds every problem (one backend call per phase across
    problems); the episodes are those of any other --num-envs (seeds follow the problem)."""
    sizes = []
    make = de.vector_env_from
    monkeypatch.setattr(de, "vector_env_from", lambda config, n, **kw: sizes.append(n) or make(config, n, **kw))
    results = {}
    for name, extra in (("all", []), ("two", ["--num-envs", "2"])):
        cli.main(["run", "--team", "simulated", "--n-problems", "5", "--policies", "independent", "debate",
                  "--run-dir", str(tmp_path / name), *extra])
        record = json.loads((tmp_path / name / "results.json").read_text())
        results[name] = [{k: v for k, v in r.items() if k != "seconds"} for r in record["results"]]
    assert sizes[0] == 5 and 2 in sizes
    assert results["all"] == results["two"]
