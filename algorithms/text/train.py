"""``train(config)``: build the model, the env and the learner from a config, and run it.

This is what ``deliberate train text NAME`` calls with the learner's config
(``TEXT_CONFIGS[NAME]``), and what examples and benchmarks call from Python::

    from algorithms.core.config import RunConfig
    from algorithms.text import TextMAGRPOConfig, train
    result = train(TextMAGRPOConfig(model="tiny", run=RunConfig(updates=2, run_dir="runs/text")))

It owns the run folder as the meta family's :func:`algorithms.meta.train.train` does: a new
one for ``run.run_dir=""`` (``runs/train/text-<algo>-seed<seed>-<time>``; ``None``: none),
``resume`` and the settings checked, the model, env and learner built, and only then
``config.json`` recorded; then ``metrics.jsonl``, ``checkpoint.safetensors``,
``summary.json``, the adapters and ``learning_curves.png``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agents.devices import enable_full_determinism, full_determinism
from agents.text_policy import TextPolicy
from agents.trainable_lm import TrainableLM, default_lora, tiny_model
from agents.trainable_lm.weights import base_digest
from agents.trainable_team import TrainableTeam
from algorithms.core import data_parallel
from algorithms.core.checkpoints import checkpoint_settings, resume_checkpoint
from algorithms.core.compare import check_own_name
from algorithms.core.config import KEPT_ON_RESUME
from algorithms.core.metrics import check_loggers
from algorithms.core.run import TrainResult, run
from algorithms.core.run_dirs import (
    CONFIG,
    check_resume,
    check_run_dir,
    named_run,
    open_run_dir,
    recorded_settings,
)
from algorithms.text.base import TextPolicyGradientLearner, rank_num_envs, write_adapters
from algorithms.text.config import (
    BASE_DIGEST,
    MODEL_FIELDS,
    RESOLVED_FIELDS,
    TEXT_CONFIGS,
    WORLD_SIZE,
    TextLearnerConfig,
)
from algorithms.text.eval import evaluate
from algorithms.text.learners import TEXT_LEARNERS
from deliberation_env.factory import vector_env_from
from deliberation_env.tasks import problem_count
from deliberation_env.text import TextDeliberationVectorEnv, TextProtocol
from deliberation_env.text.config import config_record, is_import_path

TEXT_ALGOS = {kind: name for name, kind in TEXT_CONFIGS.items()}
"""Each text learner config's algorithm name (as ``deliberate train text NAME`` spells it)."""
SUMMARY = "summary.json"
"""A run's held-out evaluations before and after training (both families write it)."""
ADAPTERS = "adapters"
"""The folder of the trained adapters (peft format), one per agent."""
COMPLETIONS = "completions"
"""The folder of the completions each update logs (``--log-completions N``)."""
CURVES_FILE = "learning_curves.png"
"""The joint reward per update, held-out evaluations as points (:func:`algorithms.text.plots.learning_curves`)."""
DIGEST_ELEMENTS = 4096
"""Elements of each base tensor, first and last, that :data:`BASE_DIGEST` hashes."""


def learner_class(config: TextLearnerConfig) -> type[TextPolicyGradientLearner]:
    """The learner whose config class ``config`` is (exactly)."""
    for learner in TEXT_LEARNERS.values():
        if type(config) is learner.config_class:
            return learner
    names = ", ".join(learner.config_class.__name__ for learner in TEXT_LEARNERS.values())
    raise TypeError(f"config must be one of {names}, got {type(config).__name__}")


def build_worker_lm(config: TextLearnerConfig, agents: list[str]) -> TrainableLM | TrainableTeam:
    """:func:`build_lm` in a rollout worker's process, which keeps
    :func:`agents.devices.full_determinism`'s settings for its life where ``config.full_determinism``
    asks for it (its decoding is the run's, as the training process's)."""
    if config.full_determinism:
        enable_full_determinism()
    return build_lm(config, agents)


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
    with ``config``'s layout, LoRA, device, dtype, micro-batches and chat template variables."""
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
        "segmented_scoring": config.segmented_scoring,
        "routing": config.mixed_routing,
        "decoding": config.decoding,
        "compile_scope": config.compile_scope,
        "cast_lm_head_to_fp32": config.cast_lm_head_to_fp32,
        "keep_reference": config.kl_coef > 0,  # full fine-tuning: a whole model more, for the KL alone
        "chat_template_kwargs": config.chat_template_kwargs,
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


def held_out_env(config: TextLearnerConfig, num_envs: int, split: str = "test") -> TextDeliberationVectorEnv:
    """The text vector env of the held-out evaluation: ``config.env`` on the test split (or
    ``split``: ``deliberate evaluate text --split train``), scored strictly (a named
    protocol's; an instance brings its own scoring) and with every turn played (no
    ``stop_threshold``: an early stop tells the team its answer was right, so a team that
    named a new candidate each turn scored 1.0 on MMLU held out)."""
    strict = {} if isinstance(config.env.protocol, TextProtocol) or is_import_path(config.env.protocol) else {"scoring": "strict"}
    return vector_env_from(config.env, num_envs, split=split, stop_threshold=None, **strict)


def held_out_problems(config: TextLearnerConfig, asked: int | None, split: str = "test") -> tuple[TextDeliberationVectorEnv, int]:
    """The held-out env of ``config`` on ``split`` (:func:`held_out_env`) and how many of its
    problems to play: ``asked``, at most the split's (more is said, with a warning), or the
    whole split (None). ``config.eval_envs`` are played at a time, or as many as the
    problems where they are fewer (none played only to be thrown away)."""
    venv = held_out_env(config, min(asked or config.eval_envs, config.eval_envs), split)
    count = len(venv.problems) if asked is None else problem_count(asked, len(venv.problems), split, "--eval-problems")
    if count < venv.num_envs:
        venv = held_out_env(config, count, split)
    return venv, count


def resolved_placement(device: str, dtype: str) -> dict[str, str]:
    """Before a run writes anything: the device and dtype that ``device`` and ``dtype``
    give here (:func:`agents.devices.resolve`), under :data:`RESOLVED_FIELDS`.

    Raises:
        ValueError: Naming ``--device``, when this machine lacks the device it asks for.
    """
    from agents.devices import dtype_name, resolve, unavailable

    why = unavailable(device)
    if why:
        raise ValueError(f"--device {device}: {why}: use --device cpu, or --device auto (CUDA where present)")
    resolved_device, resolved_dtype = resolve(device, dtype)
    return dict(zip(RESOLVED_FIELDS, (str(resolved_device), dtype_name(resolved_dtype)), strict=True))


def kept_dtype(config: TextLearnerConfig, folder: Path, given: str) -> TextLearnerConfig:
    """``config`` for resuming the run in ``folder``, which keeps the dtype it trained in
    (``resolved_dtype`` in its ``config.json``): ``auto`` takes that dtype on any device;
    ``given`` is the dtype ``config`` gives here (:func:`resolved_placement`).

    Raises:
        ValueError: Before anything is written, on a ``dtype`` that gives another here.
    """
    recorded = folder / CONFIG
    trained_in = json.loads(recorded.read_text(encoding="utf-8")).get("resolved_dtype") if recorded.exists() else None
    if trained_in is None:
        return config
    if config.dtype == "auto":
        return dataclasses.replace(config, dtype=trained_in)
    if given != trained_in:
        raise ValueError(
            f"--dtype {config.dtype}: the run in {folder} trained in {trained_in}, and a resumed run keeps its "
            f"dtype: give --dtype {trained_in}, or auto (the run's own)"
        )
    return config


def check_full_in_float16(config: TextLearnerConfig, placement: Mapping[str, str]) -> None:
    """Refuse, before the models load and anything is written, full fine-tuning that its
    dtype resolves to float16 (``--dtype auto`` on a GPU without native bfloat16, the T4 and
    the V100): the learner would refuse it only once the models were loaded (``--dtype
    float16`` itself is refused by the config).

    Raises:
        ValueError: Naming the GPU's float16 and the dtypes to give instead.
    """
    if config.finetune == "full" and placement["resolved_dtype"] == "float16":
        raise ValueError(
            f"--dtype {config.dtype} is float16 on {placement['resolved_device']} (no native bfloat16), and "
            "finetune='full' has no float32 weights to step in float16 (loss scaling unscales float32 gradients "
            "only): give --dtype float32, or bfloat16 (emulated on this GPU, slowly), or train LoRA adapters "
            "(they stay float32)"
        )


def warn_about_numerics(config: TextLearnerConfig, placement: Mapping[str, str], world_size: int) -> None:
    """Warn where a run's numbers are not what a user may take them for: CTranslate2
    samples on the CPU whatever the device, and its rollouts depend on the number of
    processes."""
    if config.sampler == "ctranslate2" and placement["resolved_device"] != "cpu":
        warnings.warn(
            f"--sampler ctranslate2 samples the rollouts on the CPU in float32, whatever --device says "
            f"({placement['resolved_device']} trains them): the torch sampler (the default) decodes on the device",
            stacklevel=2,
        )
    if config.sampler == "ctranslate2" and world_size > 1:
        warnings.warn(
            f"--sampler ctranslate2 seeds once per call, so its rollouts depend on how the {world_size} processes share "
            "an update's groups: the update is not the one-process update of the same seed (the torch sampler's is)",
            stacklevel=2,
        )


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

    The run folder (the module docstring): ``config.json``, ``metrics.jsonl``,
    ``checkpoint.safetensors``, ``adapters/agent_k`` (peft format), ``summary.json``
    (``algo``, ``before`` and ``after``, the held-out evaluations) and ``learning_curves.png``.

    Under ``torchrun`` (``WORLD_SIZE`` > 1) the processes train data-parallel
    (:mod:`algorithms.core.data_parallel`): each plays its share of every update's groups
    and rank 0 alone writes; every process returns the same metrics.

    With ``config.full_determinism`` the whole call runs within
    :func:`agents.devices.full_determinism` (in every process, before the models load), and
    the process's settings are as they were after it.

    Args:
        config: A :class:`TextMAGRPOConfig`, :class:`TextGRPOConfig` or :class:`TextSoftRankPOConfig`.
        frozen: Policies of agents that do not learn, ``{agent: TextPolicy}``.
        learner: A learner of one's own that takes ``config``; None: ``config``'s learner.

    Returns:
        A :class:`~algorithms.core.run.TrainResult`.

    Raises:
        ValueError: Before anything is written: on rollout workers under ``torchrun`` (each
            process samples its own share), a device this machine lacks, ``resume`` without
            a run, a ``run_dir`` that holds a run (of other settings, with ``resume``), or a
            ``learner`` of one's own that keeps a shipped learner's ``name`` while a folder
            records its run (:func:`~algorithms.core.compare.check_own_name`: give it
            ``name = "mine"``).
    """
    if learner is not None and config.run.run_dir is not None:  # its runs are recorded by its name
        check_own_name(getattr(learner, "__qualname__", repr(learner)), learner, "text", "train")
    algo = getattr(learner, "name", None) or TEXT_ALGOS.get(type(config), "learner")  # the new folder's name
    placement = resolved_placement(config.device, config.dtype)
    check_loggers(config.run.tensorboard, config.run.wandb_project)
    deterministic = full_determinism() if config.full_determinism else contextlib.nullcontext()
    with deterministic, data_parallel.process_group(config.device) as ranks:  # each process's, before the models load
        if config.workers and ranks.world_size > 1:
            raise ValueError(
                "under torchrun each process samples its own share of the rollouts: leave --rollout-workers out "
                "(Ray rollout workers serve one training process)"
            )
        check_resume(config.run.resume, config.run.run_dir)
        resume = config.run.resume or data_parallel.restarted_run(config.run.run_dir)  # before a new folder is named for ""
        if resume and not config.run.resume and ranks.writes:
            warnings.warn(
                f"torchrun restarted the workers (restart {os.environ.get('TORCHELASTIC_RESTART_COUNT')}): "
                f"continuing the run in {config.run.run_dir} from its last checkpoint",
                stacklevel=2,
            )
        if resume:
            kept = kept_dtype(config, Path(config.run.run_dir), placement["resolved_dtype"])
            if kept is not config:  # auto: the run's own dtype; config.json keeps "auto" as given (no change to report)
                config, placement = kept, {**resolved_placement(kept.device, kept.dtype), "dtype": config.dtype}
        check_full_in_float16(config, placement)
        run_part = named_run(config.run, "text", f"{algo}-seed{config.seed}") if ranks.writes else None
        run_part = dataclasses.replace(data_parallel.broadcast_object(run_part), resume=resume)  # one folder, rank 0's
        config = dataclasses.replace(config, run=run_part)
        return _train(config, frozen, ranks, learner_class(config) if learner is None else learner, placement)


def base_named(settings: Mapping[str, Any]) -> str:
    """The base model ``settings`` name, as the command line gives it (``--model X``,
    ``--models X Y``; the default SmolLM2 where they name none)."""
    if settings.get("models"):
        return "--models " + " ".join(map(str, settings["models"]))
    return f"--model {settings['model']}" if settings.get("model") else "the default SmolLM2-135M-Instruct (no --model)"


def trained_names(run_dir: Path, recorded: Mapping[str, Any], config: TextLearnerConfig) -> dict[str, Any]:
    """How a resumed run's checkpoint names its base (``model`` and ``models``): a base may
    have moved since, and ``config.json`` records where it lies now (a second resume
    after a move was refused when the names came from there)."""
    checkpoint = resume_checkpoint(run_dir)
    saved = checkpoint_settings(checkpoint) if checkpoint else {}
    return {field: saved.get(field, recorded.get(field, getattr(config, field))) for field in MODEL_FIELDS}


def _train(
    config: TextLearnerConfig,
    frozen: Mapping[str, TextPolicy] | None,
    ranks: data_parallel.Ranks,
    learner_type: Callable[..., TextPolicyGradientLearner],
    placement: dict[str, str],
) -> TrainResult:
    """:func:`train` in this process, one of ``ranks``, with the learner ``learner_type``
    builds; the folder is recorded once everything is built (``placement``: the resolved
    device and dtype)."""
    may_change = [name for name in (*TextLearnerConfig.RUN_FIELDS, *RESOLVED_FIELDS, WORLD_SIZE) if name not in KEPT_ON_RESUME]
    warn_about_numerics(config, placement, ranks.world_size)
    recorded = recorded_settings(config.run.run_dir) if config.run.resume and config.run.run_dir else {}
    if BASE_DIGEST in recorded:  # the base is named by its weights: it may lie elsewhere now
        may_change += MODEL_FIELDS
    shipped = learner_type in TEXT_LEARNERS.values()  # one's own is recorded by its name, or its learner's once built
    algo = getattr(learner_type, "name", None) or (TEXT_ALGOS.get(type(config)) if shipped else None)
    eval_env = None
    if config.run.eval_problems:  # at most the test split: said, and recorded as the number used (as the meta family)
        eval_env, count = held_out_problems(config, config.run.eval_problems)
        config = dataclasses.replace(config, run=dataclasses.replace(config.run, eval_problems=count))
    if config.run.run_dir:  # before the models load (minutes for a large one): the settings and the folder
        early = {"algo": algo, **config_record(config)}
        check_run_dir(config.run.run_dir, early, config.run.resume, [*may_change, BASE_DIGEST, *(("algo",) if algo is None else ())],
                      resume_from=config.run.resume_from)  # fmt: skip
        if BASE_DIGEST in recorded and not (config.model or config.models) and (recorded.get("model") or recorded.get("models")):
            raise ValueError(  # the default model left in by mistake: said before it loads
                f"cannot resume the run in {config.run.run_dir}: it trained on {base_named(recorded)}, and this command "
                f"names none; give it, or resume with the run's own settings: --config {config.run.run_dir}/config.json --resume"
            )
    venv = build_env(config, rank_num_envs(config, ranks))
    frozen = dict(frozen or {})
    agents = [a for a in venv.possible_agents if a not in frozen]
    lm = build_lm(config, agents)
    placement = {**placement, WORLD_SIZE: ranks.world_size, BASE_DIGEST: base_digest(lm, elements=DIGEST_ELEMENTS)}
    where_base_lies = {field: list(value) if isinstance(value, tuple) else value for field in MODEL_FIELDS if (value := getattr(config, field))}
    if recorded.get(BASE_DIGEST, placement[BASE_DIGEST]) != placement[BASE_DIGEST]:
        raise ValueError(
            f"cannot resume the run in {config.run.run_dir}: it trained on {base_named(recorded)}, whose weights "
            f"are not those of {base_named(dataclasses.asdict(config))} here; resume with the model it trained on "
            "(in another folder or under another name if it moved)"
        )
    sampler = None
    if config.workers:
        from algorithms.text.rollout_workers import RolloutWorkers

        threads = max(1, (os.cpu_count() or 1) // config.workers)
        sampler = RolloutWorkers(functools.partial(build_worker_lm, config, agents), config.workers, lm, threads=threads)
    elif config.sampler == "ctranslate2":
        from algorithms.text.ctranslate2_sampler import CTranslate2Sampler

        sampler = CTranslate2Sampler(lm, exact_logprobs=False)  # the learners score with torch
    if BASE_DIGEST in recorded:  # the checkpoint names the base as the run first did, wherever it lies now
        named = trained_names(Path(config.run.run_dir), recorded, config)
        config = dataclasses.replace(config, model=named["model"], models=tuple(named["models"]))
    learner = learner_type(config, lm, venv, frozen, sampler=sampler)
    if algo is None and config.run.run_dir:  # a factory without a name: the learner it built names the run
        check_own_name(getattr(learner_type, "__qualname__", repr(learner_type)), learner, "text", "train")
    metrics_of_held_out = None
    if eval_env is not None:
        held_out = list(range(config.run.eval_problems))
        metrics_of_held_out = lambda: evaluate(learner, eval_env, held_out, progress=config.run.progress).metrics
    if config.run.run_dir and ranks.writes:
        record = {"algo": algo or learner.name, **config_record(config), **placement, **where_base_lies}
        open_run_dir(config.run.run_dir, record, config.run.resume, may_change, updates=config.run.updates,
                     resume_from=config.run.resume_from)  # fmt: skip
    data_parallel.barrier()  # the others start once rank 0 has checked and recorded the folder
    if config.run.run_dir and ranks.writes:
        learner.adapters_dir = Path(config.run.run_dir) / ADAPTERS  # the latest adapters beside each checkpoint
        learner.completions_dir = Path(config.run.run_dir) / COMPLETIONS
    try:
        result = run(learner, config.run, metrics_of_held_out, learner.settings(config), learner.headline)
    finally:
        if sampler is not None:
            sampler.close()
    before = result.first if metrics_of_held_out else {}
    after = (result.evaluation or metrics_of_held_out()) if metrics_of_held_out else {}  # a finished run resumed may have none logged
    if config.run.run_dir and ranks.writes:
        folder = Path(config.run.run_dir)
        write_adapters(lm, folder / ADAPTERS)
        summary = {"algo": learner.name, "config": config_record(config), "before": before, "after": after}
        (folder / SUMMARY).write_text(json.dumps(summary, indent=2), encoding="utf-8")
        if result.history:
            from algorithms.text.plots import learning_curves

            title = f"{learner.name}, {config.env.played()}, seed {config.seed}: joint reward per update"
            learning_curves({learner.name: [result.history]}, folder / CURVES_FILE, title)
    return TrainResult(learner, result.history, before, after, config.run.run_dir)
