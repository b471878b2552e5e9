"""TrainableLM's fast paths against the plain computations they replace, in the same test:
sampling without a whole-vocabulary sort and with one prefill per distinct prompt draws
the same tokens as sorting and prefilling every row; scoring with shared prompts gives the
same log-probabilities, loss and gradient as scoring every sequence on its own."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.transformers_backend import _sample

CHAT = ({"role": "user", "content": "What is 9 + 4?"},)
OTHER = ({"role": "system", "content": "A much longer system prompt, padded on the left."}, *CHAT)


def sorted_draw(logits, temperature, top_p, uniforms):
    """The sampler as it was: the whole vocabulary sorted for every row."""
    rows = logits.shape[0]
    return _sample(logits, torch.full((rows,), float(temperature)), torch.full((rows,), float(top_p)), uniforms)


def reference_sample(lm, agent, chats, seeds, max_new_tokens, temperature, top_p=1.0, min_new_tokens=0):
    """Decoding as it was: every row prefilled on its own left-padded prompt, each token
    drawn by sorting the whole vocabulary. Returns each row's tokens and log-probabilities."""
    prompts = [lm.encode(chat) for chat in chats]
    width = max(len(p) for p in prompts)
    pad = lm.tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    stop = lm.tokenizer.eos_token_id
    tokens, scores, done = [[] for _ in prompts], [[] for _ in prompts], [False] * len(prompts)
    with torch.no_grad(), lm._acting(agent) as model:
        output = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
        for step in range(max_new_tokens):
            logits = output.logits[:, -1, :].float()
            uniforms = torch.tensor([torch.rand((), generator=g).item() for g in generators])
            allowed = logits.index_fill(1, torch.tensor([stop]), float("-inf")) if step < min_new_tokens else logits
            chosen = sorted_draw(allowed, temperature, top_p, uniforms)
            logp = torch.log_softmax(logits / (temperature or 1.0), dim=-1).gather(1, chosen[:, None])[:, 0]
            for row, (token, score) in enumerate(zip(chosen.tolist(), logp.tolist(), strict=True)):
                if not done[row]:
                    tokens[row].append(token)
                    scores[row].append(score)
                    done[row] = token == stop or len(tokens[row]) == max_new_tokens
            if all(done):
                break
            mask = torch.cat([mask, torch.ones((len(prompts), 1), dtype=mask.dtype)], dim=1)
            positions = positions[:, -1:] + 1
            output = model(
                input_ids=chosen[:, None], attention_mask=mask, position_ids=positions, cache=output.cache, use_cache=True
            )
    return tokens, scores


def reference_logprobs(lm, agent, prompt_ids, token_ids, temperature):
    """Scoring as it was, in its plainest form: each prompt + completion run alone."""
    rows = []
    with lm._acting(agent) as model:
        for prompt, completion in zip(prompt_ids, token_ids, strict=True):
            logits = model(input_ids=torch.tensor([list(prompt) + list(completion)])).logits[0].float()
            predicted = logits[len(prompt) - 1 : len(prompt) + len(completion) - 1] / temperature
            rows.append(torch.log_softmax(predicted, dim=-1).gather(1, torch.tensor(completion)[:, None])[:, 0])
    logp = torch.zeros(len(rows), max(len(t) for t in token_ids))
    for k, row in enumerate(rows):
        logp[k, : len(row)] = row
    return logp


def distributions(size, rows, seed):
    """Logits of every shape the sampler meets: peaked, flat, wide, banned tokens, one certain token."""
    rng = np.random.default_rng(seed)
    table = [rng.normal(scale=scale, size=size) for scale in (0.5, 2.0, 6.0)]
    table.append(np.zeros(size))  # flat: the draw lands past the candidates, the full sort decides
    certain = np.zeros(size)
    certain[3] = 40.0  # p = 1 in float32: the nucleus ends at the first candidate even at top-p 1
    table.append(certain)
    banned = rng.normal(scale=3.0, size=size)
    banned[rng.choice(size, size // 10, replace=False)] = -np.inf
    table.append(banned)
    logits = np.stack([table[k % len(table)] for k in range(rows)])
    return torch.tensor(logits, dtype=torch.float32)


def assert_the_sorts_draw(logits, temperature, top_p, uniforms):
    """``draw_tokens`` picks the full sort's token, or one exactly as likely (ties have no order)."""
    from agents.trainable_lm import draw_tokens

    ours, sorts = draw_tokens(logits, temperature, top_p, uniforms), sorted_draw(logits, temperature, top_p, uniforms)
    rows = torch.nonzero(ours != sorts).flatten()
    probs = torch.softmax(logits[rows] / max(temperature, 1e-6), dim=-1)
    assert torch.equal(probs[torch.arange(len(rows)), ours[rows]], probs[torch.arange(len(rows)), sorts[rows]])
    return len(rows)


@pytest.mark.parametrize("size", [300, 49152])
@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, 1.0), (0.7, 1.0), (1.0, 0.95), (0.3, 0.5), (1.5, 0.999), (0.0, 1.0)])
def test_drawing_without_the_full_sort_picks_the_sorts_token(size, temperature, top_p):
    rows = 240 if size == 300 else 24
    logits = distributions(size, rows, seed=size)
    uniforms = torch.rand(rows, generator=torch.Generator().manual_seed(1))
    uniforms[:6] = torch.tensor([0.0, 1e-9, 0.5, 0.999999, 1 - 2**-24, 0.25])
    ties = assert_the_sorts_draw(logits, temperature, top_p, uniforms)
    assert ties <= rows // 6  # only the flat rows may differ, and only between equal tokens


def test_every_uniform_of_a_fine_grid_picks_the_sorts_token():
    """Uniforms 1e-4 apart over one row (at least 29 in each candidate's interval), and at
    every boundary of the sorted vocabulary's cumulative sum and the floats beside it: the
    draw crosses every candidate's boundary and the nucleus's end."""
    row = distributions(2000, 3, seed=5)[1]
    cumulative = torch.softmax(row, dim=-1).sort(descending=True).values.cumsum(dim=0)
    boundaries = torch.cat([cumulative, torch.nextafter(cumulative, torch.zeros(1)), torch.nextafter(cumulative, torch.ones(1))])
    grid = torch.cat([torch.linspace(0, 1, 10001)[:-1], boundaries.clamp(max=1 - 2.0**-24)])
    logits = row.expand(len(grid), -1)
    for top_p in (1.0, 0.9):
        assert assert_the_sorts_draw(logits, 1.0, top_p, grid) == 0


@pytest.mark.parametrize(("temperature", "top_p", "min_new_tokens"), [(1.0, 1.0, 0), (0.7, 0.9, 3), (0.0, 1.0, 0)])
def test_sampling_draws_the_tokens_of_the_plain_decoder(make_lm, temperature, top_p, min_new_tokens):
    lm = make_lm(micro_batch_size=8)
    with torch.no_grad():
        for parameter in lm.parameters("agent_1"):
            parameter.add_(0.05)  # an adapter that changes the policy
    chats = [CHAT, OTHER, CHAT, CHAT, OTHER, CHAT]  # a group shares its prompt
    seeds = [11, 12, 13, 14, 15, 16]
    completions = lm.sample(
        "agent_1", chats, seeds, max_new_tokens=16, temperature=temperature, top_p=top_p, min_new_tokens=min_new_tokens
    )
    tokens, scores = reference_sample(lm, "agent_1", chats, seeds, 16, temperature, top_p, min_new_tokens)
    assert [list(c.token_ids) for c in completions] == tokens
    for completion, row in zip(completions, scores, strict=True):
        assert list(completion.logprobs) == pytest.approx(row, abs=1e-5)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_scoring_with_shared_prompts_keeps_the_loss_and_its_gradient(make_lm, temperature):
    from algorithms.text.losses import text_policy_loss, token_weights

    lm = make_lm(micro_batch_size=8)
    with torch.no_grad():
        for parameter in lm.parameters("agent_0"):
            parameter.add_(0.05)
    short, long = lm.encode(CHAT), lm.encode(OTHER)
    prompts = [short, short, long, short, long, short]  # two groups, interleaved
    rng = np.random.default_rng(0)
    lengths = [7, 1, 12, 7, 3, 9]
    completions = [rng.integers(0, 250, size=n).tolist() for n in lengths]
    advantages = torch.tensor([0.5, -1.0, 1.5, -0.25, 0.0, 0.75])
    weights = token_weights(torch.tensor(lengths), "token")
    mask = (torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]).float()

    def loss_and_gradient(logp):
        loss, _ = text_policy_loss(logp, logp.detach(), None, advantages, mask, weights, 0.2, 0.0)
        return logp.detach(), loss.item(), torch.autograd.grad(loss, lm.parameters("agent_0"))

    fast = loss_and_gradient(lm.logprobs("agent_0", prompts, completions, temperature=temperature)[0])
    plain = loss_and_gradient(reference_logprobs(lm, "agent_0", prompts, completions, temperature))
    assert torch.allclose(fast[0], plain[0], atol=1e-5)
    assert fast[1] == pytest.approx(plain[1], rel=1e-5)
    for ours, theirs in zip(fast[2], plain[2], strict=True):
        assert torch.allclose(ours, theirs, rtol=1e-4, atol=1e-8)


@pytest.mark.parametrize("top_k", [1, 5, 64, 100])
@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, 1.0), (0.7, 0.9)])
def test_top_k_draws_the_sorts_token_among_the_top_k(top_k, temperature, top_p):
    """top_k (TRL's): the transformers backend's order, top-k then top-p within it; drawn
    among the candidates up to CANDIDATES tokens, by the full sort beyond."""
    from agents.trainable_lm import draw_tokens

    rows = 120
    logits = distributions(300, rows, seed=top_k)
    uniforms = torch.rand(rows, generator=torch.Generator().manual_seed(2))
    uniforms[:4] = torch.tensor([0.0, 0.5, 0.999999, 1 - 2**-24])
    ours = draw_tokens(logits, temperature, top_p, uniforms, top_k)
    full = torch.full((rows,), float(temperature)), torch.full((rows,), float(top_p))
    sorts = _sample(logits, *full, uniforms, torch.full((rows,), top_k))
    probs = torch.softmax(logits / temperature, dim=-1)
    index = torch.arange(rows)
    assert torch.equal(probs[index, ours], probs[index, sorts])  # the sort's token, or one as likely
    kth = probs.topk(top_k, dim=-1).values[:, -1]
    assert bool((probs[index, ours] >= kth).all())  # always among the top k
    if top_k == 1:
        assert torch.equal(ours, logits.argmax(dim=-1)) or bool((probs[index, ours] == probs.max(dim=-1).values).all())


def test_top_k_reaches_the_sampler_only_where_it_is_set(make_lm):
    """A sampler of one's own without top_k keeps working where top_k is 0 (the default)."""
    from agents.trainable_lm.sampling import check_sample_arguments

    with pytest.raises(ValueError, match="top_k >= 0"):
        check_sample_arguments([CHAT], [1], 4, 1.0, 1.0, 0, -1)
    lm = make_lm()
    one = lm.sample("agent_0", [CHAT] * 3, [1, 2, 3], max_new_tokens=6, temperature=1.0, top_k=1)
    greedy = lm.sample("agent_0", [CHAT], [9], max_new_tokens=6, temperature=0.0)
    assert all(c.token_ids == greedy[0].token_ids for c in one)  # top-1 is the greedy token at every step


@pytest.mark.parametrize("min_p", [0.01, 0.2, 0.9])
@pytest.mark.parametrize(("temperature", "top_p", "top_k"), [(1.0, 1.0, 0), (0.7, 0.9, 0), (1.0, 1.0, 5), (1.3, 0.95, 100)])
def test_min_p_draws_the_sorts_token_within_its_cut(min_p, temperature, top_p, top_k):
    """min_p (TRL's, transformers' ``MinPLogitsWarper``): a token stays only where its
    probability is at least min_p times the likeliest's; drawn among the candidates where
    the cut ends there, by the full sort otherwise, the same token either way."""
    from agents.trainable_lm import draw_tokens

    rows = 120
    logits = distributions(300, rows, seed=7)
    uniforms = torch.rand(rows, generator=torch.Generator().manual_seed(3))
    uniforms[:4] = torch.tensor([0.0, 0.5, 0.999999, 1 - 2**-24])
    ours = draw_tokens(logits, temperature, top_p, uniforms, top_k, min_p)
    full = torch.full((rows,), float(temperature)), torch.full((rows,), float(top_p))
    sorts = _sample(logits, *full, uniforms, torch.full((rows,), top_k), min_p)
    probs = torch.softmax(logits / temperature, dim=-1)
    index = torch.arange(rows)
    assert torch.equal(probs[index, ours], probs[index, sorts])  # the sort's token, or one as likely
    assert bool((probs[index, ours] >= min_p * probs.max(dim=-1).values).all())


def test_min_p_keeps_exactly_the_tokens_transformers_keeps():
    """On a fine grid of uniforms the sampler reaches every token transformers' warpers
    (temperature, then min-p) leave finite, and no other."""
    from transformers.generation.logits_process import MinPLogitsWarper, TemperatureLogitsWarper

    logits = torch.tensor(np.random.default_rng(11).normal(scale=2.0, size=60), dtype=torch.float32)[None]
    grid = torch.linspace(0, 1, 20001)[:-1]
    for temperature, min_p in ((1.0, 0.05), (0.5, 0.3), (2.0, 0.02)):
        rows = len(grid)
        drawn = _sample(logits.expand(rows, -1), torch.full((rows,), temperature), torch.ones(rows), grid, None, min_p)
        warped = MinPLogitsWarper(min_p)(None, TemperatureLogitsWarper(temperature)(None, logits.clone()))
        assert set(drawn.tolist()) == set(torch.isfinite(warped[0]).nonzero().flatten().tolist())


@pytest.mark.parametrize("penalty", [1.3, 0.8])
def test_repetition_penalty_decodes_as_transformers_generate(make_lm, penalty):
    """Greedy decoding with TRL's ``repetition_penalty`` gives the tokens of transformers'
    ``generate`` (its ``RepetitionPenaltyLogitsProcessor``: the prompt's tokens and the
    completion's so far), and the penalty changes them; sampled, the recorded
    log-probabilities stay the policy's, the ones the loss scores."""
    lm = make_lm(agents=("agent_0",))
    prompt = lm.encode(CHAT)
    ours = lm.sample("agent_0", [CHAT], [1], max_new_tokens=16, temperature=0.0, repetition_penalty=penalty)[0]
    plain = lm.sample("agent_0", [CHAT], [1], max_new_tokens=16, temperature=0.0)[0]
    with torch.no_grad(), lm._acting("agent_0") as model:
        theirs = model.generate(
            input_ids=torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            do_sample=False, repetition_penalty=penalty, max_new_tokens=16, eos_token_id=sorted(lm._stop_ids),
            pad_token_id=lm.tokenizer.pad_token_id,
        )[0, len(prompt):].tolist()  # fmt: skip
    assert list(ours.token_ids) == theirs and ours.token_ids != plain.token_ids
    sampled = lm.sample("agent_0", [CHAT, OTHER], [4, 5], max_new_tokens=8, temperature=0.9, repetition_penalty=penalty)
    policy, _ = lm.logprobs("agent_0", [c.prompt_ids for c in sampled], [c.token_ids for c in sampled], temperature=0.9)
    for row, completion in enumerate(sampled):
        assert torch.allclose(policy[row, : len(completion.token_ids)], torch.tensor(completion.logprobs), atol=1e-5)
