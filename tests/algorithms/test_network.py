"""The parameter-shared meta-policy network: any team size, peer-order invariance, policy."""

import numpy as np
import pytest
import torch

from algorithms.meta.network import MetaPolicyNetwork, NetworkPolicy
from algorithms.meta.policy import Policy

SELF_DIM, PEER_DIM = 12, 11


@pytest.mark.parametrize("n_agents", [2, 3, 5, 9])
def test_one_network_serves_any_team_size(n_agents):
    torch.manual_seed(0)
    network = MetaPolicyNetwork(SELF_DIM, PEER_DIM, hidden_size=32, num_heads=4)
    logits = network(torch.rand(7, SELF_DIM), torch.rand(7, n_agents - 1, PEER_DIM))
    assert logits.shape == (7, 3) and torch.isfinite(logits).all()


def test_output_depends_on_peers_but_not_on_their_order():
    torch.manual_seed(0)
    network = MetaPolicyNetwork(SELF_DIM, PEER_DIM, hidden_size=32, num_heads=4)
    with torch.no_grad():  # a larger head so differences are visible
        network.head[-1].weight.mul_(100)
    own, peers = torch.rand(4, SELF_DIM), torch.rand(4, 3, PEER_DIM)
    logits = network(own, peers)
    assert torch.allclose(network(own, peers[:, [2, 0, 1]]), logits, atol=1e-5)
    assert not torch.allclose(network(own, torch.rand(4, 3, PEER_DIM)), logits, atol=1e-3)


def test_initial_policy_is_near_uniform():
    network = MetaPolicyNetwork(SELF_DIM, PEER_DIM)
    probs = torch.softmax(network(torch.rand(16, SELF_DIM), torch.rand(16, 2, PEER_DIM)), -1)
    assert torch.allclose(probs, torch.full_like(probs, 1 / 3), atol=0.05)


def test_bad_shapes_and_heads_are_clear_errors():
    network = MetaPolicyNetwork(SELF_DIM, PEER_DIM, hidden_size=32, num_heads=4)
    with pytest.raises(ValueError, match="expected self"):
        network(torch.rand(4, SELF_DIM), torch.rand(4, PEER_DIM))
    with pytest.raises(ValueError, match="divisible"):
        MetaPolicyNetwork(SELF_DIM, PEER_DIM, hidden_size=30, num_heads=4)


def test_network_policy_acts_per_agent_on_the_vector_layout():
    agents = ["agent_0", "agent_1", "agent_2"]
    rng = np.random.default_rng(0)
    obs = {
        a: {
            "self": rng.random((5, SELF_DIM), dtype=np.float32),
            "peers": rng.random((5, 2, PEER_DIM), dtype=np.float32),
        }
        for a in agents
    }
    network = MetaPolicyNetwork(SELF_DIM, PEER_DIM, hidden_size=32, num_heads=4)
    greedy = NetworkPolicy(network, agents)
    assert isinstance(greedy, Policy)
    actions = greedy.act(obs, [{}] * 5)
    assert set(actions) == set(agents)
    for agent in agents:
        single = network(torch.as_tensor(obs[agent]["self"]), torch.as_tensor(obs[agent]["peers"]))
        assert actions[agent].shape == (5,) and np.array_equal(
            actions[agent], single.argmax(-1).numpy()
        )
    sampled = [
        NetworkPolicy(network, agents, greedy=False, seed=s).act(obs, [{}] * 5) for s in (1, 1, 2)
    ]
    assert all(np.array_equal(sampled[0][a], sampled[1][a]) for a in agents)
