"""CoMLRL's tree of multi-turn rollouts (``rollout="tree"``): each joint sample of a turn
branches into G at the next, a node's return is its reward plus the mean of its children's,
and its group is its G siblings."""

from __future__ import annotations

import json

import pytest
import torch
from test_text_learners import SMALL, changed, make_learner, snapshot
from text_learner_fakes import HashProtocol, ScriptedBackend

from agents.text_policy import TextPolicy
from algorithms.text import TextGRPO, TextGRPOConfig, TextMAGRPOConfig, evaluate
from deliberation_env.text import text_vector_env
from deliberation_env.text.config import TextEnvConfig

TREE = {**SMALL, "env": TextEnvConfig(max_turns=2), "rollout": "tree"}  # B = 2 problems, G = 2, T = 2


@pytest.fixture
def played(make_lm):
    subject = make_learner(make_lm, config=TextMAGRPOConfig(**TREE, gamma=0.5, baseline="raw"))
    return subject, subject.collect()


def test_a_tree_samples_each_node_once_and_gives_every_leaf_an_env(played):
    subject, rollouts = played
    assert subject.config.num_envs == 2 * 2**2 and rollouts.rewards.shape == (2, 2, 4, 2)  # (T, B, G^T leaves, n)
    for agent in ("agent_0", "agent_1"):
        turns = [s.turn for s in rollouts.samples if s.agent == agent]
        assert turns.count(0) == 2 * 2 and turns.count(1) == 2 * 2**2  # B G nodes, then B G^2
    first = {(s.group, s.member) for s in rollouts.samples if s.turn == 0}
    assert first == {(b, w) for b in range(2) for w in (0, 2)}  # a node of turn 0 is read at its first leaf
    # the two leaves under a node of turn 0 played the same texts: the same reward
    assert torch.equal(rollouts.rewards[0, :, 0], rollouts.rewards[0, :, 1])
    assert torch.equal(rollouts.rewards[0, :, 2], rollouts.rewards[0, :, 3])


def test_siblings_share_their_history_and_cousins_do_not(played):
    _, rollouts = played
    prompts = {(s.group, s.member): s.completion.prompt_ids for s in rollouts.samples if s.turn == 1 and s.agent == "agent_0"}
    parents = {(s.group, s.member): s.completion.text for s in rollouts.samples if s.turn == 0 and s.agent == "agent_0"}
    for b in range(2):
        assert list(prompts[b, 0]) == list(prompts[b, 1]) and list(prompts[b, 2]) == list(prompts[b, 3])
        if parents[b, 0] != parents[b, 2]:
            assert list(prompts[b, 0]) != list(prompts[b, 2])


def test_a_nodes_return_is_its_reward_plus_the_mean_of_its_childrens(played):
    subject, rollouts = played
    returns = subject.returns(rollouts)
    advantages = subject.group_advantages(rollouts, returns)  # raw baseline: A is the node's return
    rewards = rollouts.rewards
    for b in range(2):
        for first, children in ((0, [0, 1]), (2, [2, 3])):
            node = rewards[0, b, first] + 0.5 * rewards[1, b, children].mean(dim=0)
            for leaf in children:
                assert torch.allclose(advantages[0, b, leaf], node)
                assert torch.allclose(advantages[1, b, leaf], rewards[1, b, leaf])


def test_advantages_compare_siblings_only(make_lm):
    subject = make_learner(make_lm, config=TextMAGRPOConfig(**TREE))  # baseline: the mean of the group
    rollouts = subject.collect()
    advantages = subject.group_advantages(rollouts, subject.returns(rollouts))
    returns = subject.returns(rollouts)
    for b in range(2):
        assert torch.allclose(advantages[1, b, 0] + advantages[1, b, 1], torch.zeros(2), atol=1e-6)  # siblings
        assert torch.allclose(advantages[1, b, 2] + advantages[1, b, 3], torch.zeros(2), atol=1e-6)
        assert torch.allclose(advantages[1, b, 0], returns[1, b, 0] - returns[1, b, :2].mean(dim=0))
        nodes = returns[0, b].reshape(2, 2, 2).mean(dim=1)  # each node of turn 0: the mean of its leaves
        assert torch.allclose(advantages[0, b, 0], nodes[0] - nodes.mean(dim=0))
        samples = subject.sample_advantages(rollouts, advantages)
        assert samples.shape == (len(rollouts.samples),)


def test_a_tree_update_trains_and_its_held_out_play_is_the_parallel_ones(make_lm):
    subject = make_learner(make_lm, TextGRPO, TextGRPOConfig(**TREE))
    model = subject.lm.seats["agent_0"].model
    before = snapshot(model)
    metrics = subject.train_step()
    assert changed(before, model) and metrics["adv/abs_mean"] > 0
    venv = text_vector_env(2, protocol=HashProtocol(), n_agents=2, max_turns=2)
    tree = evaluate(subject, venv, [0, 1, 2], progress=False)  # greedy, one episode a problem: no tree
    subject.config = TextGRPOConfig(**{**TREE, "rollout": "parallel"})
    assert evaluate(subject, venv, [0, 1, 2], progress=False) == tree


def test_a_tree_needs_aligned_pairing():
    with pytest.raises(ValueError, match="rollout='tree' branches aligned joint samples"):
        TextMAGRPOConfig(**{**TREE, "pairing": "cross", "env": TextEnvConfig(max_turns=1)})
    # over two turns the tree's refusal comes first: cross's own ("use max_turns=1") led to the tree's
    with pytest.raises(ValueError, match="rollout='tree' branches aligned joint samples"):
        TextMAGRPOConfig(**{**TREE, "pairing": "cross"})
    with pytest.raises(ValueError, match="rollout must be one of"):
        TextMAGRPOConfig(**{**TREE, "rollout": "branching"})


def test_a_trees_metrics_count_each_completion_once_and_each_turn_alike(played):
    """A node of turn t is played in the G^(T-1-t) envs under it: its reward is read there
    that many times, which weighs every turn alike (CoMLRL's per-turn means over its nodes,
    averaged), and its completion's tokens are counted once."""
    _, rollouts = played
    turns = rollouts.rewards.shape[0]
    per_turn = [rollouts.rewards[t, :, :: 2 ** (turns - 1 - t), 0].mean() for t in range(turns)]  # each node once
    assert rollouts.metrics["rewards/joint/mean"] == pytest.approx(float(torch.stack(per_turn).mean()))
    for agent in ("agent_0", "agent_1"):
        lengths = [len(s.completion.token_ids) for s in rollouts.samples if s.agent == agent]
        assert len(lengths) == 2 * (2 + 2**2)  # B (G + G^2): each completion sampled and counted once
        assert rollouts.metrics[f"tokens/{agent}"] == pytest.approx(sum(lengths) / len(lengths))


def test_a_frozen_agent_plays_each_node_of_a_tree_once(make_lm):
    backend = ScriptedBackend()
    frozen = {"agent_1": TextPolicy(backend, max_tokens=4)}
    subject = make_learner(make_lm, config=TextMAGRPOConfig(**TREE), agents=["agent_0"], frozen=frozen)
    rollouts = subject.collect()
    assert len(backend.requests) == 2 * (2 + 2**2)  # B (G + G^2) nodes, not B G^2 envs a turn
    assert {s.agent for s in rollouts.samples} == {"agent_0"}
    assert torch.equal(rollouts.rewards[0, :, 0], rollouts.rewards[0, :, 1])  # a node's leaves: its frozen text too


def test_a_trees_logged_completions_name_their_branch(make_lm, tmp_path):
    """``--log-completions`` of a tree: each record's ``branch`` names its node, siblings
    share its history (their prompts) and the parent's feedback is in that history."""
    config = TextMAGRPOConfig(**{**TREE, "env": TextEnvConfig(max_turns=3)}, log_completions=1000)
    subject = make_learner(make_lm, config=config)
    subject.completions_dir = tmp_path
    subject.collect()
    records = [json.loads(line) for line in (tmp_path / "update-000001.jsonl").read_text().splitlines()]
    mine = [r for r in records if r["agent"] == "agent_0" and r["group"] == 0]
    assert len(records) == 2 * 2 * (2 + 4 + 8) and sorted(len(r["branch"]) for r in mine) == [1] * 2 + [2] * 4 + [3] * 8
    by_branch = {tuple(r["branch"]): r for r in mine}
    assert len(by_branch) == len(mine)  # every node its own path
    for branch, record in by_branch.items():
        assert record["turn"] == len(branch) - 1
        if len(branch) > 1:
            sibling = by_branch[(*branch[:-1], 1 - branch[-1])]
            assert record["prompt"] == sibling["prompt"]
            parent = by_branch[branch[:-1]]
            assert f"R was {parent['reward']:.2f}" in record["prompt"]  # the parent's feedback (HashProtocol's)


@pytest.mark.parametrize("credit", ["joint", "contribution"])
def test_three_turns_match_comlrls_recursion_computed_on_the_tree(make_lm, credit):
    """A brute force of CoMLRL's definition on a tree of G = 2 and T = 3 (8 leaves): each
    node's return R = r + gamma * mean over its children of R, and its advantage R minus the
    mean of its G siblings' R (MAGRPO's mean baseline; GRPO unscaled for an agent's own
    leave-one-out credit), for every agent."""
    three = {**TREE, "env": TextEnvConfig(max_turns=3), "gamma": 0.9}
    if credit == "joint":
        subject = make_learner(make_lm, config=TextMAGRPOConfig(**three))
    else:
        subject = make_learner(make_lm, TextGRPO, TextGRPOConfig(**three, credit=credit, scale_rewards="none"))
    rollouts = subject.collect()
    rewards, group, turns = rollouts.rewards, 2, 3
    advantages = subject.group_advantages(rollouts, subject.returns(rollouts))

    def reward(b, path):  # a node's reward, read at the first leaf under it
        leaf = sum(d * group ** (turns - 1 - t) for t, d in enumerate(path))
        return rewards[len(path) - 1, b, leaf]

    def node_return(b, path):
        own = reward(b, path)
        if len(path) == turns:
            return own
        return own + 0.9 * torch.stack([node_return(b, (*path, d)) for d in range(group)]).mean(dim=0)

    for b in range(2):
        for leaf in range(group**turns):
            digits = [leaf // group ** (turns - 1 - t) % group for t in range(turns)]
            for t in range(turns):
                parent = tuple(digits[:t])
                siblings = torch.stack([node_return(b, (*parent, d)) for d in range(group)])
                expected = node_return(b, (*parent, digits[t])) - siblings.mean(dim=0)
                assert torch.allclose(advantages[t, b, leaf], expected, atol=1e-5), (b, leaf, t)
