"""What the trainable LM needs (peft, beside transformers), checked on use: both are core
dependencies now (a newcomer's `make run` install could not run the text seat), but an
install without them (``pip install --no-deps``) still gets one error that names them.

:mod:`agents.trainable_lm` imports without it (the command line imports the learners); its
modules import what they use of peft and transformers only when :data:`MISSING_EXTRA` is
None, and whatever builds a model calls :func:`require_train_extra` first.
"""

from __future__ import annotations

try:
    import peft  # noqa: F401
    import transformers  # noqa: F401

    MISSING_EXTRA: ImportError | None = None
except ImportError as error:  # pragma: no cover - depends on the installed extras
    MISSING_EXTRA = error


def require_train_extra() -> None:
    """Raise the error naming the extra when transformers or peft is missing."""
    if MISSING_EXTRA is not None:
        raise ImportError(
            "agents.TrainableLM needs transformers and peft: pip install 'deliberation-env[train]'"
        ) from MISSING_EXTRA
