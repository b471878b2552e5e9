"""``deliberate run|train|compare --config FILE``: the paper configs load and validate."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from algorithms import cli
from algorithms.core import config_files
from algorithms.core.config import RunConfig
from algorithms.meta.compare import CompareConfig
from algorithms.meta.config import CONFIGS as META_CONFIGS
from algorithms.meta.config import GRPOConfig
from algorithms.text import TEXT_CONFIGS, TextGRPOConfig
from algorithms.text.config import text_run
from deliberation_env import EnvConfig, TextEnvConfig

CLASSES = {name: kind for kind, (name, _) in cli.COMMANDS.items()}

CONFIGS = sorted((Path(__file__).parents[2] / "examples" / "configs").glob("*.yaml"))


def test_there_is_a_config_per_paper_experiment():
    assert {path.stem for path in CONFIGS} >= {
        "mpdf_main_table", "mpdf_softrankpo_gsm8k", "magrpo_coding", "magrpo_math_smollm2",
    }  # fmt: skip


def assert_holds(cfg, data):
    """Every value written in the file arrived in the config (lists as tuples)."""
    for name, value in data.items():
        if isinstance(value, dict) and not isinstance(getattr(cfg, name), dict):  # a part, not a mapping field
            assert_holds(getattr(cfg, name), value)
        else:
            assert getattr(cfg, name) == (tuple(value) if isinstance(value, list) else value), name


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: path.stem)
def test_each_config_loads_and_validates(path):
    data = yaml.safe_load(path.read_text())
    command = data.pop("command")
    cfg = parse(*command.split(), "--config", str(path))
    assert isinstance(cfg, CLASSES[command])
    if command.startswith("train"):  # a learner: algo picks the config class
        assert type(cfg.learner) is {"train meta": META_CONFIGS, "train text": TEXT_CONFIGS}[command][data.pop("algo")]
        cfg = cfg.learner
    assert_holds(cfg, data)


def parse(*args: str):
    """The config of the command ``deliberate ARGS`` (its leaf: ``RunMeta``, ``TrainMeta``, ...)."""
    return cli.parse(list(args)).command.command


def test_a_train_text_file_takes_its_algo_and_options_override_it(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("command: train text\nalgo: grpo\nenv: {task: arithmetic, difficulty: 2, max_turns: 2}\n"
                    "run: {updates: 7}\neps: 0.01\n")  # fmt: skip
    learner = parse("train", "text", "--config", str(path), "--eps", "0.5", "--max-turns", "3").learner
    assert type(learner) is TEXT_CONFIGS["grpo"]
    assert (learner.env.difficulty, learner.env.max_turns, learner.run.updates, learner.eps, learner.group_size) == (
        2, 3, 7, 0.5, 4,
    )  # fmt: skip
    with pytest.raises(ValueError, match="t.yaml trains grpo, the command line names softrankpo"):
        parse("train", "text", "softrankpo", "--config", str(path))


@pytest.mark.parametrize("family", ["text", "meta"])
def test_a_no_flag_right_after_the_file_of_a_learner_the_line_does_not_name(tmp_path, family):
    """A real client: ``train text --config FILE --no-progress`` was refused (``--no-progress
    is not an option of this command``), the same flag later on the line was not."""
    path = tmp_path / "t.yaml"
    path.write_text(f"command: train {family}\nalgo: grpo\nrun: {{updates: 7}}\n")
    learner = parse("train", family, "--config", str(path), "--no-progress", "--updates", "3").learner
    assert type(learner) is {"text": TEXT_CONFIGS, "meta": META_CONFIGS}[family]["grpo"]
    assert (learner.run.progress, learner.run.updates) == (False, 3)


def test_a_train_text_file_of_the_flat_layout_is_refused_naming_the_nested_fields(tmp_path):
    flat = tmp_path / "flat.yaml"
    flat.write_text("command: train text\nalgo: grpo\ntask: arithmetic\nupdates: 7\nmodle: tiny\n")
    with pytest.raises(ValueError, match=r"flat.yaml: unknown TextGRPOConfig fields \['modle', 'task', 'updates'\]; "
                                         r"write them nested: env.task, run.updates; known: "):  # fmt: skip
        parse("train", "text", "--config", str(flat))


def test_a_compare_text_file_names_the_nested_fields_under_its_prefix(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("command: compare text\nlearner: {task: arithmetic}\n")
    with pytest.raises(ValueError, match=r"c.yaml: learner: unknown \w+ fields \['task'\]; write them nested: learner.env.task"):
        parse("compare", "text", "--config", str(path))


def test_a_compare_text_file_gives_every_learner_its_learner_settings(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"command": "compare text", "algos": ["softrankpo"], "seeds": 1, "learner": {"kl_coef": 0.0}}')
    cfg = parse("compare", "text", "--config", str(path))
    assert (cfg.algos, cfg.seeds) == (("softrankpo",), 1)
    assert cfg.run_config("softrankpo", 0).kl_coef == 0.0  # given by the file, though at the shared default


def test_a_compare_text_file_nests_the_env_and_run_of_its_learner_settings(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("command: compare text\nlearner:\n  env: {task: arithmetic, n_agents: 3}\n  run: {updates: 2}\n")
    run = parse("compare", "text", "--config", str(path)).run_config("magrpo", 1)
    assert (run.env.n_agents, run.run.updates, run.run.run_dir.endswith("magrpo/seed1"), run.kl_coef) == (3, 2, True, 0.0)


def test_flags_override_the_file_and_unset_fields_keep_the_commands_defaults():
    path = next(p for p in CONFIGS if p.stem == "mpdf_main_table")
    cfg = parse("run", "--config", str(path), "--n-problems", "5", "--task", "math")
    assert (cfg.n_problems, cfg.env.task, cfg.env.n_agents) == (5, "math", 3)
    assert cfg.env.concede_rule == "most_confident"  # not in the file: the default


def test_a_bad_file_is_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("command: run\nenv:\n  teem: simulated\n")
    with pytest.raises(ValueError, match=r"config file .*bad.yaml: env: unknown EnvConfig fields \['teem'\]"):
        parse("run", "--config", str(bad))
    bad.write_text("command: run\nenv:\n  team: simulatd\n")
    with pytest.raises(ValueError, match=r"bad.yaml: env: bad team spec 'simulatd'"):
        parse("run", "--config", str(bad))
    bad.write_text("command: run\nn_problems: 2\n")
    with pytest.raises(ValueError, match=r"bad.yaml is for 'deliberate run', not 'deliberate train meta'"):
        parse("train", "meta", "grpo", "--config", str(bad))
    with pytest.raises(ValueError, match=r"bad.yaml is for 'deliberate run', not 'deliberate run text'"):
        parse("run", "text", "--config", str(bad))


def test_compare_meta_reads_a_nested_template(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"command": "compare meta", "seeds": 2, "learner": {"run": {"updates": 3}, "env": {"team": "simulated", "max_rounds": 1}}}')
    cfg = parse("compare", "meta", "--config", str(path))
    assert isinstance(cfg, CompareConfig) and cfg.learner.run.updates == 3
    assert (cfg.learner.env.team, cfg.learner.env.max_rounds, cfg.learner.env.difficulty) == ("simulated", 1, None)
    assert cfg.learner.run.eval_interval == 10  # not in the file: the run's own default


@pytest.mark.parametrize(
    "family, config",
    [
        ("meta", GRPOConfig(env=EnvConfig(task="gsm8k", path="sample", team=("simulated", "simulated"), n_agents=2),
                            run=RunConfig(updates=7, eval_interval=0, run_dir="runs/x"), kl_coef=0.1, sft_updates=3)),
        ("text", TextGRPOConfig(env=TextEnvConfig(task="arithmetic", n_agents=3, task_kwargs={"difficulty": 2}),
                                run=text_run(updates=5, eval_problems=4, eval_interval=2), kl_coef=0.05, lora_targets=("q_proj",))),
    ],
)  # fmt: skip
def test_a_config_file_in_the_new_shape_round_trips_for_both_families(tmp_path, family, config):
    data = config_files.to_data(config)
    assert {"env", "run", "kl_coef"} <= set(data) and data["run"]["updates"] == config.run.updates  # env, run, own fields
    for suffix, dump in ((".yaml", yaml.safe_dump), (".json", json.dumps)):
        path = tmp_path / f"grpo{suffix}"
        path.write_text(dump({"command": f"train {family}", "algo": "grpo", **data}))
        assert parse("train", family, "--config", str(path)).learner == config
        assert parse("train", family, "grpo", "--config", str(path), "--kl-coef", "0.3").learner.kl_coef == 0.3


# ----------------------------------------------------------------- files are data, read with bounded work
BILLION_LAUGHS = """command: run
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.parametrize(
    "text",
    [
        BILLION_LAUGHS,  # 9^9 "lol"s from 355 bytes
        BILLION_LAUGHS.replace("command: run\n", "command: run\nenv:\n  task_kwargs: *i\n"),
        "command: train\nbase: &base {n_agents: 2}\nenv:\n  <<: *base\n",  # a merge key needs an alias
        "command: train\nenv: &e {n_agents: 2}\n",  # an anchor alone
    ],
    ids=["billion-laughs", "bomb-in-an-Any-field", "merge-key", "anchor"],
)
def test_yaml_anchors_and_aliases_are_refused(tmp_path, text):
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    assert len(text.encode()) < 500
    with pytest.raises(ValueError, match=r"bomb.yaml: YAML anchors and aliases .* are not allowed"):
        parse(*{"run": ("run",), "train": ("train", "meta", "grpo")}[text.split()[1]], "--config", str(path))


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("deep.yaml", "command: run\nenv:\n  task_kwargs: " + "[" * 5000 + "]" * 5000, "deeper than 16 levels"),
        ("deep.json", '{"command": "run", "env": {"task_kwargs": ' + "[" * 100_000 + "]" * 100_000 + "}}", "nest too deep"),
        ("big.yaml", "command: run\n" + "# padding\n" * 110_000, "is over 1000000 bytes"),
        ("twice.yaml", "command: train\nupdates: 3\nupdates: 300\n", r"keys given twice: \['updates'\]"),
        ("merge.yaml", "command: train\nenv: {<<: {n_agents: 9}, max_rounds: 1}\n", r"merge keys \(<<\) are not allowed"),
        ("twice.json", '{"command": "train", "env": {"n_agents": 2, "n_agents": 9}}', r"keys given twice: \['n_agents'\]"),
        ("huge-int.yaml", "command: train\nupdates: " + "9" * 5000 + "\n", "huge-int.yaml: .*digits"),
        ("tagged.yaml", "command: train\nupdates: !!python/object/apply:os.system [echo hi]\n", "could not determine a constructor"),
        ("bad.yaml", "command: train\nupdates: [1\n", "bad.yaml: while parsing"),
    ],
)
def test_oversized_deep_or_ambiguous_files_are_refused(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        parse(*(("train", "meta", "grpo") if "train" in text[:30] else ("run",)), "--config", str(path))


@pytest.mark.parametrize(
    "command, text, message",
    [
        ("train meta grpo", "env:\n  n_agents: three", r"field 'env.n_agents': expected int, got str 'three'"),
        ("train meta softrankpo", "kl_coef: [1]", r"field 'kl_coef': expected float, got list \[1\]"),
        ("train meta grpo", "run: {updates: true}", r"field 'run.updates': expected int, got bool True"),
        ("train text grpo", "run: {updates: 2.0}", r"field 'run.updates': expected int, got float 2.0"),
        ("train meta", "algo: ppo", r"algo 'ppo' is not one of softrankpo, grpo, magrpo, sft"),
        ("train meta grpo", "env:\n  reward_scale: .nan", r"field 'env.reward_scale': expected float, got float nan \(not finite\)"),
        ("train meta grpo", "env:\n  w_global: .inf", r"field 'env.w_global': expected float, got float inf \(not finite\)"),
        ("train meta grpo", "env: text-ish", r"field 'env': expected a mapping of EnvConfig fields, got str"),
        ("train meta grpo", "env:\n  difficulty: '3'", r"field 'env.difficulty': expected int or null, got str '3'"),
        ("train meta grpo", "env:\n  team: 3", r"field 'env.team': expected str or a list of str, got int 3"),
        ("train meta grpo", "env:\n  team: [simulated, 3]", r"field 'env.team': expected str or a list of str"),
        ("train meta grpo", "env:\n  split: 2024-01-01", r"field 'env.split': expected str, got date"),
        ("train meta grpo", "env:\n  task_kwargs: [1]", r"field 'env.task_kwargs': expected a mapping or null, got list"),
        ("train meta grpo", "env:\n  simulated:\n    skill: [0.8, high]", r"field 'env.simulated.skill\[1\]': expected float, got str 'high'"),
        ("run", "policies: [independent, 3]", r"field 'policies\[1\]': expected str, got int 3"),
        ("run", "run_dir: 5", r"field 'run_dir': expected str, got int 5"),
        ("run text", "samples: two", r"field 'samples': expected int, got str 'two'"),
        ("compare meta", "learner:\n  env:\n    n_agents: [3]", r"field 'learner.env.n_agents': expected int, got list"),
        ("compare meta", "seeds: {n: 3}", r"field 'seeds': expected int, got mapping"),
        ("train text", "algo: grpo\nkl_coef: x", r"field 'kl_coef': expected float, got str 'x'"),
        ("train text magrpo", "finetune: qlora", r"field 'finetune': expected one of 'lora', 'full', got str 'qlora'"),
        ("train text magrpo", "lora_targets: q_proj", r"field 'lora_targets': expected a list of str, got str"),
        ("compare text", "learner: {kl_coef: [1]}", r"field 'learner.kl_coef': expected float, got list"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_its_field(tmp_path, command, text, message):
    path = tmp_path / "typo.yaml"
    path.write_text(f"command: {' '.join(command.split()[:2])}\n{text}\n")
    with pytest.raises(ValueError, match=r"config file .*typo.yaml: " + message):
        parse(*command.split(), "--config", str(path))


@pytest.mark.parametrize(
    "command, text, message",
    [
        ("train meta grpo", "updatez: 3", r"unknown GRPOConfig fields \['updatez'\]"),
        ("compare meta", "learner:\n  env:\n    simulated:\n      bogus: 1", r"learner.env.simulated: unknown SimulatedTeamConfig fields \['bogus'\]"),
        ("train meta grpo", "1: one", r"unknown GRPOConfig fields \['1'\]"),
        ("train text", "algo: grpo\ntemperture: 0.5", r"unknown TextGRPOConfig fields \['temperture'\]"),
        ("compare text", "learner: {lr: 1}", r"learner: unknown TextLearnerConfig fields \['lr'\]"),
        ("run", "env_args: {team: simulated}", r"unknown RunMeta fields \['env_args'\]"),
    ],
)
def test_an_unknown_field_is_refused_naming_it(tmp_path, command, text, message):
    path = tmp_path / "typo.yaml"
    path.write_text(f"command: {' '.join(command.split()[:2])}\n{text}\n")
    with pytest.raises(ValueError, match=message):
        parse(*command.split(), "--config", str(path))


def test_a_text_config_whose_algo_is_no_name_is_refused(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("command: train text\nalgo: [grpo]\n")
    with pytest.raises(ValueError, match=r"algo \['grpo'\] is not one of magrpo, grpo, softrankpo"):
        parse("train", "text", "--config", str(path))


def test_numbers_take_their_fields_type(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("command: train meta\nenv:\n  reward_scale: 2\n  team: [simulated, simulated]\n  n_agents: 2\nkl_coef: 0\n")
    cfg = parse("train", "meta", "softrankpo", "--config", str(path)).learner
    assert type(cfg.env.reward_scale) is float and type(cfg.kl_coef) is float
    assert cfg.env.team == ("simulated", "simulated")


def test_a_good_config_loads_and_runs(tmp_path):
    path = tmp_path / "good.yaml"
    path.write_text(
        f"command: run\nrun_dir: {tmp_path / 'tiny'}\nn_problems: 2\npolicies: [independent]\n"
        "env:\n  team: simulated\n  task: arithmetic\n  max_rounds: 1\n"
    )
    cli.main(["run", "--config", str(path)])
    results = json.loads((tmp_path / "tiny" / "results.json").read_text())
    assert "independent" in json.dumps(results)


def test_a_file_that_is_no_mapping_or_no_yaml_is_refused(tmp_path):
    listed = tmp_path / "list.yaml"
    listed.write_text("- command\n- run\n")
    with pytest.raises(TypeError, match="list.yaml: expected a mapping of config fields, got list"):
        parse("run", "--config", str(listed))
    other = tmp_path / "config.toml"
    other.write_text("command = 'run'\n")
    with pytest.raises(ValueError, match="use a .yaml, .yml or .json file"):
        parse("run", "--config", str(other))


def test_a_field_written_by_its_flag_name_is_named_by_its_field(tmp_path):
    """A real client wrote ``rollout_workers:`` (the flag is ``--rollout-workers``) and was
    told only that the field is unknown."""
    path = tmp_path / "t.yaml"
    path.write_text("algo: grpo\nrollout_workers: 2\n")
    with pytest.raises(ValueError, match=r"a file names them by field: workers \(not rollout_workers\)"):
        parse("train", "text", "--config", str(path))


def test_a_file_naming_its_command_is_read_under_torchrun(tmp_path, monkeypatch):
    """Under torchrun the command's name carries the rank, and a file's ``command: train``
    was refused as naming another command (a reviewer's find)."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    path = tmp_path / "t.yaml"
    path.write_text("command: train\nalgo: grpo\nrun: {updates: 7}\n")
    assert parse("train", "text", "--config", str(path)).learner.run.updates == 7


def test_a_meta_run_record_copied_out_of_its_folder_is_a_template(tmp_path):
    """A copied meta ``config.json`` kept its ``run_dir`` and ``resume``: it would have
    continued the original run."""
    config = GRPOConfig(run=RunConfig(run_dir="/elsewhere/run", resume=True))
    record = {"algo": "grpo", **dataclasses.asdict(config), "recorded_by": "deliberation-env 0.2.0"}
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(record))
    learner = parse("train", "meta", "--config", str(path)).learner
    assert (learner.run.run_dir, learner.run.resume) == ("", False)
