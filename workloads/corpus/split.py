#!/usr/bin/env python3
"""Assigns each corpus scenario to `calibration` or `evaluation`, once, at random (seed
below), and writes split.tsv. Stratified: the healthy jobs are split so that each half has
at least 3, and the scenarios of each planted cause (the first cause of a multi-cause job)
alternate between the halves, so most causes appear in both; the halves differ in size
by at most one.

Thresholds in gpuwhy may be tuned on calibration scenarios only; evaluation scenarios
measure how it generalizes. Never re-split: with split.tsv present this script only checks
that every scenario of manifest.tsv has a half, and says which do not.
"""
import csv
import os
import random
import sys

SEED = 20261201
here = os.path.dirname(os.path.abspath(__file__))


def manifest():
    with open(os.path.join(here, "manifest.tsv")) as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r["name"] and not r["name"].startswith("#")]


def main():
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
