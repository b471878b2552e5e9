"""benchmarks/gpu_train_check.py --smoke: the GPU check of the whole text learner runs on the
CPU (gloo), and its torchrun and resumed runs make the one-process run's updates."""

import json

from helpers import run_benchmark


def test_the_gpu_train_check_smoke_run_finishes_and_matches_one_process():
    done = run_benchmark("gpu_train_check.py", "--smoke", "--updates", "2")

    record = json.loads(done.stdout[done.stdout.index("{") :])
    assert record["finished"], record
    assert record["torchrun_max_weight_difference"] < 1e-5
    assert record["resumed_max_weight_difference"] < 1e-5
    rewards = record["joint_reward"]
    assert rewards["torchrun"] == rewards["one_process"] == rewards["resumed"]
    assert len(rewards["one_process"]) == 2
    assert record["recorded_placement"] == {"resolved_device": "cpu", "resolved_dtype": "float32"}
