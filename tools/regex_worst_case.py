"""The slowest small pattern the regex rule accepts, on text built to make it backtrack.

Generates random small patterns from a grammar (literals, classes, ``+ * ? {m,n}``, groups,
alternation, lookarounds, anchors), keeps those :func:`aprender.codec._regex.check_pattern`
accepts for text (a ``token_pattern``), times ``findall`` (what a vectorizer runs) on
adversarial subjects built from each pattern's own characters (runs, alternations and a
final character that makes the match fail) of 2,000 characters in a child process with a
timeout, then times the slowest ones again on 10,000 characters. docs/threat-model.md quotes
its result::

    python tools/regex_worst_case.py --patterns 3000 --seed 0
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import re
import time
from multiprocessing.connection import Connection

from aprender.codec._regex import check_pattern

_CHARS = ["a", "b", "x", "-", " ", "1", "_"]
_CLASSES = [r"\w", r"\d", r"\s", r"\S", r"\W", "[ab]", "[^a]", ".", "[a-z]", "[^ ]"]
_COUNTS = ["+", "*", "?", "{2,}", "{0,5}", "{1,3}", "{3}", "{1,20}"]
_TAIL = "!"  # no class above but \W, \S, [^a], [^ ] and . matches it


def _atom(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth < 2 and roll < 0.12:
        return "(?:" + _sequence(rng, depth + 1) + ")"
    if depth < 2 and roll < 0.2:
        return "(?:" + _sequence(rng, depth + 1) + "|" + _sequence(rng, depth + 1) + ")"
    if depth < 2 and roll < 0.26:
        return rng.choice(["(?=", "(?!"]) + _sequence(rng, depth + 1) + ")"
    if roll < 0.3:
        return rng.choice([r"\b", "^", "$"])
    if roll < 0.6:
        return re.escape(rng.choice(_CHARS))
    return rng.choice(_CLASSES)


def _sequence(rng: random.Random, depth: int) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        atom = _atom(rng, depth)
        if atom not in (r"\b", "^", "$") and not atom.startswith(("(?=", "(?!")) and rng.random() < 0.6:
            atom += rng.choice(_COUNTS)
        parts.append(atom)
    return "".join(parts)


def subjects(pattern: str, n: int) -> list[str]:
    """Texts of ``n`` characters made of ``pattern``'s own characters, each ending in one it fails on."""
    alphabet = sorted({c for c in pattern if c.isalnum() or c in " -_"} | {"a", "1", " ", "-"})
    runs = [c * n for c in alphabet]
    pairs = [(a + b) * (n // 2) for a in alphabet for b in alphabet if a < b]
    return [text[: n - 1] + _TAIL for text in runs + pairs]


def _time_each(patterns: list[str], n: int, out: Connection) -> None:
    for pattern in patterns:
        compiled = re.compile(pattern)
        for text in subjects(pattern, n):
            start = time.perf_counter()
            compiled.findall(text)
            out.send(time.perf_counter() - start)  # unbuffered: a later text that stalls holds the GIL
        out.send(None)


def timed(patterns: list[str], n: int, timeout: float) -> dict[str, float]:
    """Each pattern's slowest ``findall`` over its subjects of ``n`` characters; ``inf`` past ``timeout``."""
    results: dict[str, float] = {}
    todo = list(patterns)
    while todo:
        receive, send = multiprocessing.Pipe(duplex=False)
        child = multiprocessing.Process(target=_time_each, args=(todo, n, send), daemon=True)
        child.start()
        send.close()
        while todo:
            if not receive.poll(timeout):  # one text of the pattern being timed stalls
                child.kill()
                child.join()
                results[todo.pop(0)] = float("inf")
                break
            seconds = receive.recv()
            if seconds is None:
                results.setdefault(todo.pop(0), 0.0)
            else:
                results[todo[0]] = max(results.get(todo[0], 0.0), seconds)
        else:
            child.join()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=3000, help="random patterns to generate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=10, help="slowest patterns timed again on 10,000 characters")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    accepted, refused = [], 0
    for _ in range(args.patterns):
        pattern = _sequence(rng, 0)
        try:
            re.compile(pattern)
        except re.error:
            continue
        if check_pattern(pattern) is None:
            accepted.append(pattern)
        else:
            refused += 1
    accepted = sorted(set(accepted))
    print(f"{len(accepted)} distinct patterns accepted, {refused} refused")
    short = timed(accepted, 2_000, timeout=20.0)
    slowest = sorted(short, key=short.__getitem__, reverse=True)[: args.top]
    long = timed(slowest, 10_000, timeout=120.0)
    for pattern in slowest:
        print(f"{short[pattern]:8.3f} s on 2,000  {long[pattern]:8.3f} s on 10,000   {pattern}")


if __name__ == "__main__":
    main()
