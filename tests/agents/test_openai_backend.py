"""The openai backend against a real llama.cpp server on 127.0.0.1, then with it stopped;
and against small stdlib HTTP servers that answer badly, slowly or not at all."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from agent_fakes import make_turn
from helpers import llama_server

from agents import CachedBackend, LLMAgent, openai_backend, prompts
from agents.base import BackendError, Generation, GenerationRequest, LogprobRequest, ServerError
from agents.cache import cache_stats
from agents.llamacpp_backend import LlamaCppBackend, default_model_path
from agents.openai_backend import OpenAIBackend

MODEL = "smollm2"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A llama_cpp.server with SmolLM2 on a free local port; yields its base URL and process."""
    with llama_server(tmp_path_factory.mktemp("server"), MODEL, n_ctx=1024) as running:
        yield running


@pytest.fixture
def backoffs(monkeypatch) -> list[float]:
    """The backoff waits of the openai backend, recorded instead of slept."""
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(openai_backend, "sleep", record)
    return waits


def test_team_turns_through_a_server_then_a_clear_error_when_it_is_gone(server, tmp_path, backoffs):
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
    backoffs.clear()
    with pytest.raises(
        BackendError,
        match=r"openai:smollm2@http://127\.0\.0\.1:\d+/v1: generate request 0 .* failed after 3 attempts",
    ):
        agent.backend.generate([GenerationRequest(({"role": "user", "content": "new"},))])
    assert backoffs == [0.05, 0.1]  # it backed off between the retries, doubling the wait
    assert cache_stats(path)["generations"] == rows_before == 3
    replay = LLMAgent(CachedBackend(backend, path, offline=True), max_tokens=24).solve(turns)
    assert replay == answers


# --------------------------------------------------------------- stub servers
def completion(text: str = "The answer is 7.", **extra) -> bytes:
    """A well-formed chat completion body."""
    body = {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
    }
    return json.dumps({**body, **extra}).encode()


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` on a free local port, in a thread; yields the API root URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def replying(replies: list[tuple[int, str, bytes]], received: list[dict]):
    """A handler answering the k-th POST with ``replies[k]`` (the last one repeats) as
    (status, content type, body), recording each request body in ``received``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status, content_type, body = replies[min(len(received), len(replies)) - 1]
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    return Handler


def ask(text: str = "What is 3 + 4?") -> list[GenerationRequest]:
    return [GenerationRequest(({"role": "user", "content": text},), seed=3)]


MALFORMED = {
    "plain text": ("text/plain", b"not json at all", r"body: Invalid JSON"),
    "an HTML page": (
        "text/html",
        b"<html><body>502 Bad Gateway</body></html>",
        r"Invalid JSON.*<html>",
    ),
    "no choices": (
        "application/json",
        b'{"id": "x", "object": "chat.completion"}',
        r"choices: Field required",
    ),
    "empty choices": (
        "application/json",
        b'{"choices": []}',
        r"choices: List should have at least 1 item",
    ),
    "no message": (
        "application/json",
        b'{"choices": [{"finish_reason": "stop"}]}',
        r"choices\.0\.message: Field required",
    ),
    "no content": (
        "application/json",
        b'{"choices": [{"message": {"role": "assistant", "content": null}}]}',
        r"choices\.0\.message\.content: Input should be a valid string",
    ),
    "choices not a list": (
        "application/json",
        b'{"choices": "none"}',
        r"choices: Input should be a valid array",
    ),
    "content a number": (
        "application/json",
        b'{"choices": [{"message": {"content": 5}}]}',
        r"message\.content: Input should be a valid string",
    ),
    "usage a string": (
        "application/json",
        completion(usage={"prompt_tokens": "many"}),
        r"usage\.prompt_tokens: Input should be a valid integer",
    ),
    # red team: cached as a whole answer that cost nothing
    "no usage": (
        "application/json",
        b'{"choices": [{"message": {"content": "The answer is 7."}, "finish_reason": "stop"}]}',
        r"usage: missing",
    ),
    "usage without its counts": (
        "application/json",
        completion(usage={"total_tokens": 256}),
        r"usage: missing, or without prompt_tokens and completion_tokens",
    ),
    "an unknown finish reason": (
        "application/json",
        completion(choices=[{"message": {"content": "The answer is"}, "finish_reason": "abort"}]),
        r"finish_reason: 'abort' is none of stop, length, content_filter",
    ),
}


@pytest.mark.parametrize(("reason", "completion_tokens", "finish"), [
    (None, 5, "stop"), (None, 8, "length"), ("content_filter", 3, "length"), ("length", 8, "length"),
])  # fmt: skip
def test_a_reply_is_cut_unless_the_server_says_it_stopped_or_its_tokens_do(reason, completion_tokens, finish):
    """A ``null`` finish reason cut at ``max_tokens`` was cached as a complete answer."""
    body = completion(
        choices=[{"message": {"content": "The answer is"}, "finish_reason": reason}],
        usage={"prompt_tokens": 11, "completion_tokens": completion_tokens},
    )
    with serving(replying([(200, "application/json", body)], [])) as url:
        backend = OpenAIBackend(url, "stub", supports_logprobs=False)
        request = GenerationRequest(({"role": "user", "content": "What is 3 + 4?"},), max_tokens=8, seed=3)
        (generation,) = backend.generate([request])
    assert (generation.finish_reason, generation.completion_tokens) == (finish, completion_tokens)


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_responses_are_retried_then_a_named_backend_error(case, backoffs):
    content_type, body, problem = MALFORMED[case]
    received: list[dict] = []
    with serving(replying([(200, content_type, body)], received)) as url:
        backend = OpenAIBackend(url, "stub", max_retries=2, backoff_s=0.25, supports_logprobs=False)
        with pytest.raises(BackendError) as error:
            backend.generate(ask())
    message = str(error.value)
    assert f"openai backend openai:stub@{url}: generate request 0 (seed 3," in message
    assert "failed after 3 attempts: malformed response (" in message
    assert re.search(problem, message), message
    assert len(received) == 3 and backoffs == [0.25, 0.5]


def test_malformed_log_probabilities_are_a_named_backend_error():
    choice = {"message": {"content": "Yes"}, "logprobs": {"content": [{"top_logprobs": "Yes"}]}}
    body = completion(choices=[choice])
    received: list[dict] = []
    with serving(replying([(200, "application/json", body)], received)) as url:
        backend = OpenAIBackend(url, "stub", max_retries=0, supports_logprobs=True)
        with pytest.raises(
            BackendError, match=r"logprobs request 0 .*top_logprobs: Input should be a valid array"
        ):
            backend.next_token_logprobs(
                [LogprobRequest(({"role": "user", "content": "ok?"},), ("Yes", "No"))]
            )
    assert len(received) == 1 and received[0]["logprobs"] is True


def test_a_malformed_answer_then_a_good_one_is_served(backoffs):
    received: list[dict] = []
    replies = [
        (200, "text/html", b"<html>busy</html>"),
        (200, "application/json", completion("The answer is 7.")),
    ]
    with serving(replying(replies, received)) as url:
        backend = OpenAIBackend(url, "stub", max_retries=2, backoff_s=0.1, supports_logprobs=False)
        assert backend.generate(ask()) == [Generation("The answer is 7.", 11, 5, "stop")]
    assert len(received) == 2 and backoffs == [0.1]
    assert received[1]["seed"] == 3 and received[1]["messages"][-1]["content"] == "What is 3 + 4?"


def test_server_errors_back_off_doubling_and_client_errors_are_not_retried(backoffs):
    received: list[dict] = []
    with serving(
        replying([(503, "application/json", b'{"error": "overloaded"}')], received)
    ) as url:
        backend = OpenAIBackend(url, "stub", max_retries=3, backoff_s=0.5, supports_logprobs=False)
        with pytest.raises(ServerError, match="failed after 4 attempts: InternalServerError"):
            backend.generate(ask())
    assert len(received) == 4 and backoffs == [0.5, 1.0, 2.0]

    received.clear()
    backoffs.clear()
    with serving(
        replying([(400, "application/json", b'{"error": "bad request"}')], received)
    ) as url:
        backend = OpenAIBackend(url, "stub", max_retries=3, supports_logprobs=False)
        with pytest.raises(
            ServerError, match="generate request 0 .* was refused: BadRequestError"
        ):
            backend.generate(ask())
    assert len(received) == 1 and backoffs == []


def closed_port_url() -> str:
    """The API root of a local port that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_server_that_is_not_running_is_named_and_one_line_on_the_command_line(backoffs, capsys, tmp_path):
    url = closed_port_url()
    backend = OpenAIBackend(url, "stub", max_retries=1, supports_logprobs=False)
    asked = rf"failed after 2 attempts: APIConnectionError.*is a server running at {re.escape(url)}\?"
    with pytest.raises(ServerError, match=asked):
        backend.generate(ask())

    from algorithms import cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--team", f"openai:{url}#stub", "--n-problems", "1", "--no-progress",
                  "--cache", str(tmp_path / "cache.sqlite"), "--run-dir", str(tmp_path / "run")])  # fmt: skip
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and "\n" not in err, err
    assert err.startswith(f"deliberate run: error: openai backend openai:stub@{url}: ")
    assert "is a server running" in err
    assert not (tmp_path / "run").exists()  # nothing written for a team that never answered


class Trickle(BaseHTTPRequestHandler):
    """Sends a whole well-formed response (status line, headers and body) one byte at
    a time, 12 s in all. Records how many bytes went out and whether the client hung
    up first."""

    response = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    payload = (response % len(completion())) + completion()
    delay = 12.0 / len(payload)
    sent = 0
    hung_up = False
    finished = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        try:
            for byte in range(len(self.payload)):
                self.wfile.write(self.payload[byte : byte + 1])
                type(self).sent += 1
                time.sleep(self.delay)
        except (BrokenPipeError, ConnectionResetError):
            type(self).hung_up = True
        finally:
            type(self).finished.set()

    def log_message(self, *args) -> None:
        pass


def test_timeout_is_a_deadline_for_the_whole_request():
    with serving(Trickle) as url:
        backend = OpenAIBackend(url, "stub", timeout_s=1.0, max_retries=0, supports_logprobs=False)
        with pytest.raises(
            BackendError,
            match=r"failed after 1 attempts: no complete response within timeout_s=1\.0",
        ):
            backend.generate(ask())
        assert Trickle.finished.wait(timeout=30)  # the server's side is over: hung up on, or done
    assert Trickle.hung_up and Trickle.sent < len(Trickle.payload)


def test_a_batch_is_sent_max_concurrency_requests_at_a_time():
    lock = threading.Lock()
    both_arrived = threading.Barrier(2, timeout=10)  # passes only if two requests overlap
    seen = {"in_flight": 0, "peak": 0, "seeds": []}

    class Pairs(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seed = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["seed"]
            with lock:
                seen["in_flight"] += 1
                seen["peak"] = max(seen["peak"], seen["in_flight"])
                seen["seeds"].append(seed)
            both_arrived.wait()
            with lock:
                seen["in_flight"] -= 1  # before answering: the next request cannot be here yet
            body = completion(f"The answer is {seed}.")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    requests = [GenerationRequest(({"role": "user", "content": "q"},), seed=s) for s in range(4)]
    with serving(Pairs) as url:
        backend = OpenAIBackend(
            url, "stub", max_concurrency=2, max_retries=0, supports_logprobs=False
        )
        results = backend.generate(requests)
    assert [r.text for r in results] == [f"The answer is {s}." for s in range(4)]  # in order
    assert seen["peak"] == 2 and sorted(seen["seeds"]) == [0, 1, 2, 3]


# ------------------------------------------------------- a batch to a hung server
@contextmanager
def hung_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """A TCP server on a free local port that accepts every connection and never answers;
    yields its API root URL and the connections it accepted so far (one per attempt)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                accepted.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", accepted
    finally:
        stop.set()
        thread.join()
        for connection in accepted:
            connection.close()
        listener.close()


@pytest.mark.parametrize(("batch", "concurrency"), [(4, 1), (6, 2)])
def test_a_batch_to_a_hung_server_fails_within_one_requests_budget(backoffs, batch, concurrency):
    """Each request may make ``max_retries + 1`` attempts; the batch shares that budget: once
    a request has used it, the batch fails, and the requests queued behind
    ``max_concurrency`` never reach the server (before, each wave of requests waited out a
    whole budget of its own: a batch of 4 one at a time took 4 budgets)."""
    requests = [GenerationRequest(({"role": "user", "content": "q"},), seed=s) for s in range(batch)]
    with hung_server() as (url, accepted):
        backend = OpenAIBackend(
            url, "stub", max_concurrency=concurrency, max_retries=1, timeout_s=0.3,
            backoff_s=0.01, supports_logprobs=False,
        )
        with pytest.raises(BackendError, match=r"generate request \d .* failed after 2 attempts: no complete"):
            backend.generate(requests)
        attempts = len(accepted)
    assert attempts == concurrency * 2  # the first wave's attempts, none of the later waves'


# ------------------------------------------------------------------ model ids
def answering(text: str, received: list[dict]):
    return replying([(200, "application/json", completion(text))], received)


def test_one_model_name_on_two_servers_never_shares_cached_rows(tmp_path):
    """Two servers both call their model "stub"; a cache filled from one must not answer for the other."""
    path, received = tmp_path / "c.sqlite", []
    with serving(answering("Server A says 7.", received)) as url_a:
        a = OpenAIBackend(url_a, "stub", supports_logprobs=False)
        assert CachedBackend(a, path).generate(ask())[0].text == "Server A says 7."
    with serving(answering("Server B says 8.", received)) as url_b:
        b = OpenAIBackend(url_b, "stub", supports_logprobs=False)
        assert a.model_id != b.model_id
        assert CachedBackend(b, path).generate(ask())[0].text == "Server B says 8."
    assert len(received) == 2
    assert set(cache_stats(path)["models"]) == {f"openai:stub@{url_a}", f"openai:stub@{url_b}"}


@pytest.mark.parametrize(
    ("base_url", "server"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1"),
        ("HTTP://LocalHost:80/v1", "http://localhost/v1"),
        ("https://user:secret@api.example.org:443/v1", "https://api.example.org/v1"),
        ("https://api.example.org:8443/openai/v1?api-version=2", "https://api.example.org:8443/openai/v1?api-version=2"),
        ("http://[::1]:8000/v1#part", "http://[::1]:8000/v1"),
    ],
)
def test_the_model_id_names_the_server_without_credentials(base_url, server):
    backend = OpenAIBackend(base_url, "Qwen/Qwen2.5-7B-Instruct", supports_logprobs=False)
    assert backend.model_id == f"openai:Qwen/Qwen2.5-7B-Instruct@{server}"
    assert "secret" not in backend.model_id
    # red team: a score over the top 20 was served to a backend asking for the top 1
    narrow = OpenAIBackend(base_url, "Qwen/Qwen2.5-7B-Instruct", supports_logprobs=False, top_logprobs=1)
    assert narrow.model_id == f"openai:Qwen/Qwen2.5-7B-Instruct@{server}#top_logprobs=1"


@pytest.mark.parametrize("base_url", ["localhost:8000/v1", "ftp://host/v1", "http:///v1", "http://h:port/v1"])
def test_a_base_url_that_names_no_server_is_a_clear_error(base_url):
    with pytest.raises(ValueError, match="base_url must be an http|Port could not be cast"):
        OpenAIBackend(base_url, "stub")


def test_a_numpy_seed_reaches_the_server_through_the_cache(tmp_path):
    received: list[dict] = []
    with serving(answering("The answer is 7.", received)) as url:
        backend = CachedBackend(OpenAIBackend(url, "stub", supports_logprobs=False), tmp_path / "c.sqlite")
        request = GenerationRequest(({"role": "user", "content": "q"},), seed=np.int64(9), max_tokens=np.int32(5))
        assert backend.generate([request])[0].text == "The answer is 7."
    assert (received[0]["seed"], received[0]["max_tokens"]) == (9, 5)
