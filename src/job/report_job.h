/* The job report's entry from gpuwhy report (src/cmd/cmd_report.c). */
#ifndef GPUWHY_REPORT_JOB_H
#define GPUWHY_REPORT_JOB_H

#include "../util/vec.h"

struct report_opts;

typedef VEC(char *) VEC_TYPE_STR;

/* 1 when p is a folder. */
int job_is_dir(const char *p);
/* Every *.gwr of a folder, sorted by name, appended to out (the caller
 * frees them). 0, or -errno after saying why. */
int job_list_dir(const char *dir, VEC_TYPE_STR *out);
/* The same, saying nothing (0 or -errno). */
int job_list_dir_quiet(const char *dir, VEC_TYPE_STR *out);

/* gpuwhy diff of two folders, each the recordings of one job's ranks
 * (diff_job.c): the job's step, each rank's step, busy and wait, and the
 * cross-rank findings gone, new or the same. The exit status of gpuwhy
 * diff. */
struct job_diff_opts {
	int json;
	const char *json_out;
	unsigned force;   /* OUTFILE_FORCE or 0 */
	double fail_pct;  /* --fail-if-slower, < 0: none */
	const char *steps;
	int color;        /* -1 auto (a terminal), 0, 1 */
	const char *html; /* --html: refused (one recording's page) */
};
int job_diff_dirs(const char *before, const char *after, const struct job_diff_opts *o);

struct job;
/* The timeline of every rank in one Chrome trace (trace_job.c): 0, or 1
 * after saying why it was not written. */
int job_write_trace(const struct job *j, const char *out, unsigned force, const char *const *inputs,
		    const char *steps);

/* 1 when the arguments are one job: a folder among them whose recordings
 * all record their ranks (or that cannot be listed, or holds none: the job
 * report says so), or two or more recordings that record their rank. */
int job_args_are_job(const char *const *args, int n);
/* Reports the recordings (folders: their *.gwr, sorted) as one job, or with
 * rank >= 0 that rank's own report. One recording with job set or a rank
 * given: its GPU processes are the ranks (split.c). The exit status of gpuwhy report: 0, 1
 * a file unreadable or an output not written, 2 bad arguments, 3 a rank's
 * recording damaged or cut short, REPORT_EXIT_FAIL_ON. */
int job_report_args(const char *const *args, int nargs, const struct report_opts *o, long rank,
		    int job);

#endif
