"""Seconds of one update of the learning table's learners, the loss's passes in segments
against one padded pass per micro-batch (issue 34, item 4).

An update samples its rollouts (32 completions: 4 problems x G = 4 x 2 agents), then runs
the loss's forward and backward passes over them, ``micro_batch_size`` completions at a
time (SoftRankPO also scores them under the base, without gradient, for its KL term).
A micro-batch's completions were padded to its longest: a completion cut at the budget
(96 tokens) beside answers of 20 ran all of them to 96. They now run in segments of
positions (``agents.trainable_lm.scoring.segments``): a row leaves once its completion
has ended. This script samples one update's rollouts from the table's learner (the
untrained pair, or a trained run's checkpoint: ``--run-dir``, of a run of ``--algo``),
then times the loss's passes over those same rollouts both ways (the learners'
``segmented_scoring``), interleaved, ``repeats`` times each, and prints the largest
difference of their log-probabilities. No optimizer step: every timing starts from the
same weights::

    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/update_time.py --updates 16 --eval-problems 48 \\
        --algo magrpo --run-dir runs/benchmarks/text-learning/d84e0e244c05/magrpo-seed1
    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/update_time.py --updates 16 --eval-problems 48 --algo softrankpo

Writes ``benchmarks/results/update_time_<algo>.json`` (``..._trained.json`` with ``--run-dir``).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass

import torch
import tyro
from results import write_results
from text_learning import Args, built_learner, config_of, run_seed, table_args

from agents.trainable_lm import scoring
from algorithms.text.losses import token_weights

WAYS = {"one padded pass": False, "segments": True}
"""Each way's ``segmented_scoring`` (the learners' setting)."""


@dataclass
class UpdateTimeArgs(Args):
    """The learning table's settings (``text_learning.py``'s), and what to time."""

    algo: str = "softrankpo"
    """The learner whose update is timed (SoftRankPO's includes its pass under the base)."""
    run_dir: str = ""
    """A trained run's folder (its ``checkpoint.safetensors`` is loaded, so the rollouts
    have a trained pair's lengths); "": the untrained pair."""
    repeats: int = 3
    """Timed loss passes per way, interleaved."""


def positions(lengths: list[list[int]], segmented: bool) -> int:
    """Row-positions the completion passes run, over micro-batches of completion lengths.

    >>> positions([[96, 21, 23, 26]], False), positions([[96, 21, 23, 26]], True)
    (380, 170)
    """
    total = 0
    for block in lengths:
        inputs = [n - 1 for n in block]
        start = 0
        ends = scoring.segments(inputs, scoring.PASS_OVERHEAD["cpu"]) if segmented else [max(inputs)]
        for stop in ends:
            total += sum(n > start for n in inputs) * (stop - start)
            start = stop
    return total


def loss_passes(learner, batch, advantages) -> tuple[float, list[torch.Tensor]]:
    """The seconds of the update's loss passes (the pass under the base too, where the
    learner has one), and each sample's log-probabilities; the gradients are dropped."""
    config, samples = learner.config, batch.samples
    start = time.perf_counter()
    reference = learner._score_shared(samples, reference=True) if config.kl_coef > 0 else None
    lengths = torch.tensor([len(s.completion.token_ids) for s in samples])
    weights = token_weights(lengths, config.aggregation)
    everything = list(range(len(samples)))
    learner.optimizer.zero_grad()
    for rows, chunk_weights in learner._chunks(samples, everything, weights):
        learner._backward(samples, rows, chunk_weights, advantages, None, reference)
    seconds = time.perf_counter() - start
    learner.optimizer.zero_grad()
    return seconds, learner._score_all(samples, reference=False)


def main(args: UpdateTimeArgs) -> None:
    table = table_args(args)
    config = config_of(table, args.algo, run_seed(args.run_dir), None)
    learner = built_learner(config, args.run_dir)
    start = time.perf_counter()
    batch = learner.collect()
    collect_seconds = time.perf_counter() - start
    returns = learner.returns(batch)
    advantages = learner.sample_advantages(batch, learner.group_advantages(batch, returns))
    samples = batch.samples
    by_agent = [[len(samples[r].completion.token_ids) for r in rows] for rows, _ in learner._chunks(samples, list(range(len(samples))), torch.ones(len(samples)))]
    seconds: dict[str, list[float]] = {way: [] for way in WAYS}
    scored = {}
    for _ in range(args.repeats):
        for way, segmented in WAYS.items():
            learner.lm.segmented_scoring = segmented
            took, scored[way] = loss_passes(learner, batch, advantages)
            seconds[way].append(took)
            print(f"{way}: {took:.1f} s", flush=True)
    largest = max(float((a - b).abs().max()) for a, b in zip(*scored.values(), strict=True))
    cut = sum(len(s.completion.token_ids) == args.max_new_tokens for s in samples)
    print(f"\nrollouts: {len(samples)} completions, {cut} cut at {args.max_new_tokens} tokens, sampled in {collect_seconds:.1f} s")
    print(f"largest |log-probability difference| between the ways: {largest:.2e}")
    print(f"\n| loss passes | seconds (median of {args.repeats}) | completion positions run | update (sampling + loss) |")
    print("|---|---:|---:|---:|")
    record = {"args": dataclasses.asdict(args), "collect_seconds": collect_seconds, "completions": len(samples),
              "cut": cut, "lengths": by_agent, "largest_logp_difference": largest, "ways": {}}
    for way, segmented in WAYS.items():
        median = statistics.median(seconds[way])
        run = positions(by_agent, segmented)
        record["ways"][way] = {"seconds": seconds[way], "median_seconds": median, "positions": run}
        print(f"| {way} | {median:.1f} | {run} | {collect_seconds + median:.1f} |")
    write_results(f"update_time_{args.algo}" + ("_trained" if args.run_dir else ""), record)


if __name__ == "__main__":
    main(tyro.cli(UpdateTimeArgs))
