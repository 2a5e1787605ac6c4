#!/usr/bin/env bash
# On the GPU machine, in one call (about 5 minutes): two periodic jobs whose 2-second
# recordings held one run of their periodic work, recorded, reported and timed over 6 steady
# seconds by workloads/corpus/run.sh (NAME.6s.*): the romeo batch's diffusion nowcaster
# drawing EMA previews every 10 steps (c14_torch_nowcast_diffusion_ema_previews) and the
# november batch's SimCLR job with a kNN probe every 20 steps (c14_lightning_simclr_knn_probe).
# Carry .gpudeps (tests/gpu/build.sh).
#   tests/gpu/periodic_followup.sh OUT
out=${1:?usage: tests/gpu/periodic_followup.sh OUT}
name=periodic_followup
start=$SECONDS
. tests/gpu/harness.sh
long="$out/long"
mkdir -p "$long"
jobs=(c14_torch_nowcast_diffusion_ema_previews c14_lightning_simclr_knn_probe)
GW_SECONDS=6 GW_RUN_TIMEOUT=150 GW_DEADLINE=${GW_DEADLINE:-420} workloads/corpus/run.sh "$long" "${jobs[@]}"
for s in "${jobs[@]}"; do
  for f in "$long/$s".*; do [ -e "$f" ] && mv "$f" "$long/$s.6s.${f#"$long/$s."}"; done
done
cat "$long/summary.tsv" 2>/dev/null
echo "== done $(date -u +%T), $((SECONDS - start)) s"
tar czf "$out/periodic-followup.tgz" -C "$out" long && rm -rf "$long"
