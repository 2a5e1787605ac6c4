/* The job's signals (jobsig.c): what gpuwhy catches and forwards while the
 * job runs, and what the job starts with (docs/RELIABILITY.md, "Signals"). */
#ifndef GPUWHY_JOBSIG_H
#define GPUWHY_JOBSIG_H

#include <signal.h>
#include <sys/types.h>

/* First thing: keeps the caller's ignored signals and mask for the job, and
 * makes a write to a closed pipe or past the file size limit an error for
 * gpuwhy (EPIPE, EFBIG) instead of its death, from here to its exit. */
void jobsig_save_caller(void);
/* Catches every forwarded signal the caller did not ignore (own_group: the
 * job gets a process group of its own). */
void jobsig_catch(int own_group);
/* Blocks the caught signals (into *old) while the job starts; the job's pid
 * is set before they are let through again. */
void jobsig_block(sigset_t *old);
void jobsig_job_started(pid_t pid, const sigset_t *old);
void jobsig_job_gone(void);
/* In the child, before exec: the caller's dispositions and mask. */
void jobsig_child_reset(void);
/* Back to the defaults once the job is gone (SIGPIPE, SIGXFSZ stay ignored). */
void jobsig_restore(void);
/* The last signal meant for the job, 0 when none. */
int jobsig_last(void);

#endif
