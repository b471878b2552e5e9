"""A text learner's config composes its parts (issue 25): ``env`` (a TextEnvConfig), ``run``
(the RunConfig of both families) and the learner's own fields; the flat spelling of release
0.1 is gone, records stay flat, and ``compare text`` applies a shared setting to every learner."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

import deliberation_env as de
from algorithms import cli
from algorithms.core.config import ADDED_SETTINGS, GRPOSettings, RunConfig
from algorithms.core.run_dirs import CONFIG, open_run_dir
from algorithms.meta.config import GRPOConfig
from algorithms.text import TEXT_CONFIGS, TextGRPOConfig, TextLearnerConfig, TextSoftRankPOConfig
from algorithms.text.config import text_run
from deliberation_env.text.config import TextEnvConfig, config_record

FLAT_LAYOUT_RECORD = json.loads(
    '{"algo": "grpo", "task": "arithmetic", "path": null, "difficulty": null, "task_kwargs": null, "protocol": null,'
    ' "split": "train", "n_agents": 2, "max_turns": 1, "max_cycles": null, "stop_threshold": null, "scoring": "strict",'
    ' "reward_scale": 1.0, "learning_rate": 0.0001, "update_epochs": 1, "num_minibatches": 1, "max_grad_norm": 1.0,'
    ' "seed": 0, "problem_pool": 0, "groups_per_update": 1, "group_size": 2, "clip_eps": 0.2, "kl_coef": 0.0,'
    ' "model": "tiny", "models": [], "finetune": "lora", "separate_models": false, "lora_rank": 8, "lora_alpha": 16.0,'
    ' "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"], "pairing": "aligned", "max_new_tokens": 4,'
    ' "min_new_tokens": 0, "temperature": 1.0, "top_p": 1.0, "gamma": 1.0, "credit": "joint", "batch_size": 4,'
    ' "aggregation": "token", "updates": 2, "run_dir": "", "checkpoint_every": 0, "eval_problems": 0,'
    ' "eval_interval": 0, "progress": true, "tensorboard": false, "wandb_project": "", "workers": 0,'
    ' "sampler": "torch", "eps": 1e-06}'
)
"""config.json of a ``train text grpo`` run as release 0.1 recorded it (flat, as records still are)."""
SMALL = {"model": "tiny", "groups_per_update": 1, "group_size": 2, "max_new_tokens": 4, "micro_batch_size": 4}


def composed(updates: int = 2, **run) -> TextGRPOConfig:
    """The config of :data:`FLAT_LAYOUT_RECORD`, in the composed spelling."""
    return TextGRPOConfig(env=TextEnvConfig(task="arithmetic"), run=text_run(updates=updates, **run), **SMALL)


def test_the_composed_spelling_builds_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        config = composed()
        assert (config.env.task, config.run.updates, config.model, config.num_envs) == ("arithmetic", 2, "tiny", 2)
        assert dataclasses.replace(config, run=dataclasses.replace(config.run, updates=5)).run.updates == 5


def test_the_flat_spelling_of_release_0_1_is_gone():
    with pytest.raises(TypeError, match="unexpected keyword argument 'task'"):
        TextGRPOConfig(task="arithmetic", **SMALL)
    with pytest.raises(TypeError, match="unexpected keyword argument 'batch_size'"):
        TextGRPOConfig(batch_size=4)
    with pytest.raises(AttributeError, match="no attribute 'task'"):
        _ = composed().task


def test_the_checks_of_each_part_and_across_parts_still_name_the_mistake():
    with pytest.raises(ValueError, match="give eval_problems > 0 too"):
        text_run(eval_interval=2)
    with pytest.raises(ValueError, match="updates must be >= 0"):
        text_run(updates=-1)
    with pytest.raises(ValueError, match="use max_turns=1"):
        TextGRPOConfig(pairing="cross", env=TextEnvConfig(max_turns=2))
    with pytest.raises(ValueError, match="n_agents must be >= 2"):
        TextGRPOConfig(env=TextEnvConfig(n_agents=1))
    assert TextGRPOConfig(pairing="cross", env=TextEnvConfig(n_agents=3)).num_envs == 4 * 4**3


def test_the_command_line_spells_every_option_as_before():
    learner = cli.parse(["train", "text", "grpo", "--task", "arithmetic", "--updates", "3", "--model", "tiny",
                         "--n-agents", "3", "--run-dir", "runs/x", "--eps", "0.1"]).command.command.learner  # fmt: skip
    assert (learner.env.task, learner.env.n_agents, learner.run.updates, learner.run.run_dir) == ("arithmetic", 3, 3, "runs/x")
    assert (learner.model, learner.eps) == ("tiny", 0.1)


def test_resume_fields_are_the_run_part_with_workers_and_sampler():
    run_fields = {f.name for f in dataclasses.fields(RunConfig)}
    placement_and_passes = {"device", "dtype", "micro_batch_size", "gradient_checkpointing", "segmented_scoring", "log_completions",
                            "master_weights", "full_determinism"}  # fmt: skip
    sampling = {"workers", "sampler", "sample_batch_size", "eval_envs", "mixed_routing", "decoding"}
    assert set(TextLearnerConfig.RUN_FIELDS) == run_fields | sampling | placement_and_passes


def test_records_stay_flat_and_a_run_folder_of_release_0_1_is_refused_naming_batch_size(tmp_path):
    record = {"algo": "grpo", **config_record(composed())}
    added_since = {"sample_batch_size", "eval_envs", "mixed_routing", "decoding", "device", "dtype", "gradient_checkpointing",
                   "segmented_scoring", "master_weights", "full_determinism"}  # run fields added since 0.1  # fmt: skip
    run_fields = {f.name for f in dataclasses.fields(RunConfig)} | {"checkpoint_every"}  # renamed checkpoint_interval in 0.2
    then = {k: v for k, v in FLAT_LAYOUT_RECORD.items() if k not in run_fields | {"batch_size"}}
    assert {k: v for k, v in record.items() if k not in added_since | run_fields | {"micro_batch_size"} | set(ADDED_SETTINGS)} == then
    assert {k: record[k] for k in ADDED_SETTINGS} == ADDED_SETTINGS  # learner settings since 0.2, at the values of then
    assert added_since <= set(TextLearnerConfig.RUN_FIELDS)
    kept = {k: v for k, v in FLAT_LAYOUT_RECORD.items() if k not in ("batch_size", "checkpoint_every")}
    (tmp_path / CONFIG).write_text(json.dumps(kept))
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n')  # a run, not a start that failed
    more_updates = {"algo": "grpo", **config_record(composed(updates=9, eval_problems=3))}
    open_run_dir(tmp_path, more_updates, resume=True, may_change=TextLearnerConfig.RUN_FIELDS)  # run fields may change
    other_env = {"algo": "grpo", **config_record(dataclasses.replace(composed(), env=TextEnvConfig(task="arithmetic", n_agents=3)))}
    with pytest.raises(ValueError, match="n_agents is 2 there and 3 here"):
        open_run_dir(tmp_path, other_env, resume=True, may_change=TextLearnerConfig.RUN_FIELDS)
    (tmp_path / CONFIG).write_text(json.dumps(FLAT_LAYOUT_RECORD))  # batch_size, renamed micro_batch_size in 0.2
    with pytest.raises(ValueError, match="batch_size is 4 there and None here"):
        open_run_dir(tmp_path, more_updates, resume=True, may_change=TextLearnerConfig.RUN_FIELDS)


def test_a_vector_env_is_built_from_the_env_part_and_a_learner_config_is_refused_naming_it():
    assert de.vector_env_from(composed().env, 2).num_envs == 2
    with pytest.raises(TypeError, match=r"got TextGRPOConfig \(a learner config: pass its .env\)"):
        de.vector_env_from(composed(), 2)


def test_compare_text_applies_a_shared_setting_to_every_learner():
    given = cli.parse(["compare", "text", "--kl-coef", "0.1"]).command.command
    assert {algo: given.run_config(algo, 0).kl_coef for algo in TEXT_CONFIGS} == {"magrpo": 0.1, "grpo": 0.1, "softrankpo": 0.1}
    absent = cli.parse(["compare", "text", "--updates", "3", "--task", "gsm8k", "--path", "sample"]).command.command
    softrankpo = absent.run_config("softrankpo", 1)
    assert type(softrankpo) is TextSoftRankPOConfig and softrankpo.kl_coef == 0.0  # the family's one default
    assert (softrankpo.run.updates, softrankpo.env.task, softrankpo.seed) == (3, "gsm8k", 1)


def test_the_learners_share_every_shared_default_but_softrankpos_own_kl():
    shared = [f.name for f in dataclasses.fields(TextLearnerConfig)]
    differing = {name for name in shared if len({repr(getattr(cls(), name)) for cls in TEXT_CONFIGS.values()}) > 1}
    assert differing == {"kl_coef"}
    assert {name: cls().kl_coef for name, cls in TEXT_CONFIGS.items()} == {"magrpo": 0.0, "grpo": 0.0, "softrankpo": 0.02}


def test_grpos_eps_is_declared_once_for_both_families():
    assert issubclass(GRPOConfig, GRPOSettings) and issubclass(TextGRPOConfig, GRPOSettings)
    for cls in (GRPOConfig, TextGRPOConfig):
        assert cls().eps == 1e-6
        with pytest.raises(ValueError, match="eps must be >= 0"):
            cls(eps=-1.0)


def test_a_local_model_is_recorded_by_its_absolute_path_and_an_id_as_given(tmp_path, monkeypatch):
    """A run started with ``--model ./tiny`` resumes from another directory with the folder's
    absolute path (the adapters name their base by it too)."""
    (tmp_path / "tiny").mkdir()
    monkeypatch.chdir(tmp_path)
    config = TextGRPOConfig(model="./tiny")
    assert config.model == str(tmp_path / "tiny")
    assert config_record(config)["model"] == str(tmp_path / "tiny")
    team = TextGRPOConfig(models=("tiny", "./tiny", "Qwen/Qwen2.5-0.5B-Instruct"))
    assert team.models == ("tiny", str(tmp_path / "tiny"), "Qwen/Qwen2.5-0.5B-Instruct")  # a preset, a folder, an id
    with pytest.raises(ValueError, match="give --model .* or --models .*, not both"):
        TextGRPOConfig(model="tiny", models=("tiny", "tiny"))  # a real client's --model went unused
