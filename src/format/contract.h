/* The contract between the recorder (src/record) and the injection library
 * (inject/inject.c), defined once: the environment gpuwhy gives the job, and
 * the files both sides use in the parts folder.
 *
 * gpuwhy record creates OUTPUT.parts (mode 0700) and starts the job with
 * CUDA_INJECTION64_PATH naming the library and GW_ENV_PARTS_DIR naming that
 * folder (an absolute path: the job may change directory). Each traced
 * process writes GW_PARTS_INJECT_PREFIX<pid>.gws there (in ring mode a
 * <prefix><pid>.head.gws plus segments). To stop tracing while the job runs
 * on (--duration, --max-size), gpuwhy creates GW_PARTS_STOP in the folder;
 * the library checks for it at each flush and stops recording. At the end
 * gpuwhy merges the stream files into OUTPUT and deletes them, through the
 * folder it holds open since it made it: only files of exactly these names
 * (inject-PID.gws, inject-PID.head.gws, inject-PID.NNNNNN.gws and its own
 * sampler.NNNNNN.gws; src/record/parts.c), regular, of gpuwhy's user, with
 * one link. Anything else in the folder is left, and then so is the folder;
 * the library must keep to these names (O_EXCL, mode 0600). */
#ifndef GPUWHY_CONTRACT_H
#define GPUWHY_CONTRACT_H

/* Set by gpuwhy for the job. */
#define GW_ENV_PARTS_DIR       "GPUWHY_PARTS_DIR"      /* where streams go; unset: no tracing */
#define GW_ENV_RING_BYTES      "GPUWHY_RING_BYTES"     /* ring mode: this process's budget */
#define GW_ENV_TRACE_LAUNCHES  "GPUWHY_TRACE_LAUNCHES" /* 1: every launch call (--launches) */
#define GW_ENV_SYNC_RECORDS    "GPUWHY_SYNC_RECORDS"   /* 1: CUPTI's sync records too */
#define GW_ENV_PY_SITES        "GPUWHY_PY_SITES"       /* 0: no Python call sites (--no-py) */
#define GW_ENV_DUTY_ON_MS      "GPUWHY_DUTY_ON_MS"     /* --duty ON, whole ms >= 1 */
#define GW_ENV_DUTY_PERIOD_MS  "GPUWHY_DUTY_PERIOD_MS" /* --duty PERIOD, whole ms > ON */
#define GW_ENV_CUPTI_DIRS      "GPUWHY_CUPTI_DIRS"     /* the job's site-packages CUPTI folders */

/* Set by the user: the CUPTI the library loads (nothing else is tried). */
#define GW_ENV_CUPTI           "GPUWHY_CUPTI"

/* Read by the library only, for overhead studies (bench/run.sh). */
#define GW_ENV_FLUSH_MS        "GPUWHY_FLUSH_MS"       /* flush period, default 500 */
#define GW_ENV_TS_CALLBACK     "GPUWHY_TS_CALLBACK"    /* 0: CUPTI's own clock */
#define GW_ENV_KINDS           "GPUWHY_KINDS"          /* activity kinds to enable */
#define GW_ENV_API_CALLBACKS   "GPUWHY_API_CALLBACKS"  /* 0: no callback subscription */

/* Read by gpuwhy only: where the library is, when not next to gpuwhy. */
#define GW_ENV_INJECT_LIB      "GPUWHY_INJECT_LIB"

/* The parts folder: OUTPUT GW_PARTS_SUFFIX, and the files in it. */
#define GW_PARTS_SUFFIX        ".parts"
#define GW_PARTS_STOP          "stop"    /* created by gpuwhy: stop tracing */
#define GW_PARTS_INJECT_PREFIX "inject-" /* inject-<pid>.gws, one per process */
#define GW_PARTS_SAMPLER_PREFIX "sampler" /* gpuwhy's own ring segments */

#endif
