/* The job report's entry from gpuwhy report (src/cmd/cmd_report.c). */
#ifndef GPUWHY_REPORT_JOB_H
#define GPUWHY_REPORT_JOB_H

#include "../util/vec.h"

struct report_opts;

typedef VEC(char *) VEC_TYPE_STR;

/* 1 when the arguments are one job: a folder among them, or two or more
 * recordings that record their rank. */
int job_args_are_job(const char *const *args, int n);
/* Reports the recordings (folders: their *.gwr, sorted) as one job, or with
 * rank >= 0 that rank's own report. One recording with job set or a rank
 * given: its GPU processes are the ranks (split.c). The exit status of gpuwhy report: 0, 1
 * a file unreadable or an output not written, 2 bad arguments, 3 a rank's
 * recording damaged or cut short, REPORT_EXIT_FAIL_ON. */
int job_report_args(const char *const *args, int nargs, const struct report_opts *o, long rank,
		    int job);

#endif
