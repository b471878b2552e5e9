"""Heterogeneous trainable agents: each agent its own base model, the others untouched."""

from __future__ import annotations

import json

import pytest
import torch
from text_learner_fakes import HashProtocol

from agents.trainable_lm import TrainableLM, default_lora, tiny_model
from agents.trainable_team import TrainableTeam
from algorithms.text import TextGRPO, TextGRPOConfig, TextMAGRPOConfig, train
from algorithms.text.config import text_run
from deliberation_env.text import text_vector_env

SMALL = {"groups_per_update": 2, "group_size": 2, "max_new_tokens": 6, "micro_batch_size": 4, "run": text_run(progress=False)}


def member(agent, hidden_size, seed):
    model, tokenizer = tiny_model(seed=seed, hidden_size=hidden_size)
    return TrainableLM(model, tokenizer, [agent], lora=default_lora(rank=4, alpha=8.0), seed=seed)


def weights(team, agent):
    return [t.detach().clone() for t in team.state_dict()[agent].values()]


def test_two_agents_on_different_bases_train_their_own_adapters_only():
    team = TrainableTeam({"agent_0": member("agent_0", 32, 0), "agent_1": member("agent_1", 48, 1)})
    config = TextGRPOConfig(**SMALL)
    venv = text_vector_env(config.num_envs, protocol=HashProtocol(), n_agents=2)
    learner = TextGRPO(config, team, venv, {})
    before = {agent: weights(team, agent) for agent in team.agents}
    assert learner.train_step()["adv/abs_mean"] > 0
    for agent in team.agents:
        assert any(not torch.equal(a, b) for a, b in zip(before[agent], weights(team, agent)))
    assert before["agent_0"][0].shape != before["agent_1"][0].shape  # two bases: nothing shared


def test_each_agent_saves_with_its_own_base_and_loads_with_plain_peft(tmp_path):
    from peft import AutoPeftModelForCausalLM

    team = TrainableTeam({"agent_0": member("agent_0", 32, 0), "agent_1": member("agent_1", 48, 1)})
    with torch.no_grad():
        for agent in team.agents:
            for parameter in team.parameters(agent):
                parameter.add_(0.05)
    folders = team.save_adapters(tmp_path)
    assert [f.name for f in folders] == ["agent_0", "agent_1"]
    ids = torch.tensor([[5, 6, 7]])
    for agent, lm in team.members.items():
        served = AutoPeftModelForCausalLM.from_pretrained(tmp_path / agent, local_files_only=True).eval()
        with lm._acting(agent) as model, torch.no_grad():
            assert torch.allclose(model(input_ids=ids).logits, served(input_ids=ids).logits, atol=1e-5)
    restored = TrainableTeam({"agent_0": member("agent_0", 32, 0), "agent_1": member("agent_1", 48, 1)})
    restored.load_adapters(tmp_path)
    for agent in team.agents:
        assert all(torch.equal(a, b) for a, b in zip(weights(team, agent), weights(restored, agent)))
    with pytest.raises(ValueError, match="plays exactly its own agent"):
        TrainableTeam({"agent_0": member("agent_1", 32, 0)})


def test_models_gives_one_model_per_agent_through_train(tmp_path):
    run = text_run(updates=1, run_dir=str(tmp_path), progress=False)
    result = train(TextMAGRPOConfig(**{**SMALL, "run": run}, models=("tiny", "tiny"), log_completions=4))
    assert isinstance(result.learner.lm, TrainableTeam) and len(result.history) == 1
    # each completion logged with its prompt as its own agent's tokenizer reads it (a client's crash: the team has none of its own)
    logged = [json.loads(line) for line in (tmp_path / "completions" / "update-000001.jsonl").read_text().splitlines()]
    assert len(logged) == 4 and all("<|im_start|>" in record["prompt"] for record in logged)
    with pytest.raises(ValueError, match="2 trainable agents"):
        train(TextMAGRPOConfig(**{**SMALL, "run": text_run(updates=1, progress=False, run_dir=None)}, models=("tiny",)))
    with pytest.raises(ValueError, match="sampler='torch'"):
        TextMAGRPOConfig(models=("tiny", "tiny"), sampler="ctranslate2")
