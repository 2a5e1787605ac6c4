#!/usr/bin/env bash
# On the GPU machine, in one call (about 8 minutes): what the quarry batch's first report
# left open, and where the tracing cost of the BERT control comes from.
# - c14_tv_best_ckpt_deepcopy validates every 25 steps and saves on improvement: its
#   2-second timings held one save at most in their steady part, so it is recorded,
#   reported and timed over 6 steady seconds by workloads/corpus/run.sh (NAME.6s.*).
# - bench/trace_cost_modes.sh on h_torch_bert_finetune_workers, three rounds: its step
#   uninstrumented, under `gpuwhy record --no-inject` (samplers only), `--no-py` (CUPTI
#   only) and the default, modes interleaved.
# Carry .gpudeps (tests/gpu/build.sh).
#   tests/gpu/quarry_followup.sh OUT
out=${1:?usage: tests/gpu/quarry_followup.sh OUT}
name=quarry_followup
start=$SECONDS
. tests/gpu/harness.sh
long="$out/long"
mkdir -p "$long"
GW_SECONDS=6 GW_RUN_TIMEOUT=120 GW_DEADLINE=200 workloads/corpus/run.sh "$long" c14_tv_best_ckpt_deepcopy
for s in c14_tv_best_ckpt_deepcopy; do
  for f in "$long/$s".*; do mv "$f" "$long/$s.6s.${f#"$long/$s."}"; done
done
cat "$long/summary.tsv" 2>/dev/null
echo "== trace cost by mode $(date -u +%T)"
SCENARIOS=h_torch_bert_finetune_workers bench/trace_cost_modes.sh "$out/modes" 3
echo "== done $(date -u +%T), $((SECONDS - start)) s"
tar czf "$out/quarry-followup.tgz" -C "$out" long modes && rm -rf "$long" "$out/modes"
