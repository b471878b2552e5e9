"""The CTranslate2 backend never aborts the interpreter: its native threads, at exit and on drop.

Each test runs a real program in forked children of a driver process and counts how they
ended. The schedule that aborted a user's process under load is forced, not waited for: a
child runs on one CPU, its CTranslate2 threads under ``SCHED_IDLE`` (they run only while the
main thread waits) and its main thread keeps the GIL until it blocks, as on a busy machine
right after a call returned. Before the fix (the backend of commit 3c00dc4), on the 2-core
machine under other jobs' load, 30 of 30 children of the first test's program ended with
SIGABRT ("terminate called without an active exception"), 29 of 30 of the second's, 26 of
30 of the fourth's ("Resource deadlock avoided"; in the others the native thread won the race
for the CPU all the same); the third's, 10 of 10 until exit waited for every copy's jobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("ctranslate2", reason="the ctranslate2 extra is not installed")
pytest.importorskip("transformers", reason="the ctranslate2 extra is not installed")
pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="pins children to a CPU and lowers thread priorities (Linux calls)"
)

from agents import ctranslate2_backend as ct2
from agents.base import GenerationRequest
from agents.ctranslate2_convert import convert_model
from agents.trainable_lm import tiny_model

RUNS = 6
"""Children per test: before the fix about nine in ten aborted (module docstring), so one is
proof and six all but certain to show the abort."""

DRIVER = r'''
import json, os, sys, threading

from agents import ctranslate2_backend as ct2
from agents.base import GenerationRequest
from transformers import AutoTokenizer

MODEL = sys.argv[1]
AutoTokenizer.from_pretrained(MODEL, local_files_only=True)  # imported once, before the forks
# greedy rows that end at their own budgets and at a stop string: the backend's step callback
STOPPED = [
    GenerationRequest(({"role": "user", "content": f"Count {k}: 1, 2,"},), max_tokens=4 + k, temperature=0.0, stop=(",",))
    for k in range(4)
]


def one_cpu():
    """Run this thread, and the threads it starts from now on, on one CPU; keep the GIL until
    this thread blocks (no forced switch)."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    sys.setswitchinterval(1000.0)


def native_threads_last():
    """SCHED_IDLE for every thread but this one (CTranslate2's, started already): on one CPU
    they run only while the main thread waits."""
    me = threading.get_native_id()
    for task in os.listdir("/proc/self/task"):
        if int(task) != me:
            os.sched_setscheduler(int(task), os.SCHED_IDLE, os.sched_param(0))


def last_call_then_exit():
    """The issue's program: a temporary backend dropped, a kept one decoding, then the end
    (the kept one is a global of the program: finalization drops it)."""
    one_cpu()
    ct2.CTranslate2Backend(MODEL, n_threads=1, replicas=1).generate(STOPPED)
    kept = ct2.CTranslate2Backend(MODEL, n_threads=1, replicas=1)
    native_threads_last()
    assert len(kept.generate(STOPPED)) == len(STOPPED)
    return kept


def daemon_thread_generating_at_exit():
    """A daemon thread decodes in a loop, and the program ends while it does; the daemon holds
    the only reference to the backend (it drops it when exit refuses its next call)."""
    backend = ct2.CTranslate2Backend(MODEL, n_threads=1, replicas=1)
    decoded = threading.Event()

    def decode_forever():
        while True:
            backend.generate(STOPPED)
            decoded.set()

    threading.Thread(target=decode_forever, daemon=True).start()
    decoded.wait()


def jobs_left_then_exit():
    """A call that returned before CTranslate2 destroyed its job (as a second Ctrl-C would cut
    the call's wait for it short), then the end."""
    one_cpu()
    copy = ct2.load_copy(MODEL, intra_threads=1)
    native_threads_last()
    copy.generate_batch([["<|im_start|>", "a"]], max_length=4, callback=lambda step: False)
    return copy


def callback_holding_its_generator():
    """The step callback holds the last reference to its own generator when the caller is done."""
    import ctranslate2

    one_cpu()

    def decode():
        generator = ctranslate2.Generator(MODEL, intra_threads=1)
        native_threads_last()
        prompt = ["<|im_start|>", "a"]
        ct2.generate_batch(generator, [prompt], max_length=4, callback=lambda step, held=generator: False)

    decode()


scenario = globals()[sys.argv[2]]
statuses = []
for _ in range(int(sys.argv[3])):
    pid = os.fork()
    if pid == 0:
        kept = scenario()  # what the program holds until finalization drops it
        sys.exit(0)  # the child's program ends as any program does: atexit, then finalization
    statuses.append(os.waitpid(pid, 0)[1])
print(json.dumps([
    {"signal": os.WTERMSIG(s)} if os.WIFSIGNALED(s) else {"exit": os.WEXITSTATUS(s)} for s in statuses
]))
'''


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny random Llama converted into a CTranslate2 model with its chat template."""
    model, tokenizer = tiny_model(seed=0)
    return convert_model(model, tokenizer, tmp_path_factory.mktemp("ct2-tiny"))


def run_children(model_dir, scenario: str) -> tuple[list[dict[str, int]], str]:
    """Run ``scenario`` of :data:`DRIVER` in :data:`RUNS` forked children; how each ended, and stderr."""
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false", GGML_NO_BACKTRACE="1")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(model_dir), scenario, str(RUNS)],
        check=False, capture_output=True, text=True, timeout=300, env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_a_dropped_backend_never_aborts_the_interpreter(model_dir):
    """The step callback's last copy went with the call's job, on a CTranslate2 thread that
    took the GIL after the call returned: at exit CPython ended that thread with pthread_exit,
    through pybind11's GIL guard, and the C++ runtime aborted."""
    ended, stderr = run_children(model_dir, "last_call_then_exit")
    assert ended == [{"exit": 0}] * RUNS, stderr[-3000:]
    assert "terminate called" not in stderr


def test_a_daemon_thread_generating_while_the_program_ends_never_aborts_it(model_dir):
    """Exit waits for the call in flight and refuses the daemon's next one; the copies the
    daemon then drops are destroyed by the main thread, not joined by the daemon."""
    ended, stderr = run_children(model_dir, "daemon_thread_generating_at_exit")
    assert ended == [{"exit": 0}] * RUNS, stderr[-3000:]
    assert "terminate called" not in stderr and "FATAL" not in stderr


def test_jobs_a_call_left_behind_never_abort_the_exit(model_dir):
    """Exit waits for every copy's jobs, not only for the calls in flight."""
    ended, stderr = run_children(model_dir, "jobs_left_then_exit")
    assert ended == [{"exit": 0}] * RUNS, stderr[-3000:]
    assert "terminate called" not in stderr


def test_a_callback_holding_its_generator_never_destroys_it_on_its_own_thread(model_dir):
    """generate_batch returns once CTranslate2's threads let go of the callback, so the caller
    drops the generator last, not the generator's own decoding thread (which would join itself)."""
    ended, stderr = run_children(model_dir, "callback_holding_its_generator")
    assert ended == [{"exit": 0}] * RUNS, stderr[-3000:]
    assert "Resource deadlock avoided" not in stderr


def test_close_joins_the_copies_threads_and_the_next_call_loads_them_again(model_dir):
    def threads() -> set[str]:
        return set(os.listdir("/proc/self/task"))

    request = GenerationRequest(({"role": "user", "content": "Hi"},), max_tokens=4, temperature=0.0)
    # A first backend starts the pools a process starts once and keeps (OpenMP's, the
    # tokenizer's): in a long test session they may start while the backend is built, and
    # they are not the copies' threads.
    warm_up = ct2.CTranslate2Backend(model_dir, n_threads=2, replicas=2)
    warm_up.generate([request])
    warm_up.close()
    before = threads()
    backend = ct2.CTranslate2Backend(model_dir, n_threads=2, replicas=2)
    copies = threads() - before  # each copy of the model decodes on threads of its own
    assert copies
    first = backend.generate([request])
    backend.close()
    deadline = time.monotonic() + 10  # a loaded machine may end a joined thread's task late
    while copies & threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not copies & threads()
    assert backend.generate([request]) == first
    backend.close()


def test_generate_batch_decodes_as_the_generator_does_and_raises_the_callbacks_error(model_dir):
    """The wait for the jobs changes nothing of the results, and holds when the callback raised."""
    import ctranslate2

    generator = ctranslate2.Generator(str(model_dir), intra_threads=1)
    prompts = [["<|im_start|>", "a"], ["<|im_start|>", "b", "c"]]
    options = {"max_length": 3, "include_prompt_in_result": False}
    steps = []
    waited = ct2.generate_batch(generator, prompts, callback=lambda step: steps.append(step.batch_id) or False, **options)
    assert generator.num_active_batches == 0 and sorted(steps) == [0, 0, 0, 1, 1, 1]
    assert [r.sequences_ids for r in waited] == [r.sequences_ids for r in generator.generate_batch(prompts, **options)]

    def broken(step):
        raise ValueError("a broken callback")

    with pytest.raises(ValueError, match="a broken callback"):
        ct2.generate_batch(generator, prompts, callback=broken, **options)
    assert generator.num_active_batches == 0
