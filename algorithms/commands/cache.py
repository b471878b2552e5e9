"""``deliberate cache stats|clear|merge``: the SQLite response caches."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import tyro

from algorithms.commands.common import console


@dataclass
class CacheStats:
    """Show what the response cache holds."""

    path: Path | None = None
    """Cache file (default: ``~/.cache/deliberation_env/``)."""


@dataclass
class CacheClear:
    """Delete every cached response (asks first, showing what would go)."""

    path: Path | None = None
    """Cache file (default: ``~/.cache/deliberation_env/``)."""
    yes: bool = False
    """Do not ask (scripts; without a terminal to ask on, nothing is deleted without it)."""


@dataclass
class CacheMerge:
    """Merge the caches of several nodes into one (each node keeps its own: SQLite over a
    network file system is unsafe); rows are verified, conflicting rows refused. Rows
    written by another install (another machine, or a version before 0.2) are foreign:
    skipped unless --trust. To keep an old cache: merge --trust NEW OLD, then use NEW."""

    out: tyro.conf.Positional[Path]
    """The merged cache (created if missing)."""
    inputs: tyro.conf.Positional[tuple[Path, ...]]
    """The nodes' cache files."""
    trust: bool = False
    """Trust the input files: their foreign rows (not signed with this install's key) are
    re-signed with it, marked with their file, and served like your own. Only for files you
    trust: whoever could write them decides what those requests return."""


def cache_stats(cfg: CacheStats) -> None:
    """``deliberate cache stats``: the counts and size of a cache, as JSON (with the rows of
    trusted foreign files by file, and the foreign rows, never served untrusted)."""
    from agents.cache import DEFAULT_CACHE_PATH, cache_stats

    console.print_json(json.dumps(cache_stats(cfg.path or DEFAULT_CACHE_PATH), default=str))


def cache_clear(cfg: CacheClear) -> None:
    """``deliberate cache clear``: delete every cached response, after asking (or with ``--yes``)."""
    from agents.cache import DEFAULT_CACHE_PATH, cache_clear, cache_stats

    path = cfg.path or DEFAULT_CACHE_PATH
    if not Path(path).exists():
        console.print(f"{path} does not exist: nothing to delete")
        return
    stats = cache_stats(path)
    rows = stats["generations"] + stats["logprobs"]
    if not cfg.yes:
        if not sys.stdin.isatty():
            raise ValueError(f"{path} holds {rows:,} cached responses: add --yes to delete them (no terminal to ask on)")
        answer = input(f"delete the {rows:,} cached responses of {path}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            console.print("nothing deleted")
            return
    cache_clear(path)
    console.print(f"cleared {path} ({rows:,} responses)")


def cache_merge(cfg: CacheMerge) -> None:
    """``deliberate cache merge OUT IN [IN ...] [--trust]``: one cache of several nodes' caches;
    the report counts the rows of trusted foreign files (``trusted``) and the foreign rows
    skipped (``foreign``)."""
    from agents.cache_merge import merge_caches

    counts = merge_caches(cfg.out, cfg.inputs, trust=cfg.trust)
    console.print_json(json.dumps({"out": str(cfg.out), **counts}))
