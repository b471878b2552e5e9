"""A hub id on a machine that cannot reach the hub: the cache is read at once, and the error
says why. A real client waited 54 s of the hub client's retries before a model id failed on
a machine with no route to huggingface.co."""

from __future__ import annotations

import socket

import pytest

from agents import hub


@pytest.fixture
def no_address(monkeypatch):
    """This machine finds no address for any host; the names it was asked for are recorded."""
    asked: list[str] = []

    def refuse(host, *args, **kwargs):
        asked.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    for variable in (*hub.PROXY_VARIABLES, "HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(variable, raising=False)
    return asked


def test_an_unresolvable_hub_reads_the_cache_only_and_says_why(no_address, monkeypatch):
    assert hub.cache_only() == "huggingface.co has no address on this machine"
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.example.org/")
    assert hub.cache_only() == "hf-mirror.example.org has no address on this machine"
    assert no_address == ["huggingface.co", "hf-mirror.example.org"]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.cache_only() == "HF_HUB_OFFLINE is set"  # said first, and no lookup made
    assert len(no_address) == 2


def test_behind_a_proxy_the_hub_is_asked(no_address, monkeypatch):
    """The proxy resolves the hub's host: this machine's own lookup failing says nothing."""
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.org:3128")
    assert hub.cache_only() is None and no_address == []


def test_a_resolvable_hub_is_asked(monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", 443))])
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert hub.cache_only() is None


def test_a_hub_folder_is_looked_up_in_the_cache_only_when_the_hub_has_no_address(no_address, monkeypatch, tmp_path):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    calls: list[bool] = []
    real = huggingface_hub.snapshot_download

    def recorded(*args, local_files_only=False, **kwargs):
        calls.append(local_files_only)
        return real(*args, local_files_only=local_files_only, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", recorded)
    with pytest.raises(FileNotFoundError, match=r"'nobody/no-such-model' is no local model .*huggingface.co has no address"):
        hub.hub_folder("transformers backend", "nobody/no-such-model")
    assert calls == [True]


def test_trainable_lm_reads_a_hub_id_from_the_cache_only_when_the_hub_has_no_address(no_address, monkeypatch, tmp_path):
    pytest.importorskip("peft", reason="the train extra")
    transformers = pytest.importorskip("transformers")
    from agents.trainable_lm import TrainableLM

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    offline: list[bool] = []
    real = transformers.AutoTokenizer.from_pretrained

    def recorded(*args, local_files_only=False, **kwargs):
        offline.append(local_files_only)
        return real(*args, local_files_only=local_files_only, **kwargs)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", recorded)
    with pytest.raises(FileNotFoundError, match=r"huggingface.co has no address on this machine: only the local cache"):
        TrainableLM.from_pretrained("nobody/no-such-model", ["agent_0"])
    assert offline == [True]
