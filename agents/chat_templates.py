"""Extra variables of a chat template: TRL's ``chat_template_kwargs``.

Some chat templates read variables besides the messages: Qwen3's ``enable_thinking``
(``{"enable_thinking": false}`` leaves out its thinking block). Every place that renders a
prompt with a tokenizer's template passes them to ``apply_chat_template`` through
:func:`render_chat`, so a prompt is rendered the same way wherever it is (the text seat's
sampler, and so its loss, which trains on the sampled prompt's tokens; the transformers,
CTranslate2 and vLLM backends). They change the prompt, so they are part of what names the
rendered prompts: a backend's model id (:func:`model_id_with`), and so the response
cache's keys, and a text run's recorded settings.

>>> parse_chat_template_kwargs('{"enable_thinking": false}')
{'enable_thinking': False}
>>> model_id_with("transformers:m-float32", {"enable_thinking": False})
'transformers:m-float32+chat_template_kwargs={"enable_thinking":false}'
>>> model_id_with("transformers:m-float32", {})
'transformers:m-float32'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

RENDERING_ARGUMENTS = frozenset({
    "conversation", "tokenize", "add_generation_prompt", "continue_final_message", "chat_template",
    "return_tensors", "return_dict", "return_assistant_tokens_mask", "padding", "truncation",
    "max_length", "tokenizer_kwargs",
})  # fmt: skip
"""``apply_chat_template``'s own arguments that say how it renders, not what the template
reads: the renderers set them (a prompt is text that opens the assistant's turn), so they
are refused as template variables."""
EXAMPLE = """'{"enable_thinking": false}'"""
"""The object errors show."""


def check_chat_template_kwargs(kwargs: Any, where: str = "chat_template_kwargs") -> dict[str, Any]:
    """``kwargs`` as a plain dict of template variables, checked.

    Args:
        kwargs: A mapping of variable names to JSON values.
        where: How errors name it (``""``: not at all, where the caller names it).

    Raises:
        ValueError: On a value that is no mapping, a name that is no string or is one of
            :data:`RENDERING_ARGUMENTS`, or a value JSON cannot hold (a run records them).
    """
    named = f"{where}: " if where else ""
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"{named}not a JSON object such as {EXAMPLE}: {kwargs!r}")  # noqa: TRY004 (a bad setting: configs say ValueError)
    checked = dict(kwargs)
    names = [name for name in checked if not isinstance(name, str)]
    if names:
        raise ValueError(f"{named}the template's variable names are strings, got {names!r}")
    own = sorted(RENDERING_ARGUMENTS.intersection(checked))
    if own:
        raise ValueError(
            f"{named}{', '.join(own)}: apply_chat_template's own argument, not a template variable"
        )
    try:
        json.dumps(checked, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"{named}its values must be JSON values (a run records them): {error}"
        ) from error
    return checked


def parse_chat_template_kwargs(text: str) -> dict[str, Any]:
    """The template variables of the JSON object ``text`` (``'{"enable_thinking": false}'``),
    checked (:func:`check_chat_template_kwargs`).

    Raises:
        ValueError: In one line that does not name the option (the command line's error
            names it), on text that is no JSON or no JSON object.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a JSON object such as {EXAMPLE}: {text!r} ({error.msg})") from None
    if not isinstance(value, dict):
        kind = type(value).__name__
        raise ValueError(f"not a JSON object such as {EXAMPLE}: {text!r} is a {kind}")  # noqa: TRY004 (bad text)
    return check_chat_template_kwargs(value, where="")


def canonical(kwargs: Mapping[str, Any]) -> str:
    """``kwargs`` as one JSON text, keys sorted and no spaces: equal variables, equal text.

    >>> canonical({"b": 1, "a": True})
    '{"a":true,"b":1}'
    """
    return json.dumps(dict(kwargs), sort_keys=True, separators=(",", ":"))


def model_id_with(model_id: str, kwargs: Mapping[str, Any]) -> str:
    """``model_id`` naming the template variables its prompts are rendered with too (none:
    ``model_id`` itself, so the cache rows of runs without them are served as before)."""
    return f"{model_id}+chat_template_kwargs={canonical(kwargs)}" if kwargs else model_id


def render_chat(
    tokenizer: Any, messages: Sequence[Mapping[str, str]], kwargs: Mapping[str, Any] | None = None
) -> str:
    """The prompt text of ``messages``: ``tokenizer``'s chat template with the assistant's
    turn opened, the template reading the variables ``kwargs`` too."""
    return tokenizer.apply_chat_template(
        list(messages), tokenize=False, add_generation_prompt=True, **(kwargs or {})
    )
