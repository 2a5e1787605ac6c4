/* Which rank of a distributed job this gpuwhy records (ranks.c): the
 * launchers' environment variables (torchrun, Slurm, Open MPI, MPICH/Intel
 * MPI), the per-rank output name (-o run-%h-%r.gwr), and the rank, host
 * and clock pairs stored in the recording's meta so that several
 * recordings can be reported as one job (src/job/). */
#ifndef GPUWHY_RECORD_RANKS_H
#define GPUWHY_RECORD_RANKS_H

#include <stddef.h>

struct recorder;

/* The variables looked at, first set wins (docs/FORMAT.md "Ranks"). */
#define RANK_VARS "RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK"
#define LOCAL_RANK_VARS "LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID"

/* The value of the first of a comma-separated list of variables that holds
 * a whole number from 0 to 2^31-1: 0 and *val and *name (the variable's
 * name, static) set, or -ENOENT when none does. */
int rank_from_env(const char *vars, long *val, const char **name);

/* Expands an output name: %r rank, %l local rank, %h short host name, %p
 * gpuwhy's pid, %% a percent sign. 0, or -EINVAL with err saying why
 * (a %r or %l with none of its variables set, an unknown %x, a result too
 * long). A name without % comes back as it is. */
int rank_expand_name(const char *pattern, char *out, size_t len, char *err, size_t errlen);

/* The short host name (up to its first dot), "" when unknown. */
void rank_host_short(char *buf, size_t len);

/* Meta at the start of a recording: host.name, job.rank, job.rank_from,
 * job.local_rank, job.world_size, job.local_world_size (each only when
 * known) and the first clock pair. */
void meta_record_rank(struct recorder *r);
/* A pair of readings of CLOCK_MONOTONIC and CLOCK_REALTIME as close as they
 * can be read: clock.WHEN_mono_ns, clock.WHEN_real_ns, clock.WHEN_err_ns (half
 * the time the reading took: the pair's uncertainty). WHEN: start or end. */
void meta_record_clock(struct recorder *r, const char *when);

#endif
