"""Test doubles of the text env's tests: a seeded fake backend and small corpora."""

from __future__ import annotations

import json
from pathlib import Path

from agents.base import Generation


class SeededBackend:
    """A text backend whose completion is a function of the request's seed only.

    Its answer is ``seed % modulo``, so a test can tell requests apart by their seeds and
    see that equal requests give equal texts. It records every ``generate`` call.
    """

    model_id = "fake:seeded"
    supports_logprobs = False

    def __init__(self, modulo: int = 20) -> None:
        self.modulo = modulo
        self.calls: list[list] = []

    def generate(self, requests):
        self.calls.append(list(requests))
        return [Generation(f"The answer is {r.seed % self.modulo}.", 10, 5, "stop") for r in requests]

    def next_token_logprobs(self, requests):
        raise NotImplementedError


def write_corpus(path: Path, documents: list[str]) -> Path:
    """A JSONL corpus with one ``{"text": ...}`` line per document."""
    path.write_text("".join(json.dumps({"text": doc}) + "\n" for doc in documents), encoding="utf-8")
    return path


DOCUMENTS = [
    f"Post {k}: my neighbour's dog barks every night, so I asked them politely to keep it "
    f"inside after ten; they agreed, but the barking went on for {k} more weeks."
    for k in range(12)
]
