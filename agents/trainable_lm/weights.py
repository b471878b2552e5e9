"""The weights of :class:`~agents.trainable_lm.TrainableLM` as data.

:meth:`Weights.merged_state_dict` gives the weights an agent acts with under a plain
model's names (what an inference engine loads); :meth:`Weights.state_dict` holds the
trainable weights for a learner's resumable checkpoint; :meth:`Weights.save_adapters` writes
each agent's adapter in peft format (``directory/agent_k/adapter_config.json`` +
``adapter_model.safetensors``), its ``base_model_name_or_path`` naming the base by the id or
folder it was loaded from (a base that exists nowhere else, such as the dequantized GGUF, is
written once to a folder runs share: :func:`shared_base`), so
``AutoPeftModelForCausalLM.from_pretrained(directory / "agent_k")`` loads it; for full
fine-tuning, each model in ``transformers`` format.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from agents.cache_dirs import cache_dir
from agents.file_modes import with_umask_modes_below
from agents.trainable_lm.extra import MISSING_EXTRA

if MISSING_EXTRA is None:
    from peft import PeftModel, get_peft_model_state_dict, set_peft_model_state_dict
    from peft.tuners.lora import LoraLayer
    from peft.utils import load_peft_weights
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerBase

BASES_ENV = "DELIBERATION_ENV_BASES"
"""The environment variable that names the folder of shared bases (:func:`shared_base`)."""


class Weights:
    """:class:`~agents.trainable_lm.TrainableLM`'s weights as data (see the module docstring):
    its methods, on the state the class sets up (seats, tokenizer, device, base)."""

    @torch.no_grad()
    def merged_state_dict(self, agent: str) -> dict[str, torch.Tensor]:
        """The weights ``agent`` acts with, under a plain model's names (no peft wrapper).

        With LoRA, each adapted layer's weight is W + (alpha / r) B A (peft's
        ``get_delta_weight``), the other weights the base's; with full fine-tuning, the
        agent's model's weights. ``AutoModelForCausalLM.from_config(config)`` loads them
        into a model that computes what ``agent``'s policy computes: what an inference
        engine needs to sample as ``agent`` (:mod:`algorithms.text.ctranslate2_sampler`).
        The tensors are new for adapted layers and share memory with the model otherwise.

        Raises:
            NotImplementedError: For DoRA adapters (their magnitude vector is not merged).
        """
        seat = self._seat(agent)
        if seat.adapter is None:
            return dict(seat.model.state_dict())
        base = seat.model.get_base_model()
        state = {
            name.replace(".base_layer.", "."): t
            for name, t in base.state_dict().items()
            if "lora_" not in name
        }
        for name, module in self._adapted(agent).items():
            if module.use_dora.get(seat.adapter):
                raise NotImplementedError(
                    "merged_state_dict does not merge DoRA adapters (use_dora=True)"
                )
            state[f"{name}.weight"] = module.base_layer.weight + module.get_delta_weight(
                seat.adapter
            )
        return state

    def adapted_weights(self, agent: str) -> list[str]:
        """The weights (under :meth:`merged_state_dict`'s names) that ``agent``'s LoRA adapter
        changes; every weight with full fine-tuning."""
        if self._seat(agent).adapter is None:
            return list(self.merged_state_dict(agent))
        return [f"{name}.weight" for name in self._adapted(agent)]

    def _adapted(self, agent: str) -> dict[str, LoraLayer]:
        """The layers ``agent``'s adapter adapts, by their plain model's module names."""
        seat = self._seat(agent)
        modules = seat.model.get_base_model().named_modules()
        return {
            name: m for name, m in modules if isinstance(m, LoraLayer) and seat.adapter in m.lora_A
        }

    def _owners(self) -> list[str]:
        """The agents whose weights a checkpoint holds: every LoRA agent; for full
        fine-tuning, the first agent of each distinct model."""
        owners, seen = [], set()
        for agent, seat in self.seats.items():
            if seat.adapter is not None or id(seat.model) not in seen:
                owners.append(agent)
                seen.add(id(seat.model))
        return owners

    def state_dict(self) -> dict[str, dict[str, torch.Tensor]]:
        """The trainable weights (copies), keyed by the agents of :meth:`_owners`."""
        state = {}
        for agent in self._owners():
            seat = self.seats[agent]
            if seat.adapter is not None:
                weights = get_peft_model_state_dict(seat.model, adapter_name=seat.adapter)
            else:
                weights = seat.model.state_dict()
            state[agent] = {name: tensor.detach().clone() for name, tensor in weights.items()}
        return state

    def load_state_dict(self, state: Mapping[str, Mapping[str, torch.Tensor]]) -> None:
        """Restore :meth:`state_dict`'s output (same agents and layout).

        Raises:
            ValueError: If ``state`` holds other agents than this policy's layout expects.
        """
        expected = self._owners()
        if sorted(state) != sorted(expected):
            raise ValueError(
                f"weights are for agents {sorted(state)}, this TrainableLM expects {sorted(expected)}"
            )
        for agent, weights in state.items():
            seat = self.seats[agent]
            if seat.adapter is not None:
                set_peft_model_state_dict(seat.model, dict(weights), adapter_name=seat.adapter)
            else:
                seat.model.load_state_dict(weights)

    def save_adapters(self, directory: str | Path) -> list[Path]:
        """Write each agent's adapter (peft format) or model (transformers format).

        With LoRA, every adapter's ``base_model_name_or_path`` names the base it applies to:
        the Hugging Face id or the local folder the base was loaded from (:attr:`base`; for
        a GGUF file such as the default SmolLM2's, the folder it was dequantized into once
        per machine), or, for a base that exists nowhere else as a transformers model (a
        model built in memory), the folder :func:`shared_base` wrote it to once, which every
        run on that base shares. So plain peft loads an agent in one line::

            from peft import AutoPeftModelForCausalLM
            model = AutoPeftModelForCausalLM.from_pretrained("runs/x/adapters/agent_0")

        (or ``PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(BASE),
        ".../agent_0")``, the tokenizer ``AutoTokenizer.from_pretrained(BASE)``, BASE the
        recorded id or folder).

        Under full fine-tuning of one shared model (every agent the same weights), the model
        is written once, for the first agent, and each other agent's folder is a relative
        link to it (a copy where the file system has no links): a client's 3B pair wrote the
        same 6 GB twice per checkpoint.

        Returns:
            The folders written, one per agent (``directory / agent``).
        """
        directory = Path(directory)
        folders = []
        written: dict[int, Path] = {}  # a full model already written, by the module's identity
        for agent, seat in self.seats.items():
            folder = directory / agent
            if seat.adapter is not None:
                # writes directory/<adapter>
                seat.model.save_pretrained(directory, selected_adapters=[seat.adapter])
            elif id(seat.model) in written:
                _link_folder(written[id(seat.model)], folder)
            else:
                seat.model.save_pretrained(folder)
                self.tokenizer.save_pretrained(folder)
                written[id(seat.model)] = folder
            folders.append(folder)
        adapted = [seat for seat in self.seats.values() if seat.adapter is not None]
        if adapted:
            if (
                self.base is None
            ):  # written once; later saves name the same folder without hashing again
                self.base = str(shared_base(adapted[0].model, self.tokenizer))
            for seat in adapted:
                _record_base(directory / seat.adapter / "adapter_config.json", self.base)
                (directory / seat.adapter / "README.md").write_text(_model_card(seat.adapter, self.base), encoding="utf-8")
            index = "".join(f"- [`{seat.adapter}`]({seat.adapter}/README.md)\n" for seat in adapted)
            (directory / "README.md").write_text(  # in place of peft's empty template, which it writes here too
                f"{_CARD_DATA}# LoRA adapters trained by deliberation-env, one folder per agent\n\n{index}", encoding="utf-8"
            )
        return folders

    def load_adapters(self, directory: str | Path) -> None:
        """Load what :meth:`save_adapters` wrote into this policy's agents.

        Raises:
            FileNotFoundError: If an agent's folder is missing, naming it.
        """
        directory = Path(directory)
        for agent, seat in self.seats.items():
            folder = directory / agent
            if not folder.is_dir():
                raise FileNotFoundError(f"no saved weights for {agent} at {folder}")
            if seat.adapter is not None:
                weights = load_peft_weights(str(folder), device=str(self.device))
                set_peft_model_state_dict(seat.model, weights, adapter_name=seat.adapter)
            else:
                loaded = type(seat.model).from_pretrained(
                    folder, local_files_only=True, dtype=seat.model.dtype
                )
                seat.model.load_state_dict(loaded.state_dict())


def _link_folder(target: Path, folder: Path) -> None:
    """Make ``folder`` a relative link to its sibling ``target`` (a copy where links fail)."""
    try:
        folder.symlink_to(target.name, target_is_directory=True)
    except OSError:
        shutil.copytree(target, folder)


def bases_dir() -> Path:
    """Where :func:`shared_base` writes bases: ``$DELIBERATION_ENV_BASES``, else
    ``$XDG_CACHE_HOME/deliberation_env/bases`` (default ``~/.cache``)."""
    if os.environ.get(BASES_ENV):
        return Path(os.environ[BASES_ENV])
    return cache_dir("bases")


CONFIG_METADATA = frozenset({"_name_or_path", "transformers_version", "_commit_hash"})
"""Config entries that say where and with what a model was read, not what it is: left out of
a base's digest, so every install and transformers version names the same folder."""


def shared_base(wrapped: PeftModel, tokenizer: PreTrainedTokenizerBase) -> Path:
    """The folder that holds the base under ``wrapped``'s adapters as a plain transformers
    model (its weights in their dtype, its config and ``tokenizer``), for a base that exists
    nowhere else: ``bases_dir() / <digest>``, the digest a SHA-256 of the weights, the config
    (but :data:`CONFIG_METADATA`) and the chat template, so a base is written once and
    every run on it names the same folder, whichever install read it. Written whole or not at all (into a temporary folder, then renamed)."""
    weights = _base_weights(wrapped)
    config = wrapped.get_base_model().config
    described = {key: value for key, value in config.to_dict().items() if key not in CONFIG_METADATA}
    digest = hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode())
    digest.update(str(tokenizer.chat_template).encode())
    for name in sorted(weights):
        tensor = weights[name].detach().cpu().contiguous()
        digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    folder = bases_dir() / digest.hexdigest()[:32]
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".partial-"))
    plain = AutoModelForCausalLM.from_config(
        copy.deepcopy(config), dtype=next(iter(weights.values())).dtype
    )
    plain.load_state_dict(weights)
    plain.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    with_umask_modes_below(partial)  # mkdtemp's 0o700 would keep other users of a shared cache out
    try:
        partial.rename(folder)
    except OSError:  # another process wrote the same base meanwhile: theirs is kept
        shutil.rmtree(partial)
    return folder


def _base_weights(wrapped: PeftModel) -> dict[str, torch.Tensor]:
    """The weights of the base under ``wrapped``'s LoRA adapters, by a plain model's names
    (the adapters' layers hold the base weights as ``base_layer``)."""
    return {
        name.replace(".base_layer.", "."): tensor
        for name, tensor in wrapped.get_base_model().state_dict().items()
        if "lora_" not in name
    }


_CARD_DATA = "---\nlibrary_name: peft\ntags:\n- lora\n- deliberation-env\n---\n\n"
"""A model card's metadata block (the Hugging Face Hub's; peft reads it when it saves into the
folder again, and said "Repo card metadata block was not found" on every resumed run)."""


def _model_card(agent: str, base: str) -> str:
    """The ``README.md`` of a saved adapter (in place of peft's empty model-card template):
    what it is and how plain peft loads it."""
    return (
        f"{_CARD_DATA}# {agent}: a LoRA adapter trained by deliberation-env\n\n"
        f"Base model: `{base}`\n\n"
        "```python\n"
        "from peft import AutoPeftModelForCausalLM\n"
        "from transformers import AutoTokenizer\n\n"
        f'model = AutoPeftModelForCausalLM.from_pretrained("path/to/{agent}")\n'
        f'tokenizer = AutoTokenizer.from_pretrained("{base}")\n'
        "```\n"
    )


def _record_base(adapter_config: Path, base: str) -> None:
    """Point a saved adapter's ``base_model_name_or_path`` at ``base`` (an id or a folder)."""
    settings = json.loads(adapter_config.read_text(encoding="utf-8"))
    settings["base_model_name_or_path"] = base
    adapter_config.write_text(json.dumps(settings, indent=2), encoding="utf-8")


def base_digest(lm: Any, elements: int | None = None) -> str:
    """SHA-256 of the frozen weights of ``lm`` (a :class:`~agents.trainable_lm.TrainableLM`, or a
    :class:`~agents.trainable_team.TrainableTeam` of them, agent by agent):
    each tensor's name, dtype, shape and bytes, LoRA adapters left out; each base once (the
    shared base of a LoRA layout, the reference models of a full fine-tune).

    Args:
        lm: The model.
        elements: Hash only each tensor's first and last this many elements (a run's record
            of its base: seconds less for a 3B model, and two checkpoints still differ in
            every tensor); None: every byte (what rollout workers must share exactly).
    """
    digest = hashlib.sha256()
    seen: set[int] = set()
    members = getattr(lm, "members", None)  # a TrainableTeam: one TrainableLM per agent
    for agent in lm.agents:
        seat = (members[agent] if members is not None else lm).seats[agent]
        module = seat.model if seat.adapter is not None else seat.reference
        if module is None or id(module) in seen:
            continue
        seen.add(id(module))
        for name, tensor in module.state_dict().items():
            if "lora_" in name:
                continue
            flat = tensor.detach().reshape(-1)
            if elements is not None and flat.numel() > 2 * elements:
                flat = torch.cat([flat[:elements], flat[-elements:]])
            digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}".encode())
            digest.update(flat.contiguous().cpu().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()

