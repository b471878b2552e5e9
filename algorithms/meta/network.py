"""The parameter-shared meta-policy network and the policy that wraps it.

One network serves every agent (parameter sharing): agent i's own features
z_i = (confidence, agreement, ..., profile) form the query of a cross-attention over its
peer rows {z_j}_{j != i}, so the same weights work for any team size n_agents >= 2
(any number of peer rows) and the output does not depend on how peers are ordered::

    h_i    = MLP_self(z_i)                                  (N, H)
    h_j    = MLP_peer(z_j)                                  (N, n-1, H)
    q, k_j, v_j = W_q h_i, W_k h_j, W_v h_j                 split into heads of size d
    alpha_j = softmax_j(q . k_j / sqrt(d))                  per head, over the peers
    c_i    = W_o concat_heads(sum_j alpha_j v_j)            (N, H)
    logits = MLP_head([h_i, c_i])                           (N, 3): PERSIST, REFINE, CONCEDE

The attention is written out (one query per agent, a few keys): at these sizes a whole
CPU training step is about 30% faster than with ``nn.MultiheadAttention``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from algorithms.meta.policy import Actions, Infos, Observations
from deliberation_env.meta.spaces import N_ACTIONS

NUM_ACTIONS = N_ACTIONS


class MetaPolicyNetwork(nn.Module):
    """Self features attend over peer rows; 3 logits.

    Args:
        self_dim: Size of an agent's own feature vector (``obs["self"].shape[-1]``).
        peer_dim: Size of one peer row (``obs["peers"].shape[-1]``).
        hidden_size: Width H of every hidden layer; divisible by ``num_heads``.
        num_heads: Attention heads.
    """

    def __init__(self, self_dim: int, peer_dim: int, hidden_size: int = 64, num_heads: int = 4):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(
                f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads})"
            )
        self.self_encoder = nn.Sequential(
            nn.Linear(self_dim, hidden_size),
            nn.Tanh(),
            nn.Linear(hidden_size, hidden_size),
            nn.Tanh(),
        )
        self.peer_encoder = nn.Sequential(
            nn.Linear(peer_dim, hidden_size),
            nn.Tanh(),
            nn.Linear(hidden_size, hidden_size),
            nn.Tanh(),
        )
        self.num_heads = num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.output = nn.Linear(hidden_size, hidden_size)
        self.head = nn.Sequential(
            nn.Linear(2 * hidden_size, hidden_size), nn.Tanh(), nn.Linear(hidden_size, NUM_ACTIONS)
        )
        # A near-uniform initial policy (CleanRL's small-gain actor head).
        nn.init.orthogonal_(self.head[-1].weight, gain=0.01)
        nn.init.zeros_(self.head[-1].bias)

    def forward(self, self_features: torch.Tensor, peer_features: torch.Tensor) -> torch.Tensor:
        """Logits over the meta-actions.

        Args:
            self_features: (N, self_dim).
            peer_features: (N, n_agents - 1, peer_dim), at least one peer row.

        Returns:
            Logits (N, 3).
        """
        if (
            self_features.ndim != 2
            or peer_features.ndim != 3
            or peer_features.shape[0] != self_features.shape[0]
        ):
            raise ValueError(
                f"expected self (N, d_self) and peers (N, n_agents-1, d_peer), got "
                f"{tuple(self_features.shape)} and {tuple(peer_features.shape)}"
            )
        h_self = self.self_encoder(self_features)  # (N, H)
        h_peers = self.peer_encoder(peer_features)  # (N, P, H)
        num_samples, num_peers, hidden = h_peers.shape
        head_size = hidden // self.num_heads
        q = self.query(h_self).view(num_samples, self.num_heads, head_size)
        k = self.key(h_peers).view(num_samples, num_peers, self.num_heads, head_size)
        v = self.value(h_peers).view(num_samples, num_peers, self.num_heads, head_size)
        alpha = torch.softmax(torch.einsum("nhd,nphd->nhp", q, k) / head_size**0.5, dim=-1)
        context = self.output(torch.einsum("nhp,nphd->nhd", alpha, v).reshape(num_samples, hidden))
        return self.head(torch.cat([h_self, context], dim=-1))


def stack_observations(obs: Observations, agents: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack the vector env's per-agent observations into one agent-major batch.

    Args:
        obs: ``obs[agent]["self"]`` (num_envs, d_self) and ``obs[agent]["peers"]``
            (num_envs, n_agents - 1, d_peer), as the vector env returns them.
        agents: Agent names, in the order to stack.

    Returns:
        ``self`` (n_agents * num_envs, d_self) and ``peers`` (n_agents * num_envs,
        n_agents - 1, d_peer) float32 tensors; row ``k * num_envs + e`` is agent k in env e.
    """
    self_features = torch.as_tensor(
        np.concatenate([obs[a]["self"] for a in agents]), dtype=torch.float32
    )
    peer_features = torch.as_tensor(
        np.concatenate([obs[a]["peers"] for a in agents]), dtype=torch.float32
    )
    return self_features, peer_features


class NetworkPolicy:
    """A :class:`algorithms.meta.policy.Policy` backed by a :class:`MetaPolicyNetwork`.

    Acts on observations only (never ``infos``), one forward pass for all agents of all
    envs.

    Args:
        network: The meta-policy network.
        agents: The env's agent names (``venv.agents``).
        name: Name used in result tables.
        greedy: Take the most likely action; if False, sample from the policy.
        seed: Seed of the sampling generator (used only if ``greedy`` is False).
    """

    def __init__(
        self,
        network: MetaPolicyNetwork,
        agents: list[str],
        name: str = "learned",
        greedy: bool = True,
        seed: int = 0,
    ):
        self.network = network
        self.agents = list(agents)
        self.name = name
        self.greedy = greedy
        self.generator = torch.Generator().manual_seed(seed)

    @torch.no_grad()
    def act(self, obs: Observations, infos: Infos) -> Actions:
        """Meta-actions (num_envs,) for every agent."""
        logits = self.network(*stack_observations(obs, self.agents))
        if self.greedy:
            actions = logits.argmax(dim=-1)
        else:
            actions = torch.multinomial(
                torch.softmax(logits, dim=-1), 1, generator=self.generator
            ).squeeze(1)
        per_agent = actions.numpy().reshape(len(self.agents), -1)
        return {agent: per_agent[k] for k, agent in enumerate(self.agents)}
