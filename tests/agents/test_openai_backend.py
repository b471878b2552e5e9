"""The openai backend against a real llama.cpp server on 127.0.0.1, then with it stopped."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from agent_fakes import make_turn

from agents import CachedBackend, LLMAgent, prompts
from agents.base import BackendError, GenerationRequest, LogprobRequest
from agents.cache import cache_stats
from agents.llamacpp_backend import LlamaCppBackend, default_model_path
from agents.openai_backend import OpenAIBackend

MODEL = "smollm2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A llama_cpp.server with SmolLM2 on a free local port; yields its base URL and process."""
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(default_model_path()),
            "--model_alias",
            MODEL,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "1024",
            "--verbose",
            "false",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base_url}/models", timeout=1).read()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
    yield base_url, process
    process.terminate()
    process.wait(timeout=10)


def test_team_turns_through_a_server_then_a_clear_error_when_it_is_gone(server, tmp_path):
    base_url, process = server
    backend = OpenAIBackend(
        base_url, MODEL, max_concurrency=4, max_retries=2, backoff_s=0.05, timeout_s=30
    )
    assert backend.supports_logprobs  # asked from the server
    path = tmp_path / "c.sqlite"
    agent = LLMAgent(CachedBackend(backend, path), max_tokens=24)

    turns = [make_turn("What is 12 + 7?", agent=a, seed=a) for a in range(3)]
    answers = agent.solve(turns)
    assert all(0 < a.completion_tokens <= 24 and a.prompt_tokens > 20 for a in answers)
    judged = [
        make_turn(t.question, agent=t.agent, seed=t.seed, previous="12 + 7 = 19. The answer is 19.")
        for t in turns
    ]
    confidences = agent.introspect(judged)
    assert all(0.0 <= c.value <= 1.0 and c.method == "logprob" for c in confidences)
    assert confidences[0].value == pytest.approx(confidences[1].value)  # same prompt, same score
    again = LLMAgent(backend, max_tokens=24).solve(turns)  # seeds are honoured by the server
    assert [a.text for a in again] == [a.text for a in answers]

    # The server's top log-probs agree with llama.cpp run in this process.
    ask = [LogprobRequest(prompts.introspect_messages(judged[0]), prompts.CRITIC_CANDIDATES)]
    local = LlamaCppBackend(default_model_path(), n_ctx=1024).next_token_logprobs(ask)[0].logprobs
    assert backend.next_token_logprobs(ask)[0].logprobs == pytest.approx(local, abs=1e-3)

    rows_before = cache_stats(path)["generations"]
    process.terminate()
    process.wait(timeout=10)
    started = time.monotonic()
    with pytest.raises(
        BackendError,
        match=r"openai:smollm2 at http://127\.0\.0\.1:\d+/v1: generate request 0 .* failed after 3 attempts",
    ):
        agent.backend.generate([GenerationRequest(({"role": "user", "content": "new"},))])
    assert time.monotonic() - started >= 0.05 + 0.1  # it backed off between the retries
    assert cache_stats(path)["generations"] == rows_before == 3
    replay = LLMAgent(CachedBackend(backend, path, offline=True), max_tokens=24).solve(turns)
    assert replay == answers
