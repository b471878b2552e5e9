"""benchmarks/gpu_check.py --smoke: the prepared GPU check runs end to end on the CPU."""

from helpers import run_benchmark


def test_the_gpu_check_smoke_run_reports_every_figure_and_cpu_parity():
    done = run_benchmark("gpu_check.py", "--smoke")

    lines = {
        line.split(" | ")[0].strip("| "): line
        for line in done.stdout.splitlines()
        if line.startswith("| ")
    }
    for figure in (
        "generation, both agents, output tokens/s",
        "MAGRPO update (sampling + loss pass + Adam), s",
        "training tokens/s",
        "peak memory, GB",
        *(f"one decoded token, one row per agent (fixed cost per step), {route}, ms"
          for route in ("stacked", "slices", "peft", "stacked, compiled")),
        "compiling the decoding step (first call), s",
        "generation, both agents, compiled step, output tokens/s",
    ):
        assert figure in lines, done.stdout
    # on the CPU the "device" is the CPU itself: float32 greedy decoding equals itself token for token
    assert "100.0% equal tokens, identical: True" in lines["greedy parity vs CPU float32 (float32)"]


def test_past_its_budget_the_check_skips_the_later_phases_and_still_reports_the_update():
    done = run_benchmark("gpu_check.py", "--smoke", "--trl", "--budget-s", "0.001")

    assert "MAGRPO update (sampling + loss pass + Adam), s" in done.stdout
    skipped = next(line for line in done.stdout.splitlines() if line.startswith("| skipped"))
    for phase in (
        "TRL's update",
        "one decoded token, slices",
        "one decoded token, peft",
        "the compiled step",
        "the update's generation, compiled",
    ):
        assert phase in skipped
    for figure in ("TRL GRPOTrainer", "compiled, ms", "compiled step, output tokens/s"):
        assert figure not in done.stdout


def test_a_device_the_check_cannot_use_is_one_line_and_runs_nothing(monkeypatch):
    """A real client's ``--smoke --device cuda`` ran on the CPU in silence, and the full check
    on a machine without CUDA started a 1.5B model on its CPU."""
    import sys
    from pathlib import Path

    import pytest
    import torch

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import gpu_check

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for args, said in [
        (gpu_check.Args(smoke=True, device="cuda"), "--smoke runs a tiny model on the CPU"),
        (gpu_check.Args(dtype="fp16"), r"dtype \(--dtype\) must be one of"),
        (gpu_check.Args(), "this machine has no CUDA device"),
    ]:
        with pytest.raises(SystemExit, match=said):
            gpu_check.checked(args)
    assert gpu_check.checked(gpu_check.Args(device="cpu")).device == "cpu"  # asked for: measured, slowly


def test_the_gpu_profile_smoke_run_profiles_a_decoding_step_and_a_loss_micro_batch():
    done = run_benchmark("gpu_profile.py", "--smoke")
    assert "decode step, 8 rows:" in done.stdout and "loss micro-batch of 4:" in done.stdout
    for part in ("decode_step", "loss_micro_batch"):  # the costliest operators by host time on the CPU
        listed = done.stdout.split(f"{part}: top operators")[1].split("top operators")[0]
        assert "aten::mm" in listed, done.stdout
