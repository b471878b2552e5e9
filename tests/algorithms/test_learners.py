"""Learners on the simulated team: configs, advantages per learner, tiny runs, checkpoints."""

import dataclasses
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import deliberation_env as de
from algorithms.meta import (
    GRPO,
    MAGRPO,
    SFT,
    GRPOConfig,
    MAGRPOConfig,
    SFTConfig,
    SoftRankPO,
    SoftRankPOConfig,
)
from algorithms.meta.policy import Policy

PG = [(SoftRankPO, SoftRankPOConfig), (GRPO, GRPOConfig), (MAGRPO, MAGRPOConfig)]
TINY = {
    "groups_per_update": 3,
    "group_size": 4,
    "update_epochs": 2,
    "num_minibatches": 2,
    "hidden_size": 16,
    "num_heads": 2,
}


def venv_for(config, **kwargs):
    return de.vector_env(
        config.num_envs, task="arithmetic", team="simulated", max_rounds=2, **kwargs
    )


def parameters(learner):
    return torch.cat([p.detach().flatten() for p in learner.network.parameters()])


class AlwaysRefine:
    name = "always_refine"

    def act(self, obs, infos):
        return {agent: np.ones(len(infos), dtype=np.int64) for agent in obs}


# ----------------------------------------------------------------- configs
@pytest.mark.parametrize(
    "bad, message",
    [
        ({"group_size": 1}, "group_size must be >= 2"),
        ({"hidden_size": 30, "num_heads": 4}, "divisible by num_heads"),
        ({"clip_eps": 0.0}, "clip_eps must be > 0"),
        ({"kl_coef": -0.1}, "kl_coef must be >= 0"),
        ({"learning_rate": -1.0}, "learning_rate must be > 0"),
        ({"tau": 0.0}, "tau must be > 0"),
    ],
)
def test_bad_softrankpo_configs_say_how_to_fix_them(bad, message):
    with pytest.raises(ValueError, match=message):
        SoftRankPOConfig(**bad)


def test_bad_variant_configs_are_errors():
    with pytest.raises(ValueError, match="eps must be >= 0"):
        GRPOConfig(eps=-1.0)
    with pytest.raises(ValueError, match="joint_return must be 'sum' or 'team'"):
        MAGRPOConfig(joint_return="max")
    with pytest.raises(ValueError, match="episodes_per_update must be > 0"):
        SFTConfig(episodes_per_update=0)


def test_env_size_mismatch_names_the_right_size():
    config = SoftRankPOConfig(**TINY)
    with pytest.raises(ValueError, match=r"de.vector_env\(12, ...\)"):
        SoftRankPO(config, de.vector_env(5, task="arithmetic", team="simulated"))
    with pytest.raises(TypeError, match="needs a SoftRankPOConfig"):
        SoftRankPO(GRPOConfig(**TINY), venv_for(config))


# ----------------------------------------------------------------- the one overridden method
def test_each_learner_forms_its_own_advantages():
    returns = torch.tensor([[[0.0, 2.0], [1.0, 2.0], [1.0, 0.0]]])  # (B=1, G=3, n_agents=2)
    team = torch.tensor([[1.0, 0.0, 0.0]])
    config = {"groups_per_update": 1, "group_size": 3, "hidden_size": 16, "num_heads": 2}
    batch = SimpleNamespace(returns=returns, team_rewards=team)
    learners = {cls.name: cls(cfg(**config), venv_for(cfg(**config))) for cls, cfg in PG}

    def advantages(learner, batch=batch):
        return learner.compute_advantages(learner.returns(batch))

    soft = advantages(learners["softrankpo"])
    assert torch.allclose(soft, advantages(learners["softrankpo"], SimpleNamespace(returns=10 * returns)))
    assert soft[0, 1, 0] == soft[0, 2, 0] and soft[0, 0, 0] < 0  # agent 0: ties, lowest
    grpo = advantages(learners["grpo"])
    assert torch.allclose(grpo.mean(dim=1), torch.zeros(1, 2), atol=1e-6)
    magrpo = advantages(learners["magrpo"])  # the team reward, MAGRPO's joint reward by default
    assert torch.allclose(magrpo[0, :, 1], torch.tensor([2 / 3, -1 / 3, -1 / 3]))
    sum_config = MAGRPOConfig(joint_return="sum", **config)
    sum_magrpo = advantages(MAGRPO(sum_config, venv_for(sum_config)))  # joint sums 2, 3, 1
    assert torch.allclose(sum_magrpo[0], torch.tensor([[0.0, 0.0], [1.0, 1.0], [-1.0, -1.0]]))


# ----------------------------------------------------------------- tiny end-to-end runs
@pytest.mark.parametrize("cls, config_class", PG)
def test_a_tiny_run_updates_the_policy_and_reports_the_documented_metrics(cls, config_class):
    config = config_class(**TINY)
    learner = cls(config, venv_for(config))
    before = parameters(learner)
    for _ in range(2):
        metrics = learner.train_step()
    assert learner.update == 2 and learner.episodes == 2 * config.num_envs
    assert not torch.allclose(parameters(learner), before)
    for name in [
        "rewards/local/mean",
        "rewards/global/mean",
        "actions/persist_share",
        "actions/refine_share",
        "actions/concede_share",
        "tokens/episode",
        "losses/policy",
        "losses/kl",
        "adv/abs_mean",
    ]:
        assert np.isfinite(metrics[name]), name
    shares = sum(metrics[f"actions/{a}_share"] for a in ("persist", "refine", "concede"))
    assert shares == pytest.approx(1.0)
    assert metrics["losses/kl"] > 0  # the policy moved away from its frozen reference
    assert isinstance(learner.policy(), Policy)


def test_group_rollouts_share_their_start_state():
    config = SoftRankPOConfig(**TINY)
    learner = SoftRankPO(config, venv_for(config))
    rollout = learner.collect()
    first_round = rollout.self_features[:, de.SELF_FEATURES.index("round_frac")] == 0
    features = torch.zeros(config.num_envs, 3, rollout.self_features.shape[1])
    features[rollout.env_index[first_round], rollout.agent_index[first_round]] = (
        rollout.self_features[first_round]
    )
    groups = features.reshape(config.groups_per_update, config.group_size, -1)
    assert torch.all(groups == groups[:, :1])  # identical round 0 within a group
    assert not torch.all(groups[0, 0] == groups[1, 0])  # different problems across groups


def test_pools_restrict_the_sampled_problems_and_episode_seeds():
    config = SFTConfig(episodes_per_update=64, problem_pool=5, seed_pool=2, hidden_size=16, num_heads=2)
    learner = SFT(config, venv_for(config), AlwaysRefine())
    problems, seeds = learner.sample_problems(1000)
    assert set(problems.tolist()) == set(range(5)) and set(seeds.tolist()) == {0, 1}
    free = SFT(dataclasses.replace(config, problem_pool=0, seed_pool=0), venv_for(config), AlwaysRefine())
    problems, seeds = free.sample_problems(1000)
    assert problems.max() >= 5 and len(set(seeds.tolist())) == 1000


def test_bad_pools_are_clear_errors():
    with pytest.raises(ValueError, match="seed_pool must be >= 0"):
        SoftRankPOConfig(seed_pool=-1)
    config = SoftRankPOConfig(problem_pool=10**6, **TINY)
    with pytest.raises(ValueError, match="exceeds the 800 problems"):
        SoftRankPO(config, venv_for(config))


def test_stop_on_consensus_drops_transitions_of_ended_episodes():
    config = GRPOConfig(**TINY)
    learner = GRPO(config, venv_for(config, stop_on_consensus=True))
    rollout = learner.collect()
    assert len(rollout.actions) < config.num_envs * 3 * 2  # some episodes ended after round 1
    assert torch.isfinite(learner.compute_advantages(learner.returns(rollout))).all()


def test_play_shows_each_round_before_stepping_the_env():
    config = SFTConfig(episodes_per_update=12, hidden_size=16, num_heads=2)
    venv = venv_for(config, stop_on_consensus=True)
    learner = SFT(config, venv, AlwaysRefine())
    rounds = []
    for played in learner.play(*learner.sample_problems(venv.num_envs)):
        assert played.rewards is None and played.step_infos is None  # not stepped yet
        assert torch.equal(played.live, torch.as_tensor(np.tile(venv.active, len(learner.agents))))
        if rounds:  # the previous round's step produced this round's infos
            assert played.infos is rounds[-1].step_infos
        rounds.append(played)
    assert len(rounds) == venv.max_rounds and all(played.rewards for played in rounds)
    assert rounds[0].live.all() and not rounds[-1].live.all()  # some episodes ended after round 1


def test_sft_clones_its_teacher():
    config = SFTConfig(episodes_per_update=16, learning_rate=1e-2, hidden_size=16, num_heads=2)
    venv = venv_for(config)
    learner = SFT(config, venv, teacher=AlwaysRefine())
    for _ in range(5):
        metrics = learner.train_step()
    assert metrics["teacher/refine_share"] == 1.0 and metrics["losses/bc"] < 0.1
    obs, infos = venv.reset(seed=3)
    assert all(np.all(actions == 1) for actions in learner.policy().act(obs, infos).values())


# ----------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("cls, config_class", PG)
def test_a_resumed_run_continues_exactly(tmp_path, cls, config_class):
    config = config_class(**TINY)
    straight = cls(config, venv_for(config))
    for _ in range(3):
        straight.train_step()
    first = cls(config, venv_for(config))
    first.train_step()
    first.save(tmp_path / "checkpoint.safetensors")
    resumed = cls(config, venv_for(config))
    resumed.load(tmp_path / "checkpoint.safetensors")
    assert resumed.update == 1 and resumed.episodes == config.num_envs
    for _ in range(2):
        resumed.train_step()
    assert torch.equal(parameters(resumed), parameters(straight))
    assert torch.equal(
        torch.cat([p.flatten() for p in resumed.reference.parameters()]),
        torch.cat([p.flatten() for p in straight.reference.parameters()]),
    )


def test_loading_a_checkpoint_from_another_run_is_a_clear_error(tmp_path):
    config = SoftRankPOConfig(**TINY)
    SoftRankPO(config, venv_for(config)).save(tmp_path / "checkpoint.safetensors")
    other = dataclasses.replace(config, tau=0.1)
    with pytest.raises(ValueError, match="config differs"):
        SoftRankPO(other, venv_for(other)).load(tmp_path / "checkpoint.safetensors")
    grpo_config = GRPOConfig(**TINY)
    with pytest.raises(ValueError, match="load it with the softrankpo learner"):
        GRPO(grpo_config, venv_for(grpo_config)).load(tmp_path / "checkpoint.safetensors")


def test_warm_start_sets_the_policy_and_its_kl_reference():
    sft_config = SFTConfig(episodes_per_update=8, hidden_size=16, num_heads=2)
    teacher = SFT(sft_config, venv_for(sft_config), teacher=AlwaysRefine())
    teacher.train_step()
    config = SoftRankPOConfig(**TINY)
    learner = SoftRankPO(config, venv_for(config), warm_start=teacher.network)
    assert torch.equal(parameters(learner), parameters(teacher))
    assert all(not p.requires_grad for p in learner.reference.parameters())


@pytest.mark.parametrize("n_agents", [2, 4])
def test_learners_train_teams_of_any_size(n_agents):
    config = MAGRPOConfig(**TINY)
    venv = de.vector_env(config.num_envs, team="simulated", n_agents=n_agents, max_rounds=2)
    learner = MAGRPO(config, venv)
    learner.train_step()
    assert learner.collect().returns.shape == (3, 4, n_agents)
    obs, infos = venv.reset(seed=0)
    assert set(learner.policy().act(obs, infos)) == set(venv.agents)


def test_magrpo_pays_a_team_for_agreeing_not_for_a_dissenter_kept_wrong():
    """Each r_global is a leave-one-out difference paid at every step, so summed over the
    agents it pays a right 2-1 split every round (6 over three rounds) and an agreeing team
    once (the dissenter's own +1 on conceding). MAGRPO's default joint return, the team
    reward, pays both the same; the sum (``joint_return="sum"``) prefers the split."""
    from helpers import FixedTask, ScriptedSolver

    P, C = de.MetaAction.PERSIST, de.MetaAction.CONCEDE

    def episode(*rounds):
        solver = ScriptedSolver(["7", "7", "5"], confidence={"7": 0.6, "5": 0.9})
        env = de.parallel_env(task=FixedTask(), team=solver, n_agents=3, max_rounds=3)
        env.reset(seed=0, options={"problem_index": 0})  # "What is 3 + 4?" -> 7
        returns = np.zeros(3)
        for actions in rounds:
            _, rewards, _, _, infos = env.step(dict(zip(env.agents, actions, strict=True)))
            returns += [rewards[agent] for agent in ("agent_0", "agent_1", "agent_2")]
        return returns, infos["agent_0"]["team_reward"]

    kept_wrong, kept_team = episode((P, P, P), (P, P, P), (P, P, P))
    agreed, agreed_team = episode((P, P, C), (P, P, P), (P, P, P))
    assert (kept_wrong.sum(), agreed.sum()) == (6.0, 1.0)
    batch = SimpleNamespace(
        returns=torch.tensor([[kept_wrong, agreed]], dtype=torch.float32),
        team_rewards=torch.tensor([[kept_team, agreed_team]], dtype=torch.float32),
    )
    config = {"groups_per_update": 1, "group_size": 2, "hidden_size": 16, "num_heads": 2}
    default = MAGRPO(MAGRPOConfig(**config), de.vector_env(2, task="arithmetic", team="simulated"))
    assert default.returns(batch)[0, 0].tolist() == default.returns(batch)[0, 1].tolist() == [1.0, 1.0, 1.0]
    summed = MAGRPO(MAGRPOConfig(joint_return="sum", **config), de.vector_env(2, task="arithmetic", team="simulated"))
    assert summed.returns(batch)[0, 0, 0] > summed.returns(batch)[0, 1, 0]


def test_magrpo_on_the_team_reward_warns_that_the_reward_weights_do_not_enter():
    from deliberation_env.meta.config import EnvConfig

    with pytest.warns(UserWarning, match=r"team reward \(joint_return='team'\), which lambda_tok=0.5"):
        MAGRPOConfig(env=EnvConfig(team="simulated", lambda_tok=0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MAGRPOConfig(env=EnvConfig(team="simulated", lambda_tok=0.5), joint_return="sum")
        MAGRPOConfig()


@pytest.mark.parametrize("observation", ["flat", "text"])
def test_a_learner_on_observations_it_cannot_read_is_one_error_naming_the_option(observation):
    """A meta client's: ``observation="flat"`` raised ``'Box' object is not subscriptable``
    and ``"text"`` a ``KeyError: 'self'``."""
    config = SoftRankPOConfig(groups_per_update=2, group_size=2)
    with pytest.raises(ValueError, match="observation='vector' or 'both'"):
        SoftRankPO(config, venv_for(config, observation=observation))
    SoftRankPO(config, venv_for(config, observation="both"))  # the vector parts are there
