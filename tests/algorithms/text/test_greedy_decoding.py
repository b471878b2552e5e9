"""agents.TrainableLM's decoding loop on a tiny random Llama: a finished row leaves the batch,
greedy decodes each distinct request once, and neither changes a completion."""

from __future__ import annotations

import pytest
import torch

CHAT = ({"role": "user", "content": "What is 9 + 4?"},)
OTHER = ({"role": "system", "content": "A much longer system prompt, padded on the left."}, *CHAT)


def tiny_lm(stop_ids=(), finetune="lora"):
    """A tiny TrainableLM that also stops at ``stop_ids`` (the model's end-of-sequence ids)."""
    from agents.trainable_lm import TrainableLM, default_lora, tiny_model

    model, tokenizer = tiny_model(seed=0)
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, *stop_ids]
    return TrainableLM(model, tokenizer, ["agent_0", "agent_1"], finetune=finetune, lora=default_lora(rank=4, alpha=8.0))


def rows_per_pass(lm, agent="agent_0") -> list[int]:
    """The rows of every forward pass ``lm`` makes as ``agent`` from now on."""
    rows: list[int] = []
    lm.seats[agent].model.get_input_embeddings().register_forward_hook(lambda module, args, out: rows.append(len(args[0])))
    return rows


def argmax_decode(model, prompt: tuple[int, ...], stop_ids: set[int], max_new_tokens: int) -> tuple[int, ...]:
    """Greedy decoding the plainest way: the whole sequence through the model at every token."""
    tokens: list[int] = []
    with torch.no_grad():
        while len(tokens) < max_new_tokens:
            token = int(model(input_ids=torch.tensor([[*prompt, *tokens]])).logits[0, -1].argmax())
            tokens.append(token)
            if token in stop_ids:
                break
    return tuple(tokens)


def a_stop_token_of(lm) -> tuple[int, int]:
    """A token CHAT's greedy completion writes at some step k >= 2, never before, and OTHER's never:
    ``(token, k)``."""
    chat, other = lm.sample("agent_0", [CHAT, OTHER], [0, 0], max_new_tokens=12, temperature=0.0)
    for step, token in enumerate(chat.token_ids[2:], start=2):
        if token not in chat.token_ids[:step] and token not in other.token_ids:
            return token, step
    pytest.fail("no token of CHAT's completion can serve as a stop token")


def test_a_finished_row_leaves_the_batch_and_no_completion_changes():
    token, step = a_stop_token_of(tiny_lm())
    lm = tiny_lm(stop_ids=[token])
    rows = rows_per_pass(lm)

    chat, other = lm.sample("agent_0", [CHAT, OTHER], [0, 0], max_new_tokens=12, temperature=0.0)

    assert chat.finish_reason == "stop" and len(chat.token_ids) == step + 1 and chat.token_ids[-1] == token
    assert other.finish_reason == "length" and len(other.token_ids) == 12
    # the prompts' pass, then one pass per token but the last: both rows until CHAT stops, then OTHER alone
    assert rows == [2] + [2] * step + [1] * (11 - step)
    for completion, chats in ((chat, [CHAT]), (other, [OTHER])):
        alone = lm.sample("agent_0", chats, [0], max_new_tokens=12, temperature=0.0)[0]
        assert completion.token_ids == alone.token_ids and completion.finish_reason == alone.finish_reason


def test_greedy_completions_are_the_argmax_of_the_whole_sequence():
    token, _ = a_stop_token_of(tiny_lm(finetune="full"))
    lm = tiny_lm(stop_ids=[token], finetune="full")
    model, stop_ids = lm.seats["agent_0"].model, {token, lm.tokenizer.eos_token_id}

    completions = lm.sample("agent_0", [CHAT, OTHER, CHAT], [0, 1, 2], max_new_tokens=12, temperature=0.0)

    for completion in completions:
        assert completion.token_ids == argmax_decode(model, completion.prompt_ids, stop_ids, 12)
    assert completions[0].finish_reason == "stop" and completions[1].finish_reason == "length"


def test_greedy_decodes_each_distinct_request_once():
    lm = tiny_lm()
    with torch.no_grad():  # two different policies (LoRA's B starts at 0: the adapters would coincide)
        for scale, agent in enumerate(lm.agents, start=1):
            for parameter in lm.parameters(agent):
                parameter.add_(0.3 * scale * torch.randn_like(parameter))
    rows = rows_per_pass(lm)
    requests = {"agent_0": ([CHAT, OTHER, CHAT, CHAT], [1, 2, 3, 4]), "agent_1": ([CHAT], [1])}

    joint = lm.sample_joint(requests, max_new_tokens=8, temperature=0.0)

    assert max(rows) == 3  # agent_0's CHAT, agent_0's OTHER, agent_1's CHAT
    assert joint["agent_0"][0] == joint["agent_0"][2] == joint["agent_0"][3]
    for agent, (chats, seeds) in requests.items():
        alone = [lm.sample(agent, [chat], [seed], max_new_tokens=8, temperature=0.0)[0] for chat, seed in zip(chats, seeds)]
        assert [c.token_ids for c in joint[agent]] == [c.token_ids for c in alone]
        for mine, theirs in zip(joint[agent], alone, strict=True):
            assert mine.logprobs == pytest.approx(theirs.logprobs, abs=1e-5)  # other rows: float noise only
    assert joint["agent_0"][0] != joint["agent_1"][0]


def test_a_sampled_row_keeps_its_stream_when_others_leave_the_batch():
    lm = tiny_lm(stop_ids=range(0, 256, 3))  # a third of the bytes stop: rows end at different steps
    chats, seeds = [CHAT, OTHER, CHAT, OTHER], [1, 2, 3, 4]

    batch = lm.sample("agent_0", chats, seeds, max_new_tokens=16, temperature=1.0)

    assert len({len(c.token_ids) for c in batch}) > 1  # they did end at different steps
    for chat, seed, completion in zip(chats, seeds, batch, strict=True):
        alone = lm.sample("agent_0", [chat], [seed], max_new_tokens=16, temperature=1.0)[0]
        assert completion.token_ids == alone.token_ids
        assert completion.logprobs == pytest.approx(alone.logprobs, abs=1e-5)
