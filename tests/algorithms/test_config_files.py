"""``deliberate run|train|compare --config FILE``: the paper configs load and validate."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from algorithms import cli, harness
from algorithms.text import TEXT_CONFIGS

CONFIGS = sorted((Path(__file__).parents[2] / "examples" / "configs").glob("*.yaml"))


def test_there_is_a_config_per_paper_experiment():
    assert {path.stem for path in CONFIGS} >= {
        "mpdf_main_table", "mpdf_softrankpo_gsm8k", "magrpo_coding", "magrpo_math_smollm2",
    }  # fmt: skip


def assert_holds(cfg, data):
    """Every value written in the file arrived in the config (lists as tuples)."""
    for name, value in data.items():
        if isinstance(value, dict):
            assert_holds(getattr(cfg, name), value)
        else:
            assert getattr(cfg, name) == (tuple(value) if isinstance(value, list) else value), name


@pytest.mark.parametrize("path", CONFIGS, ids=lambda path: path.stem)
def test_each_config_loads_and_validates(path):
    data = yaml.safe_load(path.read_text())
    command = data.pop("command")
    cfg = cli.parse([command, "--config", str(path)])
    if data.get("env") == "text" and command != "run":  # the LLM-weight learners: algo picks the config class
        data.pop("env")
        assert type(cfg) is TEXT_CONFIGS[data.pop("algo")]
    else:
        assert isinstance(cfg, cli.CONFIGURABLE[command])
    assert_holds(cfg, data)


def test_flags_override_the_file_and_unset_fields_keep_the_commands_defaults():
    path = next(p for p in CONFIGS if p.stem == "mpdf_main_table")
    cfg = cli.parse(["run", "--config", str(path), "--n-problems", "5", "--task", "math"])
    assert (cfg.n_problems, cfg.env_args.task, cfg.env_args.n_agents) == (5, "math", 3)
    assert cfg.env_args.concede_rule == "most_confident"  # not in the file: the default


def test_a_bad_file_is_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("command: run\nenv_args:\n  teem: simulated\n")
    with pytest.raises(ValueError, match=r"config file .*bad.yaml: env_args: unknown EnvConfig fields \['teem'\]"):
        cli.parse(["run", "--config", str(bad)])
    bad.write_text("command: run\nenv_args:\n  team: simulatd\n")
    with pytest.raises(ValueError, match=r"bad.yaml: env_args: bad team spec 'simulatd'"):
        cli.parse(["run", "--config", str(bad)])
    with pytest.raises(ValueError, match=r"bad.yaml is for 'deliberate run', not 'deliberate train'"):
        cli.parse(["train", "--config", str(bad)])


def test_compare_reads_a_nested_train_env(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"command": "compare", "seeds": 2, "train": {"updates": 3, "env": {"team": "simulated", "max_rounds": 1}}}')
    cfg = cli.parse(["compare", "--config", str(path)])
    assert isinstance(cfg, harness.CompareConfig) and cfg.train.updates == 3
    assert (cfg.train.env.team, cfg.train.env.max_rounds, cfg.train.env.difficulty) == ("simulated", 1, 3)
    assert cfg.train.progress is False  # the compare template's own default survives
