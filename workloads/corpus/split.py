#!/usr/bin/env python3
"""Assigns each corpus scenario to `calibration` or `evaluation`, once, at random (seed
below), and writes split.tsv. Stratified: the healthy jobs are split so that each half has
at least 3, and the scenarios of each planted cause (the first cause of a multi-cause job)
alternate between the halves, so most causes appear in both; the halves differ in size
by at most one.

Thresholds in gpuwhy may be tuned on calibration scenarios only; evaluation scenarios
measure how it generalizes. Never re-split: with split.tsv present this script only checks
that every scenario of manifest.tsv has a half, and says which do not.

Scenarios added later come as a batch with its own seed (BATCHES): `split.py --batch NAME`
assigns every manifest scenario that split.tsv does not have yet to NAME-calibration or
NAME-evaluation, once, and appends them. Stratified: the scenarios are grouped by planted
cause (the first cause; `none`, `too-little` and `wait` are groups of their own), each group
shuffled, the groups concatenated (Cn in numeric order, then the others by name) and the
halves alternated from a random start, so each group is split as evenly as it can be. A
batch that already has scenarios in split.tsv is never redone.
"""
import csv
import os
import random
import sys

SEED = 20261201
# issue 22's scenarios (activities: host metrics, evaluation phases, checkpoints, waits,
# warm-up, too little to diagnose): split once, by this seed
BATCHES = {"activities": 20270115}
here = os.path.dirname(os.path.abspath(__file__))


def manifest():
    with open(os.path.join(here, "manifest.tsv")) as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r["name"] and not r["name"].startswith("#")]


def cause_key(c):
    return (0, int(c[1:]), "") if c[:1] == "C" and c[1:].isdigit() else (1, 0, c)


def split_batch(batch):
    """Appends the manifest's scenarios missing from split.tsv as batch `batch`'s halves."""
    rows = manifest()
    out = os.path.join(here, "split.tsv")
    with open(out) as f:
        have = list(csv.DictReader(f, delimiter="\t"))
    halves = (f"{batch}-calibration", f"{batch}-evaluation")
    if any(r["half"] in halves for r in have):
        sys.exit(f"split.tsv already has batch {batch}: never redone")
    known = {r["name"] for r in have}
    new = [r for r in rows if r["name"] not in known]
    if not new:
        sys.exit("every manifest scenario has a half already")
    rng = random.Random(BATCHES[batch])
    groups = {}
    for r in new:
        groups.setdefault(r["planted"].split("+")[0], []).append(r["name"])
    order = []
    for cause in sorted(groups, key=cause_key):
        members = sorted(groups[cause])
        rng.shuffle(members)
        order += members
    side = rng.randrange(2)
    assign = {n: halves[(side + i) % 2] for i, n in enumerate(order)}
    with open(out, "a") as f:
        for r in new:
            f.write(f"{r['name']}\t{assign[r['name']]}\n")
    for h in halves:
        names = [r for r in new if assign[r["name"]] == h]
        print(f"{h}: {len(names)} scenarios, {sum(r['planted'] == 'none' for r in names)} healthy")


def main():
    if sys.argv[1:2] == ["--batch"] and len(sys.argv) == 3 and sys.argv[2] in BATCHES:
        return split_batch(sys.argv[2])
    if sys.argv[1:]:
        sys.exit(f"usage: split.py [--batch {'|'.join(BATCHES)}]")
    rows = manifest()
    out = os.path.join(here, "split.tsv")
    if os.path.exists(out):
        with open(out) as f:
            have = {r["name"] for r in csv.DictReader(f, delimiter="\t")}
        missing = [r["name"] for r in rows if r["name"] not in have]
        if missing:
            sys.exit(f"split.tsv exists and is never redone; not in it: {' '.join(missing)}")
        print(f"split.tsv exists ({len(have)} scenarios) and covers the manifest")
        return
    rng = random.Random(SEED)
    healthy = sorted(r["name"] for r in rows if r["planted"] == "none")
    others = {}
    for r in rows:
        if r["planted"] != "none":
            others.setdefault(r["planted"].split("+")[0], []).append(r["name"])
    rng.shuffle(healthy)
    order = []
    for cause in sorted(others, key=lambda c: int(c[1:])):
        members = sorted(others[cause])
        rng.shuffle(members)
        order += members
    halves = ("calibration", "evaluation")
    side = rng.randrange(2)
    assign = {n: halves[(side + i) % 2] for i, n in enumerate(order)}
    # the healthy jobs: the larger share goes to the half with fewer others
    small = min(halves, key=lambda h: sum(v == h for v in assign.values()))
    big = halves[1 - halves.index(small)]
    for i, n in enumerate(healthy):
        assign[n] = small if i % 2 == 0 else big
    with open(out, "w") as f:
        f.write("name\thalf\n")
        for r in rows:
            f.write(f"{r['name']}\t{assign[r['name']]}\n")
    for h in halves:
        names = [n for n, v in assign.items() if v == h]
        print(f"{h}: {len(names)} scenarios, {sum(n in healthy for n in names)} healthy")


if __name__ == "__main__":
    main()
