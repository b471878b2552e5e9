"""A probe for issue 32, item 4: what ``torch.compile`` takes off a decoded token's fixed
cost, on the CPU, with a static KV cache and the stacked adapters.

Not the learners' sampler: the step below decodes two rows greedily, one per agent, of a
narrow model of Qwen2.5-1.5B's layout (``--layers`` blocks at width 64, LoRA rank 16 on all
7 linear layers of each, two agents' adapters, stacked: :mod:`agents.trainable_lm.mixed`),
three ways, each for ``--steps`` tokens:

- ``dynamic``: transformers' growing cache, eager (as :meth:`agents.TrainableLM.sample_joint`
  decodes);
- ``static``: a ``StaticCache`` of fixed length, eager;
- ``compiled``: the same step through ``torch.compile(fullgraph=True, dynamic=False)``
  (inductor; CUDA graphs would be ``mode="reduce-overhead"`` on a GPU, not measured here).

The model does almost no arithmetic, so a step's time is its fixed cost (Python and
dispatch). Each way's milliseconds per step leave out the first two steps (compilation,
reported apart); the three must decode the same tokens::

    python benchmarks/decode_compile.py --layers 4
    python benchmarks/decode_compile.py --layers 28

Writes ``benchmarks/results/decode_compile_<layers>.json`` (:func:`results.write_results`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch
import tyro
from gpu_check import AGENTS, SMOKE_SHAPE, lora_config, random_model
from peft import get_peft_model
from results import write_results
from transformers import StaticCache

from agents.trainable_lm.mixed import routed_adapters

WAYS = ("dynamic", "static", "compiled")


@dataclass
class Args:
    layers: int = 4
    """Transformer blocks (Qwen2.5-1.5B has 28)."""
    steps: int = 40
    """Tokens decoded each way (the first two are not timed)."""
    prompt_tokens: int = 16
    """Tokens of each row's prompt."""


def team(layers: int) -> torch.nn.Module:
    """The narrow model with both agents' adapters, moved apart (LoRA's B starts at 0)."""
    torch.manual_seed(0)
    model = get_peft_model(random_model({**SMOKE_SHAPE, "num_hidden_layers": layers}), lora_config(16),
                           adapter_name=AGENTS[0])  # fmt: skip
    for agent in AGENTS[1:]:
        model.add_adapter(agent, lora_config(16))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.5)
    return model.eval()


def decode(model: torch.nn.Module, prompts: torch.Tensor, steps: int, way: str) -> tuple[torch.Tensor, float, float]:
    """Greedy tokens of ``prompts`` (one row per agent), ms per step after the first two,
    and the first two steps' seconds."""
    width = prompts.shape[1]
    with routed_adapters(model, "stacked") as route, torch.no_grad():
        route(list(AGENTS))
        if way == "dynamic":
            out = model(input_ids=prompts, use_cache=True)
        else:
            cache = StaticCache(config=model.get_base_model().config, max_cache_len=width + steps + 1)
            out = model(input_ids=prompts, cache=cache, use_cache=True, cache_position=torch.arange(width))
        cache = out.cache

        def step(token: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
            return model(input_ids=token, cache=cache, use_cache=True, cache_position=position).logits

        if way == "compiled":
            step = torch.compile(step, fullgraph=True, dynamic=False)
        token = out.logits[:, -1].argmax(-1)[:, None]
        tokens = [token]
        started = time.perf_counter()
        for k in range(steps):
            if k == 2:
                warm = time.perf_counter()
            token = step(token, torch.tensor([width + k]))[:, -1].argmax(-1)[:, None]
            tokens.append(token)
        ended = time.perf_counter()
    return torch.cat(tokens, dim=1), 1000 * (ended - warm) / (steps - 2), warm - started


def main(args: Args) -> None:
    model = team(args.layers)
    prompts = torch.randint(0, SMOKE_SHAPE["vocab_size"], (len(AGENTS), args.prompt_tokens),
                            generator=torch.Generator().manual_seed(1))  # fmt: skip
    record: dict = {"args": asdict(args), "torch_threads": torch.get_num_threads(), "ways": {}}
    reference = None
    for way in WAYS:
        tokens, ms, first = decode(model, prompts, args.steps, way)
        reference = tokens if reference is None else reference
        record["ways"][way] = {"ms_per_step": ms, "first_two_steps_s": first, "same_tokens": torch.equal(tokens, reference)}
        print(f"{way}: {ms:.2f} ms per step (the first two steps: {first:.1f} s), "
              f"the same tokens as dynamic: {torch.equal(tokens, reference)}", flush=True)  # fmt: skip
    record["compiled_speedup"] = record["ways"]["dynamic"]["ms_per_step"] / record["ways"]["compiled"]["ms_per_step"]
    write_results(f"decode_compile_{args.layers}", record)


if __name__ == "__main__":
    main(tyro.cli(Args))
