#!/usr/bin/env bash
# On the GPU machine, in one call (about 3 minutes): what the oscar batch's first report left
# open. The Lightning Conformer validating every 10 steps, whose 2-second recording held one
# validation, after its steps ("too little to diagnose: ... seen once"), recorded, reported and
# timed over 6 steady seconds by workloads/corpus/run.sh (NAME.6s.*). Carry .gpudeps
# (tests/gpu/build.sh).
#   tests/gpu/oscar_followup.sh OUT
out=${1:?usage: tests/gpu/oscar_followup.sh OUT}
name=oscar_followup
start=$SECONDS
. tests/gpu/harness.sh
long="$out/long"
mkdir -p "$long"
GW_SECONDS=6 GW_RUN_TIMEOUT=150 GW_DEADLINE=360 workloads/corpus/run.sh "$long" c14_lightning_conformer_ctc_val_wer
s=c14_lightning_conformer_ctc_val_wer
for f in "$long/$s".*; do mv "$f" "$long/$s.6s.${f#"$long/$s."}"; done
cat "$long/summary.tsv" 2>/dev/null
echo "== done $(date -u +%T), $((SECONDS - start)) s"
tar czf "$out/oscar-followup.tgz" -C "$out" long && rm -rf "$long"
