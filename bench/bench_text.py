"""Time the eight text operators per edit, and split the cost into its parts.

    python bench/bench_text.py [--n 2000] [--out bench/RESULTS_text.md]

Target (brief): < 50 µs per edit, typical.  One edit = entity lookup + (for the six random
operators) one ``text_rng`` derivation + the edit itself.  Questions are a realistic mix
(plural and multi-word entities, unicode); every query uses its own key so nothing is reused
across calls except the compiled entity patterns and the entity span, which are cached per
(question, entity) -- as in a pipeline applying all eight operators to each query.  The uncached
entity lookup is timed separately.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
from pathlib import Path

from _machine import machine  # noqa: E402  (bench/ is on sys.path when run as a script)

from snapbench.core.conditions import TEXT_OPERATORS
from snapbench.core.seeding import text_rng
from snapbench.corruptions import entity as entity_mod
from snapbench.corruptions.text import corrupt_text, find_entity, get_text_operator

QUESTIONS = [
    ("What kind of fish is this?", "fish"),
    ("What kind of berries are these?", "berry"),
    ("Is this a golden retriever?", "golden retriever"),
    ("Who designed this Eiffel Tower model?", "Eiffel Tower"),
    ("I saw this at the market. What fruit is this?", "fruit"),
    ("What is this café called?", "café"),
    ("Is this a retriever?", "golden retriever"),
    ("Which Pokémon is this?", "Pokémon"),
]




def per_call_us(fn, n: int, repeats: int = 7) -> float:
    """Best (minimum) over ``repeats`` of the mean time of ``n`` calls: as timeit advises, the minimum
    is the figure least distorted by other jobs on the machine."""
    fn(0)
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(n):
            fn(i)
        runs.append((time.perf_counter() - t0) / n)
    return min(runs) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_text.md")))
    args = ap.parse_args()
    nq = len(QUESTIONS)

    rows = []
    for op in TEXT_OPERATORS:
        def call(i: int, op: str = op) -> str:
            q, e = QUESTIONS[i % nq]
            return corrupt_text(q, op, entity=e, seed=0, key=f"q{i}")

        fn = get_text_operator(op)
        spans = [find_entity(q, e) for q, e in QUESTIONS]
        rng = text_rng(0, "bench", op, 0)

        def edit(i: int, fn=fn) -> tuple:
            return fn(QUESTIONS[i % nq][0], spans[i % nq], rng)

        rows.append((op, per_call_us(call, args.n), per_call_us(edit, args.n)))
    rng_us = per_call_us(lambda i: text_rng(0, f"q{i}", "char_add", 0), args.n)
    uncached = entity_mod._locate_cached.__wrapped__  # the lookup without the per-query span cache
    find_us = per_call_us(lambda i: uncached(*QUESTIONS[i % nq]), args.n)

    lines = [
        "# Text operators: time per edit",
        "",
        f"- date: {dt.date.today().isoformat()}",
        f"- machine: {machine()}; 1-min load average at the end {os.getloadavg()[0]:.2f} "
        "(other jobs on the box inflate every column)",
        f"- {args.n} edits per run over {nq} questions, best of 7 runs, one process, one thread",
        "",
        "| operator | µs per edit (corrupt_text) | µs for the edit alone (span found, generator built) |",
        "|---|---|---|",
        *[f"| {op} | {us:.1f} | {edit:.1f} |" for op, us, edit in rows],
        "",
        f"Parts: `text_rng` derivation (snapbench.core.seeding; BLAKE2b + SeedSequence + PCG64) {rng_us:.1f} µs; "
        f"entity lookup uncached {find_us:.1f} µs (cached after the first operator of a query).  `word_repeat` and `sent_replace` draw nothing and derive no "
        "generator.",
        "",
        f"Mean over operators: {statistics.mean(r[1] for r in rows):.1f} µs per edit "
        f"(target < 50 µs typical); edit alone {statistics.mean(r[2] for r in rows):.1f} µs.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
