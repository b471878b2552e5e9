"""Issue 32, items 2 and 3: memory at the papers' scale (micro-batches with gradient
accumulation, gradient checkpointing) computes the plain update; the meter behind the
learners' ``perf/*`` metrics; a saved adapter names its base (a folder or a hub id, or a
shared folder written once) and loads with plain peft. Tiny models built here, no download."""

from __future__ import annotations

import json
import os

import pytest
import torch

from agents.trainable_lm import Meter, TrainableLM, default_lora, tiny_model
from algorithms.text import TextGRPO, TextGRPOConfig
from algorithms.text.config import text_run
from deliberation_env.tasks import Problem
from deliberation_env.text import Outcome, text_vector_env
from deliberation_env.text.protocols.base import chat

torch.set_num_threads(1)  # tiny matrices: threads only synchronise
CHAT = [{"role": "user", "content": "What is 2 + 3?"}]
AGENTS = ["agent_0", "agent_1"]


class LengthProtocol:
    """R = (the team's characters mod 7) / 6: varied, deterministic (a reward for the tests only)."""

    name = "length"
    reward_range = (0.0, 1.0)

    def roles(self, n_agents):
        return ("writer",) * n_agents

    def problems(self, split):
        return [Problem(id=f"p{k}", question=f"Write about {k}.", answer="") for k in range(4)]

    def prompt(self, problem, roles, agent, previous, feedback):
        return chat("You write.", problem.question)

    def score(self, problem, texts):
        reward = sum(len(text) for text in texts) % 7 / 6
        return Outcome(reward, {"length": reward}, tuple("" for _ in texts), None)

    def neutral_text(self, problem, agent):
        return ""


def make_lm(agents=AGENTS, **kwargs) -> TrainableLM:
    model, tokenizer = tiny_model(seed=0)
    kwargs.setdefault("lora", default_lora(rank=4, alpha=8.0))
    return TrainableLM(model, tokenizer, list(agents), seed=0, **kwargs)


def loss_and_gradient(lm: TrainableLM, agent: str = "agent_0") -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A loss over three completions (two share a prompt), and its gradient on ``agent``'s adapter."""
    prompt = lm.encode(CHAT)
    with torch.no_grad():
        for k, parameter in enumerate(lm.parameters(agent)):
            parameter.add_(0.01 * (k + 1))  # LoRA's B starts at 0: move it so every weight has a gradient
    logp, mask = lm.logprobs(agent, [prompt, prompt, prompt[:-3]], [[5, 6, 7], [5, 9], [1, 2, 3, 4]])
    loss = -(logp * mask * torch.tensor([[1.0], [-2.0], [0.5]])).sum()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in lm.parameters(agent)]


def assert_same(ours, theirs):
    (loss, gradient), (their_loss, their_gradient) = ours, theirs
    torch.testing.assert_close(loss, their_loss, rtol=1e-5, atol=1e-6)
    for a, b in zip(gradient, their_gradient, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_micro_batches_accumulate_the_whole_batchs_loss_and_gradient():
    assert_same(loss_and_gradient(make_lm(micro_batch_size=1)), loss_and_gradient(make_lm(micro_batch_size=16)))


def test_a_long_completion_beside_short_ones_runs_in_segments_and_scores_as_one_padded_pass():
    """A completion cut at the budget beside short ones: the short rows leave after their
    segment, and the loss and gradient are those of the rows scored alone (no padding) and
    of one whole padded pass (checkpointing's)."""
    completions = [[5, 6], list(range(3, 43)), [7, 8, 9, 10, 11]]

    def scored(lm):
        passes = []
        model = lm.seats["agent_0"].model.get_base_model()
        model.register_forward_pre_hook(lambda _, args, kwargs: passes.append(kwargs["input_ids"].shape), with_kwargs=True)
        prompt = lm.encode(CHAT)
        with torch.no_grad():
            for k, parameter in enumerate(lm.parameters("agent_0")):
                parameter.add_(0.01 * (k + 1))
        logp, mask = lm.logprobs("agent_0", [prompt, prompt[:-2], prompt], completions)
        assert mask.sum(dim=1).tolist() == [len(c) for c in completions]
        loss = -(logp * mask * torch.tensor([[1.0], [0.5], [-2.0]])).sum()
        loss.backward()
        return (loss.detach(), [p.grad.clone() for p in lm.parameters("agent_0")]), passes

    segmented, passes = scored(make_lm())
    assert [shape[0] for shape in passes] == [2, 3, 1]  # the two prompts, then all three rows, then the long one alone
    assert_same(segmented, scored(make_lm(micro_batch_size=1))[0])
    assert_same(segmented, scored(make_lm(gradient_checkpointing=True))[0])
    padded, passes = scored(make_lm(segmented_scoring=False))
    assert [tuple(shape) for shape in passes][1:] == [(3, 39)]  # one pass, every row padded to the longest
    assert_same(segmented, padded)


def test_gradient_checkpointing_recomputes_and_gives_the_same_loss_and_gradient():
    plain, checkpointed = make_lm(), make_lm(gradient_checkpointing=True)
    calls = {}
    for name, lm in (("plain", plain), ("checkpointed", checkpointed)):
        mlp = lm.seats["agent_0"].model.get_base_model().model.layers[0].mlp
        mlp.register_forward_pre_hook(lambda *_, name=name: calls.__setitem__(name, calls.get(name, 0) + 1))
    prompt = plain.encode(CHAT)
    for lm in (plain, checkpointed):
        logp, mask = lm.logprobs("agent_0", [prompt], [[5, 6, 7]])
        forward = dict(calls)
        (logp * mask).sum().backward()
        assert calls == forward or lm is checkpointed
    assert calls["checkpointed"] == 2 * forward["checkpointed"]  # the backward pass ran the layer again
    for lm in (plain, checkpointed):
        for parameter in lm.parameters("agent_0"):
            parameter.grad = None
    assert_same(loss_and_gradient(checkpointed), loss_and_gradient(plain))
    (completion,) = checkpointed.sample("agent_0", [CHAT], [3], max_new_tokens=4)  # sampling keeps its cache
    assert completion == plain.sample("agent_0", [CHAT], [3], max_new_tokens=4)[0]


def learner(**settings) -> TextGRPO:
    config = TextGRPOConfig(
        groups_per_update=2, group_size=2, max_new_tokens=6, max_grad_norm=1e9, run=text_run(progress=False), **settings
    )
    venv = text_vector_env(config.num_envs, protocol=LengthProtocol(), n_agents=2, max_turns=1)
    lm = make_lm(micro_batch_size=config.micro_batch_size, gradient_checkpointing=config.gradient_checkpointing)
    return TextGRPO(config, lm, venv)


@pytest.mark.parametrize("settings", [{"micro_batch_size": 1}, {"gradient_checkpointing": True}])
def test_a_learners_update_is_the_same_in_micro_batches_and_with_checkpointing(settings):
    updates = []
    for subject in (learner(micro_batch_size=8), learner(**settings)):
        subject.train_step()
        gradients = [p.grad.clone() for p in subject._parameters(subject.trainable)]
        updates.append((subject.lm.state_dict(), gradients))
    (weights, gradients), (their_weights, their_gradients) = updates
    assert any(g.abs().sum() > 0 for g in gradients)
    for a, b in zip(gradients, their_gradients, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-7)
    for agent, part in weights.items():
        for name, tensor in part.items():
            torch.testing.assert_close(tensor, their_weights[agent][name], rtol=1e-4, atol=1e-6)


def test_every_update_logs_the_perf_metrics():
    subject = learner()
    for _ in range(2):
        metrics = subject.train_step()
        assert metrics["perf/peak_memory_gb"] > 0
        assert metrics["perf/generated_tokens_per_s"] > 0 and metrics["perf/trained_tokens_per_s"] > 0
        assert "perf/mfu" not in metrics  # a CPU has no peak FLOPS in the table
        vocabulary = subject.lm.seats["agent_0"].model.config.vocab_size
        assert 0 < metrics["losses/entropy"] <= torch.log(torch.tensor(float(vocabulary))).item()
    assert subject.lm.read_meter() == Meter()  # the metrics read the meter: the next update starts from zero


def test_the_meter_counts_decoded_and_trained_tokens_and_model_flops():
    lm = make_lm()
    model = lm.seats["agent_0"].model.get_base_model()
    config = model.config
    matrices = sum(p.numel() for name, p in model.named_parameters() if "lora_" not in name)
    matrices -= config.vocab_size * config.hidden_size  # the input embedding is a lookup (untied here)
    assert lm.train_flops_per_token == 4 * matrices  # LoRA: 2N forward + 2N for the activations' gradients
    assert make_lm(finetune="full").train_flops_per_token == 6 * matrices
    completions = lm.sample("agent_0", [CHAT, CHAT], [1, 2], max_new_tokens=3)
    meter = lm.read_meter()
    assert meter.generated_tokens == 6 and meter.generation_seconds > 0 and meter.trained_tokens == 0
    prompt = list(completions[0].prompt_ids)
    lm.logprobs("agent_0", [prompt, prompt], [[5, 6], [7]], reference=True)  # no gradient: not trained on
    assert lm.read_meter().trained_tokens == 0
    lm.logprobs("agent_0", [prompt, prompt], [[5, 6], [7]])
    meter = lm.read_meter()
    assert meter.trained_tokens == len(prompt) + 3  # the shared prompt runs once
    assert meter.trained_flops == meter.trained_tokens * lm.train_flops_per_token
    recomputing = make_lm(gradient_checkpointing=True)
    recomputing.logprobs("agent_0", [prompt, prompt], [[5, 6], [7]])
    assert recomputing.read_meter().trained_tokens == 2 * len(prompt) + 3  # each row with its prompt


@pytest.mark.parametrize("settings", [{}, {"segmented_scoring": False}, {"gradient_checkpointing": True}])
def test_the_meter_sums_the_policys_entropy_at_the_trained_tokens(settings):
    lm = make_lm(**settings)
    prompt = lm.encode(CHAT)
    completions = [[5, 6, 7, 8, 9], [5, 9], [11]]
    lm.logprobs("agent_0", [prompt, prompt, prompt[:-2]], completions, temperature=0.7, reference=True)
    logp, mask = lm.logprobs("agent_0", [prompt, prompt, prompt[:-2]], completions, temperature=0.7)
    assert lm._meter.entropy_total() == (0.0, 0)  # its backward pass computes them
    (logp * mask).sum().backward()
    meter = lm.read_meter()  # the reference pass adds nothing
    expected = []
    with torch.no_grad():
        for prefix, completion in zip([prompt, prompt, prompt[:-2]], completions, strict=True):
            ids = torch.tensor([list(prefix) + completion[:-1]])
            logits = lm.seats["agent_0"].model(input_ids=ids).logits[0, len(prefix) - 1 :] / 0.7
            logp = torch.log_softmax(logits.float(), dim=-1)
            expected.extend((-(logp.exp() * logp).sum(dim=-1)).tolist())
    assert meter.entropy_total()[1] == len(expected) == 8
    assert meter.mean_entropy == pytest.approx(sum(expected) / len(expected), rel=1e-4)


def folders(directory) -> list[str]:
    """The folders in ``directory`` (peft writes a README.md beside the adapters)."""
    return sorted(path.name for path in directory.iterdir() if path.is_dir())


def save_base(folder) -> None:
    """A tiny model made from a config, saved as a local model folder: "the base"."""
    model, tokenizer = tiny_model(seed=0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def test_a_saved_adapter_names_its_base_folder_and_loads_with_plain_peft(tmp_path):
    from peft import AutoPeftModelForCausalLM, PeftModel
    from transformers import AutoModelForCausalLM

    base = tmp_path / "base"
    save_base(base)
    lm = TrainableLM.from_pretrained(base, AGENTS, lora=default_lora(rank=4, alpha=8.0), device="cpu", dtype="float32")
    assert lm.base == str(base.resolve())
    assert lm.seats["agent_0"].model.get_base_model().config._attn_implementation == "sdpa"
    with torch.no_grad():
        for parameter in lm.parameters("agent_1"):
            parameter.add_(0.05)
    lm.save_adapters(tmp_path / "run")
    assert folders(tmp_path / "run") == AGENTS  # no copy of the base beside them
    settings = json.loads((tmp_path / "run" / "agent_1" / "adapter_config.json").read_text())
    assert settings["base_model_name_or_path"] == str(base.resolve())
    card = (tmp_path / "run" / "agent_1" / "README.md").read_text()  # not peft's empty template
    assert f"Base model: `{base.resolve()}`" in card and "AutoPeftModelForCausalLM" in card
    index = (tmp_path / "run" / "README.md").read_text()  # peft's template was written here too
    assert "More Information Needed" not in index and "[`agent_1`](agent_1/README.md)" in index
    ids = torch.tensor([lm.encode(CHAT)])
    with lm._acting("agent_1") as model, torch.no_grad():
        ours = model(input_ids=ids).logits
    served = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), tmp_path / "run" / "agent_1").eval()
    alone = AutoPeftModelForCausalLM.from_pretrained(tmp_path / "run" / "agent_1").eval()
    with torch.no_grad():
        torch.testing.assert_close(served(input_ids=ids).logits, ours, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(alone(input_ids=ids).logits, ours, rtol=1e-5, atol=1e-5)
    restored = TrainableLM.from_pretrained(base, AGENTS, lora=default_lora(rank=4, alpha=8.0))
    restored.load_adapters(tmp_path / "run")
    for name, tensor in lm.state_dict()["agent_1"].items():
        assert torch.equal(restored.state_dict()["agent_1"][name], tensor)


def test_a_base_that_exists_nowhere_else_is_written_once_where_runs_share_it(tmp_path, monkeypatch):
    from peft import AutoPeftModelForCausalLM

    monkeypatch.setenv("DELIBERATION_ENV_BASES", str(tmp_path / "bases"))
    for run in ("a", "b"):
        make_lm().save_adapters(tmp_path / run)  # a model built in memory: no folder or id to name
    (shared,) = (tmp_path / "bases").iterdir()
    for run in ("a", "b"):
        assert folders(tmp_path / run) == AGENTS
        settings = json.loads((tmp_path / run / "agent_0" / "adapter_config.json").read_text())
        assert settings["base_model_name_or_path"] == str(shared)
    AutoPeftModelForCausalLM.from_pretrained(tmp_path / "b" / "agent_0")  # the shared folder is a whole model
    umask = os.umask(0)
    os.umask(umask)
    modes = {path.stat().st_mode & 0o777 for path in (shared, *shared.rglob("*"))}
    assert modes == {0o777 & ~umask, 0o666 & ~umask}  # not mkdtemp's 0o700: other users share the cache
    model, tokenizer = tiny_model(seed=1)
    TrainableLM(model, tokenizer, ["agent_0"]).save_adapters(tmp_path / "c")  # other weights: another base
    assert len(list((tmp_path / "bases").iterdir())) == 2


def test_a_gguf_models_adapters_name_its_dequantized_folder_and_no_base_is_copied(tmp_path, monkeypatch):
    """The default SmolLM2 is a GGUF file: its adapters named a second, byte-identical copy of
    the dequantized model (517 MB) written beside it into the shared bases."""
    from peft import AutoPeftModelForCausalLM

    from agents import dequantized_gguf

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("DELIBERATION_ENV_BASES", str(tmp_path / "bases"))
    monkeypatch.setattr(dequantized_gguf, "_write_plain", lambda gguf, folder: save_base(folder))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"quantized weights")
    lm = TrainableLM.from_pretrained(gguf, AGENTS, lora=default_lora(rank=4, alpha=8.0))
    lm.save_adapters(tmp_path / "run")
    folder = dequantized_gguf.dequantized(gguf)
    settings = json.loads((tmp_path / "run" / "agent_1" / "adapter_config.json").read_text())
    assert settings["base_model_name_or_path"] == str(folder) and not (tmp_path / "bases").exists()
    ids = torch.tensor([lm.encode(CHAT)])
    alone = AutoPeftModelForCausalLM.from_pretrained(tmp_path / "run" / "agent_1").eval()
    with lm._acting("agent_1") as model, torch.no_grad():
        torch.testing.assert_close(alone(input_ids=ids).logits, model(input_ids=ids).logits, rtol=1e-5, atol=1e-5)


def test_the_shared_base_does_not_depend_on_where_or_with_what_version_it_was_read(tmp_path, monkeypatch):
    """A real client found two byte-identical SmolLM2 bases of 517 MB: each install's GGUF
    path (``_name_or_path``) was part of the digest."""
    monkeypatch.setenv("DELIBERATION_ENV_BASES", str(tmp_path / "bases"))
    for where, version in (("/one/install/model.gguf", "5.24.0"), ("/another/install/model.gguf", "5.25.0")):
        lm = make_lm()
        config = lm.seats["agent_0"].model.get_base_model().config
        config._name_or_path, config.transformers_version = where, version
        lm.save_adapters(tmp_path / where.split("/")[2])
    assert len(list((tmp_path / "bases").iterdir())) == 1


def test_a_hub_id_offline_is_read_from_the_cache_only_and_a_missing_one_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    with pytest.raises(FileNotFoundError, match=r"'nobody/no-such-model' is no local model .*HF_HUB_OFFLINE is set"):
        TrainableLM.from_pretrained("nobody/no-such-model", ["agent_0"])
    with pytest.raises(FileNotFoundError, match="never looked up on the Hugging Face hub"):
        TrainableLM.from_pretrained("./no/such/folder", ["agent_0"])


def test_a_model_folder_without_weights_or_tokenizer_is_named_with_what_it_lacks(tmp_path):
    """A real client read "is no local model and the Hugging Face hub gave none" for a local
    folder without weights, and a tokenizer error that named neither the folder nor the file."""
    model, tokenizer = tiny_model(seed=0)
    model.save_pretrained(tmp_path / "no_weights")
    for weights in (tmp_path / "no_weights").glob("*.safetensors"):
        weights.unlink()
    tokenizer.save_pretrained(tmp_path / "no_weights")
    model.save_pretrained(tmp_path / "no_tokenizer")
    with pytest.raises(FileNotFoundError, match=r"no_weights holds no weights transformers can read"):
        TrainableLM.from_pretrained(str(tmp_path / "no_weights"), ["agent_0"])
    with pytest.raises(FileNotFoundError, match=r"no_tokenizer has no tokenizer transformers can read"):
        TrainableLM.from_pretrained(str(tmp_path / "no_tokenizer"), ["agent_0"])


def test_with_checkpointing_the_reference_scores_as_the_policy_does():
    """Untrained (LoRA's B is 0), the policy is the reference: with gradient checkpointing
    both must score equal log-probabilities, or the KL term's gradient is rounding noise
    that Adam scales up (a real client: an agent without reward signal moved by 2 x lr)."""
    lm = make_lm(gradient_checkpointing=True)
    prompt = lm.encode(CHAT)
    prompts = [prompt, prompt[:-5], prompt[:-1], prompt]  # other lengths, and a long completion beside short ones
    completions = [list(range(3, 40)), [5, 9], [1, 2, 3, 4, 8, 9, 10], list(range(10, 20))]
    policy, mask = lm.logprobs("agent_0", prompts, completions)
    reference, _ = lm.logprobs("agent_0", prompts, completions, reference=True)
    assert torch.equal(policy.detach() * mask, reference * mask)
