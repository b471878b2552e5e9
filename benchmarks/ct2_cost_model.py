"""The measurements behind the CTranslate2 backend's sub-batch cost model (issue 14).

:func:`agents.ctranslate2_backend.length_buckets` estimates a sub-batch's cost from two
constants, :data:`~agents.ctranslate2_backend.STEP_OVERHEAD` and
:data:`~agents.ctranslate2_backend.PREFILL_COST`; this script measures what they stand for
on the bundled SmolLM2 (int8, one copy on every usable CPU, as when they were set), each time the best of three greedy calls:

- prefill: a batch of equal prompts (about 130 and 430 tokens), one new token;
- a decoding step at batch 1, 8, 24 and 72 (32 forced new tokens minus one);
- a batch of one short and one long prompt (51 and 351 tokens), one new token: the long
  prompt's tail is stepped through one position at a time.

Writes ``benchmarks/results/ct2_cost_model.json``.

    .venv/bin/python benchmarks/ct2_cost_model.py
"""

from __future__ import annotations

import time

from results import write_results

from agents.ctranslate2_backend import CTranslate2Backend


def main() -> None:
    backend = CTranslate2Backend(quantization="int8", replicas=1)
    (generator,) = backend._generators

    def prompt(words: int) -> list[str]:
        return backend._prompt_tokens(({"role": "user", "content": "word " * words},))

    def best(prompts: list[list[str]], new_tokens: int, repeats: int = 3) -> float:
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            generator.generate_batch(
                prompts, max_length=new_tokens, min_length=new_tokens, sampling_topk=1, include_prompt_in_result=False
            )
            seconds.append(time.perf_counter() - start)
        return min(seconds)

    prefill, decoding = [], []
    for words in (100, 400):
        tokens = prompt(words)
        for batch in (1, 8):
            seconds = best([tokens] * batch, 1)
            prefill.append({"prompt_tokens": len(tokens), "batch": batch, "ms": seconds * 1000})
            print(f"prefill, {len(tokens)} tokens x {batch}: {seconds * 1000:.0f} ms, {seconds * 1000 / len(tokens) / batch:.2f} ms a token")
    short = prompt(20)
    for batch in (1, 8, 24, 72):
        step = (best([short] * batch, 33) - best([short] * batch, 1)) / 32
        decoding.append({"batch": batch, "step_ms": step * 1000})
        print(f"decoding step, batch {batch}: {step * 1000:.1f} ms")
    long = prompt(320)
    seconds = best([short, long], 1, repeats=1)
    print(f"one batch of a {len(short)}- and a {len(long)}-token prompt, one new token: {seconds * 1000:.0f} ms")
    mixed = {"prompt_tokens": [len(short), len(long)], "ms": seconds * 1000}
    write_results("ct2_cost_model", {"prefill": prefill, "decoding_step": decoding, "mixed_batch": mixed})


if __name__ == "__main__":
    main()
