"""Ray workers on a multi-node cluster without a cluster: two raylets on this machine
(``ray.cluster_utils.Cluster``), one CPU each; each worker holds a CPU, so the two must land on
both (``SPREAD`` alone is best effort: a node that registers late is passed over)."""

from __future__ import annotations

import pytest
from test_distributed import META, meta_actions, play, same

import deliberation_env as de

ray = pytest.importorskip("ray", reason="Ray is in the 'ray' extra")
from ray.cluster_utils import Cluster

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def two_nodes():
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_workers_on_two_nodes_play_the_in_process_episodes_and_survive_a_kill(two_nodes):
    kwargs = dict(META, stop_on_consensus=True)
    local, remote = de.vector_env(4, **kwargs), de.vector_env(4, workers=2, worker_options={"num_cpus": 1}, **kwargs)
    assert len(set(remote.nodes)) == 2  # one CPU per node, held: a worker on each
    assert set(remote.nodes) == {node["NodeID"] for node in ray.nodes() if node["Alive"]}
    assert same(play(remote, meta_actions), play(local, meta_actions))
    assert same(play(remote, meta_actions, seed=4, kill=0), play(local, meta_actions, seed=4))
    remote.close()
