#!/usr/bin/env python3
"""Turns a corpus run (run.sh OUTDIR: summary.tsv, <name>.rec.json, <name>.report.json) into
the accuracy table for docs/ACCURACY.md, calibration and evaluation apart (split.tsv), then
the holdout half's (written after the analysis was tuned) where any of it ran, then the
halves of each batch split later (activities-calibration, activities-evaluation) where any
of them ran.

Per scenario: gpuwhy's ranked findings; top finding correct (manifest's `top`: a cause,
`any-of:Ca,Cb`, or `healthy` = no finding at warning or above); predicted vs measured
speed-up (the planted cause's finding, or the report's combined estimate for multi-cause
jobs, against the --fix run over the plain run, both uninstrumented) within 30%; gpuwhy's
iterations seen (steps.iterations: start-up included) vs the recorded run's own iterations
(warm-up included) within 5%.

The `too-little` expectation (a job that crashed or was killed before it ran enough): right
when no finding is at warning or above and the report's verdict says so (`too-little`).
Healthy jobs recorded again (tests/gpu/activities.sh: <name>.r2.gwr, <name>.r3.gwr and their
.report.json) are graded in every recording: a table line of each recording's findings, and
the false alarms counted over all of them.

Usage: table.py OUTDIR [--gpuwhy PATH] [--out FILE] [--batch NAME]
  --gpuwhy: make <name>.report.json from <name>.gwr where it is missing.
  --batch: only that batch's halves (e.g. activities), and only those.
tests/golden/golden.py imports it: tables(timings dir, gpuwhy, recordings dir) diagnoses
the recordings afresh (no report files written) for docs/ACCURACY.md.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
SEVERE = ("warning", "high")


def tsv(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r.get("name", r.get("scenario", "x"))[:1] != "#"]


def last_json(path):
    try:
        return json.loads(open(path).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


TOO_LITTLE = ("too-little", "too_little", "too little")
BATCHES = ("activities", "unseen", "fresh", "batchfix", "wild", "field", "street", "harbor", "quarry", "ridge", "summit", "peak",
           "canyon", "mesa", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike",
           "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee")


_reports = {}


def report_json(path, gw):
    """gpuwhy report --json of a recording, made once per process (None where
    it gives no JSON)."""
    if path not in _reports:
        made = rendered_json(path)
        text = open(made).read() if made else subprocess.run(
            [gw, "report", "--json", path], capture_output=True, text=True, check=False).stdout
        try:
            _reports[path] = json.loads(text)
        except ValueError:
            _reports[path] = None
    return _reports[path]


FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures"))


def rendered_json(path):
    """The report's JSON that tests/render_fixtures.sh made of a bundled recording before
    the test suites ran (GW_RENDERED, set by tests/run-tests.sh), or None."""
    made = os.environ.get("GW_RENDERED")
    rel = os.path.relpath(os.path.abspath(path), FIXTURES)
    if not made or rel.startswith("..") or not rel.endswith(".gwr"):
        return None
    p = os.path.join(made, rel[:-len(".gwr")] + ".json")
    return p if os.path.exists(p) else None


def sampled_out(path):
    """Whether a sanitizer build's render (GW_SANITIZED=1, GW_RENDERED) left this bundled
    recording out: tests/render_fixtures.sh marks each one it made with REL.rc, and makes
    every sixteenth corpus job under the sanitizers (the plain build checks them all)."""
    made = os.environ.get("GW_RENDERED")
    if os.environ.get("GW_SANITIZED") != "1" or not made:
        return False
    rel = os.path.relpath(os.path.abspath(path), FIXTURES)
    return not rel.startswith("..") and rel.endswith(".gwr") and \
        not os.path.exists(os.path.join(made, rel[:-len(".gwr")] + ".rc"))


def report(out, name, gw, gwr_dir=None):
    if gwr_dir:  # recordings kept apart from the timings: diagnose now, write nothing
        return report_json(os.path.join(gwr_dir, f"{name}.gwr"), gw)
    p = os.path.join(out, f"{name}.report.json")
    if not os.path.exists(p) and gw and os.path.exists(os.path.join(out, f"{name}.gwr")):
        with open(p, "w") as f:
            subprocess.run([gw, "report", "--json", os.path.join(out, f"{name}.gwr")], stdout=f, check=False)
    try:
        d = json.load(open(p))
        return d[0] if isinstance(d, list) else d
    except (OSError, ValueError, IndexError):
        return None


def num(s):
    try:
        v = float(s)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


# Fixes that raise the batch, and by how much (each scenario's --fix, as its
# fix column and docstring say): the measured speed-up is per sample, and the
# prediction it is held to is gpuwhy's per-sample replay at that factor (the
# finding's batch points, docs/JSON.md), not the factor its figures chose.
BATCH_FIX = {"c3_small_batch": 128, "c3_hf_bert_tiny_batch": 64, "c3_jax_small_batch": 256,
             "c3_tv_resnet50_batch1_infer": 64, "c3_tv_resnet18_train_batch2": 64, "c3_hf_gpt2_train_batch1": 32,
             "c3_jax_ddim_batch1": 64, "c3_hf_reranker_pairwise": 32,
             "c3_jax_per_shape_sdf_loop": 128, "c3_timm_effnet_accum_microbatch": 8, "c3_cupy_sdr_block_spectrum": 256,
             "c3_timm_dpsgd_per_example_loop": 64, "c3_jax_pinn_burgers_collocation": 32,
             "c3_torch_tranad_smd_window_batch128": 64}


# Fixes that allow TF32 alone, every tensor left in FP32 (each scenario's fix column):
# held to the precision finding's TF32 point (its `tf32` replay, docs/JSON.md), not to
# its figures, which are for bf16.
TF32_FIX = {"c8_torch_tabular_resnet_plr_fp32", "c8_triton_ieee_surrogate", "c8_torch_siren_video_fp32"}


def planted_speedup(name, f):
    """A finding's predicted speed-up for the scenario's fix: at the fix's batch factor
    where the fix raises the batch and the finding replayed it, its TF32 point where the
    fix allows TF32 alone, else its own."""
    if name in TF32_FIX and (f.get("tf32") or {}).get("speedup"):
        return f["tf32"]["speedup"]
    k = BATCH_FIX.get(name)
    for p in (f.get("batch") or {}).get("points", []) if k else []:
        if p["factor"] == k:
            return p["speedup_per_sample"]
    return f["speedup"]


def planted_fixes(rep, planted):
    """The planted causes (C6+C9) among a report's findings with a replayed gain, as
    `report --fixes` takes them ("C6,C9"), or None."""
    have = {f["cause"] for f in rep.get("findings", []) if f.get("assessed") and f.get("gain_from") == "replay"}
    causes = [c for c in planted.split("+") if c in have]
    return ",".join(causes) or None


def fixes_combined(path, gw, causes):
    """`gpuwhy report --json --fixes CAUSES` of a recording: the replay of those
    findings' fixes together (None where it gives none)."""
    key = (path, causes)
    if key not in _reports:
        r = subprocess.run([gw, "report", "--json", "--fixes", causes, path], capture_output=True, text=True,
                           check=False)
        if r.returncode not in (0, 3):  # 3: a damaged recording, reported as far as it is whole
            raise RuntimeError(f"gpuwhy report --fixes {causes} {path}: exit {r.returncode}: {r.stderr.strip()}")
        _reports[key] = json.loads(r.stdout).get("combined_speedup")
    return _reports[key]


def grade(m, rep, summ, rec):
    """One row's facts: findings text, top, correct, predicted, measured, within, steps."""
    r = {"name": m["name"], "planted": m["planted"], "expect": m["top"]}
    if rep is None:
        r.update(findings="no report", correct=None)
        return r
    found = [f for f in rep.get("findings", []) if f.get("assessed")]
    severe = [f for f in found if f.get("severity") in SEVERE]
    # no finding at warning or above: the verdict says which (a healthy run, or too little)
    little = str(rep.get("verdict")).lower() in TOO_LITTLE
    r["findings"] = (", ".join(f'{f["cause"]} {f["speedup"]:.2f}x' for f in severe)
                     or ("too little to diagnose" if little else "healthy"))
    top = severe[0]["cause"] if severe else "healthy"
    want = m["top"].split(":", 1)[1].split(",") if m["top"].startswith("any-of:") else [m["top"]]
    r["top"] = top
    r["correct"] = top in want
    r["false_alarm"] = (m["planted"] == "none" and top != "healthy")
    if m["top"] == "too-little":  # no finding at warning or above, and the verdict says why
        r["verdict"] = rep.get("verdict")
        r["top"] = "too-little" if not severe and str(rep.get("verdict")).lower() in TOO_LITTLE else top
        r["correct"] = r["top"] == "too-little"
        r["false_alarm"] = bool(severe)
        if not severe:
            r["findings"] = f'none (verdict {rep.get("verdict")})'
    # predicted: the combined estimate when --fix removes several causes, else the planted cause's
    if m["planted"] == "none":
        pred = None
    elif "+" in m["planted"]:
        pred = rep.get("combined_speedup")
    else:
        pred = next((planted_speedup(m["name"], f) for f in severe if f["cause"] == m["planted"]), None)
    meas = num(summ.get("measured_speedup")) if summ else None
    r["pred"], r["meas"] = pred, meas
    r["within30"] = None if (pred is None or not meas or m["planted"] == "none") else abs(pred / meas - 1) <= 0.30
    r["gain_check"] = m["gain_check"] == "yes"
    st = rep.get("steps") or {}
    # the iterations gpuwhy saw over the whole run (start-up included), where the
    # report gives them; else its steady steps
    count = st.get("iterations") or st.get("count")
    iters = rec.get("iterations_total") if rec else None
    r["gw_steps"], r["iters"] = count, iters
    r["within5"] = None if not count or not iters else abs(count / iters - 1) <= 0.05
    return r


def yn(v):
    return "-" if v is None else ("yes" if v else "no")


def repeats(outdir, name, gw, gwr_dir=None):
    """The further recordings of a job (<name>.r2, <name>.r3, ...), diagnosed."""
    where = gwr_dir or outdir
    try:
        tags = sorted({f.split(".")[1] for f in os.listdir(where)
                       if f.startswith(name + ".r") and f.split(".")[1][1:].isdigit()
                       and (f.endswith(".gwr") or f.endswith(".report.json"))}, key=lambda t: int(t[1:]))
    except OSError:
        return []
    return [(t, report(outdir, f"{name}.{t}", gw, gwr_dir)) for t in tags]


def tables(outdir, gw=None, gwr_dir=None, halves=None):
    """The Markdown lines of the halves' tables: calibration, evaluation, then holdout when
    summary.tsv has any holdout scenario (so runs without it print as before), then each
    later batch's halves when summary.tsv has any of their scenarios; `halves`: only those.
    outdir: summary.tsv and <name>.rec.json (and <name>.report.json, <name>.gwr unless
    gwr_dir holds the recordings)."""
    man = tsv(os.path.join(here, "manifest.tsv"))
    split = {r["name"]: r["half"] for r in tsv(os.path.join(here, "split.tsv"))}
    summ = {r["scenario"]: r for r in tsv(os.path.join(outdir, "summary.tsv"))}
    lines = []
    w = lines.append
    later = tuple(f"{b}-{h}" for b in BATCHES for h in ("calibration", "evaluation"))
    for half in halves or ("calibration", "evaluation", "holdout") + later:
        if not halves and half in ("holdout",) + later and not any(split.get(n) == half for n in summ):
            continue
        rows = []
        for m in man:
            if split.get(m["name"]) != half:
                continue
            s = summ.get(m["name"])
            ran = s is not None and s.get("plain_samples_per_s") != "skipped"
            if ran:
                rec = last_json(os.path.join(outdir, f'{m["name"]}.rec.json'))
                rows.append(grade(m, report(outdir, m["name"], gw, gwr_dir), s, rec))
            # the control's other recordings, also where its first run did not happen
            if m["planted"] == "none" and half in later:
                for tag, rep in repeats(outdir, m["name"], gw, gwr_dir):
                    rrec = last_json(os.path.join(outdir, f'{m["name"]}.{tag}.rec.json'))
                    rows.append(dict(grade(m, rep, None, rrec), name=f'{m["name"]} ({tag})', repeat=True))
        w(f"### Corpus, {half} half ({sum(not r.get('repeat') for r in rows)} scenarios run)\n")
        w("| scenario | planted | expected first | gpuwhy's findings (warning+, ranked) | first correct | "
          "predicted | measured | within 30% | gpuwhy steps / program iterations | within 5% |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            pred = f'{r["pred"]:.2f}x' if r.get("pred") else "-"
            meas = f'{r["meas"]:.2f}x' if r.get("meas") else "-"
            w30 = yn(r.get("within30")) + ("" if r.get("gain_check", True) or r.get("within30") is None else " (not expected)")
            st = f'{r.get("gw_steps") or "-"} / {r.get("iters") or "-"}'
            w(f'| {r["name"]} | {r["planted"]} | {r["expect"]} | {r.get("findings", "-")} | {yn(r.get("correct"))} | '
              f'{pred} | {meas} | {w30} | {st} | {yn(r.get("within5"))} |')
        recs = [r for r in rows if r.get("correct") is not None]
        graded = [r for r in recs if not r.get("repeat")]
        healthy = [r for r in graded if r["planted"] == "none"]
        gains = [r for r in graded if r.get("within30") is not None]
        gains_exp = [r for r in gains if r["gain_check"]]
        steps = [r for r in rows if r.get("within5") is not None]
        cnt = lambda rs, k: sum(bool(r.get(k)) for r in rs)
        w("")
        w(f"- first finding correct: {cnt(graded, 'correct')}/{len(graded)}"
          f" (bottlenecked {cnt([r for r in graded if r['planted'] != 'none'], 'correct')}/"
          f"{len([r for r in graded if r['planted'] != 'none'])}, healthy {cnt(healthy, 'correct')}/{len(healthy)})")
        w(f"- healthy false alarms: {cnt(healthy, 'false_alarm')}/{len(healthy)}")
        again = [r for r in recs if r["planted"] == "none"]
        if len(again) > len(healthy):
            w(f"- healthy false alarms over every recording of them: {cnt(again, 'false_alarm')}/{len(again)}")
        little = [r for r in graded if r["expect"] == "too-little"]
        if little:
            w(f"- too little to diagnose said: {cnt(little, 'correct')}/{len(little)}; "
              f"a finding at warning or above: {cnt(little, 'false_alarm')}/{len(little)}")
        w(f"- predicted within 30% of measured: {cnt(gains_exp, 'within30')}/{len(gains_exp)} where expected "
          f"(gain_check yes), {cnt(gains, 'within30')}/{len(gains)} over all with a prediction")
        w(f"- step count within 5% of the program's iterations: {cnt(steps, 'within5')}/{len(steps)}")
        missing = [m["name"] for m in man if split.get(m["name"]) == half and m["name"] not in {r["name"] for r in rows}]
        if missing:
            w(f"- not run or skipped: {', '.join(missing)}")
        w("")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--gpuwhy")
    ap.add_argument("--out")
    ap.add_argument("--batch", choices=BATCHES)
    a = ap.parse_args()
    halves = (f"{a.batch}-calibration", f"{a.batch}-evaluation") if a.batch else None
    text = "\n".join(tables(a.outdir, a.gpuwhy, halves=halves))
    if a.out:
        open(a.out, "w").write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
