/* What kernel tracing costs the host per launch, measured in the job's own
 * process: empty kernels launched on a private stream in rounds, kernel
 * tracing off and on alternately, the per-launch medians subtracted. The
 * analysis takes this figure out of each launch gap instead of a constant
 * (docs/RULES.md, "gpuwhy's own tracing cost"). Everything the measurement
 * touches comes through gw_calib_ops, so a test can drive it with a made-up
 * clock and launch. */
#ifndef GPUWHY_INJECT_CALIBRATE_H
#define GPUWHY_INJECT_CALIBRATE_H

#include <stdint.h>

#define GW_CALIB_KERNEL "gpuwhy_calibration_nop"
#define GW_CALIB_ROUNDS 6    /* of each state, alternating, off first */
#define GW_CALIB_LAUNCHES 64 /* per round: well inside a stream's queue */
#define GW_CALIB_WARM 16     /* launches before the rounds (module loading) */
#define GW_CALIB_DRAIN_MS 100 /* the stream must drain this soon before each round */

struct gw_calib_ops {
	void *ud;
	uint64_t (*clock)(void *ud);          /* ns */
	int (*launch)(void *ud);              /* one empty kernel: 0, or -errno */
	int (*drain)(void *ud, unsigned ms);  /* stream empty within ms: 0, or -ETIMEDOUT */
	int (*tracing)(void *ud, int on);     /* kernel tracing on or off: 0, or -errno */
};

struct gw_calib {
	uint64_t off_ns, on_ns; /* median time of one launch, tracing off / on */
	uint64_t cost_ns;       /* on - off, 0 when tracing measured no dearer */
	unsigned rounds, launches; /* rounds of each state, launches per round */
};

/* 0 with *out filled, or the first -errno of an op (tracing is left on). */
int gw_calibrate(const struct gw_calib_ops *o, struct gw_calib *out);

#endif
