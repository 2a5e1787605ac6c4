/* gpuwhy record: launches the target with the injection library, runs the
 * samplers, and assembles one recording file. */
#ifndef GPUWHY_RECORD_H
#define GPUWHY_RECORD_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "../format/format.h"

struct record_opts {
	const char *output;   /* NULL: gpuwhy-<date>-<pid>.gwr in the cwd */
	char **argv;          /* the target command */
	unsigned proc_hz;     /* /proc sampling rate (default 50) */
	unsigned gpu_hz;      /* NVML sampling rate (default 50) */
	double duration_s;    /* 0: until the target exits */
	uint64_t max_size;    /* 0: unbounded; else stop tracing past this many bytes */
	int ring;             /* with max_size: keep the newest data instead of stopping */
	int redact;           /* do not store command lines */
	int no_inject;        /* host and NVML only */
	int trace_launches;   /* also trace every kernel launch call (costly) */
	int sync_records;     /* also keep CUPTI's SYNCHRONIZATION records */
	unsigned duty_on_ms, duty_period_ms; /* trace windows for long jobs */
	unsigned py_hz;       /* Python stack sampling rate (default 100) */
	int no_py;            /* no Python stacks */
	/* the job's standard output goes to its standard error (`run --json`:
	 * the report's JSON has standard output to itself) */
	int job_stdout_to_stderr;
};

/* The shared writer of gpuwhy's own samplers (stream 0). */
struct recorder {
	pthread_mutex_t lock;
	struct gw_writer w;       /* the output file: metadata and sticky records */
	struct gw_writer ring_w;  /* ring mode: periodic samples, into segments */
	struct gw_segments seg;
	int ring;
	int fd;
	volatile int stop;
	pid_t target;
	const struct record_opts *opts;
	unsigned ngpus;
};

void rec_emit(struct recorder *r, unsigned type, const uint64_t *v, unsigned n);
uint64_t rec_intern(struct recorder *r, const char *s);
void rec_meta(struct recorder *r, const char *key, const char *value);

/* Samplers (samplers.c): start threads; stop joins them. */
int samplers_start(struct recorder *r);
void samplers_stop(struct recorder *r);
/* When the next /proc pass starts, given the last one's CPU cost (ns). */
uint64_t sampler_next_tick(uint64_t next, uint64_t now, uint64_t period, uint64_t cost);
/* The calling thread's CPU time (ns): the cost of a sampler's pass. */
uint64_t sampler_thread_cpu_ns(void);

/* The Python stack sampler (pysampler.c): started and stopped by the samplers. */
int py_sampler_start(struct recorder *r);
void py_sampler_stop(struct recorder *r);

/* Static metadata (meta.c): host, target, GPUs, allowlisted environment. */
void meta_record_host(struct recorder *r, char **argv);
void meta_record_gpus(struct recorder *r);

/* Runs the whole recording; returns the exit status gpuwhy should exit with
 * (the target's), and sets *out_path to the file written (caller frees). */
int record_run(const struct record_opts *o, char **out_path);

#endif
