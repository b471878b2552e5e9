"""The action vocabulary is written once (``MetaAction``) and every table and metric reads it."""

from __future__ import annotations

import deliberation_env as de
from algorithms import baselines
from algorithms.commands.run import results_table
from algorithms.meta.evaluate import evaluate_rounds
from algorithms.meta.network import NUM_ACTIONS
from deliberation_env.meta.spaces import ACTION_NAMES


def test_names_follow_the_enum():
    assert ACTION_NAMES == ("persist", "refine", "concede")
    assert [de.MetaAction[name.upper()] for name in ACTION_NAMES] == list(de.MetaAction)
    assert NUM_ACTIONS == len(de.MetaAction)


def test_evaluation_shares_and_table_columns_use_the_names():
    venv = de.vector_env(4, team="simulated", max_rounds=1)
    result = evaluate_rounds(baselines.get("debate"), venv, range(4), progress=False)
    assert tuple(result.action_shares) == ACTION_NAMES and result.action_shares["refine"] == 1.0
    columns = [column.header for column in results_table([result], "t").columns]
    assert columns[-len(ACTION_NAMES):] == list(ACTION_NAMES)
