#!/usr/bin/env bash
# On the GPU machine: corpus scenarios timed again uninstrumented, plain and with --fix,
# each in its own process (--seconds GW_SECONDS, default 2, as workloads/corpus/run.sh
# times them), for a scenario whose --fix changed or whose timing is in doubt. A variant
# with environment settings is given as NAME:VAR=VALUE[,VAR=VALUE...] and timed with
# --fix only. No build needed.
#   tests/gpu/retime.sh OUT NAME[:VAR=VALUE,...]...
# Writes OUT/NAME.{plain,fix}.json (the run's last JSON line), .stderr, and prints
#   NAME[:VARS] plain X samples/s, fix Y samples/s, fix/plain Z
set -u
out=${1:?usage: tests/gpu/retime.sh OUT NAME[:VAR=VALUE,...]...}
shift
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
sec=${GW_SECONDS:-2}
sps() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["samples_per_s"])' "$1" 2>/dev/null; }
run() { # run FILE-STEM ENV-LIST ARGS...
  local stem=$1 envs=$2
  shift 2
  (cd workloads/corpus && env ${envs//,/ } timeout -k 10 150 python3 "$@" --seconds "$sec") \
    >"$out/$stem.stdout" 2>"$out/$stem.stderr"
  grep '^{' "$out/$stem.stdout" | tail -1 >"$out/$stem.json"
}
for spec in "$@"; do
  name=${spec%%:*}
  envs=; [ "$name" != "$spec" ] && envs=${spec#*:}
  tag=$name${envs:+.$(echo "$envs" | tr ',=' '._')}
  [ -s "$out/$name.plain.json" ] || run "$name.plain" "" "$name.py"
  run "$tag.fix" "$envs" "$name.py" --fix
  p=$(sps "$out/$name.plain.json"); f=$(sps "$out/$tag.fix.json")
  r=$(python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) / float(sys.argv[1])))" "$p" "$f" 2>/dev/null)
  echo "$spec plain ${p:-failed} samples/s, fix ${f:-failed} samples/s, fix/plain ${r:--}"
done
