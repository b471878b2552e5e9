"""``deliberate train FAMILY PATH``: a learner of one's own trained alone from the command
line, by its import path in the learner's place, as ``compare`` takes one in ``--algos``:
the same run as ``train(config, learner=Mine)`` from Python, its config's own fields as
options and in ``config.json``, resumed by the same command or the run's ``config.json``
(which names the learner's path again: a file may not import code), and one line for
each mistake before anything is written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from helpers import refused

from algorithms import cli
from algorithms.core.checkpoints import load_checkpoint
from algorithms.core.config import RunConfig
from algorithms.meta import compare as meta_compare
from algorithms.meta.config import GRPOConfig
from algorithms.meta.grpo import GRPO
from algorithms.meta.train import train as meta_train
from algorithms.text import compare as text_compare
from algorithms.text import train as text_train
from algorithms.text.config import TextGRPOConfig, text_run
from algorithms.text.learners import TextGRPO
from deliberation_env.meta.config import EnvConfig
from deliberation_env.text import TextEnvConfig
from deliberation_env.text.config import import_attribute
from tests.algorithms.test_compare_user_learner import tiny_meta, tiny_text

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "15_custom_text_learner.py"
RLOO = f"{EXAMPLE}:RLOO"
PROTOCOL = f"{EXAMPLE}:protocol"
TEXT = ["--protocol", PROTOCOL, "--model", "tiny", "--groups-per-update", "1", "--group-size", "4",
        "--max-new-tokens", "4", "--temperature", "1.0", "--learning-rate", "1e-3", "--eval-problems", "0",
        "--no-progress"]  # fmt: skip
META = ["--team", "simulated", "--difficulty", "3", "--max-rounds", "2", "--eval-interval", "2", "--eval-problems", "8",
        "--groups-per-update", "2", "--group-size", "2", "--hidden-size", "16", "--num-heads", "2", "--sft-updates", "0",
        "--no-progress"]  # fmt: skip
CENTRED = """
from dataclasses import dataclass

from algorithms.meta.config import MAGRPOConfig
from algorithms.meta.grpo import GRPO


@dataclass
class CentredConfig(MAGRPOConfig):
    centre: bool = True
    '''Subtract the group mean from the returns.'''


class Centred(GRPO):
    name = "centred"
    config_class = CentredConfig

    def compute_advantages(self, returns):
        return returns - returns.mean(1, keepdim=True) if self.config.centre else returns
"""
MISTAKES = """
from dataclasses import dataclass

from algorithms.meta.grpo import GRPO
from algorithms.text.learners import TextGRPO


class Shipped(TextGRPO):
    '''Keeps TextGRPO's name.'''


class Meta(GRPO):
    name = "meta_one"


class Plain:
    def __init__(self, config, lm, venv, frozen, sampler=None):
        pass


@dataclass
class Unrelated:
    scale: float = 1.0


class Stray(TextGRPO):
    name = "stray"
    config_class = Unrelated
"""


@pytest.fixture
def beside(tmp_path, monkeypatch):
    """``centred.py`` and ``mistakes.py`` in the working directory (then forgotten)."""
    (tmp_path / "centred.py").write_text(CENTRED)
    (tmp_path / "mistakes.py").write_text(MISTAKES)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in ("centred", "mistakes"):
        sys.modules.pop(name, None)


def learned(folder: Path) -> dict[str, torch.Tensor]:
    """The tensors of a run's last checkpoint, flat."""

    def flat(state, prefix=""):
        for key, value in state.items():
            if isinstance(value, dict):
                yield from flat(value, f"{prefix}{key}.")
            elif isinstance(value, torch.Tensor):
                yield f"{prefix}{key}", value

    return dict(flat(load_checkpoint(folder / "checkpoint.safetensors")))


def logged(folder: Path) -> list[dict[str, float]]:
    """A run's ``metrics.jsonl`` without what depends on the clock."""
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [
        {
            k: v
            for k, v in record.items()
            if k not in ("time", "charts/sps", "charts/seconds") and not k.startswith("perf/")
        }
        for record in records
    ]


def same_tensors(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys() and a
    for name, tensor in a.items():
        torch.testing.assert_close(b[name], tensor, rtol=0, atol=0)


def test_a_text_learner_trained_by_path_is_the_run_train_gives_from_python(tmp_path, capsys):
    cli.main(
        [
            "train",
            "text",
            RLOO,
            *TEXT,
            "--loo-scale",
            "2",
            "--updates",
            "2",
            "--run-dir",
            str(tmp_path / "cli"),
        ]
    )
    module_rloo = import_attribute(RLOO, "learner")  # the class the command line imported
    config = module_rloo.config_class(
        env=TextEnvConfig(protocol=PROTOCOL), model="tiny", groups_per_update=1, group_size=4, max_new_tokens=4,
        temperature=1.0, learning_rate=1e-3, loo_scale=2.0,
        run=text_run(updates=2, eval_problems=0, progress=False, run_dir=str(tmp_path / "python")),
    )  # fmt: skip
    text_train(config, learner=module_rloo)

    recorded = json.loads((tmp_path / "cli" / "config.json").read_text())
    assert (
        recorded["loo_scale"] == 2.0 and recorded["algo"] == "rloo"
    )  # its own field, and its own name
    assert (
        logged(tmp_path / "cli") == logged(tmp_path / "python")
        and logged(tmp_path / "cli")[-1]["returns/ema"] != 0
    )
    same_tensors(learned(tmp_path / "python"), learned(tmp_path / "cli"))
    assert "RLOO" in capsys.readouterr().out  # the table names the learner trained


def test_a_text_learner_trained_by_path_resumes_by_its_command_or_its_config_json(tmp_path, capsys):
    whole, half, again = (tmp_path / name for name in ("whole", "half", "again"))
    cli.main(["train", "text", RLOO, *TEXT, "--updates", "2", "--run-dir", str(whole)])
    for folder in (half, again):
        cli.main(["train", "text", RLOO, *TEXT, "--updates", "1", "--run-dir", str(folder)])
    cli.main(["train", "text", RLOO, *TEXT, "--updates", "2", "--run-dir", str(half), "--resume"])
    capsys.readouterr()
    # the run's config.json: the path named again (a file may not import code), and the protocol's too
    err = refused(
        capsys,
        "train",
        "text",
        "--config",
        str(again / "config.json"),
        "--updates",
        "2",
        "--resume",
    )
    assert err.startswith(f"deliberate train text: error: config file {again / 'config.json'} records a run of rloo, "
                          "a learner of your own: name it again by its import path in the learner's place")  # fmt: skip
    cli.main(["train", "text", RLOO, "--config", str(again / "config.json"), "--protocol", PROTOCOL, "--updates", "2",
              "--resume"])  # fmt: skip

    assert logged(half) == logged(whole) == logged(again) and len(logged(whole)) == 2
    same_tensors(learned(whole), learned(half))
    same_tensors(learned(whole), learned(again))


def test_a_meta_learner_trained_by_path_takes_its_own_field_and_is_the_run_of_python(
    beside, capsys
):
    cli.main(["train", "meta", "./centred.py:Centred", *META, "--updates", "2", "--no-centre", "--joint-return", "sum",
              "--run-dir", str(beside / "cli")])  # fmt: skip
    recorded = json.loads((beside / "cli" / "config.json").read_text())
    assert (
        recorded["centre"] is False
        and recorded["joint_return"] == "sum"
        and recorded["algo"] == "centred"
    )
    assert "centred, seed 0" in " ".join(capsys.readouterr().out.split())

    centred = import_attribute("./centred.py:Centred", "learner")
    config = centred.config_class(
        env=EnvConfig(team="simulated", difficulty=3, max_rounds=2), sft_updates=0, groups_per_update=2, group_size=2,
        hidden_size=16, num_heads=2, centre=False, joint_return="sum",
        run=RunConfig(updates=2, eval_interval=2, eval_problems=8, progress=False, run_dir=str(beside / "python")),
    )  # fmt: skip
    meta_train(config, learner=centred)
    assert logged(beside / "cli") == logged(beside / "python")
    same_tensors(learned(beside / "python"), learned(beside / "cli"))

    cli.main(["train", "meta", "./centred.py:Centred", "--config", str(beside / "cli" / "config.json"),
              "--updates", "3", "--resume"])  # fmt: skip
    assert logged(beside / "cli")[-1]["step"] == 3  # continued, with the file's own field
    assert json.loads((beside / "cli" / "config.json").read_text())["centre"] is False


def test_the_help_of_train_names_the_import_path_form_and_a_learners_own_options(beside, capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "--help"])
    assert "./mine.py:RLOO" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        cli.main(["train", "meta", "./centred.py:Centred", "--help"])
    out = capsys.readouterr().out
    assert "--centre" in out and "--joint-return" in out


@pytest.mark.parametrize(
    ("family", "path", "error"),
    [
        (
            "text",
            "./missing.py:Mine",
            "learner './missing.py:Mine': cannot import 'Mine' from './missing.py'",
        ),
        ("text", "./mistakes.py:Nothing", "cannot import 'Nothing' from './mistakes.py'"),
        (
            "text",
            "./mistakes.py:Meta",
            "cannot be built as train text builds one, Mine(config, lm, venv, frozen,",
        ),
        ("meta", "./mistakes.py:Shipped", "cannot be built as train meta builds one"),
        ("text", "./mistakes.py:Plain", "is the class Plain, no algorithms.core.learner.Learner"),
        (
            "text",
            "./mistakes.py:Shipped",
            "learner './mistakes.py:Shipped' is named 'grpo', not a name of its own",
        ),
        (
            "text",
            "./mistakes.py:Stray",
            "takes a Unrelated, and train text builds a TextGRPOConfig for it",
        ),
    ],
)
def test_a_path_that_is_no_learner_of_the_family_is_one_line_before_anything_is_written(
    beside, capsys, family, path, error
):
    err = refused(capsys, "train", family, path, "--run-dir", str(beside / "run"))
    assert err.startswith(f"deliberate train {family}: error: ") and error in err, err
    assert not (beside / "run").exists()


def test_a_config_file_for_another_learner_is_refused(beside, capsys):
    config = beside / "softrankpo.yaml"
    config.write_text("algo: softrankpo\nrun: {updates: 2}\n")
    err = refused(capsys, "train", "meta", "./centred.py:Centred", "--config", str(config))
    assert err.endswith(f"config file {config} trains softrankpo, the command line names ./centred.py:Centred "
                        "(centred): give one")  # fmt: skip
    config.write_text(
        "algo: magrpo\nrun: {updates: 2}\n"
    )  # the learner its config derives from: its file serves
    parsed = cli.parse(
        ["train", "meta", "./centred.py:Centred", "--config", str(config)]
    ).command.command
    assert type(parsed.learner).__name__ == "CentredConfig" and parsed.learner.run.updates == 2
    assert parsed.own_learner.name == "centred"


def test_a_shipped_learner_trains_as_before(tmp_path):
    parsed = cli.parse(["train", "text", "grpo", "--model", "tiny"]).command.command
    assert parsed.own_learner is None and type(parsed.learner).__name__ == "TextGRPOConfig"


class KeepsTextGRPOsName(TextGRPO):
    """A learner of one's own that sets no ``name``: it inherits ``grpo``."""


class KeepsGRPOsName(GRPO):
    """The meta family's."""


@pytest.mark.parametrize("family", ["meta", "text"])
def test_train_from_python_refuses_a_learner_that_keeps_a_shipped_name_before_anything_is_written(tmp_path, family):
    """Its run's config.json would say grpo, and a resume from it would train the shipped GRPO."""
    config, train, learner = {
        "meta": (tiny_meta_config, meta_train, KeepsGRPOsName),
        "text": (tiny_text_config, text_train, KeepsTextGRPOsName),
    }[family]
    with pytest.raises(ValueError, match=rf"learner '{learner.__qualname__}' is named 'grpo', not a name of its own: "
                       rf"{learner.__qualname__} keeps .*GRPO's.*\(name = 'mine'\)"):  # fmt: skip
        train(config(str(tmp_path / "run")), learner=learner)
    assert not (tmp_path / "run").exists()


def test_compare_refuses_a_learner_that_keeps_a_shipped_name_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"learner 'mine' is named 'grpo', not a name of its own"):
        meta_compare.compare(tiny_meta(tmp_path, ("softrankpo", "mine")), learners={"mine": KeepsGRPOsName})
    with pytest.raises(ValueError, match=r"learner 'mine' is named 'grpo', not a name of its own"):
        text_compare.compare(tiny_text(tmp_path, ("grpo", "mine")), learners={"mine": KeepsTextGRPOsName})
    assert not (tmp_path / "meta").exists() and not (tmp_path / "text").exists()


def test_a_factory_without_a_name_is_recorded_by_the_learner_it_builds_and_checked_as_it(tmp_path):
    def centred(config, venv, warm_start=None):
        return import_attribute("./centred.py:Centred", "learner")(config, venv, warm_start=warm_start)

    def shipped_in_disguise(config, lm, venv, frozen, sampler=None):
        return KeepsTextGRPOsName(config, lm, venv, frozen, sampler=sampler)

    (tmp_path / "centred.py").write_text(CENTRED)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(tmp_path)
            config = import_attribute("./centred.py:Centred", "learner").config_class
            meta_train(tiny_meta_config(str(tmp_path / "meta"), kind=config), learner=centred)
    finally:
        sys.modules.pop("centred", None)
    assert json.loads((tmp_path / "meta" / "config.json").read_text())["algo"] == "centred"  # not its config's magrpo

    with pytest.raises(ValueError, match=r"is named 'grpo', not a name of its own: KeepsTextGRPOsName keeps"):
        text_train(tiny_text_config(str(tmp_path / "text")), learner=shipped_in_disguise)
    assert not (tmp_path / "text" / "config.json").exists()


def test_a_learner_that_keeps_a_shipped_name_still_trains_where_nothing_is_recorded():
    result = meta_train(tiny_meta_config(None), learner=KeepsGRPOsName)
    assert result.learner.update == 1 and type(result.learner) is KeepsGRPOsName


def tiny_meta_config(run_dir: str | None, kind: type = GRPOConfig) -> GRPOConfig:
    """One update of a tiny meta learner (``kind``, its config class) on the simulated team."""
    return kind(
        env=EnvConfig(team="simulated", difficulty=3, max_rounds=2), sft_updates=0, groups_per_update=2, group_size=2,
        hidden_size=16, num_heads=2, run=RunConfig(updates=1, eval_interval=0, eval_problems=0, progress=False, run_dir=run_dir),
    )  # fmt: skip


def tiny_text_config(run_dir: str | None) -> TextGRPOConfig:
    """One update of the tiny text model."""
    return TextGRPOConfig(
        env=TextEnvConfig(task="arithmetic"), model="tiny", groups_per_update=1, group_size=2, max_new_tokens=4,
        run=text_run(updates=1, eval_problems=0, progress=False, run_dir=run_dir),
    )


@pytest.mark.parametrize("learner", ["grpo", RLOO])
def test_a_learner_named_after_options_is_one_line_saying_where_it_goes(learner):
    """tyro reads the learner (a subcommand) only right after the family: one named after
    options is one line with the line rewritten, the protocol's import path left its value."""
    line = ["train", "text", "--model", "tiny", "--updates", "1", learner, "--protocol", f"{EXAMPLE}:protocol"]
    with pytest.raises(ValueError) as refused:
        cli.parse(line)
    assert str(refused.value) == (
        f"name the learner right after the family: deliberate train text {learner} "
        f"--model tiny --updates 1 --protocol {EXAMPLE}:protocol"
    )
    assert cli.misplaced_learner(["train", "text", "--protocol", f"{EXAMPLE}:protocol", "--model", "tiny"]) is None
