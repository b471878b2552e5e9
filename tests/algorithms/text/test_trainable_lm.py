"""agents.TrainableLM on a tiny random Llama: seeded sampling, log-probs, layouts, persistence."""

from __future__ import annotations

import pytest
import torch

CHAT = ({"role": "user", "content": "What is 9 + 4?"},)
OTHER = ({"role": "system", "content": "A much longer system prompt, padded on the left."}, *CHAT)


def test_agents_exports_trainable_lm_lazily():
    import agents
    from agents.trainable_lm import TrainableLM

    assert agents.TrainableLM is TrainableLM
    with pytest.raises(AttributeError, match="Nope"):
        agents.Nope  # noqa: B018


def test_a_seed_fixes_the_completion_whatever_shares_its_batch(make_lm):
    lm = make_lm(micro_batch_size=8)
    alone = lm.sample("agent_0", [CHAT], [7], max_new_tokens=12)[0]
    batch = lm.sample("agent_0", [OTHER, CHAT, CHAT], [3, 7, 8], max_new_tokens=12)
    assert batch[1].token_ids == alone.token_ids and batch[1].text == alone.text
    assert batch[2].token_ids != alone.token_ids  # another seed, another stream
    assert alone.prompt_ids == tuple(lm.encode(CHAT))
    assert len(alone.token_ids) == len(alone.logprobs) == 12 and alone.finish_reason == "length"


def test_sampled_logprobs_match_the_scored_ones(make_lm):
    lm = make_lm()
    completions = lm.sample("agent_1", [CHAT, OTHER], [1, 2], max_new_tokens=10, temperature=0.7)
    logp, mask = lm.logprobs(
        "agent_1", [c.prompt_ids for c in completions], [c.token_ids for c in completions], temperature=0.7
    )
    assert logp.requires_grad and mask.sum(1).tolist() == [10.0, 10.0]
    for row, completion in enumerate(completions):
        assert logp[row].detach().tolist() == pytest.approx(list(completion.logprobs), abs=1e-4)



@pytest.mark.parametrize(("finetune", "separate"), [("lora", False), ("lora", True), ("full", True)])
def test_joint_sampling_gives_each_agent_what_sampling_alone_gives(make_lm, finetune, separate):
    lm = make_lm(micro_batch_size=3, finetune=finetune, separate=separate)
    with torch.no_grad():  # two different policies (LoRA's B starts at 0: the adapters would coincide)
        for scale, agent in enumerate(lm.agents, start=1):
            for parameter in lm.parameters(agent):
                parameter.add_(0.3 * scale * torch.randn_like(parameter))
    requests = {"agent_0": ([CHAT, OTHER], [1, 2]), "agent_1": ([CHAT, CHAT, OTHER], [1, 5, 2])}
    joint = lm.sample_joint(requests, max_new_tokens=8, temperature=0.9)
    for agent, (chats, seeds) in requests.items():
        alone = lm.sample(agent, chats, seeds, max_new_tokens=8, temperature=0.9)
        assert [c.token_ids for c in joint[agent]] == [c.token_ids for c in alone]
        assert [c.finish_reason for c in joint[agent]] == [c.finish_reason for c in alone]
        for mine, theirs in zip(joint[agent], alone, strict=True):
            assert mine.logprobs == pytest.approx(theirs.logprobs, abs=1e-5)
    # the same chat and seed, another agent's adapter: another completion
    assert joint["agent_0"][0].token_ids != joint["agent_1"][0].token_ids
    with pytest.raises(ValueError, match="one seed per chat"):
        lm.sample_joint({"agent_0": ([CHAT], [1, 2])})

def test_greedy_sampling_ignores_the_seed(make_lm):
    lm = make_lm()
    first, second = lm.sample("agent_0", [CHAT, CHAT], [1, 2], max_new_tokens=6, temperature=0.0)
    assert first.token_ids == second.token_ids


def test_one_adapter_per_agent_on_one_base_and_the_reference_is_the_base(make_lm):
    lm = make_lm()
    base = lm.seats["agent_0"].model
    assert lm.seats["agent_1"].model is base  # one shared base
    own = {id(p) for p in lm.parameters("agent_0")}
    assert own and own.isdisjoint(id(p) for p in lm.parameters("agent_1"))
    completion = lm.sample("agent_0", [CHAT], [0], max_new_tokens=5)[0]
    args = ([completion.prompt_ids], [completion.token_ids])
    reference, _ = lm.logprobs("agent_0", *args, reference=True)
    assert not reference.requires_grad
    assert torch.equal(lm.logprobs("agent_0", *args)[0].detach(), reference)  # LoRA B starts at 0
    with torch.no_grad():
        for parameter in lm.parameters("agent_0"):
            parameter.add_(0.05)
    assert not torch.allclose(lm.logprobs("agent_0", *args)[0], reference)
    assert torch.equal(lm.logprobs("agent_0", *args, reference=True)[0], reference)
    assert torch.equal(lm.logprobs("agent_1", *args)[0].detach(), reference)  # agent_1's adapter untouched


@pytest.mark.parametrize(("finetune", "separate"), [("lora", True), ("full", False), ("full", True)])
def test_other_layouts(make_lm, finetune, separate):
    lm = make_lm(finetune=finetune, separate=separate)
    models = {id(seat.model) for seat in lm.seats.values()}
    assert len(models) == (2 if separate else 1)
    shared = {id(p) for p in lm.parameters("agent_0")} & {id(p) for p in lm.parameters("agent_1")}
    assert bool(shared) == (not separate)
    completion = lm.sample("agent_0", [CHAT], [0], max_new_tokens=4)[0]
    args = ([completion.prompt_ids], [completion.token_ids])
    reference = lm.logprobs("agent_0", *args, reference=True)[0]
    with torch.no_grad():
        for parameter in lm.parameters("agent_0"):
            parameter.add_(0.01)
    assert not torch.allclose(lm.logprobs("agent_0", *args)[0], reference)
    assert torch.equal(lm.logprobs("agent_0", *args, reference=True)[0], reference)  # the base is kept
    restored = make_lm(finetune=finetune, separate=separate)
    state = lm.state_dict()
    assert sorted(state) == (["agent_0", "agent_1"] if separate or finetune == "lora" else ["agent_0"])
    restored.load_state_dict(state)
    assert torch.equal(restored.logprobs("agent_0", *args)[0], lm.logprobs("agent_0", *args)[0])


def test_save_and_load_adapters_in_peft_format(make_lm, tmp_path):
    from peft import PeftModel

    from agents.trainable_lm import tiny_model

    trained = make_lm()
    with torch.no_grad():
        for parameter in trained.parameters("agent_1"):
            parameter.add_(0.1)
    folders = trained.save_adapters(tmp_path)
    assert [f.name for f in folders] == ["agent_0", "agent_1"]
    assert (tmp_path / "agent_1" / "adapter_model.safetensors").is_file()
    fresh = make_lm()
    fresh.load_adapters(tmp_path)
    for ours, theirs in zip(trained.state_dict()["agent_1"].values(), fresh.state_dict()["agent_1"].values()):
        assert torch.equal(ours, theirs)
    # served elsewhere: plain peft on a plain base gives the same log-probabilities
    base, _ = tiny_model(seed=0)
    served = PeftModel.from_pretrained(base, tmp_path / "agent_1").eval()
    ids = torch.tensor([trained.encode(CHAT)])
    with trained._acting("agent_1") as model, torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, served(input_ids=ids).logits, atol=1e-5)
    # and by plain peft alone, from the folder: the base is saved beside the adapters
    from peft import AutoPeftModelForCausalLM

    alone = AutoPeftModelForCausalLM.from_pretrained(tmp_path / "agent_1", local_files_only=True).eval()
    with trained._acting("agent_1") as model, torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, alone(input_ids=ids).logits, atol=1e-5)
    with pytest.raises(FileNotFoundError, match="agent_0"):
        make_lm().load_adapters(tmp_path / "absent")


def test_bad_input_is_named(make_lm):
    from agents.trainable_lm import TrainableLM, tiny_model

    lm = make_lm()
    with pytest.raises(KeyError, match="agent_7"):
        lm.sample("agent_7", [CHAT], [0])
    with pytest.raises(ValueError, match="one seed per chat"):
        lm.sample("agent_0", [CHAT, CHAT], [0])
    with pytest.raises(ValueError, match="top_p"):
        lm.sample("agent_0", [CHAT], [0], top_p=0.0)
    with pytest.raises(ValueError, match="non-empty"):
        lm.logprobs("agent_0", [[1, 2]], [[]])
    with pytest.raises(ValueError, match="expects"):
        lm.load_state_dict({"agent_9": {}})
    model, tokenizer = tiny_model()
    tokenizer.chat_template = None
    with pytest.raises(ValueError, match="chat template"):
        TrainableLM(model, tokenizer, ["agent_0"])
    with pytest.raises(ValueError, match="finetune"):
        TrainableLM(*tiny_model(), ["agent_0"], finetune="half")
    with pytest.raises(FileNotFoundError, match="never looked up on the Hugging Face hub"):
        TrainableLM.from_pretrained("/nonexistent/model", ["agent_0"])


def test_adapters_saved_again_into_their_folder_are_saved_without_a_complaint(make_lm, tmp_path, caplog):
    """A GPU client's: every resumed run logged peft's "Repo card metadata block was not
    found", as the adapters' model cards had no metadata block."""
    lm = make_lm()
    lm.save_adapters(tmp_path)
    with caplog.at_level("WARNING"):
        lm.save_adapters(tmp_path)  # as every later checkpoint of a run does
    assert "metadata block" not in caplog.text
    card = (tmp_path / "agent_0" / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: peft\n") and "# agent_0: a LoRA adapter" in card


def test_a_gguf_model_fully_fine_tuned_saves_and_serves(tmp_path):
    """Regression: transformers marks a GGUF-loaded model quantized, so ``save_pretrained``
    refused it and ``finetune="full"`` on the bundled SmolLM2 could not save."""
    from transformers import AutoModelForCausalLM

    from agents.llamacpp_backend import default_model_path
    from agents.trainable_lm import TrainableLM

    lm = TrainableLM.from_pretrained(default_model_path(), ["agent_0"], finetune="full")
    (folder,) = lm.save_adapters(tmp_path)
    served = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
    ids = torch.tensor([lm.encode(CHAT)])
    with lm._acting("agent_0") as model, torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, served(input_ids=ids).logits, atol=1e-5)


def test_min_new_tokens_holds_back_the_stop_token_and_keeps_the_policys_logprobs():
    from agents.trainable_lm import TrainableLM, default_lora, tiny_model

    model, tokenizer = tiny_model(seed=0)
    probe = TrainableLM(model, tokenizer, ["agent_0"], lora=default_lora(rank=4, alpha=8.0))
    first = probe.sample("agent_0", [CHAT], [0], max_new_tokens=1, temperature=0.0)[0].token_ids[0]
    model, tokenizer = tiny_model(seed=0)
    model.generation_config.eos_token_id = first  # greedy decoding now stops at once
    lm = TrainableLM(model, tokenizer, ["agent_0"], lora=default_lora(rank=4, alpha=8.0))
    (stopped,) = lm.sample("agent_0", [CHAT], [0], max_new_tokens=8, temperature=0.0)
    assert stopped.token_ids == (first,) and stopped.finish_reason == "stop"
    held = lm.sample("agent_0", [CHAT, OTHER], [0, 1], max_new_tokens=8, temperature=0.0, min_new_tokens=5)
    for completion in held:
        assert len(completion.token_ids) >= 5 and first not in completion.token_ids[:5]
    logp, _ = lm.logprobs("agent_0", [c.prompt_ids for c in held], [c.token_ids for c in held], temperature=1.0)
    for row, completion in enumerate(held):
        assert logp[row, : len(completion.logprobs)].tolist() == pytest.approx(list(completion.logprobs), abs=1e-4)
    with pytest.raises(ValueError, match="min_new_tokens"):
        lm.sample("agent_0", [CHAT], [0], max_new_tokens=4, min_new_tokens=5)


@pytest.mark.parametrize(("finetune", "separate"), [("lora", False), ("lora", True), ("full", True)])
def test_merged_weights_compute_the_agents_policy_in_a_plain_model(make_lm, finetune, separate):
    from transformers import AutoModelForCausalLM

    lm = make_lm(finetune=finetune, separate=separate)
    with torch.no_grad():
        for parameter in lm.parameters("agent_0"):
            parameter.add_(0.05)
    ids = torch.tensor([lm.encode(OTHER)])
    for agent in lm.agents:
        with torch.no_grad(), lm._acting(agent) as model:
            expected = model(input_ids=ids).logits
        config = lm.seats[agent].model.config
        plain = AutoModelForCausalLM.from_config(config).eval()
        plain.load_state_dict(lm.merged_state_dict(agent))  # strict: every weight, under plain names
        with torch.no_grad():
            assert torch.allclose(plain(input_ids=ids).logits, expected, atol=1e-5)
    assert not torch.allclose(
        lm.merged_state_dict("agent_0")["model.layers.0.self_attn.q_proj.weight"],
        lm.merged_state_dict("agent_1")["model.layers.0.self_attn.q_proj.weight"],
    )


def test_merged_weights_refuse_dora_adapters(make_lm):
    from agents.trainable_lm import default_lora

    lora = default_lora(rank=4, alpha=8.0)
    lora.use_dora = True
    with pytest.raises(NotImplementedError, match="DoRA"):
        make_lm(lora=lora).merged_state_dict("agent_0")


def test_full_fine_tuning_keeps_a_reference_copy_on_the_device_only_for_a_kl(make_lm):
    """A frozen copy of the whole model is the reference of full fine-tuning: on the device
    only where a KL term reads it (the GPU client: 16 GB more for an 8B model, for
    nothing); else on the CPU, where it still names the base (a reviewer: with none, the
    base's digest was of nothing, and a resume on other weights passed)."""
    from agents.trainable_lm.weights import base_digest
    from algorithms.text import TextMAGRPOConfig
    from algorithms.text.train import build_lm

    lm = make_lm(finetune="full", keep_reference=False)
    offloaded = lm.seats["agent_0"].reference
    assert offloaded is not None and next(offloaded.parameters()).device.type == "cpu"
    with pytest.raises(ValueError, match="keeps no reference model"):
        lm.logprobs("agent_0", [[1, 2]], [[3]], reference=True)
    kept = make_lm(finetune="full")
    assert base_digest(lm) == base_digest(kept) != base_digest(make_lm(finetune="full", keep_reference=False, seed=1))
    with torch.no_grad():
        for parameter in lm.parameters("agent_0"):
            parameter.add_(0.5)  # training moves the weights, not the base they name
    assert base_digest(lm) == base_digest(kept)
    for kl_coef, on_device in ((0.0, False), (0.1, True)):
        built = build_lm(TextMAGRPOConfig(model="tiny", finetune="full", kl_coef=kl_coef), ["agent_0", "agent_1"])
        assert (built.seats["agent_0"].reference is not built._offloaded) is on_device


def test_a_kl_on_a_policy_that_keeps_its_reference_on_the_cpu_is_refused_when_built(make_lm):
    from algorithms.text import TextMAGRPO, TextMAGRPOConfig
    from deliberation_env.text import text_vector_env

    config = TextMAGRPOConfig(groups_per_update=1, group_size=2, kl_coef=0.1)
    venv = text_vector_env(config.num_envs, task="arithmetic")
    with pytest.raises(ValueError, match="kl_coef=0.1 scores the reference policy"):
        TextMAGRPO(config, make_lm(finetune="full", keep_reference=False), venv, {})
