"""``deliberate compare`` lists no option of a setting that the comparison sets for each run
(``--seed``, ``--run-dir``; the meta family's ``--reward-scale``), and refuses one in one line
that names the option saying it instead (``--seeds``, ``--out-dir``, ``--reward-scales``)."""

from __future__ import annotations

import re

import pytest

from algorithms import cli
from algorithms.core.help_text import ROLE
from algorithms.meta.config import PolicyGradientConfig
from algorithms.text.config import TextLearnerConfig

PER_RUN_OPTIONS = {"meta": {"--seed", "--run-dir", "--reward-scale"}, "text": {"--seed", "--run-dir"}}
INSTEAD = {"meta": {"--seeds", "--out-dir", "--reward-scales"}, "text": {"--seeds", "--out-dir"}}


def help_options(capsys, *args: str) -> set[str]:
    """The options that ``deliberate ARGS --help`` lists."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*args, "--help"])
    assert exit_info.value.code == 0
    return set(re.findall(r"^[│ ]\s*(--[a-z][a-z0-9.-]*)", capsys.readouterr().out, flags=re.MULTILINE))


@pytest.mark.parametrize("family", ["meta", "text"])
def test_compare_help_lists_no_per_run_option(capsys, family):
    options = help_options(capsys, "compare", family)
    assert not PER_RUN_OPTIONS[family] & options
    assert INSTEAD[family] | {"--updates", "--task", "--algos", "--eval-problems"} <= options
    if family == "text":
        assert "--reward-scale" in options  # the text env's, which every run shares


@pytest.mark.parametrize("family", ["meta", "text"])
def test_train_help_still_lists_them_after_a_compare_help(capsys, family):
    help_options(capsys, "compare", family)
    assert {"--seed", "--run-dir", "--reward-scale"} <= help_options(capsys, "train", family, "grpo")


@pytest.mark.parametrize("family", ["meta", "text"])
def test_a_per_run_option_is_one_error_naming_the_option_to_use(capsys, family):
    for given in (["--seed", "3"], ["--seed=3"]):
        with pytest.raises(ValueError, match=r"^compare sets --seed for each run: use --seeds \(got --seed 3\)$"):
            cli.parse(["compare", family, "--updates", "2", *given])
    with pytest.raises(ValueError, match=r"^compare sets --run-dir for each run: use --out-dir \(got --run-dir x\)$"):
        cli.parse(["compare", family, "--run-dir", "x"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", family, "--seed", "3"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"deliberate compare {family}: error: compare sets --seed for each run: use --seeds (got --seed 3)\n"


def test_the_meta_reward_scale_is_refused_the_text_one_is_shared():
    with pytest.raises(ValueError, match=r"^compare sets --reward-scale for each run: use --reward-scales"):
        cli.parse(["compare", "meta", "--reward-scale", "2"])
    assert cli.parse(["compare", "text", "--reward-scale", "2"]).command.command.learner.env.reward_scale == 2


def test_a_mistyped_seeds_is_pointed_to_seeds(capsys):
    with pytest.raises(ValueError, match=r"unrecognized option --seedz; did you mean --seeds\?"):
        cli.parse(["compare", "meta", "--seedz", "2"])


@pytest.mark.parametrize("family,template", [("meta", PolicyGradientConfig), ("text", TextLearnerConfig)])
def test_the_template_keeps_its_class_and_the_per_run_defaults(family, template):
    cfg = cli.parse(["compare", family, "--seeds", "4", "--updates", "5"]).command.command
    assert type(cfg.learner) is template and type(cfg.learner.run).__name__ == "RunConfig"
    assert (cfg.seeds, cfg.learner.run.updates) == (4, 5)
    assert (cfg.learner.seed, cfg.learner.run.run_dir) == (template().seed, template().run.run_dir)


@pytest.mark.parametrize("family", ["meta", "text"])
def test_resume_from_a_kept_checkpoint_is_refused_by_a_comparison(capsys, family):
    for given in ("3", "runs/x/checkpoints/update-000003"):  # a path would name a run folder too
        with pytest.raises(SystemExit):
            cli.main(["compare", family, "--resume-from", given, "--out-dir", "unused"])
        assert capsys.readouterr().err.endswith(f"compare sets --resume-from for each run: use --resume (got --resume-from '{given}')\n")


@pytest.mark.parametrize(
    "command", [("train", "text", "grpo"), ("train", "meta", "softrankpo"), ("compare", "text"), ("run", "text")]
)
def test_help_shows_no_sphinx_markup(capsys, command):
    """A client read ``:func:`~algorithms.core.advantages.grpo_advantages``` in ``--help``."""
    with pytest.raises(SystemExit):
        cli.main([*command, "--help"])
    printed = capsys.readouterr().out
    assert "--learning-rate" in printed or "--task" in printed  # the help itself
    assert not ROLE.search(printed) and "``" not in printed
    assert "`grpo_advantages`" in printed or command[0] != "train" or command[2] != "grpo"
