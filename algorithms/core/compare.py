"""The compare harness of both families: learners x seeds, confidence intervals, table, files.

A comparison runs every learner for every seed on the same settings (:func:`run_grid`,
with a per-seed setup such as a shared warm start where the family needs one)
and reports, per learner, the mean of each final metric with the half-width of its 95%
Student-t confidence interval over seeds (:func:`mean_ci`, :func:`summarize_runs`), as a
table (:func:`summary_table`) and as the files every comparison writes (:func:`write_results`):

=========================  ============================================================
file                       content
=========================  ============================================================
``compare.csv``            the final metrics of every run (and baseline), one row each
``curves.csv``             every run's logged records (its ``metrics.jsonl``), tagged
``compare.json``           the config, env id, version, date, the summary (mean and 95%
                           CI over seeds per learner) and the runs' rows
``learning_curves.png``    the learners' curves over training, 95% bands over seeds
``final_accuracy.png``     each learner's final accuracy with its 95% CI
=========================  ============================================================

Each family's driver is its package's ``compare(cfg, learners=None)``
(:mod:`algorithms.meta.compare`: warm starts, reward scales, baselines and two more figures;
:mod:`algorithms.text.compare`), and ``deliberate compare [meta|text]`` calls it.

**A learner of one's own** joins a comparison beside the shipped ones: name it in ``algos``
and give ``learners={"mine": Mine}`` (a name and its learner factory, e.g. the class), or,
on the command line only, give its import path in ``--algos`` (``./mine.py:Mine`` or
``my_package.module:Mine``; named ``Mine`` in the table). A config file's ``algos`` names
shipped learners only: importing a path would run code while a file is read
(:class:`~deliberation_env.text.config.ImportsCode`). A factory is called as the family's
shipped learner classes are, with the config the family's GRPO gets (see each driver), and
returns a learner that :func:`algorithms.core.run.run` drives (``name``, ``update``,
``episodes``, ``train_step``, ``save``, ``load``) and the family's evaluation plays.

>>> mean_ci([1.0, 1.0])
{'mean': 1.0, 'ci95': 0.0, 'n': 2}
>>> learner_label("./mine.py:Mine"), learner_label("grpo")
('Mine', 'grpo')
"""

from __future__ import annotations

import ast
import contextlib
import csv
import dataclasses
import inspect
import itertools
import json
import operator
import textwrap
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro
from rich.table import Table
from scipy import stats

import deliberation_env as de
from algorithms.core.help_text import plain_markup
from deliberation_env.text.config import ImportsCode, import_attribute, is_import_path

RESULTS_CSV = "compare.csv"
"""The final metrics of every run (and baseline) of a comparison, one row each."""
CURVES_CSV = "curves.csv"
"""Every logged record of every run of a comparison, tagged with its learner and seed."""
RESULTS_JSON = "compare.json"
"""A comparison's record: config, env id, version, date, summary and runs."""
CURVES_FIGURE = "learning_curves.png"
"""The learners' curves over training (both families)."""
FINAL_FIGURE = "final_accuracy.png"
"""Each learner's final accuracy with its 95% CI (both families)."""
LearnerFactory = Callable[..., Any]
"""Builds a learner of one's own, called as the family's shipped learner classes are."""


def algo_names(shipped: Sequence[str]) -> Any:
    """The type of a comparison's ``algos``: names, each a shipped learner's (``shipped``),
    a key of the driver's ``learners``, or an import path given on the command line
    (:class:`~deliberation_env.text.config.ImportsCode`: a config file may not give one)."""
    return tuple[Annotated[str, ImportsCode("--algos", tuple(shipped))], ...]


def learner_label(algo: str) -> str:
    """The name of ``algo`` in tables, files and folders: an import path's attribute, else itself."""
    return algo.rpartition(":")[2]


def check_algos(algos: Sequence[str]) -> None:
    """Refuse an empty list, or two learners of one name (``--algos``).

    Raises:
        ValueError: Naming the fix.
    """
    labels = [learner_label(algo) for algo in algos]
    if not algos:
        raise ValueError("--algos must name at least one learner")
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValueError(f"--algos names {', '.join(twice)} twice: give each learner once (by name or import path)")


BUILT_AS = {
    "meta": ((("config", "venv"), ("warm_start",)), "Mine(config, venv, warm_start=network)"),
    "text": ((("config", "lm", "venv", "frozen"), ("sampler",)), "Mine(config, lm, venv, frozen, sampler=sampler)"),
}
"""How each family's ``train`` builds a learner: the arguments (positional, then by
keyword) and the call as its docs write it."""


def user_learners(
    algos: Sequence[str],
    shipped: Sequence[str],
    learners: Mapping[str, LearnerFactory] | None,
    family: str | None = None,
    command: str = "compare",
) -> dict[str, LearnerFactory]:
    """The factories of the learners of one's own in ``algos``, by :func:`learner_label`:
    each given in ``learners`` or by import path (imported here, which runs its module),
    and, with ``family``, callable as that family's ``train`` builds a learner
    (:data:`BUILT_AS`; checked on the signature, before anything is trained or written).
    ``command``: the command that trains them (``compare`` or ``train``), as the errors name it.

    Raises:
        ValueError: On a name that is neither shipped, nor in ``learners``, nor an import
            path, a learner of ``learners`` that ``algos`` does not name, an import path that does not import, or a learner that the family
            cannot build (one of the other family's, say), or one named as a shipped
            learner (:func:`check_own_name`).
        TypeError: On a factory that cannot be called.
    """
    learners = dict(learners or {})
    clash = sorted(set(learners) & set(shipped))
    if clash:
        raise ValueError(f"learners= names {', '.join(clash)}, a shipped learner: give yours another name")
    unused = [name for name in learners if name not in algos]
    if unused:
        raise ValueError(
            f"learners= gives {', '.join(map(repr, unused))}, which algos does not name, so it would not be trained: "
            f"add it to algos ({(*algos, *unused)!r}) or leave it out of learners="
        )
    found = {}
    for algo in algos:
        if algo in shipped:
            continue
        if algo in learners:
            factory = learners[algo]
        elif is_import_path(algo):
            factory = import_attribute(algo, "learner")
        else:
            raise ValueError(
                f"--algos {algo!r} is not one of {', '.join(shipped)}: a learner of your own is given by import "
                f"path on the command line (--algos ./mine.py:Mine) or, from Python, in learners={{{algo!r}: Mine}}"
            )
        if not callable(factory):
            raise TypeError(f"learner {algo!r} is a {type(factory).__name__}, not a class or function that builds one")
        if family is not None:
            check_built_as(algo, factory, family, command)
            check_learner_class(algo, factory, family, command)
            check_own_name(algo, factory, family, command)
        found[learner_label(algo)] = factory
    return found


def check_built_as(algo: str, factory: LearnerFactory, family: str, command: str = "compare") -> None:
    """Refuse ``factory`` when ``family``'s ``train`` cannot call it (:data:`BUILT_AS`),
    naming ``command``, the one that was to train it.

    Raises:
        ValueError: Naming the call and what its signature refused.
    """
    (positional, keywords), call = BUILT_AS[family]
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin without a signature: left to the call
        return
    try:
        signature.bind(*positional, **dict.fromkeys(keywords))
    except TypeError as error:
        other = next(name for name in BUILT_AS if name != family)
        raise ValueError(
            f"learner {algo!r} cannot be built as {command} {family} builds one, {call}: {error} "
            f"(a {other} learner? {command} {other} trains those)"
        ) from None


SHIPPED_CLASSES = {"meta": ("algorithms.meta.train", "LEARNERS"), "text": ("algorithms.text.learners", "TEXT_LEARNERS")}
"""Where each family's shipped learner classes are, by name (imported when a learner of
one's own is checked: they import torch)."""


def shipped_classes(family: str) -> Mapping[str, type]:
    """``family``'s shipped learner classes by name (:data:`SHIPPED_CLASSES`)."""
    import importlib

    module, attribute = SHIPPED_CLASSES[family]
    return getattr(importlib.import_module(module), attribute)


def check_own_name(algo: str, learner: Any, family: str, command: str = "compare") -> None:
    """Refuse a learner of one's own (a factory, or the learner it built) that carries a
    shipped learner's ``name`` (inherited from the class it derives from, say) while it is
    not that learner's class: its runs' ``config.json`` would record that learner's name,
    so that a reader, or ``--config <run>/config.json --resume``, would take the run for
    the shipped learner's. The shipped class itself, and a factory without a ``name`` (its
    learner is checked once built), pass.

    Raises:
        ValueError: Naming the learner, the name and the fix (``name = 'mine'``).
    """
    name = getattr(learner, "name", None)
    if not isinstance(name, str):
        return
    shipped = shipped_classes(family)
    kind = learner if inspect.isclass(learner) else type(learner)
    if name in shipped and kind is not shipped[name]:
        raise ValueError(
            f"learner {algo!r} is named {name!r}, not a name of its own: {kind.__qualname__} keeps "
            f"{shipped[name].__name__}'s, so {command} {family} would record its runs as {name}'s (algo in their "
            f"config.json), and a reader or a resume from that file would take them for {name}'s; give the class a "
            f"name other than {', '.join(shipped)} (name = 'mine')"
        )


NEEDED_METHODS = {"meta": ("policy",), "text": ("play_held_out",)}
"""What a comparison calls on each family's learners beyond :class:`~algorithms.core.learner.Learner`'s:
a meta learner's held-out episodes are played by its ``policy()``, a text learner's by its
``play_held_out`` (:func:`algorithms.text.evaluate`)."""


def check_learner_class(algo: str, factory: LearnerFactory, family: str, command: str = "compare") -> None:
    """Refuse a class that is no :class:`~algorithms.core.learner.Learner`, or lacks what
    ``family``'s ``command`` calls (:data:`NEEDED_METHODS`), before anything is trained:
    a real client's met an ``AttributeError`` at the first held-out evaluation instead. A
    function that builds a learner is taken as it is.

    Raises:
        TypeError: Naming the class and what it lacks.
    """
    from algorithms.core.learner import Learner

    if not inspect.isclass(factory):
        return
    if not issubclass(factory, Learner):
        raise TypeError(
            f"learner {algo!r} is the class {factory.__qualname__}, no algorithms.core.learner.Learner: "
            f"subclass one of the {family} family's learners (examples/05_custom_learner.py)"
        )
    missing = [name for name in NEEDED_METHODS[family] if not callable(getattr(factory, name, None))]
    if missing:
        raise TypeError(
            f"learner {algo!r} ({factory.__qualname__}) has no {', '.join(f'{name}()' for name in missing)}, "
            f"which {command} {family} calls to evaluate it (the family's shipped learners have it)"
        )


def field_docs(config: type) -> dict[str, str]:
    """The docstrings of ``config``'s fields (a string right below a field, as tyro and
    Sphinx read them), from the class and its bases; the nearest class's wins."""
    docs: dict[str, str] = {}
    for cls in reversed(config.__mro__):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError, SyntaxError):  # no source: a builtin, a class made at run time
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def own_settings(config: type, shared: type, name: str, module: str) -> type:
    """A dataclass named ``name`` of the settings the learner config ``config`` has beyond
    the comparison template's class ``shared`` (GRPO's ``eps``, SoftRankPO's ``tau``), with
    their types, defaults and help: a comparison's ``--grpo.eps``. A setting of ``shared``
    that ``config`` gives another default stays the template's (one value for every learner).
    ``module``: the module that holds the class under ``name``.

    >>> from algorithms.core.config import GroupSettings, GRPOSettings
    >>> [f.name for f in dataclasses.fields(own_settings(GRPOSettings, GroupSettings, "GRPOOwn", __name__))]
    ['eps', 'scale_rewards']
    """
    hints = typing.get_type_hints(config, include_extras=True)
    docs = field_docs(config)
    common = {f.name for f in dataclasses.fields(shared)}
    own = []
    for item in dataclasses.fields(config):
        if item.name in common or not item.init:
            continue
        default = (
            dataclasses.field(default_factory=item.default_factory)
            if item.default_factory is not dataclasses.MISSING
            else dataclasses.field(default=item.default)
        )
        kind = Annotated[hints[item.name], tyro.conf.arg(help=plain_markup(docs[item.name]))] if item.name in docs else hints[item.name]
        own.append((item.name, kind, default))
    made = dataclasses.make_dataclass(name, own)
    made.__doc__ = f"{config.__name__}'s own settings in a comparison (beside the template's shared ones)."
    made.__module__ = module
    return made


def config_of_own(factory: LearnerFactory | None, configs: Mapping[str, type], template: type) -> tuple[type, str | None]:
    """The config class a comparison builds for a learner of one's own, and the shipped
    learner whose own settings (``--grpo.eps``) it takes: the learner's ``config_class``
    where that is a dataclass derived from a shipped learner's config in ``configs`` (the
    nearest in its MRO; that learner's own settings) or from the comparison's ``template``
    class (the shared settings alone); else GRPO's config and settings, as before. Fields
    of its own keep their defaults (give others by a subclass of the config).

    >>> from algorithms.text.config import TEXT_CONFIGS, TextLearnerConfig, TextMAGRPOConfig
    >>> class Mine:
    ...     config_class = TextMAGRPOConfig
    >>> config_of_own(Mine, TEXT_CONFIGS, TextLearnerConfig)[1], config_of_own(print, TEXT_CONFIGS, TextLearnerConfig)[1]
    ('magrpo', 'grpo')
    """
    wanted = getattr(factory, "config_class", None)
    if inspect.isclass(wanted) and dataclasses.is_dataclass(wanted):
        shipped = {config: name for name, config in configs.items()}
        for base in wanted.__mro__:
            if base in shipped:
                return wanted, shipped[base]
            if base is template:
                return wanted, None
    return configs["grpo"], "grpo"


def check_takes_config(algo: str, factory: LearnerFactory | None, config: type, builder: str = "a comparison") -> None:
    """Refuse, before anything is trained, a learner whose ``config_class`` the config class
    ``builder`` builds for it (:func:`config_of_own`) does not derive from: a real client's
    learner with a config of its own met ``RLOO needs a RLOOConfig, got TextGRPOConfig`` only
    after every run before it had trained.

    Raises:
        TypeError: Naming the learner, both classes and what to derive the config from.
    """
    wanted = getattr(factory, "config_class", None)
    if inspect.isclass(wanted) and not issubclass(config, wanted):
        raise TypeError(
            f"learner {algo!r} ({factory.__qualname__}) takes a {wanted.__name__}, and {builder} builds a "
            f"{config.__name__} for it: make {wanted.__name__} a dataclass derived from a shipped learner's config"
        )


def learner_config(config: type, shared: Mapping[str, Any], own: Any) -> Any:
    """A learner's config of class ``config`` from a comparison's ``shared`` settings (field
    name -> value) and ``own``: the learner's :func:`own_settings` instance (None: its
    defaults)."""
    extra = {} if own is None else {f.name: getattr(own, f.name) for f in dataclasses.fields(own)}
    return config(**shared, **extra)


def settings_taken(
    algos: Sequence[str], own: Mapping[str, LearnerFactory], configs: Mapping[str, type], template: type
) -> dict[str, str | None]:
    """For each learner of one's own in ``algos`` (its factory in ``own``, by
    :func:`learner_label`), the shipped learner whose own settings it takes: the one whose
    config its ``config_class`` derives from, as :func:`config_of_own` builds its config
    (None: the shared settings alone).

    >>> from algorithms.text.config import TEXT_CONFIGS, TextLearnerConfig, TextMAGRPOConfig
    >>> class Mine:
    ...     config_class = TextMAGRPOConfig
    >>> settings_taken(["grpo", "./mine.py:Mine"], {"Mine": Mine}, TEXT_CONFIGS, TextLearnerConfig)
    {'./mine.py:Mine': 'magrpo'}
    """
    return {
        algo: config_of_own(own[learner_label(algo)], configs, template)[1]
        for algo in algos
        if learner_label(algo) in own
    }


def check_own_settings(
    compare: Any,
    algos: Sequence[str],
    learners: Sequence[str],
    shipped: Sequence[str],
    taken: Mapping[str, str | None] | None = None,
) -> None:
    """Refuse a learner's own setting (``--grpo.eps``) given to a comparison whose ``algos``
    do not train that learner: ``compare`` holds each learner of ``learners``' own settings
    (:func:`own_settings`) in the field named after it; a setting left at its default is
    none given. A learner of one's own (an algo not in ``shipped``) takes the settings of
    the shipped learner ``taken`` names for it (:func:`settings_taken`: the one its config
    derives from); ``taken`` None: its class is not imported yet (a comparison's config
    checks itself before its driver imports the learners), and no setting is refused while
    one is compared (the driver checks again, with ``taken``).

    Raises:
        ValueError: Naming the option and what to add to ``--algos``.
    """
    yours = [algo for algo in algos if algo not in shipped]
    if yours and taken is None:
        return
    taken = dict(taken or {})
    trained = {*algos, *(taken.get(algo) for algo in yours)}
    for algo in learners:
        own = getattr(compare, algo)
        if algo in trained:
            continue
        defaults = type(own)()
        given = [f.name for f in dataclasses.fields(own) if getattr(own, f.name) != getattr(defaults, f.name)]
        if given:
            flag = f"--{algo}.{given[0].replace('_', '-')}"
            takes = "; ".join(f"{learner_label(mine)} takes {taken.get(mine) or 'no shipped learner'}'s" for mine in yours)
            raise ValueError(
                f"{flag} sets {algo}'s own setting, but --algos has no {algo}"
                + (f" ({takes}: the learner its config derives from)" if yours else "")
                + f": add it, or leave {flag} out"
            )


@contextlib.contextmanager
def refused_for(algo: str) -> Iterator[None]:
    """Say a refusal in the block (building a comparison's config of the learner ``algo``)
    for that learner: ``softrankpo: tau must be > 0``.

    Raises:
        ValueError: The refusal, with the learner's name before it.
    """
    try:
        yield
    except ValueError as error:
        raise ValueError(f"{learner_label(algo)}: {error}") from None


PER_RUN = {"seed": "--seeds", "run_dir": "--out-dir", "reward_scale": "--reward-scales", "resume_from": "--resume"}
"""Run settings a comparison sets for each run, and the option that says them instead."""


def check_per_run_settings(template: Any, defaults: Any, names: tuple[str, ...]) -> None:
    """Refuse a run setting of ``names`` that a comparison sets per run (``--algo``: use
    ``--algos``), that is, one ``template`` gives another value than ``defaults``. A name
    may be dotted (``run.run_dir``: the ``run_dir`` of the template's ``run`` part)."""
    for name in names:
        read = operator.attrgetter(name)
        last = name.rpartition(".")[2]
        if read(template) != read(defaults):
            flag = "--" + last.replace("_", "-")
            raise ValueError(f"compare sets {flag} for each run: use {PER_RUN[last]} (got {flag} {read(template)!r})")


def write_results(
    out_dir: Path,
    record: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    curves: Sequence[Mapping[str, Any]],
) -> list[Path]:
    """Write a comparison's :data:`RESULTS_CSV` (``rows``), :data:`CURVES_CSV` (``curves``)
    and :data:`RESULTS_JSON` (``record`` with the env's package version, the date and
    ``rows`` as ``runs``) into ``out_dir``; their paths."""
    full = {
        **record,
        "deliberation_env_version": de.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": list(rows),
    }
    write_csv(out_dir / RESULTS_CSV, list(rows))
    write_csv(out_dir / CURVES_CSV, list(curves))
    (out_dir / RESULTS_JSON).write_text(json.dumps(full, indent=2, default=str), encoding="utf-8")
    return [out_dir / RESULTS_CSV, out_dir / CURVES_CSV, out_dir / RESULTS_JSON]


def mean_ci(values: list[float]) -> dict[str, float]:
    """Mean and the half-width of its 95% Student-t confidence interval,
    mean +- t_{0.975, n-1} s / sqrt(n) (``ci95`` 0 for one value, where it is undefined:
    ``n`` says so, and :func:`mean_and_interval` prints no interval)."""
    values_array = np.asarray(values, dtype=float)
    n = len(values_array)
    half = 0.0
    if n > 1:
        half = float(stats.t.ppf(0.975, n - 1) * values_array.std(ddof=1) / np.sqrt(n))
    return {"mean": float(values_array.mean()), "ci95": half, "n": n}


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` as a CSV file whose columns are every key of any row, in first-seen order."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def run_grid(
    train: Callable[[Any, int], Mapping[str, Any]],
    algos: Sequence[Any],
    seeds: int,
    setup_seed: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """``train(algo, seed)`` for every algorithm and seed 0 .. seeds-1, the loop of both
    families' comparisons; one row per run: ``algo``, ``seed`` and what ``train`` returned.

    Args:
        train: Runs one learner at one seed; its final metrics.
        algos: The learners' names (or any labels, e.g. (reward scale, name) pairs).
        seeds: How many seeds each learner runs.
        setup_seed: What a seed's runs share, built before them (e.g. an SFT warm start).
            Without it the runs go learner by learner (every seed of the first, then the
            next); with it, seed by seed, each after its ``setup_seed(seed)``.

    Returns:
        The rows, in the order of the runs.
    """

    def run(algo: Any, seed: int) -> dict[str, Any]:
        return {"algo": algo, "seed": seed, **train(algo, seed)}

    if setup_seed is None:
        return [run(algo, seed) for algo in algos for seed in range(seeds)]
    rows = []
    for seed in range(seeds):
        setup_seed(seed)
        rows.extend(run(algo, seed) for algo in algos)
    return rows


def summarize_runs(runs: Sequence[Mapping[str, float]], metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """:func:`mean_ci` over ``runs`` (one learner's seeds) of each of ``metrics`` that every run has.

    >>> summarize_runs([{"a": 1.0, "b": 2.0}, {"a": 3.0}], ["a", "b"])["a"]["mean"]
    2.0
    """
    return {metric: mean_ci([run[metric] for run in runs]) for metric in metrics if all(metric in run for run in runs)}


def mean_and_interval(stat: Mapping[str, float]) -> str:
    """A :func:`mean_ci` as text: ``mean +- half-width``; one seed has no interval (its
    ``ci95`` of 0 is a placeholder), so its mean stands alone, marked, and seeds that all
    gave the same value (a deterministic baseline) say so rather than claim an interval
    of 0.

    >>> mean_and_interval(mean_ci([0.4, 0.6])), mean_and_interval(mean_ci([0.415])), mean_and_interval(mean_ci([0.9, 0.9]))
    ('0.500 +- 1.271', '0.415 (1 seed)', '0.900 (each of 2 seeds)')
    """
    if stat["n"] < 2:
        return f"{stat['mean']:.3f} (1 seed)"
    if stat["ci95"] == 0:
        return f"{stat['mean']:.3f} (each of {stat['n']} seeds)"
    return f"{stat['mean']:.3f} +- {stat['ci95']:.3f}"


def difference(a: Mapping[str, float], b: Mapping[str, float], pairs: int = 1) -> dict[str, float]:
    """The difference of two learners' means over their seeds, ``a - b``, with the half-width
    of its 95% Welch t-interval (two :func:`mean_ci`; their seeds need not pair), widened
    by Bonferroni where it is one of ``pairs`` compared at once (each at 1 - 0.05 / pairs,
    so that all of them hold together at 95%):

        (m_a - m_b) +- t_{1 - 0.025/pairs, nu} * sqrt(s_a^2 / n_a + s_b^2 / n_b),
        nu = (s_a^2/n_a + s_b^2/n_b)^2 / ((s_a^2/n_a)^2/(n_a-1) + (s_b^2/n_b)^2/(n_b-1)),

    each standard deviation recovered from its interval, s = ci95 * sqrt(n) / t_{0.975, n-1}.
    A difference inside its half-width is not shown by these seeds.

    Returns:
        ``mean`` (the difference), ``ci95`` (the half-width: NaN where a side has one seed,
        so no spread to tell it by) and ``n`` (the fewer seeds of the two).

    >>> d = difference(mean_ci([0.3, 0.4, 0.5]), mean_ci([0.1, 0.2, 0.3]))
    >>> round(d["mean"], 3), round(d["ci95"], 3)
    (0.2, 0.227)
    """
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1 (the differences compared at once), got {pairs}")
    n = min(a["n"], b["n"])
    if n < 2:
        return {"mean": a["mean"] - b["mean"], "ci95": float("nan"), "n": n}
    variances = [(side["ci95"] / stats.t.ppf(0.975, side["n"] - 1)) ** 2 for side in (a, b)]  # s^2 / n
    spread = sum(variances)
    if spread == 0:
        return {"mean": a["mean"] - b["mean"], "ci95": 0.0, "n": n}
    dof = spread**2 / sum(v**2 / (side["n"] - 1) for v, side in zip(variances, (a, b)))
    quantile = 1 - 0.025 / pairs
    return {"mean": a["mean"] - b["mean"], "ci95": float(stats.t.ppf(quantile, dof) * np.sqrt(spread)), "n": n}


def difference_lines(learners: Mapping[str, Mapping[str, float]], metric: str) -> list[str]:
    """Each pair of learners' :func:`difference` in ``metric`` (``learners``: name -> its
    :func:`mean_ci` of the metric) as a line that says whether the seeds show it: what a
    difference between two learners must exceed to mean something. With more than one pair
    the intervals are Bonferroni's, so that every line holds at once at 95% (three learners
    compared pairwise at 95% each would show a difference that is not there one time in
    seven).

    >>> difference_lines({"a": mean_ci([0.5, 0.6]), "b": mean_ci([0.1, 0.2])}, "x")
    ['a - b in x: +0.400 +- 0.304 over 2 seeds: shown (the 95% interval excludes 0)']
    >>> difference_lines({"a": mean_ci([0.5, 0.5]), "b": mean_ci([0.1, 0.1])}, "x")
    ['a - b in x: +0.400 over 2 seeds, each side the same on every seed: no spread, so not tested']
    """
    names = list(learners)
    pairs = len(names) * (len(names) - 1) // 2
    interval = "95% interval" if pairs == 1 else f"95% interval, Bonferroni over {pairs} pairs,"
    lines = []
    for k, first in enumerate(names):
        for second in names[k + 1 :]:
            d = difference(learners[first], learners[second], pairs)
            head = f"{first} - {second} in {metric}: {d['mean']:+.3f}"
            if not np.isfinite(d["ci95"]):
                lines.append(f"{head} (1 seed on a side: no interval, so not shown)")
            elif d["ci95"] == 0:  # the seeds do not vary: an interval of 0 would claim certainty
                lines.append(f"{head} over {d['n']} seeds, each side the same on every seed: no spread, so not tested")
            elif abs(d["mean"]) > d["ci95"]:
                lines.append(f"{head} +- {d['ci95']:.3f} over {d['n']} seeds: shown (the {interval} excludes 0)")
            else:
                lines.append(f"{head} +- {d['ci95']:.3f} over {d['n']} seeds: not shown (the {interval} covers 0)")
    return lines


def summary_table(summary: Mapping[str, Mapping[str, Mapping[str, float]]], metrics: Sequence[str], title: str) -> Table:
    """A table of ``summary`` (learner -> metric -> :func:`mean_ci`): mean +- 95% CI
    (:func:`mean_and_interval`), a column per metric that any learner has ("-" where one lacks it)."""
    columns = [m for m in metrics if any(m in row for row in summary.values())]
    table = Table(title=title)
    table.add_column("algo")
    for metric in columns:
        table.add_column(metric, justify="right")
    for algo, row in summary.items():
        table.add_row(algo, *(mean_and_interval(row[m]) if m in row else "-" for m in columns))
    return table
