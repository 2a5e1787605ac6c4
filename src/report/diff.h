/* gpuwhy diff: two analyses side by side (diff.c computes, render_diff.c
 * formats the terminal, JSON and HTML outputs from the same struct diff). */
#ifndef GPUWHY_DIFF_H
#define GPUWHY_DIFF_H

#include <stdio.h>

#include "../analyze/analyze.h"
#include "../util/json.h"

struct diff_side {
	const struct analysis *a;
	size_t steps;          /* has_steps(): 0 when the run was analysed in windows */
	double steady_ns;      /* the steady window */
	double step_mean_ns;   /* steady_ns / steps: what a loop's own timer measures */
	double step_median_ns, step_p95_ns, step_max_ns;
	double steps_per_s, samples_per_s; /* samples: with --batch, else 0 */
	double busy_pct, idle_pct;          /* of the steady window */
	double idle_ns[IDLE_NCAUSES];       /* per step (or per second without steps) */
	double idle_pct_cause[IDLE_NCAUSES]; /* share of the idle time, as the report's split */
	double kernels_per_step;
	double startup_ns;     /* before step 1, kept apart (0 without steps) */
	double job_ns;         /* the recording's start to the target's exit (0: not known) */
};

struct diff_kernel {
	const char *name;           /* short name (docs/RULES.md "Kernel names") */
	double ns[2], per_step[2];  /* steady-window time, and per step (per second without steps) */
	uint64_t count[2];
};

enum diff_state { DIFF_GONE, DIFF_NEW, DIFF_CHANGED, DIFF_SAME };
struct diff_finding {
	const char *rule, *cause;
	const struct finding *f[2]; /* NULL: absent (or below warning) on that side */
	enum diff_state state;
};

/* What BEFORE's report predicted for the fix AFTER made: its findings
 * (warning and above) that are gone in AFTER. */
#define DIFF_PREDICTED_MAX 8
struct diff_predicted {
	size_t n;         /* 0: none of BEFORE's findings is gone, so no prediction */
	const struct finding *f[DIFF_PREDICTED_MAX];
	/* the one finding's speed-up, or with several BEFORE's combined one when
	 * they are all its findings; 0 when several of them are gone and others
	 * stay (the report has no figure for such a subset: each has its own) */
	double speedup;
	int combined, capped;
	char causes[64]; /* "C1", "C1+C14+C4" */
};

struct diff {
	struct diff_side side[2]; /* before, after */
	/* measured speed-up: BEFORE step time / AFTER step time (mean, median);
	 * 0 when either side has no steps */
	double speedup, speedup_median;
	int by_samples;    /* with --batch B:A: the ratio of samples/s instead */
	/* AFTER's GPU busy time per step over BEFORE's (0: unknown): far from 1,
	 * the steps do different work (a larger batch) and the step-time ratio
	 * is not a throughput ratio */
	double work_ratio;
	/* ... differs by DIFF_WORK_DIFFERS either way (a note), and AFTER's
	 * holds that much more: a fix shortens the GPU's work (faster kernels,
	 * pinned copies), it does not add to it, so the batch grew and the
	 * step-time ratio is no speed-up (without --batch, both) */
	int work_differs, work_unlike;
	/* the two jobs run different programs (the script or module a Python
	 * interpreter ran, or the executable: program[]) on different
	 * frameworks or with GPU work DIFF_OTHER_JOB_WORK times apart: their
	 * step-time ratio compares two jobs, not a change to one, so it is no
	 * speed-up */
	int programs_differ;
	char program[2][128];
	/* the two recordings ran on different machines (the main GPU's name,
	 * the host's CPU model where both recorded it, its CPU count): a
	 * step-time ratio then mixes the change with the machine; machine[]
	 * says what each ran on */
	int machines_differ;
	char machine[2][192];
	/* the step-time ratio is not said as a speed-up: work_unlike or
	 * programs_differ */
	int not_speedup;
	/* the side (0 BEFORE, 1 AFTER) whose longest step is
	 * DIFF_OUTLIER_SHARE of its window or more, where the mean's ratio and
	 * the median's differ by DIFF_OUTLIER_SKEW: one step (a compilation, a
	 * stall) sets the mean; -1: none */
	int outlier_side;
	double wall_ratio; /* BEFORE steady window / AFTER steady window */
	/* AFTER's start-up against BEFORE's: 1 shorter, -1 longer, 0 within 5% */
	int startup_better;
	/* BEFORE's job over AFTER's, where BEFORE has a start-up finding and
	 * AFTER none (a warm start, say): what it predicted; 0 otherwise */
	double job_speedup;
	struct diff_kernel *k; /* top `top` by change of time per step, largest first */
	size_t nk, nk_total;   /* shown, and distinct names on either side */
	struct diff_finding *fd;
	size_t nf;
	struct diff_predicted pred;
};

#define DIFF_TOP_DEFAULT 15

/* The program a job's command line runs: the script or module a Python
 * interpreter was given (a script's base name; `env VAR=1`, -X, -W and
 * --check-hash-based-pycs values skipped), "python -c", else the
 * executable's base name. 1, or 0 where cmdline is NULL or names nothing. */
int diff_program_of(const char *cmdline, char *out, size_t len);

/* Fills d from two analyses (which must outlive d). batch[0], batch[1]:
 * samples per step of BEFORE and AFTER (0: unknown; with both the speed-up
 * is the ratio of samples/s). 0 or -ENOMEM. */
int diff_compute(struct diff *d, const struct analysis *before, const struct analysis *after,
		 const double batch[2], size_t top);
/* |log| of the work ratio past which the steps are said to differ in work */
#define DIFF_WORK_DIFFERS 1.5
/* A finding on both sides has changed where its severity differs or its
 * gain moved by this many points of the run (diff.c, and the job diff's
 * cross-rank findings) */
#define DIFF_CHANGED_PTS 5.0
static inline int diff_finding_moved(enum severity s0, enum severity s1, double pct0, double pct1)
{
	return s0 != s1 || (pct1 > pct0 ? pct1 - pct0 : pct0 - pct1) >= DIFF_CHANGED_PTS;
}
/* One step this share of a side's window or more... */
#define DIFF_OUTLIER_SHARE 0.1
/* ... where the mean's ratio and the median's are this far apart */
#define DIFF_OUTLIER_SKEW 1.15
/* ... and past which two differently named programs are two jobs */
#define DIFF_OTHER_JOB_WORK 3.0
/* An idle cause's change below this share of BEFORE's step time (of a
 * second without steps) is not marked better or worse */
#define DIFF_MIN_CHANGE 0.01
/* A start-up within this share of BEFORE's is marked neither better nor worse. */
#define DIFF_SAME_SHARE 0.05
void diff_free(struct diff *d);
const char *diff_state_name(enum diff_state s);

/* 0, or -ENOMEM: no memory to put in the micro sign (durations in "us"). */
int render_diff_terminal(FILE *f, const struct diff *d, int color);
void render_diff_json(struct json *j, const struct diff *d);
int render_diff_html(FILE *f, const struct diff *d);

#endif
