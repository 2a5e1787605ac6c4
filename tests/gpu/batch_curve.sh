#!/usr/bin/env bash
# On the GPU machine, in one call (about 6 minutes): C3's batch replay against measured
# per-sample speed-ups. First the batchfix scenarios (split.tsv half batchfix-evaluation,
# written after the replay, blind to it) are recorded, reported and timed plain and with
# --fix by tests/gpu/activities.sh; then the --fix of C3 scenarios is timed again at other
# batches (GW_FIX_BATCH) by tests/gpu/repeat_timings.sh, to compare with the points the
# report gives for those factors (JSON findings[].batch.points).
#   tests/gpu/batch_curve.sh OUT
# Carry .gpudeps (tests/gpu/build.sh). OUT/activities-results.tgz holds the recordings,
# OUT/curve/ the timings.
out=${1:?usage: tests/gpu/batch_curve.sh OUT}
mkdir -p "$out"
GW_BUDGET=${GW_BUDGET:-300} tests/gpu/activities.sh "$out" batchfix-evaluation
tests/gpu/repeat_timings.sh "$out/curve" 1 c3_tv_resnet18_train_batch2:GW_FIX_BATCH=16 \
  c3_hf_gpt2_train_batch1:GW_FIX_BATCH=4 c3_hf_bert_tiny_batch:GW_FIX_BATCH=16 \
  c3_tv_resnet50_batch1_infer:GW_FIX_BATCH=8
