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
    ):
        assert figure in lines, done.stdout
    # on the CPU the "device" is the CPU itself: float32 greedy decoding equals itself token for token
    assert "100.0% equal tokens, identical: True" in lines["greedy parity vs CPU float32 (float32)"]


def test_past_its_budget_the_check_skips_the_later_phases_and_still_reports_the_update():
    done = run_benchmark("gpu_check.py", "--smoke", "--trl", "--budget-s", "0.001")

    assert "MAGRPO update (sampling + loss pass + Adam), s" in done.stdout
    skipped = next(line for line in done.stdout.splitlines() if line.startswith("| skipped"))
    for phase in ("TRL's update", "one decoded token, slices", "one decoded token, peft", "the compiled step"):
        assert phase in skipped
    assert "TRL GRPOTrainer" not in done.stdout and "compiled, ms" not in done.stdout
