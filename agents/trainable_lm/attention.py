"""SDPA attention whose one-token decoding steps attend on the key/value heads when
compiled too (:func:`use_packed_attention`, for ``decoding="compiled"``).

transformers' ``sdpa`` attention runs a one-token query of a grouped-query model (Qwen2.5:
12 query heads on 2 key/value heads) as ``(rows, kv_heads, groups, dim)`` against the cache
as it lies, but not while ``torch.compile`` traces: there it repeats every layer's keys and
values to the query heads (``repeat_kv``), a copy of the whole cache at every step (six
copies for Qwen2.5-1.5B: about 68 GB written per step for 512 rows of 768 positions, where
attention reads 11 GB). :func:`packed_sdpa` packs the query when compiling as well (the
shapes of a compiled decoding step are static) and leaves every other call to transformers'
function unchanged. It is registered with transformers' ``AttentionInterface`` under
:data:`NAME`, with ``sdpa``'s masks.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

NAME = "sdpa_packed_decoding"
"""The attention implementation's name in transformers' registries."""
_SDPA: list[Any] = []
"""transformers' ``sdpa_attention`` module, imported by :func:`use_packed_attention`: inside
a compiled step, ``torch.compile`` (2.11 on an H200) refused the import from
``transformers.integrations``, a lazy module ("Bad import result")."""


def packed_sdpa(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' ``sdpa_attention_forward``, but a one-token query of grouped heads
    attends on the key/value heads while compiling too:

    .. math:: \\mathrm{softmax}\\big(Q_g K^\\top s + M\\big) V, \\qquad Q_g \\in
        \\mathbb{R}^{B \\times H_{kv} \\times g \\times d}

    (the query's ``H = H_{kv} g`` heads regrouped, ``K``, ``V`` the cache's ``H_{kv}``
    heads, ``M`` the mask shared by the heads), which is what the eager call computes."""
    sdpa_attention = _sdpa_attention()  # imported before tracing: dynamo refuses transformers' lazy import
    groups = getattr(module, "num_key_value_groups", 1)
    rows, heads, length, dim = query.shape
    packable = (
        torch.compiler.is_compiling()
        and groups > 1
        and length == 1
        and kwargs.get("position_bias") is None
        and kwargs.get("softcap") is None
        and (attention_mask is None or attention_mask.shape[1] == 1)
        and not sdpa_attention.use_gqa_in_sdpa(attention_mask, key, value)
    )
    if not packable:
        return sdpa_attention.sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    output = torch.nn.functional.scaled_dot_product_attention(
        query.reshape(rows, heads // groups, groups, dim),
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
    )
    return output.reshape(rows, heads, 1, value.shape[-1]).transpose(1, 2).contiguous(), None


def _sdpa_attention() -> Any:
    """transformers' ``sdpa_attention`` module (:data:`_SDPA`), imported on the first call."""
    if not _SDPA:
        _SDPA.append(importlib.import_module("transformers.integrations.sdpa_attention"))
    return _SDPA[0]


def use_packed_attention(config: Any) -> None:
    """Make a model of ``config`` whose attention is ``sdpa`` attend through
    :func:`packed_sdpa` (registered once per process); any other attention is left as it is.
    Not saved with the config (transformers does not serialize the implementation)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    _sdpa_attention()
    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, packed_sdpa)
        AttentionMaskInterface.register(NAME, sdpa_mask)
    if config._attn_implementation == "sdpa":
        config._attn_implementation = NAME
