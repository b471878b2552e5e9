"""TRL's ``chat_template_kwargs`` (``--chat-template-kwargs '{"enable_thinking": false}'``):
the variables reach every renderer of a prompt, the sampled prompt and the loss's agree, the
command line refuses what is no JSON object, an older run resumes, and the response cache
never serves a row rendered with other variables."""

from __future__ import annotations

import importlib
import json

import pytest
from test_text_learners import SMALL, make_learner

from agents.base import GenerationRequest
from agents.cache import CachedBackend, CacheMissError
from agents.specs import parse_spec, with_chat_template_kwargs
from algorithms import cli
from algorithms.core.run_dirs import CONFIG, open_run_dir
from algorithms.text import TextLearnerConfig, TextMAGRPOConfig
from algorithms.text.config import text_run
from deliberation_env.text.config import TextEnvConfig, config_record

THINKING_OFF = "<think>\n\n</think>\n\n"
"""What the test template writes after the assistant's turn opens where ``enable_thinking``
is false (Qwen3's template does the same)."""
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    + THINKING_OFF
    + "{% endif %}{% endif %}"
)
CHAT = ({"role": "user", "content": "What is 2 + 2?"},)


def with_template(made):
    """``made`` (a ``tiny_model``) whose tokenizer's template branches on ``enable_thinking``."""

    def build(*args, **kwargs):
        model, tokenizer = made(*args, **kwargs)
        tokenizer.chat_template = TEMPLATE
        return model, tokenizer

    return build


@pytest.fixture
def thinking_lm(make_lm):
    """``make_lm`` whose tiny tokenizer's template branches on ``enable_thinking``."""

    def build(*args, **kwargs):
        lm = make_lm(*args, **kwargs)
        lm.tokenizer.chat_template = TEMPLATE
        return lm

    return build


def test_the_sampled_prompt_reads_the_template_variables(thinking_lm):
    plain, off = thinking_lm(), thinking_lm(chat_template_kwargs={"enable_thinking": False})
    (sampled_plain,) = plain.sample("agent_0", [CHAT], [1], max_new_tokens=2)
    (sampled_off,) = off.sample("agent_0", [CHAT], [1], max_new_tokens=2)
    decoded = off.tokenizer.decode(list(sampled_off.prompt_ids))
    assert decoded.endswith("assistant\n" + THINKING_OFF)
    assert THINKING_OFF not in plain.tokenizer.decode(list(sampled_plain.prompt_ids))
    assert list(sampled_off.prompt_ids) == off.encode(CHAT) != plain.encode(CHAT)


def test_the_loss_trains_on_the_prompts_sampled_with_the_variables(thinking_lm):
    """Every prompt the loss scores is one the rollouts sampled after, rendered with the
    template variables (the learner's prompts are the sampled ones, token for token)."""
    config = TextMAGRPOConfig(**SMALL, chat_template_kwargs={"enable_thinking": False})
    subject = make_learner(
        thinking_lm, config=config, lm={"chat_template_kwargs": config.chat_template_kwargs}
    )
    sampled, scored = set(), []
    sample_joint, logprobs = subject.lm.sample_joint, subject.lm.logprobs

    def recording_samples(requests, **settings):
        out = sample_joint(requests, **settings)
        sampled.update(c.prompt_ids for completions in out.values() for c in completions)
        return out

    def recording_scores(agent, prompts, *args, **kwargs):
        scored.extend(tuple(p) for p in prompts)
        return logprobs(agent, prompts, *args, **kwargs)

    subject.lm.sample_joint, subject.lm.logprobs = recording_samples, recording_scores
    subject.train_step()
    assert scored and set(scored) <= sampled
    assert all(subject.lm.tokenizer.decode(list(p)).endswith(THINKING_OFF) for p in scored)


def test_train_text_builds_its_policy_with_the_variables(monkeypatch):
    train = importlib.import_module("algorithms.text.train")
    monkeypatch.setattr(train, "tiny_model", with_template(train.tiny_model))

    config = TextMAGRPOConfig(
        **SMALL, model="tiny", chat_template_kwargs={"enable_thinking": False}
    )
    lm = train.build_lm(config, ["agent_0", "agent_1"])
    assert lm.chat_template_kwargs == {"enable_thinking": False}
    assert lm.tokenizer.decode(lm.encode(CHAT)).endswith(THINKING_OFF)


@pytest.mark.parametrize(
    "command", [("train", "text", "grpo"), ("compare", "text"), ("run", "text")]
)
def test_the_command_line_reads_a_json_object(command):
    parsed = cli.parse([*command, "--chat-template-kwargs", '{"enable_thinking": false}'] + (
        ["--team", "transformers:/m"] if command[0] == "run" else []
    )).command.command  # fmt: skip
    settings = parsed if command[0] == "run" else parsed.learner
    assert settings.chat_template_kwargs == {"enable_thinking": False}


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("{enable_thinking: false}", "not a JSON object"),
        ("[1, 2]", "'[1, 2]' is a list"),
        ("false", "is a bool"),
        ('{"tokenize": true}', "tokenize: apply_chat_template's own argument"),
    ],
)
def test_the_command_line_refuses_what_is_no_json_object_in_one_line(given, says, capsys):
    with pytest.raises(SystemExit) as refused:
        cli.main(["train", "text", "grpo", "--model", "tiny", "--chat-template-kwargs", given])
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--chat-template-kwargs: " in err and says in err


def test_the_config_refuses_variables_it_cannot_record():
    with pytest.raises(ValueError, match="chat_template_kwargs: not a JSON object"):
        TextLearnerConfig(chat_template_kwargs=["enable_thinking"])
    with pytest.raises(ValueError, match="must be JSON values"):
        TextLearnerConfig(chat_template_kwargs={"x": object()})


def test_a_run_recorded_before_the_setting_resumes_and_other_variables_are_refused(tmp_path):
    def record(**settings):
        config = TextMAGRPOConfig(
            env=TextEnvConfig(task="arithmetic"),
            **{**SMALL, "run": text_run(updates=2)},
            **settings,
        )
        return {"algo": "magrpo", **config_record(config)}

    older = record()
    assert older.pop("chat_template_kwargs") == {}
    (tmp_path / CONFIG).write_text(json.dumps(older))
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n')  # a run, not a start that failed
    open_run_dir(tmp_path, record(), resume=True, may_change=TextLearnerConfig.RUN_FIELDS)
    assert json.loads((tmp_path / CONFIG).read_text())["chat_template_kwargs"] == {}
    with pytest.raises(
        ValueError,
        match=r'chat_template_kwargs is \{\} there and \{"enable_thinking": false\} here',
    ):
        open_run_dir(tmp_path, record(chat_template_kwargs={"enable_thinking": False}), resume=True,
                     may_change=TextLearnerConfig.RUN_FIELDS)  # fmt: skip
    (tmp_path / CONFIG).write_text(json.dumps(record(chat_template_kwargs={"top_k": 0})))
    with pytest.raises(
        ValueError, match="chat_template_kwargs is"
    ):  # a variable named as a setting is still a variable
        open_run_dir(tmp_path, record(), resume=True, may_change=TextLearnerConfig.RUN_FIELDS)


def test_a_cache_row_rendered_with_thinking_on_is_never_served_with_it_off(tmp_path):
    from agents.trainable_lm import tiny_model
    from agents.transformers_backend import TransformersBackend

    model, tokenizer = tiny_model()
    tokenizer.chat_template = TEMPLATE
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    on, off, none = (
        TransformersBackend(tmp_path / "m", device="cpu", chat_template_kwargs=kwargs)
        for kwargs in ({"enable_thinking": True}, {"enable_thinking": False}, None)
    )
    assert len({on.model_id, off.model_id, none.model_id}) == 3
    assert (
        none.model_id == TransformersBackend(tmp_path / "m", device="cpu").model_id
    )  # rows of before still served
    ids = {backend.model_id: backend._encode([CHAT])[0].shape[1] for backend in (on, off)}
    assert ids[off.model_id] > ids[on.model_id]  # the template wrote the empty thinking block
    request = GenerationRequest(CHAT, max_tokens=2, seed=3)
    CachedBackend(on, path=tmp_path / "cache.sqlite").generate([request])
    assert CachedBackend(on, path=tmp_path / "cache.sqlite", offline=True).generate([request])
    with pytest.raises(CacheMissError):
        CachedBackend(off, path=tmp_path / "cache.sqlite", offline=True).generate([request])


def test_the_team_specs_that_render_a_template_take_the_variables():
    variables = '#chat_template_kwargs={"enable_thinking": false}'
    for spec, name in (
        ("transformers:/m", "transformers"),
        ("ctranslate2-int8:/m.gguf", "ctranslate2"),
        ("vllm:Q/m", "vllm"),
    ):
        assert parse_spec(spec + variables) == (
            name,
            {**parse_spec(spec)[1], "chat_template_kwargs": {"enable_thinking": False}},
        )
    assert parse_spec(with_chat_template_kwargs("transformers:/m", {"enable_thinking": False}))[1][
        "chat_template_kwargs"
    ] == {"enable_thinking": False}
    assert with_chat_template_kwargs("smollm2", {}) == "smollm2"
    for spec in (
        "smollm2",
        "llamacpp",
        "openai:http://h/v1#m",
        "ctranslate2",
        "transformers:/m" + variables,
    ):
        with pytest.raises(ValueError, match="--chat-template-kwargs: team spec"):
            with_chat_template_kwargs(spec, {"enable_thinking": False})
    with pytest.raises(ValueError, match="bad team spec.*is a list"):
        parse_spec("transformers:/m#chat_template_kwargs=[1]")


@pytest.mark.parametrize(
    ("command", "written"),
    [
        (("train", "text", "grpo"), "chat_template_kwargs:\n  enable_thinking: false\n"),
        (("train", "text", "grpo"), "chat_template_kwargs: '{\"enable_thinking\": false}'\n"),
        (("compare", "text"), "learner:\n  chat_template_kwargs: '{\"enable_thinking\": false}'\n"),
        (
            ("run", "text"),
            "team: transformers:/m\nchat_template_kwargs: '{\"enable_thinking\": false}'\n",
        ),
    ],
)
def test_a_config_file_gives_the_variables_in_trls_forms(tmp_path, command, written):
    """TRL's config files give ``chat_template_kwargs`` as a mapping or as JSON text
    (``dict | str | None``); a file of either form was read, the text one refused."""
    path = tmp_path / "c.yaml"
    path.write_text(written)
    parsed = cli.parse([*command, "--config", str(path)]).command.command
    settings = parsed if command[0] == "run" else parsed.learner
    assert settings.chat_template_kwargs == {"enable_thinking": False}


def test_a_config_files_null_variables_are_none_as_trls_default(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("chat_template_kwargs: null\n")
    parsed = cli.parse(["train", "text", "grpo", "--config", str(path)]).command.command
    assert parsed.learner.chat_template_kwargs == {}


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("'{enable_thinking: false}'", "not a JSON object such as"),
        ("'[1]'", "is a list"),
        ("[1]", "expected a mapping, got list"),
        ("'{\"tokenize\": true}'", "tokenize: apply_chat_template's own argument"),
    ],
)
def test_a_config_files_bad_variables_are_refused_in_one_line(tmp_path, capsys, written, says):
    path = tmp_path / "c.yaml"
    path.write_text(f"chat_template_kwargs: {written}\n")
    with pytest.raises(SystemExit) as refused:
        cli.main(["train", "text", "grpo", "--config", str(path), "--run-dir", str(tmp_path / "r")])
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"config file {path}: " in err and "chat_template_kwargs" in err and says in err
    assert not (tmp_path / "r").exists()


def test_a_llamacpp_spec_with_template_variables_names_the_spec_that_takes_them():
    """It was read as a GGUF path ending in ``#chat_template_kwargs=...`` ("no GGUF file at")."""
    with pytest.raises(
        ValueError, match=r"llamacpp takes no #chat_template_kwargs.*ctranslate2:<gguf>"
    ):
        parse_spec('llamacpp:/m.gguf#chat_template_kwargs={"enable_thinking": false}')
    assert parse_spec("llamacpp:/m#1.gguf") == ("llamacpp", {"model_path": "/m#1.gguf"})
