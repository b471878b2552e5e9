"""Learners that train the LLMs themselves, on the text-action env (``de.text_vector_env``).

=========================  ============================  ===========================================
learner                    config                        advantage (the one method it overrides)
=========================  ============================  ===========================================
:class:`TextMAGRPO`        :class:`TextMAGRPOConfig`     joint return minus the group baseline
                                                         (mean / rloo / max / raw), REINFORCE, one pass
:class:`TextGRPO`          :class:`TextGRPOConfig`       per agent, group-standardized; clipped ratio
:class:`TextSoftRankPO`    :class:`TextSoftRankPOConfig` per agent, soft-rank normal quantiles; KL
=========================  ============================  ===========================================

They share :class:`~algorithms.text.base.TextPolicyGradientLearner` (collect groups,
advantages, loss, update) and the advantage functions of :mod:`algorithms.core.advantages`
with the meta-policy learners. The policy is an :class:`agents.TrainableLM` (one LoRA
adapter per agent on one base, separate models, or full fine-tuning); frozen agents are
:class:`agents.TextPolicy` objects. :func:`train` builds everything from a config;
:func:`evaluate` plays a learner's agents greedily on held-out problems (the meta family's
:func:`algorithms.meta.evaluate` has the same shape and result type).

**MAGRPO: the paper, CoMLRL's default, and this package.** Where a user compares results
with CoMLRL (the paper authors' trainer, ``comlrl`` 1.4.3, ``MAGRPOConfig`` defaults):

=====================  ==========================  ==============================  ==================================
what                   paper (arXiv 2508.04652)    CoMLRL default                  this package (``TextMAGRPOConfig``)
=====================  ==========================  ==============================  ==================================
loss                   REINFORCE,                  REINFORCE: -A times the sum     the clipped surrogate with one pass
                       -A grad log pi(o)           of the completion's token       (ratio 1: exactly REINFORCE's
                                                   log-probs, mean over samples    gradient); ``aggregation="token"``
                                                                                   (mean over all tokens),
                                                                                   ``"sequence"`` (mean of sequence
                                                                                   means) or ``"constant"`` (sum over
                                                                                   N x ``max_new_tokens``)
advantage              A = R - mean of the group   R - baseline (``advantage_      R - baseline (``baseline``: mean,
                                                   mode``: mean), then             rloo, max, raw); standardized only
                                                   standardized: (A - mean) /      with ``normalize_advantages=True``
                                                   max(std, 1e-6)                  (then the four baselines coincide
                                                   (``advantage_normalization``)   and MAGRPO = TextGRPO, joint credit)
multi-turn returns     sum of the turns' rewards   a tree: each of the K samples   parallel rollouts: G joint
                                                   of a turn branches into K       trajectories per problem, G_t =
                                                   at the next; a node's return    r_t + gamma G_{t+1} along each
                                                   is its reward + the mean of     (``gamma``, default 1); or
                                                   its children's returns          CoMLRL's tree (``rollout=
                                                                                   "tree"``), a node's group its
                                                                                   G siblings
cross pairing          (aligned samples)           ``joint_mode="cross"``: a       ``pairing="cross"``: a sample's
                                                   sample's return is the SUM      return is the MEAN of those joint
                                                   of the joint returns it is      returns (G^(n-1) times smaller;
                                                   part of                         equal after standardization)
early termination      none                        ``termination_threshold``: a    ``env.stop_threshold`` (off): a
                                                   node's K samples end (their     joint sample's episode ends once
                                                   returns their rewards) once     its joint reward reaches it, that
                                                   their mean reward exceeds it    reward counting at every turn left
clipping               none                        none                            ``clip_eps`` (inactive in one pass)
optimizer              (not fixed)                 AdamW per agent (weight decay   Adam per agent (``weight_decay``
                                                   0.01, torch's default)          > 0: AdamW on the matrices),
                                                                                   ``learning_rate``, ``lr_schedule``
gradient clipping      (not fixed)                 none                            global norm ``max_grad_norm`` = 1.0
KL to the base         none                        off (``reference_kl_enabled``)  off (``kl_coef`` = 0)
=====================  ==========================  ==============================  ==================================

**TRL's GRPOTrainer settings and their names here** (``GRPOConfig``; CLI flags spell ``_``
as ``-``):

==================================  ===========================================================
TRL                                 here
==================================  ===========================================================
``num_generations``                 ``group_size`` (G)
``num_iterations``                  ``update_epochs``
``steps_per_generation``            ``num_minibatches`` = TRL's optimizer steps per batch,
                                    ``steps_per_generation / gradient_accumulation_steps`` (1 by
                                    default in both)
``per_device_train_batch_size``     ``micro_batch_size`` (a minibatch accumulates over its
                                    micro-batches exactly: no ``gradient_accumulation_steps``)
``loss_type``                       ``aggregation``: ``grpo`` = ``"sequence"``, ``dapo`` =
                                    ``"token"`` (``bnpo`` is ``"token"`` per micro-batch),
                                    ``dr_grpo`` = ``"constant"``; not here: ``cispo``, ``sapo``,
                                    ``luspo``, ``vespo``
``epsilon``, ``epsilon_high``       ``clip_eps``, ``clip_eps_high``
``importance_sampling_level``       ``importance_sampling`` (``"sequence"``: GSPO)
``scale_rewards``                   ``scale_rewards`` (TextGRPO; ``"none"``: Dr. GRPO). TRL divides
                                    by the sample standard deviation + 1e-4, this package by the
                                    population one + ``eps`` (1e-6), as the meta learners and
                                    DeepSeekMath's equation: advantages sqrt(G / (G - 1)) larger
                                    (1.15 at G = 4); ``--eps 1e-4`` matches TRL's epsilon
``beta``                            ``kl_coef`` (the k3 estimator, as TRL)
``max_completion_length``           ``max_new_tokens``; ``temperature``, ``top_p``, ``top_k``,
                                    ``min_p``, ``repetition_penalty`` (the torch sampler's;
                                    like TRL's, they shape the draw, not the policy the loss
                                    scores)
``chat_template_kwargs``            ``chat_template_kwargs`` (``--chat-template-kwargs
                                    '{"enable_thinking": false}'``, a JSON object; the sampled
                                    prompts, and so the trained ones, read them)
``mask_truncated_completions``      ``mask_truncated_completions`` (a cut completion keeps its
                                    reward and its place in the group's baseline, and leaves
                                    the loss)
``sync_ref_model``                  not here (TRL refuses it with PEFT; full fine-tuning's
                                    reference here is the base it started from)
``max_prompt_length``               (gone from TRL 1.x) an env's prompts are bounded by its
                                    task and turns; a text env refuses one that outgrows them
``lr_scheduler_type``,              ``lr_schedule``, ``warmup_updates`` (set per update, not per
``warmup_steps``                    optimizer step); ``learning_rate``, ``weight_decay``,
                                    ``max_grad_norm``, ``gradient_checkpointing`` alike
(several agents)                    TRL trains each agent as a run of its own; here a minibatch's
                                    token weights count every trainable agent's completions (with
                                    ``aggregation="token"`` an agent's loss is divided by the
                                    team's tokens), and each agent's gradient is clipped apart
``logging_steps``                   every update logs its optimizer steps' mean ``losses/*``:
                                    ``kl``, ``clip_frac`` (where clipping bites, as TRL's
                                    ``clip_ratio/region_mean``), ``clip_frac_low``,
                                    ``clip_frac_high`` and ``entropy`` as token means
``cast_lm_head_to_fp32``            ``cast_lm_head_to_fp32`` (the output layer's product in
                                    float32 for the loss and the torch sampler; a tied
                                    embedding's weight is upcast where used, not cast, so TRL's
                                    refusal of tied models does not apply)
``full_determinism``                ``full_determinism`` (transformers' flag; ``warn_only``, and
                                    no seeding: ``seed`` seeds every generator already)
``use_vllm``                        not here: ``sampler="ctranslate2"`` on a CPU, the torch
                                    sampler (one mixed-adapter batch for the team) elsewhere
==================================  ===========================================================
"""

from algorithms.core.lazy import lazy_package
from algorithms.text.config import (
    TEXT_CONFIGS,
    TextGRPOConfig,
    TextLearnerConfig,
    TextMAGRPOConfig,
    TextSoftRankPOConfig,
)

lazy_package(
    __name__,
    {
        "TextPolicyGradientLearner": "algorithms.text.base",
        "TEXT_LEARNERS": "algorithms.text.learners",
        "TextGRPO": "algorithms.text.learners",
        "TextMAGRPO": "algorithms.text.learners",
        "TextSoftRankPO": "algorithms.text.learners",
        "TrainResult": "algorithms.core.run",
        "train": "algorithms.text.train",
        "evaluate": "algorithms.text.eval",
    },
)  # the learners need torch: each is imported when first used, so the configs load without it

__all__ = [
    "TEXT_CONFIGS",
    "TEXT_LEARNERS",
    "TextGRPO",
    "TextGRPOConfig",
    "TextLearnerConfig",
    "TextMAGRPO",
    "TextMAGRPOConfig",
    "TextPolicyGradientLearner",
    "TextSoftRankPO",
    "TextSoftRankPOConfig",
    "TrainResult",
    "evaluate",
    "train",
]
