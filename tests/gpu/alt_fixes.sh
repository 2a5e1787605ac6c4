#!/usr/bin/env bash
# On the GPU machine: does fixing the cause gpuwhy ranks FIRST, where it is not the planted
# one, give the predicted gain? For four corpus scenarios (docs/ACCURACY.md: two healthy
# controls, c14 and c9) each runs uninstrumented, plain and with --alt (the fix of gpuwhy's
# first cause: torch.compile, with CUDA graphs for the launch-bound ones; see the scenarios'
# docstrings and manifest.tsv's notes), each in its own process, --seconds 3, timeout 150 s.
# No build needed: python3 with torch, transformers and torchvision.
#   tests/gpu/alt_fixes.sh OUT      (about 7 minutes; GW_ALT_BUDGET=seconds, default 420;
#   ALT_SCENARIOS="NAME..." runs those instead, each of them with an --alt variant)
# Writes OUT/NAME.{plain,alt}.json (the run's last JSON line), .stderr and .stdout,
# OUT/summary.txt, and OUT/alt-results.tgz with all of it. Prints one line per scenario:
#   NAME plain X samples/s, alt Y samples/s, alt/plain Z
# A failed --alt run of a CUDA graph (reduce-overhead) variant is run again once with
# GW_ALT_MODE=default (torch.compile without CUDA graphs) while time is left; the first
# attempt's files are kept as NAME.alt-cudagraphs.*, and the line says so.
set -u
out=${1:?usage: tests/gpu/alt_fixes.sh OUT}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
budget=${GW_ALT_BUDGET:-420}
per_run=150
start=$SECONDS
left() { echo $((budget - (SECONDS - start))); }
cap() { local l; l=$(( $(left) - 5 )); [ "$l" -lt "$per_run" ] && echo "$l" || echo "$per_run"; }
say() { echo "$*" | tee -a "$out/summary.txt"; }
log() { echo "== $* ($(date -u +%T), $(left) s left)" >&2; }

# cheapest first (compile time: small encoder; GPT-2 default mode; BERT train + eval graphs;
# ResNet-50 forward + backward with CUDA graphs)
scenarios=${ALT_SCENARIOS:-"c9_torch_mask_index h_hf_gpt2_bf16 c14_hf_eval_every h_tv_channels_last_amp"}

# run_one NAME plain|alt TIMEOUT [VAR=VALUE...]: 0 when it exited 0 with a JSON line
run_one() {
  local s=$1 kind=$2 t=$3 flag=
  shift 3
  [ "$kind" = alt ] && flag=--alt
  log "$s $kind (timeout ${t} s${*:+, $*})"
  (cd workloads/corpus && env "$@" timeout -k 10 "$t" python3 "$s.py" --seconds 3 $flag) \
    >"$out/$s.$kind.stdout" 2>"$out/$s.$kind.stderr"
  local rc=$?
  grep '^{' "$out/$s.$kind.stdout" | tail -1 >"$out/$s.$kind.json"
  echo "$rc" >"$out/$s.$kind.rc"
  [ "$rc" -eq 0 ] && [ -s "$out/$s.$kind.json" ]
}

sps() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["samples_per_s"])' "$1" 2>/dev/null; }

# why NAME KIND: "failed", the exit status and the last lines of stderr, on one line
why() {
  local rc; rc=$(cat "$out/$1.$2.rc" 2>/dev/null)
  case "$rc" in 124|137) rc="$rc, timed out";; esac
  echo "failed (exit $rc): $(tail -3 "$out/$1.$2.stderr" 2>/dev/null | tr '\n' ' ' | cut -c1-400)"
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/machine.txt" 2>&1
python3 -c 'import torch, transformers, torchvision; print("torch", torch.__version__, "transformers", transformers.__version__, "torchvision", torchvision.__version__)' >>"$out/machine.txt" 2>&1
cat "$out/machine.txt" >&2
: >"$out/summary.txt"

for s in $scenarios; do
  if [ "$(left)" -lt 120 ]; then
    say "$s skipped: $(left) s left"
    continue
  fi
  if ! run_one "$s" plain "$(cap)"; then
    say "$s plain $(why "$s" plain)"
    continue
  fi
  p=$(sps "$out/$s.plain.json")
  note=
  if ! run_one "$s" alt "$(cap)"; then
    if [ "$s" != h_hf_gpt2_bf16 ] && [ "$(left)" -ge 120 ]; then
      note=" (with CUDA graphs it $(why "$s" alt | cut -c1-200); retried with GW_ALT_MODE=default)"
      for f in json stderr stdout rc; do mv "$out/$s.alt.$f" "$out/$s.alt-cudagraphs.$f"; done
      run_one "$s" alt "$(cap)" GW_ALT_MODE=default || { say "$s plain $p samples/s, alt $(why "$s" alt)$note"; continue; }
    else
      say "$s plain $p samples/s, alt $(why "$s" alt)"
      continue
    fi
  fi
  a=$(sps "$out/$s.alt.json")
  r=$(python3 -c 'import sys; print(f"{float(sys.argv[2]) / float(sys.argv[1]):.3f}")' "$p" "$a" 2>/dev/null)
  say "$s plain $p samples/s, alt $a samples/s, alt/plain ${r:-?}$note"
done

log "done in $((SECONDS - start)) s"
tmp=$(mktemp /tmp/alt-results.XXXXXX)
tar -czf "$tmp" -C "$out" --exclude=alt-results.tgz . && mv "$tmp" "$out/alt-results.tgz"
