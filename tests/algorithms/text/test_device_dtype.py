"""Issue 32, item 1: ``device`` and ``dtype`` of the LLM-weight learners, from the resolver
(:mod:`agents.devices`) through ``TrainableLM``, the config and the command line to the run
folder and ``--resume``; the meta seat's ``transformers:`` team takes the same two options.
Everything runs on the CPU; CUDA's absence is made certain where a test asks for it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

from agents.devices import PEAK_FLOPS, check_names, peak_flops, resolve
from algorithms import cli
from algorithms.core.checkpoints import load_checkpoint
from algorithms.text import TextGRPOConfig, TextMAGRPOConfig

TINY = ["--model", "tiny", "--groups-per-update", "1", "--group-size", "2", "--max-new-tokens", "4",
        "--no-progress"]  # fmt: skip
CHAT = [{"role": "user", "content": "What is 2 + 3?"}]


@pytest.fixture
def no_cuda(monkeypatch):
    """A machine without CUDA, whatever this one has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def test_the_resolver_reads_the_names_and_auto_follows_the_machine(no_cuda):
    assert resolve() == (torch.device("cpu"), torch.float32)  # auto on a CPU machine
    assert resolve("cpu", "bfloat16") == (torch.device("cpu"), torch.bfloat16)
    assert resolve("auto", "float16")[1] is torch.float16
    with pytest.raises(ValueError, match=r"device 'cuda:1': .*no CUDA.*use 'cpu' or 'auto'"):
        resolve("cuda:1")
    with pytest.raises(ValueError, match="device \\(--device\\) must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'"):
        check_names("gpu", "auto")
    with pytest.raises(ValueError, match=r"dtype \(--dtype\) must be one of auto, float32, bfloat16, float16"):
        check_names("cpu", "fp8")


def test_auto_is_cuda_in_bfloat16_where_the_machine_has_it(monkeypatch):
    """bfloat16 where the GPU computes in it (compute capability 8 or more), else float16."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))  # an H100
    assert resolve() == (torch.device("cuda"), torch.bfloat16)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))  # a T4
    assert resolve() == (torch.device("cuda"), torch.float16)
    assert resolve("cuda", "bfloat16")[1] is torch.bfloat16  # asked for: given (emulated)
    assert resolve("cuda:1", "float32") == (torch.device("cuda:1"), torch.float32)
    with pytest.raises(ValueError, match="CUDA device 2, and this machine has 2 CUDA device"):
        resolve("cuda:2")


def test_peak_flops_come_from_the_table_for_half_precision_on_known_gpus(monkeypatch):
    expected = {"NVIDIA H100 PCIe": 756e12, "NVIDIA H100 80GB HBM3": 989e12, "NVIDIA H100 NVL": 835e12, "NVIDIA L40S": 362e12,
                "NVIDIA L40": 181e12, "NVIDIA L4": 121e12, "NVIDIA A100-SXM4-80GB": 312e12, "NVIDIA A10": 125e12,
                "NVIDIA A10G": 125e12, "Tesla T4": 65e12, "Tesla V100-SXM2-16GB": 125e12,
                "Tesla V100-PCIE-32GB": 112e12, "Some Future GPU": None}  # fmt: skip
    named = iter(expected)  # "NVIDIA L40" contains "L4": the L40 was given the L4's peak (MFU 1.5x too high)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: next(named))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    cuda = torch.device("cuda")
    assert {name: peak_flops(cuda, torch.float16) for name in expected} == expected
    assert peak_flops(cuda, torch.float32) is None  # TF32 or not: unknown
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "NVIDIA A100-SXM4-80GB")
    assert peak_flops(cuda, torch.bfloat16) == 312e12
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "Tesla T4")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    assert peak_flops(cuda, torch.bfloat16) is None and peak_flops(cuda, torch.float16) == 65e12  # emulated: unknown
    assert peak_flops(torch.device("cpu"), torch.bfloat16) is None
    assert dict(PEAK_FLOPS)["H200"] == 989e12


def test_the_config_checks_the_spelling_and_the_flags_reach_it():
    config = cli.parse(["train", "text", "magrpo", "--device", "cuda:3", "--dtype", "bfloat16"]).command.command.learner
    assert (config.device, config.dtype) == ("cuda:3", "bfloat16")  # parsing needs no CUDA: the run checks it
    assert (TextMAGRPOConfig().device, TextMAGRPOConfig().dtype) == ("auto", "auto")
    with pytest.raises(ValueError, match=r"device \(--device\) must be"):
        TextGRPOConfig(device="gpu")


def test_train_text_on_the_cpu_in_float32_end_to_end(tmp_path, capsys):
    run_dir = tmp_path / "run"
    cli.main(["train", "text", "grpo", *TINY, "--updates", "1", "--device", "cpu", "--dtype", "float32",
              "--run-dir", str(run_dir)])  # fmt: skip
    recorded = json.loads((run_dir / "config.json").read_text())
    assert {k: recorded[k] for k in ("device", "dtype", "resolved_device", "resolved_dtype")} == {
        "device": "cpu", "dtype": "float32", "resolved_device": "cpu", "resolved_dtype": "float32",
    }  # fmt: skip
    assert load_checkpoint(run_dir / "checkpoint.safetensors")["config"]["dtype"] == "float32"
    (line,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert line["perf/peak_memory_gb"] > 0
    assert line["perf/generated_tokens_per_s"] > 0 and line["perf/trained_tokens_per_s"] > 0
    assert "perf/mfu" not in line  # no peak FLOPS for a CPU
    assert "wrote" in capsys.readouterr().out


def test_cuda_where_there_is_none_is_one_line_naming_the_flag(tmp_path, capsys, no_cuda):
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as refused:
        cli.main(["train", "text", "magrpo", *TINY, "--device", "cuda", "--run-dir", str(run_dir)])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("deliberate train text magrpo: error: --device cuda: it asks for CUDA device 0")
    assert "use --device cpu" in err and "Traceback" not in err and err.count("\n") == 1
    assert not run_dir.exists()  # refused before anything was written
    with pytest.raises(SystemExit):
        cli.main(["compare", "text", *TINY, "--device", "cuda:0", "--out-dir", str(tmp_path / "c")])
    assert "--device cuda:0" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()  # a comparison too: refused before its folder is made
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "magrpo", *TINY, "--device", "gpu"])
    assert "device (--device) must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'" in capsys.readouterr().err


def test_a_resumed_run_may_move_but_keeps_its_dtype(tmp_path, capsys):
    """The rule: ``device`` and the spelling of ``dtype`` may change on ``--resume``; the dtype
    they give must be the checkpoint's, and ``auto`` gives it on any machine."""
    run_dir, recorded = str(tmp_path / "run"), tmp_path / "run" / "config.json"
    cli.main(["train", "text", "magrpo", *TINY, "--updates", "1", "--device", "cpu", "--dtype", "float32", "--run-dir", run_dir])
    cli.main(["train", "text", "magrpo", *TINY, "--updates", "2", "--device", "auto", "--dtype", "auto", "--run-dir", run_dir,
              "--resume"])  # fmt: skip
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2
    capsys.readouterr()
    before = recorded.read_text()
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "magrpo", *TINY, "--updates", "3", "--dtype", "bfloat16", "--run-dir", run_dir, "--resume"])
    error = capsys.readouterr().err
    assert "--dtype bfloat16: the run in" in error and "trained in float32" in error and "Traceback" not in error
    assert recorded.read_text() == before  # refused before anything was written
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2


def test_auto_resumes_a_run_in_the_dtype_it_trained_in(tmp_path):
    """A bfloat16 run resumed with ``--dtype auto`` (float32 on this CPU, were it a new run)
    continues in bfloat16, as a float32 run of a CPU resumes in float32 on a GPU."""
    run_dir = str(tmp_path / "run")
    cli.main(["train", "text", "grpo", *TINY, "--updates", "1", "--device", "cpu", "--dtype", "bfloat16", "--run-dir", run_dir])
    cli.main(["train", "text", "grpo", *TINY, "--updates", "2", "--run-dir", run_dir, "--resume"])
    assert json.loads((tmp_path / "run" / "config.json").read_text())["resolved_dtype"] == "bfloat16"
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2


def test_bfloat16_on_the_cpu_samples_and_scores_in_bfloat16(make_lm):
    lm = make_lm(dtype="bfloat16")
    base = lm.seats["agent_0"].model.get_base_model()
    assert lm.dtype is torch.bfloat16 and base.model.layers[0].mlp.down_proj.weight.dtype is torch.bfloat16
    assert {p.dtype for p in lm.parameters("agent_0")} == {torch.float32}  # peft keeps adapters in float32
    (completion,) = lm.sample("agent_0", [CHAT], [7], max_new_tokens=5)
    assert len(completion.token_ids) == 5 and all(torch.isfinite(torch.tensor(completion.logprobs)))
    logp, _ = lm.logprobs("agent_0", [completion.prompt_ids], [completion.token_ids])
    assert logp.dtype is torch.float32
    torch.testing.assert_close(logp[0], torch.tensor(completion.logprobs), atol=0.05, rtol=0)  # bf16 noise
    assert make_lm().dtype is torch.float32  # auto on the CPU


def test_the_transformers_team_spec_takes_device_and_dtype(tmp_path, no_cuda):
    from agents.specs import parse_spec
    from agents.trainable_lm import tiny_model
    from agents.transformers_backend import TransformersBackend

    assert parse_spec("transformers:Qwen/Qwen2.5-1.5B-Instruct#device=cuda:1#dtype=float16") == (
        "transformers", {"model": "Qwen/Qwen2.5-1.5B-Instruct", "device": "cuda:1", "dtype": "float16"},
    )  # fmt: skip
    for bad in ("transformers:/m#device=gpu", "transformers:/m#precision=fp16", "transformers:/m#dtype=float16#dtype=float32"):
        with pytest.raises(ValueError, match="bad team spec"):
            parse_spec(bad)
    model, tokenizer = tiny_model()
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    backend = TransformersBackend(tmp_path / "m", device="cpu", dtype="bfloat16")
    assert backend.model.dtype is torch.bfloat16 and "bfloat16" in backend.model_id
    assert backend.model.config._attn_implementation == "sdpa"
    assert TransformersBackend(tmp_path / "m").model.dtype is torch.float32  # auto on the CPU
    with pytest.raises(ValueError, match="no CUDA"):
        TransformersBackend(tmp_path / "m", device="cuda")


def test_float16_trains_with_loss_scaling_and_resumes_with_its_scale(tmp_path):
    """float16 end to end: the loss scale is logged, the checkpoint holds the scaler, a
    resumed run continues from it, and the world size is recorded."""
    run_dir = tmp_path / "run"
    base = ["train", "text", "grpo", *TINY, "--dtype", "float16", "--eval-problems", "0", "--run-dir", str(run_dir)]
    cli.main([*base, "--updates", "1"])
    assert json.loads((run_dir / "config.json").read_text())["world_size"] == 1
    (line,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert line["losses/loss_scale"] == 2.0**16 and line["losses/skipped_steps"] == 0  # torch.amp's first scale
    saved = load_checkpoint(run_dir / "checkpoint.safetensors")["loss_scaler"]
    assert saved["scale"] == 2.0**16 and saved["_growth_tracker"] == 1  # one good step towards doubling
    cli.main([*base, "--updates", "2", "--resume"])
    assert load_checkpoint(run_dir / "checkpoint.safetensors")["loss_scaler"]["_growth_tracker"] == 2


def test_full_fine_tuning_in_float16_is_refused_with_its_remedy(make_lm, capsys):
    """Loss scaling unscales float32 gradients only: float16 weights cannot be stepped."""
    from algorithms.text.base import HALF_FULL
    from algorithms.text.learners import TextGRPO
    from deliberation_env.text import text_vector_env

    with pytest.raises(SystemExit):
        cli.main(["train", "text", "grpo", *TINY, "--finetune", "full", "--dtype", "float16"])
    assert "give --dtype bfloat16 or float32, or train LoRA adapters" in capsys.readouterr().err
    config = TextGRPOConfig(groups_per_update=1, group_size=2, max_new_tokens=4)
    lm = make_lm(finetune="full", dtype="float16")
    with pytest.raises(ValueError, match=HALF_FULL[:40]):
        TextGRPO(config, lm, text_vector_env(config.num_envs))


def test_the_ctranslate2_sampler_warns_that_it_samples_on_the_cpu_off_the_cpu():
    """It always decodes on the CPU in float32: a user training on a GPU is told so."""
    from algorithms.text.config import TextGRPOConfig
    from algorithms.text.train import warn_about_numerics

    config = TextGRPOConfig(sampler="ctranslate2")
    with pytest.warns(UserWarning, match=r"samples the rollouts on the CPU in float32, whatever --device says \(cuda:0"):
        warn_about_numerics(config, {"resolved_device": "cuda:0", "resolved_dtype": "bfloat16"}, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_about_numerics(config, {"resolved_device": "cpu", "resolved_dtype": "float32"}, 1)


def test_a_checkpoint_written_before_loss_scaling_resumes(tmp_path):
    """Checkpoints before float16's loss scaling hold no ``loss_scaler``: such a run resumes
    (the whole state is checked against the learner's own, which has one now)."""
    from algorithms.core.checkpoints import save_checkpoint

    run_dir = tmp_path / "run"
    base = ["train", "text", "grpo", *TINY, "--eval-problems", "0", "--run-dir", str(run_dir)]
    cli.main([*base, "--updates", "1"])
    state = load_checkpoint(run_dir / "checkpoint.safetensors")
    assert state.pop("loss_scaler") == {}  # nothing but in float16
    save_checkpoint(state, run_dir / "checkpoint.safetensors")
    cli.main([*base, "--updates", "2", "--resume"])
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 2


def test_full_fine_tuning_in_bfloat16_keeps_float32_master_weights_through_a_resume(tmp_path, capsys):
    """``--finetune full --dtype bfloat16`` steps float32 masters (in the checkpoint's
    optimizer state), so a resumed run ends where an uninterrupted one does, bit for bit;
    ``--no-master-weights`` on resume drops them and warns that small steps are lost."""
    letters = Path(__file__).parents[3] / "examples" / "14_tiny_learns.py"  # rewards that vary: weights that move
    full = [*TINY, "--finetune", "full", "--dtype", "bfloat16", "--learning-rate", "1e-5", "--eval-problems", "0",
            "--protocol", f"{letters}:protocol", "--temperature", "1"]  # fmt: skip

    def train(folder, updates, *extra):
        cli.main(["train", "text", "grpo", *full, "--updates", str(updates), "--run-dir", str(tmp_path / folder), *extra])
        return load_checkpoint(tmp_path / folder / "checkpoint.safetensors")

    straight = train("straight", 2)
    train("resumed", 1)
    resumed = train("resumed", 2, "--resume")
    masters = [entry["master"] for entry in straight["optimizer"]["state"].values()]
    assert masters and all(master.dtype is torch.float32 for master in masters)
    weights = straight["weights"]["agent_0"]  # one shared model: every agent's weights are one set
    assert all(tensor.dtype is torch.bfloat16 for tensor in weights.values())
    assert all(torch.equal(weights[name], resumed["weights"]["agent_0"][name]) for name in weights)
    for index, entry in straight["optimizer"]["state"].items():
        assert torch.equal(entry["master"], resumed["optimizer"]["state"][index]["master"])
    # the masters started as the bfloat16 weights: a value bfloat16 cannot hold is a step kept
    assert any(bool((master != master.to(torch.bfloat16).float()).any()) for master in masters)
    capsys.readouterr()
    plain = train("resumed", 3, "--resume", "--no-master-weights")
    assert "without master weights: Adam steps the bfloat16 weights themselves" in capsys.readouterr().err
    assert not any("master" in entry for entry in plain["optimizer"]["state"].values())


def test_full_fine_tuning_that_auto_makes_float16_is_refused_before_anything_loads(monkeypatch, tmp_path, capsys):
    """``--dtype auto`` is float16 on a GPU without native bfloat16 (a T4): full fine-tuning
    there was refused by the learner only after the models had loaded, with a message
    about a float16 the user never gave."""
    import importlib

    text_train = importlib.import_module("algorithms.text.train")  # the module, not the function of that name

    def started(*args):
        raise ValueError("the run started")

    monkeypatch.setattr(text_train, "resolved_placement", lambda device, dtype: {"resolved_device": "cuda:0", "resolved_dtype": "float16"})
    monkeypatch.setattr(text_train, "_train", started)
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "grpo", *TINY, "--finetune", "full", "--run-dir", str(run_dir)])
    err = capsys.readouterr().err
    assert "--dtype auto is float16 on cuda:0 (no native bfloat16)" in err and "give --dtype float32" in err
    assert not run_dir.exists()
    with pytest.raises(SystemExit):  # LoRA in float16 starts (here: would start)
        cli.main(["train", "text", "grpo", *TINY, "--run-dir", str(run_dir)])
    assert "the run started" in capsys.readouterr().err
