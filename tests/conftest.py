"""Test tiers, set on every collected test from where it lives and what it uses.

Test files carry no tier marks: the hook below reads each test's folder, file name, the
packages its module imports and the fixtures it requests, so a test keeps its tier when
its file moves. The tiers (pytest markers; a test may have several):

- ``unit``: everything no other tier claims: pure functions checked on hand-computed
  values, envs on simulated or scripted teams, learners on the tiny random model,
  the sandbox, the CLI in process, and the packages' doctests.
- ``api``: the public API's contract: PettingZoo conformance (a module that imports
  ``pettingzoo.test``) and the files named in ``API_FILES`` (bad input, determinism,
  the vector env, the names users import).
- ``integrations``: the ecosystem libraries: tests under an ``integrations`` folder and
  modules that import one of ``ECOSYSTEM`` (Stable-Baselines3, SuperSuit, TorchRL,
  BenchMARL; RLlib's tests sit in ``integrations/``).
- ``ray``: modules that import Ray (local clusters, actors, rollout workers).
- ``slow``: the bundled SmolLM2 end to end (a test that requests a fixture of
  ``REAL_MODEL_FIXTURES``, or is named in ``SLOW_TESTS``), the examples, tutorial and
  paper-scale commands run as programs (``SLOW_FILES``, file names with "example" or
  "tutorial"), the sandbox's attack suites (file names with "attacks": hundreds of
  hostile programs), and single tests of over about 2 seconds whose ground a faster test
  covers in part (``SLOW_TESTS``, by name, or by id for one case of a parametrized test),
  chosen by measured time so that the fast tier stays within its budget.

``make test`` (CI) runs every tier. ``make test-fast`` runs the edit-loop tier,
``pytest -m "not slow and not ray and not integrations"`` (unit and api): about 125
CPU-seconds, 20 of them collecting (2026-11-28, 2-core EPYC; no test over about 2
seconds), within 3 minutes on 2 cores, and it lists its 10 slowest tests so that a new
slow one shows (add it to a rule here; ``tests/test_tiers.py`` checks that every name
here still names a test). One tier alone: ``pytest -m ray``; any marker
expression works.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).parent))

TIERS = {
    "unit": "no other tier: hand-computed values, simulated teams, the tiny model, doctests",
    "api": "the public API's contract: PettingZoo conformance, bad input, determinism",
    "integrations": "ecosystem libraries: Stable-Baselines3, SuperSuit, RLlib, TorchRL, BenchMARL",
    "ray": "Ray clusters, actors and rollout workers",
    "slow": "the real SmolLM2 end to end, examples run as programs, attack suites, heavy runs",
}
ECOSYSTEM = frozenset({"stable_baselines3", "supersuit", "torchrl", "benchmarl"})
API_FILES = frozenset(
    {"test_api.py", "test_bad_input.py", "test_action_names.py", "test_determinism.py",
     "test_vector.py", "test_properties.py"}
)  # fmt: skip
# Module- or session-scoped fixtures that load the bundled SmolLM2 (llama.cpp, CTranslate2,
# transformers) or serve it (llama_cpp.server).
REAL_MODEL_FIXTURES = frozenset({"smollm2", "backend", "server", "server_url"})
# Whole files of programs: the paper-scale commands against SmolLM2, interpreters that
# must exit cleanly while CTranslate2 decodes (each test starts several), and torchrun jobs
# of two processes.
SLOW_FILES = frozenset(
    {"test_cli_paper_path.py", "test_ctranslate2_lifetime.py", "test_data_parallel.py", "test_gpu_train_check.py"}
)  # fmt: skip
# File names with these words: programs run as a user runs them, hostile programs in bulk.
SLOW_WORDS = ("example", "tutorial", "attacks")
# Single tests over 4 CPU-seconds each (measured 2026-11-25, 2-core Xeon): SmolLM2 loaded in
# the test itself, `deliberate` or several Pythons started as subprocesses, every HumanEval
# canonical solution through the sandbox, searches over whole episodes or a fine grid of
# the sampler's uniforms, and runs of several updates with evaluations. Then (2026-11-28,
# 2-core EPYC, 2 to 5 seconds each, for the 3-minute budget): Pythons started to check what
# an import loads, writers in two processes, a replay from a read-only mount; a Weights &
# Biases run; compares of several learners and seeds (the command-line compares stay);
# three runs to check a resume's dtype; progress bars over a whole evaluation; programs
# judged until their time limit again (the sandbox's own timeout tests stay); a 50 MiB row.
SLOW_TESTS = frozenset(
    {"test_the_gpu_check_smoke_run_reports_every_figure_and_cpu_parity",
     "test_past_its_budget_the_check_skips_the_later_phases_and_still_reports_the_update",
     "test_a_gguf_model_fully_fine_tuned_saves_and_serves",
     "test_the_default_team_is_built_without_importing_llama_cpp",
     "test_the_cli_clears_a_cache_only_when_told_to",
     "test_processes_that_create_one_cache_file_at_once_all_open_it",
     "test_the_deliberate_command_finds_a_protocol_module_in_the_working_directory",
     "test_held_out_metrics_join_every_interval_th_update_and_the_metrics_file",
     "test_every_canonical_solution_is_admitted_and_passes_its_tests",
     "test_every_canonical_solution_passes_as_the_helper_behind_a_forwarding_main",
     "test_all_canonical_solutions_pass_and_a_wrong_one_fails",
     "test_rewards_and_contributions_stay_in_their_documented_bounds",
     "test_every_uniform_of_a_fine_grid_picks_the_sorts_token",
     "test_periodic_evaluations_of_a_run_become_points_on_its_curve",
     "test_resume_equals_an_uninterrupted_run",
     "test_run_reports_every_evaluation_and_no_progress_changes_nothing",
     "test_importing_the_plotting_modules_leaves_the_backend_and_pyplot_alone",
     "test_every_commands_help_imports_no_torch",
     "test_the_packages_import_with_the_runtime_dependencies_only",
     "test_two_processes_write_concurrently",
     "test_replay_from_a_read_only_file_system",
     "test_wandb_offline_gets_the_jsonl_metric_names_at_the_same_steps",
     "test_weights_and_biases_online_without_a_key_is_one_line",
     "test_compare_writes_curves_summary_and_plots",
     "test_a_meta_learner_of_ones_own_joins_compare_from_python",
     "test_a_text_learner_of_ones_own_joins_compare_and_both_families_write_the_same_files",
     "test_a_resumed_run_may_move_but_keeps_its_dtype",
     "test_held_out_evaluation_progress_changes_no_metric",
     "test_transient_outcomes_are_judged_again",
     "test_hostile_answers_are_contained",
     "test_no_unilateral_strategy_out_earns_honest_play_under_per_agent_credit",
     "test_an_oversized_row_is_refused_at_read_even_with_a_valid_mac[52428800]"}
)  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Register the tier markers (``pytest --markers`` lists them)."""
    for name, description in TIERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")


@pytest.fixture(autouse=True)
def _recursion_limit_kept() -> Iterator[None]:
    """torch's inductor raises the process's recursion limit where it compiles (to 2,000
    and more); each test gets the suite's back, so that a later one runs at the limit a
    user's process has (a deep program's decision key changed with it)."""
    limit = sys.getrecursionlimit()
    yield
    sys.setrecursionlimit(limit)


@pytest.fixture(autouse=True, scope="session")
def _stable_baselines3_logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """stable-baselines3 makes a folder ``$TMPDIR/SB3-<time>`` for every model's logger,
    whatever its verbosity, unless ``SB3_LOGDIR`` names one: this session's (also for
    the examples it runs in subprocesses), so the tests leave nothing behind."""
    folder = tmp_path_factory.mktemp("sb3-logs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SB3_LOGDIR", str(folder))
        yield


@cache
def _imported(module: ModuleType) -> frozenset[str]:
    """Dotted names of the modules that ``module``'s globals come from."""
    names = set()
    for value in vars(module).values():
        name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        if isinstance(name, str):
            names.add(name)
    return frozenset(names)


def tiers(item: pytest.Item) -> set[str]:
    """The tier markers of one collected test (doctests are ``unit``)."""
    module = getattr(item, "module", None)
    imported = _imported(module) if module is not None else frozenset()
    packages = {name.partition(".")[0] for name in imported}
    name = getattr(item, "originalname", item.name)
    found = set()
    if "integrations" in item.path.parts or packages & ECOSYSTEM:
        found.add("integrations")
    if "ray" in packages:
        found.add("ray")
    if (
        item.path.name in SLOW_FILES
        or any(word in item.path.name for word in SLOW_WORDS)
        or name in SLOW_TESTS
        or item.name in SLOW_TESTS  # one case of a parametrized test
        or REAL_MODEL_FIXTURES.intersection(getattr(item, "fixturenames", ()))
    ):
        found.add("slow")
    if not found and (
        item.path.name in API_FILES or any(n.startswith("pettingzoo.test") for n in imported)
    ):
        found.add("api")
    return found or {"unit"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every collected test with its tiers."""
    for item in items:
        for tier in sorted(tiers(item)):
            item.add_marker(tier)
