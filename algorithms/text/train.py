"""``train(config)``: build the model, the env and the learner from a config, and run it.

This is what ``deliberate train text NAME`` calls with the learner's config
(``TEXT_CONFIGS[NAME]``), and what examples and benchmarks call from Python::

    from algorithms.text import TextMAGRPOConfig, TextRunConfig, train
    result = train(TextMAGRPOConfig(model="tiny", run=TextRunConfig(updates=2, run_dir="runs/text")))
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.text_policy import TextPolicy
from agents.trainable_lm import TrainableLM, default_lora, tiny_model
from agents.trainable_team import TrainableTeam
from algorithms.core import data_parallel
from algorithms.core.run import RunConfig, run
from algorithms.text.base import TextPolicyGradientLearner, rank_num_envs
from algorithms.text.config import TextLearnerConfig
from algorithms.text.learners import TEXT_LEARNERS
from deliberation_env.factory import vector_env_from
from deliberation_env.text import TextDeliberationVectorEnv
from deliberation_env.text.config import config_record

SUMMARY = "summary.json"
ADAPTERS = "adapters"


@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        learner: The trained learner (its ``lm`` holds the trained weights).
        history: The metrics of every update run by this call.
        before: Held-out greedy evaluation before training (empty without ``eval_problems``).
        after: The same after training.
    """

    learner: TextPolicyGradientLearner
    history: list[dict[str, float]]
    before: dict[str, float]
    after: dict[str, float]


def learner_class(config: TextLearnerConfig) -> type[TextPolicyGradientLearner]:
    """The learner whose config class ``config`` is (exactly)."""
    for learner in TEXT_LEARNERS.values():
        if type(config) is learner.config_class:
            return learner
    names = ", ".join(learner.config_class.__name__ for learner in TEXT_LEARNERS.values())
    raise TypeError(f"config must be one of {names}, got {type(config).__name__}")


def build_lm(config: TextLearnerConfig, agents: list[str]) -> TrainableLM | TrainableTeam:
    """The trainable policy of ``agents`` described by ``config`` (model, layout, LoRA):
    one model for all, or with ``config.models`` one per agent (a :class:`TrainableTeam`)."""
    if not config.models:
        return load_lm(config, config.model, agents)
    if len(config.models) != len(agents):
        raise ValueError(f"models gives {len(config.models)} models for the {len(agents)} trainable agents {agents}")
    return TrainableTeam({agent: load_lm(config, spec, [agent]) for agent, spec in zip(agents, config.models)})


def load_lm(config: TextLearnerConfig, model: str, agents: list[str]) -> TrainableLM:
    """``model`` (as :attr:`TextLearnerConfig.model` reads it) as the policy of ``agents``,
    with ``config``'s layout, LoRA, device, dtype and micro-batches."""
    settings: dict[str, Any] = {
        "finetune": config.finetune,
        "separate": config.separate_models,
        "lora": default_lora(config.lora_rank, config.lora_alpha, config.lora_targets),
        "micro_batch_size": config.micro_batch_size,
        "sample_batch_size": config.sample_batch_size,
        "seed": config.seed,
        "device": config.device,
        "dtype": config.dtype,
        "gradient_checkpointing": config.gradient_checkpointing,
    }
    if model == "tiny":
        weights, tokenizer = tiny_model(seed=config.seed)
        return TrainableLM(weights, tokenizer, agents, **settings)
    if model:
        return TrainableLM.from_pretrained(model, agents, **settings)
    from agents.local import default_model_path

    return TrainableLM.from_pretrained(default_model_path(), agents, **settings)


def build_env(config: TextLearnerConfig, num_envs: int, split: str | None = None) -> TextDeliberationVectorEnv:
    """The text vector env of ``config.env`` (a :class:`TextEnvConfig`), on ``split``
    (None: ``config.env.split``, the training split)."""
    return vector_env_from(config.env, num_envs, **({} if split is None else {"split": split}))


def train(
    config: TextLearnerConfig,
    frozen: Mapping[str, TextPolicy] | None = None,
    learner: Callable[..., TextPolicyGradientLearner] | None = None,
) -> TrainResult:
    """Train the agents not in ``frozen`` with the learner of ``config``'s class, or with
    ``learner``, one's own, built as the shipped classes are,
    ``learner(config, lm, venv, frozen, sampler=sampler)`` (e.g. a subclass of
    :class:`~algorithms.text.base.TextPolicyGradientLearner` that overrides one method).

    With ``config.workers``, completions are sampled on that many Ray rollout workers
    (:class:`~algorithms.text.rollout_workers.RolloutWorkers`, each with an equal share of
    this machine's cores when Ray runs locally); with ``config.sampler="ctranslate2"``, by
    CTranslate2 in this process; evaluation stays with torch in this process.

    With ``config.run.run_dir``: metrics.jsonl, checkpoint.safetensors (resumed from when present),
    ``adapters/agent_k`` (peft format) and summary.json (config, before/after evaluation).

    Under ``torchrun`` (``WORLD_SIZE`` > 1) the processes train data-parallel
    (:mod:`algorithms.core.data_parallel`): each plays its share of every update's groups
    and rank 0 alone writes; every process returns the same metrics.

    Args:
        config: A :class:`TextMAGRPOConfig`, :class:`TextGRPOConfig` or :class:`TextSoftRankPOConfig`.
        frozen: Policies of agents that do not learn, ``{agent: TextPolicy}``.
        learner: A learner of one's own that takes ``config``; None: ``config``'s learner.

    Returns:
        A :class:`TrainResult`.

    Raises:
        ValueError: On rollout workers under ``torchrun`` (each process samples its own share).
    """
    with data_parallel.process_group(config.device) as ranks:
        if config.workers and ranks.world_size > 1:
            raise ValueError(
                "under torchrun each process samples its own share of the rollouts: leave --rollout-workers out "
                "(Ray rollout workers serve one training process)"
            )
        return _train(config, frozen, ranks, learner_class(config) if learner is None else learner)


def _train(
    config: TextLearnerConfig,
    frozen: Mapping[str, TextPolicy] | None,
    ranks: data_parallel.Ranks,
    learner_type: Callable[..., TextPolicyGradientLearner],
) -> TrainResult:
    """:func:`train` in this process, one of ``ranks``, with the learner ``learner_type`` builds."""
    venv = build_env(config, rank_num_envs(config, ranks))
    frozen = dict(frozen or {})
    agents = [a for a in venv.possible_agents if a not in frozen]
    lm = build_lm(config, agents)
    sampler = None
    if config.workers:
        from algorithms.text.rollout_workers import RolloutWorkers

        threads = max(1, (os.cpu_count() or 1) // config.workers)
        sampler = RolloutWorkers(functools.partial(build_lm, config, agents), config.workers, lm, threads=threads)
    elif config.sampler == "ctranslate2":
        from algorithms.text.ctranslate2_sampler import CTranslate2Sampler

        sampler = CTranslate2Sampler(lm, exact_logprobs=False)  # the learners score with torch
    learner = learner_type(config, lm, venv, frozen, sampler=sampler)
    held_out = []
    if config.run.eval_problems:
        eval_env = build_env(config, min(config.run.eval_problems, 16), split="test")
        held_out = list(range(min(config.run.eval_problems, len(eval_env.problems))))
    evaluate = functools.partial(learner.evaluate, eval_env, held_out, progress=config.run.progress) if held_out else None
    before = evaluate() if evaluate else {}
    try:
        result = run(learner, run_config(config), evaluate, learner.settings(config), learner.headline)
    finally:
        if sampler is not None:
            sampler.close()
    after = (result.evaluation or evaluate()) if evaluate else {}  # a run resumed when finished may have none logged
    if config.run.run_dir and ranks.writes:
        folder = Path(config.run.run_dir)
        lm.save_adapters(folder / ADAPTERS)
        summary = {"algo": learner.name, "config": config_record(config), "before": before, "after": after}
        (folder / SUMMARY).write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return TrainResult(learner, result.history, before, after)


def run_config(config: TextLearnerConfig) -> RunConfig:
    """The run settings of ``config.run``: evaluated every ``eval_interval`` updates and last,
    checkpointed every ``checkpoint_every`` and last (:func:`algorithms.core.run.run`)."""
    run_part = config.run
    return RunConfig(
        run_part.updates,
        run_part.run_dir,
        checkpoint_every=run_part.checkpoint_every,
        eval_every=run_part.eval_interval,
        progress=run_part.progress,
        tensorboard=run_part.tensorboard,
        wandb_project=run_part.wandb_project,
    )
