#!/usr/bin/env bash
# The JSON outputs against their published schemas (docs/schema/, JSON
# Schema draft 2020-12): gpuwhy report --json of every fixture (and of a
# recording without a GPU, a cut one, several at once, --steps none), gpuwhy
# diff --json of every fixture pair (X.gwr, X.fix.gwr; --batch too); and the
# schemas reject what they must (a field they do not name, one missing, a
# value outside its enum). Needs python3's jsonschema (PyPI, or Debian's
# python3-jsonschema): without it the suite says skipped, except under CI
# (CI=true), where it must run. SCHEMA_PYTHONS names the Pythons to try
# (default: python3, then /usr/bin/python3). Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
gw=${GPUWHY:-$PWD/gpuwhy}
tmp=$(mktemp -d /tmp/gw-schema-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# a Python with jsonschema: the one on PATH, else the system's (Debian's
# python3-jsonschema lands there when PATH's python3 is another, e.g. pyenv)
py=
for p in ${SCHEMA_PYTHONS:-python3 /usr/bin/python3}; do
  if command -v "$p" >/dev/null && "$p" -c 'import jsonschema' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
  if [ "${CI:-}" = true ]; then
    echo "FAIL no python3 with jsonschema under CI (.ci/run installs python3-jsonschema)"
    echo "0 passed, 1 failed"
    exit 1
  fi
  echo "skipped: no python3 with the jsonschema module (pip install jsonschema, or apt-get install python3-jsonschema)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi

# recordings the fixtures lack: no GPU, cut short
"$gw" record -q -o "$tmp/cpu.gwr" -- sh -c 'sleep 0.2' 2>/dev/null
"$gw" record -q --redact -o "$tmp/redact.gwr" -- sh -c 'sleep 0.1' 2>/dev/null
head -c 300000 tests/fixtures/c9_item_sync.gwr > "$tmp/cut.gwr"
# SYNTHETIC ranks of one job (tests/unit/test_ranks.c), whole, and with a rank cut, one missing, one no recording
mkdir -p "$tmp/job" "$tmp/jobbad"
"${BUILD:-build}/tests/test_ranks" --write "$tmp/job" 4 30
"${BUILD:-build}/tests/test_ranks" --write "$tmp/jobbad" 4 30
rm -f "$tmp/jobbad/synthetic-rank-3.gwr"; truncate -s -100 "$tmp/jobbad/synthetic-rank-1.gwr"; echo no > "$tmp/jobbad/x.gwr"
mkdir -p "$tmp/jobfix"; "${BUILD:-build}/tests/test_ranks" --write "$tmp/jobfix" 4 30 --fix

"$py" - "$gw" "$tmp" <<'PY'
import glob, json, os, subprocess, sys
import jsonschema

gw, tmp = sys.argv[1:3]
passed = failed = 0
def ok(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL " + what)

schemas = {}
for name in ("gpuwhy.report-1.json", "gpuwhy.diff-1.json", "gpuwhy.job-1.json", "gpuwhy.jobdiff-1.json"):
    s = json.load(open(os.path.join("docs", "schema", name)))
    try:
        jsonschema.Draft202012Validator.check_schema(s)
        ok(s.get("$schema") == "https://json-schema.org/draft/2020-12/schema", name + " is a draft 2020-12 schema")
    except jsonschema.SchemaError as e:
        ok(False, "%s is not a valid schema: %s" % (name, e.message))
    schemas[name] = jsonschema.Draft202012Validator(s)
report, diff, job = schemas["gpuwhy.report-1.json"], schemas["gpuwhy.diff-1.json"], schemas["gpuwhy.job-1.json"]
jobdiff = schemas["gpuwhy.jobdiff-1.json"]

def errors(v, doc):
    return ["%s: %s" % ("/".join(map(str, e.absolute_path)) or "(top)", e.message[:200]) for e in v.iter_errors(doc)]

rendered = os.environ.get("GW_RENDERED")  # tests/render_fixtures.sh's reports, where the runner made them

def run_json(args):
    if rendered and args[:2] == ["report", "--json"] and len(args) == 3 and args[2].startswith("tests/fixtures/"):
        path = os.path.join(rendered, args[2][len("tests/fixtures/"):-len(".gwr")] + ".json")
        if os.path.exists(path):
            try:
                return json.load(open(path)), subprocess.CompletedProcess(args, 0, "", "")
            except ValueError:
                return None, subprocess.CompletedProcess(args, 1, "", "not JSON: " + path)
    p = subprocess.run([gw] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        return json.loads(p.stdout), p
    except ValueError:
        return None, p

def validate(v, args, label, want_schema):
    doc, p = run_json(args)
    if doc is None:
        ok(False, "%s: no JSON (exit %d: %s)" % (label, p.returncode, p.stderr[:200]))
        return None
    errs = errors(v, doc)
    ok(not errs, "%s does not validate: %s" % (label, "; ".join(errs[:5])))
    first = doc[0] if isinstance(doc, list) else doc
    ok(first.get("schema") == want_schema, "%s: schema %r" % (label, first.get("schema")))
    return doc

fixtures = sorted(glob.glob("tests/fixtures/*.gwr") + glob.glob("tests/fixtures/corpus/*.gwr"))
ok(len(fixtures) >= 60, "only %d fixtures found" % len(fixtures))
docs = {}
for f in fixtures:
    docs[f] = validate(report, ["report", "--json", f], "report --json " + f, "gpuwhy.report/1")
for f, label in ((tmp + "/cpu.gwr", "a recording without a GPU"), (tmp + "/redact.gwr", "a --redact recording"),
                 (tmp + "/cut.gwr", "a recording cut short")):
    validate(report, ["report", "--json", f], "report --json of " + label, "gpuwhy.report/1")
validate(report, ["report", "--json", "--steps", "none", "tests/fixtures/c4_launch_bound.gwr"],
         "report --json --steps none", "gpuwhy.report/1")
several = validate(report, ["report", "--json", "tests/fixtures/c9_item_sync.gwr", "tests/fixtures/healthy.gwr"],
                   "report --json of two recordings", "gpuwhy.report/1")
ok(isinstance(several, list) and len(several) == 2, "report --json of two recordings: an array of two")

# what the fixtures cover, so that the schema is not validated against nothing
allf = [x for d in docs.values() if d for x in d["findings"]]
ok(any(x["assessed"] for x in allf) and any(not x["assessed"] for x in allf), "fixtures have assessed and unassessed findings")
ok(any(x.get("sites") for x in allf), "fixtures have findings with code sites")
ok({d["verdict"] for d in docs.values() if d} >= {"healthy", "bottlenecked"}, "fixtures have healthy and bottlenecked verdicts")

pairs = sorted(glob.glob("tests/fixtures/*.fix.gwr"))
ok(len(pairs) >= 4, "only %d fixture pairs" % len(pairs))
for fix in pairs:
    plain = fix[:-len(".fix.gwr")] + ".gwr"
    validate(diff, ["diff", "--json", plain, fix], "diff --json %s %s" % (plain, fix), "gpuwhy.diff/1")
validate(diff, ["diff", "--json", "--batch", "2:16", "tests/fixtures/case_study.gwr", "tests/fixtures/case_study.fix.gwr"],
         "diff --json --batch 2:16", "gpuwhy.diff/1")
validate(diff, ["diff", "--json", tmp + "/cpu.gwr", tmp + "/cpu.gwr"], "diff --json of recordings without a GPU", "gpuwhy.diff/1")

# the schemas are closed and typed: they reject what gpuwhy never writes
r = json.loads(json.dumps(docs["tests/fixtures/c9_item_sync.gwr"]))
def rejects(v, doc, what):
    ok(errors(v, doc), "the schema accepts " + what)
rejects(report, dict(r, extra=1), "a report with a field it does not name")
rejects(report, {k: x for k, x in r.items() if k != "steady"}, "a report without steady")
rejects(report, dict(r, verdict="fine"), "a verdict outside its enum")
rejects(report, dict(r, findings=[dict(r["findings"][0], severity="critical")]), "a finding's severity outside its enum")
rejects(report, dict(r, findings=[dict(r["findings"][0], why="x")]), "an assessed finding with why")
rejects(report, dict(r, findings=[{"rule": "C9.sync-stall", "cause": "C9", "assessed": False}]), "an unassessed finding without why")
rejects(report, dict(r, steady=dict(r["steady"], idle_by_cause_pct={"sync": 100})), "an idle split without every cause")
d, _ = run_json(["diff", "--json", "tests/fixtures/c9_item_sync.gwr", "tests/fixtures/c9_item_sync.fix.gwr"])
rejects(diff, dict(d, extra=1), "a diff with a field it does not name")
rejects(diff, dict(d, before=dict(d["before"], steps=-1)), "a negative step count")
rejects(diff, dict(d, findings=[dict(d["findings"][0], state="better")] if d["findings"] else [{"state": "better"}]),
        "a finding state outside its enum")
jd = validate(job, ["report", "--json", tmp + "/job"], "report --json of a folder of synthetic ranks", "gpuwhy.job/1")
ok(jd is not None and len(jd["ranks"]) == 4 and {f["cause"] for f in jd["findings"]} >= {"X1", "X3"},
   "the synthetic job's ranks and cross-rank findings")
jb = validate(job, ["report", "--json", tmp + "/jobbad"], "report --json of a job with damaged and missing ranks", "gpuwhy.job/1")
ok(jb is not None and jb["missing_ranks"] == [3] and {r["status"] for r in jb["ranks"]} == {"ok", "damaged", "unreadable"},
   "a damaged, an unreadable and a missing rank in the job's JSON")
if jd:
    rejects(job, dict(jd, extra=1), "a job report with a field it does not name")
    rejects(job, dict(jd, ranks=[dict(jd["ranks"][0], status="fine")]), "a rank status outside its enum")
    rejects(job, {k: x for k, x in jd.items() if k != "alignment"}, "a job report without alignment")

dd = validate(jobdiff, ["diff", "--json", tmp + "/job", tmp + "/jobfix"], "diff --json of two synthetic jobs", "gpuwhy.jobdiff/1")
ok(dd is not None and dd["speedup"] > 1.3 and {f["cause"] for f in dd["findings"] if f["state"] == "gone"} >= {"X1", "X3"},
   "the fixed synthetic job: faster, X1 and X3 gone")
if dd:
    rejects(jobdiff, dict(dd, extra=1), "a job diff with a field it does not name")
    rejects(jobdiff, dict(dd, findings=[{"rule": "X1.straggler", "cause": "X1", "rank": 2, "state": "better", "title": ""}]),
            "a job diff finding state outside its enum")
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
PY
