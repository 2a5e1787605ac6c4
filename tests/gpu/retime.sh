#!/usr/bin/env bash
# On the GPU machine: corpus scenarios timed again uninstrumented, plain and with --fix,
# each in its own process (--seconds GW_SECONDS, default 2, as workloads/corpus/run.sh
# times them), for a scenario whose --fix changed or whose timing is in doubt. A variant
# with environment settings is given as NAME:VAR=VALUE[,VAR=VALUE...] and timed with
# --fix only (values without commas, spaces or slashes). Python scenarios only; no build.
#   tests/gpu/retime.sh OUT NAME[:VAR=VALUE,...]...
# Writes OUT/TAG.{plain,fix}.{json,stdout,stderr} (json: the run's last JSON line; TAG is
# NAME, with the variant's settings appended for a variant) and prints, a line each,
#   NAME[:VARS] plain X samples/s, fix Y samples/s, fix/plain Z
# Exit status 1 when a run printed no throughput.
set -u
out=${1:?usage: tests/gpu/retime.sh OUT NAME[:VAR=VALUE,...]...}
shift
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
cd "$(dirname "$0")/../.." || exit 1
py=${PYTHON:-python3}
sec=${GW_SECONDS:-2}
failed=0
sps() { "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["samples_per_s"])' "$1" 2>/dev/null; }
run() { # run FILE-STEM "VAR=VALUE,..." ARGS...
  local stem=$1 kv=()
  [ -n "$2" ] && IFS=, read -ra kv <<<"$2"
  shift 2
  (cd workloads/corpus && env "${kv[@]}" timeout -k 10 150 "$py" "$@" --seconds "$sec") \
    >"$out/$stem.stdout" 2>"$out/$stem.stderr"
  grep '^{' "$out/$stem.stdout" | tail -1 >"$out/$stem.json"
}
declare -A timed
for spec in "$@"; do
  name=${spec%%:*}
  envs=; [ "$name" != "$spec" ] && envs=${spec#*:}
  tag=$name${envs:+.$(echo "$envs" | tr ',=' '._')}
  [ -n "${timed[$name]:-}" ] || { run "$name.plain" "" "$name.py"; timed[$name]=1; }
  run "$tag.fix" "$envs" "$name.py" --fix
  p=$(sps "$out/$name.plain.json"); f=$(sps "$out/$tag.fix.json")
  [ -n "$p" ] && [ -n "$f" ] || failed=1
  r=$("$py" -c "import sys; print('%.3f' % (float(sys.argv[2]) / float(sys.argv[1])))" "$p" "$f" 2>/dev/null)
  echo "$spec plain ${p:-failed} samples/s, fix ${f:-failed} samples/s, fix/plain ${r:--}"
done
exit $failed
