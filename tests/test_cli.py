"""The ``deliberate`` command line as a newcomer meets it (issues 25 and 26): one grammar,
old spellings named, every mistake one line without a traceback, every run in a folder of
its own, ``--resume`` explicit and checked before anything is written, the table and the
paths at the end, and a help that loads no torch. Simulated team, tiny budgets."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from helpers import refused

import deliberation_env as de
from algorithms import cli
from algorithms.core import metrics
from algorithms.core.compare import mean_and_interval

TINY_TRAIN = [
    "--team", "simulated", "--difficulty", "3", "--max-rounds", "2", "--updates", "2", "--sft-updates", "1",
    "--eval-interval", "2", "--eval-problems", "8", "--groups-per-update", "2", "--group-size", "2",
    "--hidden-size", "16", "--num-heads", "2", "--no-progress",
]  # fmt: skip


# ---------------------------------------------------------------------------- help
def test_every_commands_help_imports_no_torch():
    helps = [[], ["run"], ["run", "text"], ["train"], ["train", "meta", "grpo"], ["train", "text", "grpo"],
             ["evaluate", "meta"], ["evaluate", "text"], ["compare", "meta"], ["compare", "text"], ["tasks", "show"], ["cache", "merge"]]  # fmt: skip
    script = (
        "import sys\nfrom algorithms.cli import main\n"
        f"for args in {helps!r}:\n"
        "    try:\n        main([*args, '--help'])\n    except SystemExit as done:\n        assert done.code == 0, args\n"
        "print(sorted(m for m in ('torch', 'transformers', 'peft', 'matplotlib') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "deliberate train text grpo" in done.stdout and "deliberate train meta grpo" in done.stdout
    assert "--kl-coef" in done.stdout and "--grpo.kl-coef" not in done.stdout


@pytest.mark.parametrize("family", ["meta", "text"])
def test_a_learners_help_lists_each_option_once_with_no_prefix(capsys, family):
    with pytest.raises(SystemExit):
        cli.main(["train", family, "grpo", "--help"])
    options = re.findall(r"^[│ ]\s*(--[a-z][a-z0-9.-]*)", capsys.readouterr().out, flags=re.MULTILINE)  # a box, or none
    prefixes = {"--grpo", "--softrankpo", "--magrpo", "--sft", "--run", "--env", "--learner", "--train"}
    assert len(options) == len(set(options)) and not {option.partition(".")[0] for option in options if "." in option} & prefixes
    assert {"--kl-coef", "--learning-rate", "--group-size", "--updates", "--run-dir", "--resume", "--eval-interval",
            "--eval-problems", "--checkpoint-interval", "--task", "--seed"} <= set(options)  # fmt: skip
    assert not {"--algo", "--eval-every", "--problem-pool.seed", "--grpo.seed"} & set(options)


# ---------------------------------------------------------------------------- one grammar
def test_the_family_and_the_learner_are_subcommands_of_one_grammar():
    assert type(cli.parse(["run"]).command.command).__name__ == "RunMeta"  # the main job
    assert type(cli.parse(["run", "meta", "--team", "simulated"]).command.command).__name__ == "RunMeta"
    assert type(cli.parse(["run", "text"]).command.command).__name__ == "RunText"
    for family, kind in (("meta", "GRPOConfig"), ("text", "TextGRPOConfig")):
        learner = cli.parse(["train", family, "grpo", "--updates", "3", "--kl-coef", "0.1"]).command.command.learner
        assert (type(learner).__name__, learner.run.updates, learner.kl_coef) == (kind, 3, 0.1)
    assert type(cli.parse(["compare", "meta"]).command.command).__name__ == "CompareConfig"
    assert type(cli.parse(["compare", "text"]).command.command).__name__ == "TextCompare"


def test_each_option_has_one_name_in_train_and_compare():
    train = cli.parse(["train", "meta", "grpo", "--kl-coef", "0.1", "--difficulty", "2", "--env-workers", "2"])
    compare = cli.parse(["compare", "meta", "--kl-coef", "0.1", "--difficulty", "2", "--env-workers", "2"])
    for template in (train.command.command.learner, compare.command.command.learner):
        assert (template.kl_coef, template.env.difficulty, template.env.workers) == (0.1, 2, 2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "meta", "grpo", "--kl-coeff", "0.1"], "deliberate train meta grpo: error: unrecognized option --kl-coeff; did you mean --kl-coef?"),
        (["train", "text", "grpo", "--upates", "3"], "deliberate train text grpo: error: unrecognized option --upates; did you mean --updates?"),
        (["compare", "meta", "--sedes", "2"], "deliberate compare meta: error: unrecognized option --sedes; did you mean --seeds?"),
        # the nearest of this command's own (a real client was offered train meta's --env-workers)
        (["train", "text", "grpo", "--workers", "2"], "deliberate train text grpo: error: unrecognized option --workers; did you mean --rollout-workers?"),
        # an option of another command, where tyro says "misplaced" (its box had no one line)
        (["train", "meta", "magrpo", "--eps", "0.1"], "deliberate train meta magrpo: error: --eps is not an option of this command but of deliberate train meta grpo"),
        (["train", "--updates", "2", "meta", "grpo"], "deliberate train: error: --updates is not an option of this command but of deliberate train meta grpo"),
        (["trian"], "deliberate: error: unrecognized command trian; did you mean train?"),
        # a flag's misspelt name: the form that turns it on, not its --no- form (a GPU client was offered that)
        (["train", "text", "grpo", "--gradient-checkpoint"], "deliberate train text grpo: error: unrecognized option --gradient-checkpoint; did you mean --gradient-checkpointing?"),
        (["compare", "text", "--master-weight"], "deliberate compare text: error: unrecognized option --master-weight; did you mean --master-weights?"),
        (["train", "text", "grpo", "--no-master-weight"], "deliberate train text grpo: error: unrecognized option --no-master-weight; did you mean --no-master-weights?"),
        # TRL's names (the TRL client): ours named
        (["train", "text", "grpo", "--epsilon-high", "0.28"], "deliberate train text grpo: error: unrecognized option --epsilon-high: that is TRL's name; here it is --clip-eps-high"),
        (["train", "text", "magrpo", "--num-generations", "8"], "deliberate train text magrpo: error: unrecognized option --num-generations: that is TRL's name; here it is --group-size"),
        (["train", "meta", "grpo", "--beta", "0.1"], "deliberate train meta grpo: error: unrecognized option --beta: that is TRL's name; here it is --kl-coef"),
        (["train", "text", "grpo", "--bf16"], "deliberate train text grpo: error: unrecognized option --bf16: that is TRL's name; here it is --dtype bfloat16"),
        (["train", "text", "grpo", "--torch-dtype", "float16"],
         "deliberate train text grpo: error: unrecognized option --torch-dtype: that is TRL's name; here it is --dtype (auto, float32, bfloat16 or float16)"),
        (["train", "text", "grpo", "--resume-from-checkpoint", "x"],
         ("deliberate train text grpo: error: unrecognized option --resume-from-checkpoint: that is TRL's name; here it is --resume "
         "(from the newest checkpoint) or --resume-from update-NNNNNN (a kept one)")),
        (["train", "meta", "grpo", "--loss-type", "dapo"], "deliberate train meta grpo: error: unrecognized option --loss-type"),  # a text learners' option
        (["train", "text", "grpo", "--sync-ref-model"],
         ("deliberate train text grpo: error: unrecognized option --sync-ref-model: TRL's, not here: TRL refuses it with PEFT; "
          "full fine-tuning's reference here is the base it started from")),
        (["train", "text", "grpo", "--vllm-mode", "colocate"],  # a prefix of TRL's options without a counterpart
         ("deliberate train text grpo: error: unrecognized option --vllm-mode: TRL's, not here: no vLLM engine in training "
          "yet (--use-vllm): the torch sampler decodes the whole team in one mixed-adapter batch")),
        (["train", "text", "grpo", "--disable-dropout"],
         ("deliberate train text grpo: error: unrecognized option --disable-dropout: TRL's, not here: dropout is always off "
          "here (the models run in eval mode; LoRA's dropout is 0)")),
        (["train", "meta", "grpo", "--disable-dropout"], "deliberate train meta grpo: error: unrecognized option --disable-dropout"),
        # CoMLRL's names (the CoMLRL client porting MAGRPO): ours named
        (["train", "text", "magrpo", "--num-turns", "2"],
         ("deliberate train text magrpo: error: unrecognized option --num-turns: that is CoMLRL's name; here it is --max-turns "
          "(CoMLRL's turns branch into a tree, here rollout tree: the default is parallel rollouts)")),
        (["train", "text", "magrpo", "--termination-threshold", "0.5"],
         ("deliberate train text magrpo: error: unrecognized option --termination-threshold: that is CoMLRL's name; here it is "
          "--stop-threshold (a joint sample's episode ends once its joint reward reaches it, that reward then counting at "
          "every turn left; CoMLRL stops a node's samples once their mean reward exceeds it)")),
        (["compare", "text", "--discount", "0.9"],
         "deliberate compare text: error: unrecognized option --discount: that is CoMLRL's name; here it is --gamma (CoMLRL's default is 0.9, ours 1.0)"),
        (["train", "text", "magrpo", "--joint-mode", "cross"],
         "deliberate train text magrpo: error: unrecognized option --joint-mode: that is CoMLRL's name; here it is --pairing (aligned or cross, as CoMLRL's; cross for one turn, aligned with rollout tree)"),
        (["train", "text", "magrpo", "--eval-num-samples", "4"],
         "deliberate train text magrpo: error: unrecognized option --eval-num-samples: that is CoMLRL's name; here it is --eval-problems (held-out problems per evaluation)"),
        (["train", "text", "magrpo", "--logging-steps", "1"],
         "deliberate train text magrpo: error: unrecognized option --logging-steps: CoMLRL's, not here: every update is logged, to metrics.jsonl"),
        (["train", "meta", "grpo", "--num-turns", "2"], "deliberate train meta grpo: error: unrecognized option --num-turns; did you mean --max-turns?"),  # no CoMLRL hint: the text seat's
    ],
)  # fmt: skip
def test_a_mistyped_flag_is_one_short_line_naming_the_nearest_flag(capsys, args, message):
    assert refused(capsys, *args) == message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cache", "stats", "/tmp/mine.sqlite"],  # a new user's first guess: tyro's box before
         "deliberate cache stats: error: unexpected argument /tmp/mine.sqlite; did you mean --path /tmp/mine.sqlite?"),
        (["run", "data/gsm8k"], "deliberate run: error: unexpected argument data/gsm8k; did you mean --path data/gsm8k?"),
        (["train", "text", "magrpo", "my.yaml"],
         "deliberate train text magrpo: error: unexpected argument my.yaml; did you mean --config my.yaml?"),
        (["run", "meta", "text"],
         "deliberate run meta text: error: unexpected argument text: deliberate run meta takes options only (deliberate run meta --help lists them)"),
        (["tasks", "list", "all"],
         "deliberate tasks list: error: unexpected argument all: deliberate tasks list takes options only (deliberate tasks list --help lists them)"),
    ],
)  # fmt: skip
def test_a_stray_argument_is_one_line_offering_the_option_it_belongs_to(capsys, args, message):
    assert refused(capsys, *args) == message


def test_a_missing_family_or_learner_is_one_line_naming_the_choices(capsys):
    assert refused(capsys, "train") == "deliberate train: error: name one of meta, text after the command"
    assert refused(capsys, "train", "meta") == (
        "deliberate train meta: error: name one of softrankpo, grpo, magrpo, sft after the command"
    )


def test_run_text_defaults_to_a_task_it_can_run():
    cfg = cli.parse(["run", "text"]).command.command
    assert cfg.task == "humaneval"
    assert len(de.tasks.get(cfg.task).problems(cfg.split)) >= cfg.n_problems


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["compare", "meta", "--algos", "softrankpo,grpo"], "did you mean --algos softrankpo grpo?"),
        (["compare", "meta", "--reward-scales=0.1,1"], "did you mean --reward-scales 0.1 1?"),
        (["train", "text", "grpo", "--algo", "grpo"], "unrecognized option --algo"),
    ],
)
def test_a_misspelled_list_or_learner_names_the_right_spelling(capsys, args, names):
    assert names in refused(capsys, *args)


# ---------------------------------------------------------------------------- mistakes: one line each
def test_a_task_that_needs_data_without_path(capsys, tmp_path):
    err = refused(capsys, "run", "--task", "jsonl", "--team", "simulated", "--run-dir", str(tmp_path / "r"))
    assert err.startswith("deliberate run: error: task 'jsonl' reads its problems from data: give path (--path)")


def test_an_unknown_task_gets_a_did_you_mean(capsys):
    err = refused(capsys, "run", "--task", "gsm8", "--team", "simulated")
    assert err == (f"deliberate run: error: unknown task 'gsm8'; known: {', '.join(de.tasks.names())}; "
                   "did you mean 'gsm8k'?")  # fmt: skip


def test_a_missing_data_file(capsys, tmp_path):
    missing = tmp_path / "no-such.jsonl"
    err = refused(capsys, "run", "--task", "jsonl", "--path", str(missing), "--team", "simulated")
    assert err.startswith("deliberate run: error:") and str(missing) in err


def test_a_test_only_folder_for_training(capsys, tmp_path):
    folder = tmp_path / "gsm8k"
    folder.mkdir()
    (folder / "test.jsonl").write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    err = refused(capsys, "train", "meta", "softrankpo", "--task", "gsm8k", "--path", str(folder), *TINY_TRAIN[:2],
                  *TINY_TRAIN[4:], "--run-dir", str(tmp_path / "run"))  # fmt: skip
    assert err.startswith("deliberate train meta softrankpo: error:") and "no train.jsonl" in err


def test_a_config_file_with_an_unknown_field_and_a_missing_one(capsys, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("command: run\nn_problem: 3\n")
    err = refused(capsys, "run", "--config", str(path))
    assert err.startswith(f"deliberate run: error: config file {path}: unknown RunMeta fields ['n_problem']")
    assert "deliberate run: error:" in refused(capsys, "run", "--config", str(tmp_path / "none.yaml"))


@pytest.mark.parametrize(
    ("command", "text", "named"),
    [
        (("train", "text"), "algo: magrpo\nenv:\n  num_turns: 2\n", "env.num_turns: that is CoMLRL's name; here it is the key env.max_turns"),
        (("train", "text"), "algo: magrpo\nnum_turns: 2\n", "num_turns: that is CoMLRL's name; here it is the key env.max_turns"),
        (("train", "text"), "algo: magrpo\ndiscount: 0.9\n", "discount: that is CoMLRL's name; here it is the key gamma"),
        (("compare", "text"), "learner:\n  run:\n    eval_num_samples: 4\n",
         "learner.run.eval_num_samples: that is CoMLRL's name; here it is the key learner.run.eval_problems"),
    ],
)  # fmt: skip
def test_a_config_file_key_of_comlrl_names_ours(capsys, tmp_path, command, text, named):
    """A CoMLRL user's config keeps its names: the file was refused with every field there
    is, and none of them said which was ``num_turns``."""
    path = tmp_path / "comlrl.yaml"
    path.write_text(text)
    assert refused(capsys, *command, "--config", str(path)).startswith(f"deliberate {' '.join(command)}: error: config file {path}: {named}")


def test_a_config_check_names_the_value_not_tyros_internals(capsys):
    err = refused(capsys, "run", "--team", "simulated", "--n-agents", "1")
    assert err == "deliberate run: error: n_agents must be >= 2, got 1"
    err = refused(capsys, "train", "text", "magrpo", "--group-size", "1")
    assert err.startswith("deliberate train text magrpo: error: group_size")


def test_under_torchrun_each_ranks_error_says_its_rank(capsys, monkeypatch):
    """Every rank of a ``torchrun`` job prints its error: a real client could not tell the
    lines apart, nor which rank failed where they differ."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    err = refused(capsys, "train", "text", "magrpo", "--group-size", "1")
    assert err.startswith("deliberate train text magrpo [rank 1]: error: group_size")


def test_debug_shows_the_traceback():
    with pytest.raises(ValueError, match="n_agents must be >= 2"):
        cli.main(["run", "--team", "simulated", "--n-agents", "1", "--debug"])


def test_tensorboard_names_its_extra_before_anything_is_written(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(metrics.importlib.util, "find_spec", lambda name: None)
    err = refused(capsys, "train", "meta", "softrankpo", *TINY_TRAIN, "--tensorboard", "--run-dir", str(tmp_path / "run"))
    assert err == "deliberate train meta softrankpo: error: --tensorboard needs the 'tensorboard' extra: pip install 'deliberation-env[tensorboard]'"
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------------- runs
def test_train_gets_a_folder_of_its_own_and_prints_its_table_and_files(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli.main(["train", "meta", "softrankpo", *TINY_TRAIN])
    cli.main(["train", "meta", "softrankpo", *TINY_TRAIN])
    first, second = sorted((tmp_path / "runs" / "train").iterdir())
    assert first.name.startswith("meta-softrankpo-seed0-") and second.name.startswith("meta-softrankpo-seed0-")
    out = " ".join(capsys.readouterr().out.split())
    assert "softrankpo, seed 0: held-out, 8 test problems" in out
    assert "SFT warm start" in out and "consensus acc (95% CI)" in out
    summary = json.loads((second / "summary.json").read_text())
    assert f"{summary['after']['eval/consensus_accuracy']:.3f} [" in out
    for folder in (first, second):
        assert f"wrote {folder.relative_to(tmp_path)}/: checkpoint.safetensors, config.json, metrics.jsonl, sft/, summary.json" in out


def test_a_second_train_in_a_folder_resumes_only_when_asked_and_with_its_settings(capsys, tmp_path):
    run = tmp_path / "run"
    softrankpo = ["train", "meta", "softrankpo", *TINY_TRAIN]
    cli.main([*softrankpo, "--run-dir", str(run)])
    written = {name: (run / name).read_bytes() for name in ("config.json", "metrics.jsonl", "summary.json")}
    assert "holds a run already: add --resume" in refused(capsys, *softrankpo, "--run-dir", str(run))
    err = refused(capsys, "train", "meta", "grpo", *TINY_TRAIN, "--run-dir", str(run), "--resume")
    assert "cannot resume the run in" in err and "algo is 'softrankpo' there and 'grpo' here" in err
    assert {name: (run / name).read_bytes() for name in written} == written  # refused before anything was written
    assert "holds no run to continue" in refused(capsys, *softrankpo, "--run-dir", str(tmp_path / "new"), "--resume")
    cli.main([*softrankpo, "--updates", "3", "--run-dir", str(run), "--resume"])
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [0, 1, 2, 3]


def test_a_resume_with_other_settings_names_the_command_that_resumes_with_the_runs_own(capsys, tmp_path):
    """A new user resumed with `--run-dir D --resume` alone and was refused for the defaults
    that differ from the run's, with no word on how to give the run's settings back."""
    run = tmp_path / "run"
    cli.main(["train", "meta", "softrankpo", *TINY_TRAIN, "--run-dir", str(run)])
    err = refused(capsys, "train", "meta", "softrankpo", "--run-dir", str(run), "--resume", "--updates", "3")
    hint = f"--config {run / 'config.json'} --resume gives them back"
    assert "group_size is 2 there and 8 here" in err and hint in err
    cli.main(["train", "meta", "softrankpo", *hint.split()[:3], "--updates", "3", "--no-progress"])  # the hint, as given
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [0, 1, 2, 3]


def test_compare_prints_its_table_and_files(capsys, tmp_path):
    out_dir = tmp_path / "cmp"
    cli.main(["compare", "meta", "--algos", "softrankpo", "--seeds", "2", "--baselines", "independent", "oracle",
              "--out-dir", str(out_dir), *TINY_TRAIN])  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    summary = json.loads((out_dir / "compare.json").read_text())["summary"]
    learner = summary["learners"]["softrankpo@1"]
    assert "held-out eval/consensus_accuracy, 2 seed(s), 8 test problems" in out
    assert f"softrankpo@1 │ {mean_and_interval(learner)} │ 2" in out  # "(each of 2 seeds)" where they agree
    assert "oracle" in out and "gap closed" in out
    assert f"wrote {out_dir}/: action_shares.png, compare.csv, compare.json, config.json, curves.csv, final_accuracy.png" in out
    assert "deliberate compare meta: error: compare sets --seed for each run: use --seeds" in refused(
        capsys, "compare", "meta", "--seed", "3", "--out-dir", str(tmp_path / "other"))  # fmt: skip
    # a newcomer's --reward-scale 10 trained at scale 1 and was recorded as 10
    assert "compare sets --reward-scale for each run: use --reward-scales" in refused(
        capsys, "compare", "meta", "--reward-scale", "10", "--out-dir", str(tmp_path / "other"))  # fmt: skip
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("state", ["checkpointed", "logged", "started"])
def test_ctrl_c_is_one_line_that_says_how_to_continue(capsys, monkeypatch, tmp_path, state):
    from algorithms.commands import train as train_commands
    from algorithms.core.run_dirs import open_run_dir

    folder = tmp_path / "run"

    def interrupted(cfg):
        open_run_dir(folder, {"algo": "grpo"}, resume=False)
        if state == "checkpointed":
            (folder / "checkpoint.safetensors").write_bytes(b"")
        if state == "logged":  # an update logged, none checkpointed: the command alone is refused ("holds a run already")
            (folder / "metrics.jsonl").write_text('{"step": 1}\n')
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, train_commands.TrainMeta, ("train meta", interrupted))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "meta", "grpo", *TINY_TRAIN, "--run-dir", str(folder)])
    assert exit_info.value.code == 130
    err = capsys.readouterr().err.strip()
    prefix = f"deliberate train meta grpo: interrupted: {folder} holds no checkpoint yet, so there is nothing to resume; "
    assert err == {
        "checkpointed": f"deliberate train meta grpo: interrupted: the same command with --run-dir {folder} --resume continues from the last checkpoint",
        "logged": f"{prefix}the same command with --run-dir {folder} --resume starts it over (or remove the folder)",
        "started": f"{prefix}run the command again",
    }[state]


def test_an_offline_cache_miss_is_one_line(capsys, monkeypatch):
    """A newcomer's ``run --offline`` on a cache that lacked a row printed a traceback."""
    from agents.cache import CacheMissError
    from algorithms.commands import run as run_commands

    def missed(cfg):
        raise CacheMissError("offline response cache /tmp/c.sqlite has no row for 1 request: run once with offline=False")

    monkeypatch.setitem(cli.COMMANDS, run_commands.RunMeta, ("run meta", missed))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--offline"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "deliberate run: error: offline response cache /tmp/c.sqlite has no row for 1 request: run once with offline=False"
    )


def test_a_negative_seed_is_refused_by_name(capsys):
    assert "seed must be >= 0" in refused(capsys, "train", "meta", "grpo", *TINY_TRAIN, "--seed", "-1")


def test_cache_mistakes_name_the_file_and_leave_nothing_behind(capsys, tmp_path):
    assert "is a folder: name the cache's file" in refused(capsys, "cache", "stats", "--path", str(tmp_path))
    out = tmp_path / "merged.sqlite"
    assert "does not exist" in refused(capsys, "cache", "merge", str(out), str(tmp_path / "missing.sqlite"))
    (tmp_path / "mine.py").write_text("x = 1\n")
    assert "is not a SQLite database" in refused(capsys, "cache", "merge", str(out), str(tmp_path / "mine.py"))
    assert not out.exists()


def test_the_closing_line_lists_what_the_command_wrote_only(tmp_path, capsys):
    """A real client's own ``notes.txt`` in a run folder was listed as written."""
    from algorithms.commands.common import wrote_folder

    (tmp_path / "notes.txt").write_text("mine")
    os.utime(tmp_path / "notes.txt", (0, 0))
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "weights").write_text("new")
    (tmp_path / "metrics.jsonl").write_text("{}")
    wrote_folder(tmp_path, seconds=5)
    assert capsys.readouterr().out.strip().endswith(": adapters/, metrics.jsonl (5 s)")


def test_another_librarys_warning_is_named_as_its(capsys, tmp_path, monkeypatch):
    """A real client took transformers' "Unable to fetch remote file" for the package's own.
    Whose a warning is follows the code that issued it, not the frame its stacklevel names."""
    library = tmp_path / "site-packages" / "fakelib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text(
        "import warnings\n\ndef fetch():\n    warnings.warn('Unable to fetch remote file', stacklevel=2)\n"
    )
    monkeypatch.syspath_prepend(str(library.parent))
    import fakelib

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = cli.show_warning("deliberate train text grpo")
        fakelib.fetch()  # its stacklevel names this file
        warnings.warn("--sampler ctranslate2 samples the rollouts on the CPU", stacklevel=1)
        warnings.warn("--sampler ctranslate2 samples the rollouts on the CPU", stacklevel=1)  # a config checked twice: once (the TRL client)
    assert capsys.readouterr().err.splitlines() == [
        "deliberate train text grpo: warning from fakelib: Unable to fetch remote file",
        "deliberate train text grpo: warning: --sampler ctranslate2 samples the rollouts on the CPU",
    ]


@pytest.mark.parametrize("command", [["train", "meta", "grpo"], ["compare", "meta", "--algos", "grpo", "--seeds", "1"]])
def test_meta_runs_on_a_test_split_smaller_than_eval_problems_evaluate_all_of_it(capsys, tmp_path, command):
    """A newcomer's ``--task gsm8k --path sample`` (8 test problems) asked for the default 200
    and failed with an IndexError after the run's folder was written."""
    folder = tmp_path / "run"
    where = ["--run-dir" if command[0] == "train" else "--out-dir", str(folder)]
    small = [arg for arg in TINY_TRAIN if arg not in ("--difficulty", "3", "--eval-problems", "8")]
    cli.main([*command, *small, "--task", "gsm8k", "--path", "sample", *where])
    out, err = capsys.readouterr()
    assert "--eval-problems=200 is more than the 8 problems of the test split" in err
    assert "8 test problems" in " ".join(out.split())
    recorded = json.loads((folder / "config.json").read_text())
    assert (recorded if command[0] == "train" else recorded["learner"])["run"]["eval_problems"] == 8


@pytest.mark.parametrize(("flag", "flat"), [("--env.task", "--task"), ("--run.updates", "--updates")])
def test_a_nested_flag_names_the_flat_one(flag, flat):
    """A tyro user wrote the nesting of a config file on the command line."""
    with pytest.raises(ValueError, match=rf"options are flat here, {flat} \(a config file nests it"):
        cli.parse(["train", "text", "grpo", flag, "3"])


def test_sigterm_mid_run_says_how_to_continue_and_the_run_resumes(tmp_path):
    """A scheduler's preemption (SLURM sends SIGTERM, then SIGKILL) or torchrun stopping
    its other workers: the command says how to continue, exits 143, and ``--resume``
    finishes the run from its last checkpoint."""
    folder = tmp_path / "run"
    command = [sys.executable, "-m", "algorithms.cli", "train", "text", "grpo", "--model", "tiny", "--groups-per-update",
               "1", "--group-size", "2", "--max-new-tokens", "4", "--no-progress", "--checkpoint-interval", "1",
               "--eval-problems", "0", "--run-dir", str(folder)]  # fmt: skip
    process = subprocess.Popen([*command, "--updates", "1000"], stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[1])
    try:
        while not (folder / "checkpoint.safetensors").exists() and process.poll() is None:
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 143
    assert f"terminated (SIGTERM): the same command with --run-dir {folder} --resume continues" in err
    logged = len((folder / "metrics.jsonl").read_text().splitlines())
    subprocess.run([*command, "--updates", str(logged + 1), "--resume"], check=True, capture_output=True, cwd=Path(__file__).parents[1])
    assert len((folder / "metrics.jsonl").read_text().splitlines()) == logged + 1
