/* Several recordings of one distributed job (one per rank: torchrun, srun,
 * mpirun) reported as one (docs/RULES.md section 8). Each recording is
 * analysed as it is alone (src/analyze/, unchanged); what the job report
 * keeps of each is a summary (struct rank_rec): the rank's identity, its
 * step times, its findings, and its collective (NCCL) kernels. The
 * recordings' clocks are put on one time line (align.c: the realtime
 * pairs of the meta, refined by the ends of matching collectives), and the
 * cross-rank rules (xr_*.c, one per cause) read the matched collectives.
 * The renderer (render_job.c) only prints struct job.
 * Ownership: struct job owns every rank_rec and everything in it. */
#ifndef GPUWHY_JOB_H
#define GPUWHY_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../analyze/analyze.h"
#include "../util/json.h"
#include "../util/vec.h"

enum rank_status {
	RANK_OK,         /* read whole and analysed */
	RANK_DAMAGED,    /* analysed, but the reader's verdict is truncated or damaged */
	RANK_UNREADABLE, /* not a recording, or it could not be read or analysed */
};

/* A collective of the rank's main process and GPU: an NCCL kernel, or
 * one staged through host memory (copy out to copy back). */
struct rank_coll {
	uint64_t start, end; /* the rank's own CLOCK_MONOTONIC */
	uint32_t name;       /* a hash of the kernel's name: equal names match across ranks */
};

/* How the ranks' clocks were put on one time line (align.c). */
enum job_align {
	ALIGN_NONE,        /* the recordings' own clocks */
	ALIGN_REALTIME,    /* their realtime pairs */
	ALIGN_COLLECTIVES, /* ... refined by the ends of matched collectives */
	ALIGN_ONE_CLOCK,   /* every rank on one host's clock, since one boot: no correction */
};

struct rank_step {
	uint64_t start, end;
	uint8_t acts; /* 1 << enum activity of the activities inside it (activities.c) */
};

/* A finding of the rank's own report (assessed, warning or above). */
struct rank_finding {
	char rule[40], cause[8], title[160];
	enum severity severity;
	double speedup, per_step_ns;
};

struct rank_rec {
	char *path;             /* as the report names it (a view: "FILE (pid N)", split.c) */
	char *load_path;        /* the file read */
	enum rank_status status;
	char why[512];          /* UNREADABLE: why; DAMAGED: what the reader found */
	long rank, local_rank;  /* -1: not recorded */
	long world;             /* -1: not recorded */
	char rank_from[40];     /* meta job.rank_from: the variable, or "GPU and pid" (split.c) */
	char host[64];          /* "" when not recorded */
	uint32_t pid;           /* the main process (the training process) */
	uint32_t devs[16];
	unsigned ndevs;
	size_t nsteps;
	double step_ns;         /* median step time (0 without steps) */
	double busy_pct;        /* main GPU, steady window */
	double comm_ns_step;    /* time in collectives per step (their kernels' length; host-staged:
				 * the union of their spans, copy out to copy back) */
	int host_staged;        /* its collectives are staged through host memory (gloo) */
	double exposed_ns_step; /* in collectives with nothing else on its GPU, per step (X6) */
	double compute_ns_step; /* main GPU busy time per step outside collectives */
	double steady_ns;
	int verdict_exit;       /* GW_EXIT_DAMAGED when the reader's verdict is not ok */
	VEC(struct rank_finding) findings; /* ranked as the rank's report ranks them */
	VEC(struct rank_coll) coll;        /* in start order */
	VEC(struct rank_step) steps;
	double act_ns[ACT_N];   /* the training thread's time in each activity */
	/* clocks (align.c): rel(t) = real0 - base + (t - mono0) * (1 + drift) + corr */
	int clock_pairs;        /* 2: start and end pairs recorded; 1: start_unix only */
	uint64_t mono0, real0;
	double drift;
	int64_t corr;           /* the collectives' correction, ns */
	double resid_ns;        /* after it: median |end - reference end| of matched collectives */
	size_t matched;         /* collectives matched with the reference rank */
	int one_clock;          /* it reads the reference's clock (same host and boot): not corrected */
	int shift;              /* ... the reference's k-th is this rank's k+shift-th */
	/* cross-rank (xr_*.c), over the matched collectives */
	double wait_ns_step;    /* inside collectives before the last rank arrived, per step */
	double late_ns_step;    /* arrived after the median rank, per step */
	size_t times_last;      /* collectives it was the last to reach */
};

/* A finding about the job as a whole (xr_*.c). */
struct job_finding {
	const char *rule; /* "X1.straggler" */
	const char *cause; /* "X1" */
	char title[200];
	enum severity severity;
	long rank;         /* the rank it names, -1: several */
	char host[64];     /* X5: the host it names */
	double per_step_ns; /* what a fix would save per step */
	double speedup;
	char evidence[FINDING_TEXT];
	char fix[FINDING_TEXT];
};

/* The ranks whose own reports have a finding of one cause. */
struct job_group {
	char rule[40], cause[8], title[160]; /* the title of its first rank */
	VEC(long) ranks;
	double min_speedup, max_speedup;
	enum severity severity; /* the highest its ranks' findings have */
	int all;   /* every rank read has it */
	int first; /* it is the top finding of every rank in it */
};

struct job {
	VEC(struct rank_rec) ranks; /* sorted by rank (unknown ranks last, by file) */
	long world;                 /* the largest recorded world size, else the ranks read */
	VEC(long) missing;          /* ranks below world with no recording */
	VEC(long) duplicate;        /* ranks recorded by more than one file */
	int ref;                    /* index of the reference rank for the clocks, -1: none */
	uint64_t base;              /* realtime (ns) that the common time line counts from */
	enum job_align aligned_by;
	double residual_ns;         /* the largest rank's resid_ns */
	size_t ncoll;               /* collectives matched on every aligned rank */
	/* matched collectives: mc[k * nr + i] = index into ranks.v[i].coll, or SIZE_MAX */
	size_t *mc;
	size_t nr;
	double step_ns;             /* the job's step: the median of the ranks' */
	VEC(struct job_finding) findings;
	VEC(struct job_group) groups; /* the ranks' own findings, by cause (groups.c) */
	int nomem;                  /* an allocation failed in a rule: the report fails */
};

/* Reads and analyses one recording into r (steps: --steps or NULL). 0, or
 * -errno with r->status RANK_UNREADABLE and r->why saying why (the job
 * report names the file and goes on). */
int rank_load(struct rank_rec *r, const char *path, const char *steps);
void rank_free(struct rank_rec *r);
/* Peeks at a recording's meta: its rank, -1 when none is recorded, or
 * RANK_PEEK_UNREADABLE when the file cannot be read as a recording. */
#define RANK_PEEK_UNREADABLE (-2)
long rank_peek(const char *path);

/* The GPU processes of one recording as one recording each, written into
 * the folder dir (caller removes them): *out the paths (caller frees), none
 * when it holds fewer than two GPU processes. 0 or -errno. */
int job_split(const char *path, const char *dir, char ***out, size_t *nout);

/* Loads every file, sorts the ranks and finds the missing ones. 0 or -ENOMEM. */
int job_load(struct job *j, const char *const *files, size_t n, const char *steps);
/* The clocks on one time line (align.c). 0 or -ENOMEM. */
int job_align(struct job *j);
/* A rank's time on the common line, ns since j->base. */
int64_t job_rel(const struct job *j, const struct rank_rec *r, uint64_t t);
/* The cross-rank rules (xr_rules.c runs them in order). 0 or -ENOMEM. */
int job_rules(struct job *j);
void job_free(struct job *j);

/* Cross-rank rules: one file each. */
void xr_collective_wait(struct job *j);
void xr_straggler(struct job *j);
void xr_one_rank_work(struct job *j);
void xr_uneven(struct job *j);
void xr_host(struct job *j);
void xr_exposed(struct job *j);
/* Adds a finding (NULL: out of memory, said by the caller's -ENOMEM). */
struct job_finding *job_finding_add(struct job *j, const char *rule, const char *cause);

/* Groups the ranks' own findings (groups.c). 0 or -ENOMEM. */
int job_groups(struct job *j);

/* Rendering (render_job.c): prints, never computes. */
int render_job_terminal(FILE *f, const struct job *j, int verbose, int color);
void render_job_json(struct json *js, const struct job *j);
/* The job's HTML page (html_job.c): 0, or -EIO. */
int render_job_html(FILE *f, const struct job *j);
/* "ranks 0-3,5" for the ranks of set[0..n) (sorted). */
void job_rank_list(char *buf, size_t len, const long *set, size_t n);

#endif
