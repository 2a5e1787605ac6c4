#!/usr/bin/env bash
# On the GPU machine, in one call (about 6 minutes): what the field batch's first report
# left open. Two periodic jobs whose period the 2-second recording did not hold twice
# (a checkpoint uploaded every 25 steps; a validation pass every 30 steps) recorded, reported
# and timed over 6 steady seconds by workloads/corpus/run.sh (NAME.6s.*), and the healthy
# LLaMA control's memory-bound finding checked by tests/gpu/alt_fixes.sh (--alt: the model
# under torch.compile). Carry .gpudeps (tests/gpu/build.sh).
#   tests/gpu/field_followup.sh OUT
out=${1:?usage: tests/gpu/field_followup.sh OUT}
name=field_followup
start=$SECONDS
. tests/gpu/harness.sh
long="$out/long"
mkdir -p "$long"
GW_SECONDS=6 GW_RUN_TIMEOUT=120 GW_DEADLINE=300 workloads/corpus/run.sh "$long" \
  c14_torch_http_ckpt_upload m_torch_eval_item
for s in c14_torch_http_ckpt_upload m_torch_eval_item; do
  for f in "$long/$s".*; do mv "$f" "$long/$s.6s.${f#"$long/$s."}"; done
done
cat "$long/summary.tsv" 2>/dev/null
ALT_SCENARIOS="h_torch_llama_sdpa_bf16" GW_ALT_BUDGET=$((540 - (SECONDS - start))) tests/gpu/alt_fixes.sh "$out/alt"
echo "== done $(date -u +%T), $((SECONDS - start)) s"
tar czf "$out/field-followup.tgz" -C "$out" long alt && rm -rf "$long" "$out/alt"
