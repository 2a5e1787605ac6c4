/* The rank a recording belongs to, from the launcher's environment, and
 * what the job report needs to put several recordings on one time line. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ranks.h"
#include "record.h"

#define WORLD_VARS "WORLD_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE"
#define LOCAL_WORLD_VARS "LOCAL_WORLD_SIZE, SLURM_NTASKS_PER_NODE, OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS"

int rank_from_env(const char *vars, long *val, const char **name)
{
	static char names[8][40];
	static unsigned next;
	const char *p = vars;

	while (*p) {
		size_t n = strcspn(p, ", ");
		char var[40];

		if (n && n < sizeof(var)) {
			memcpy(var, p, n);
			var[n] = 0;
			const char *s = getenv(var);
			char *end;
			long v;

			errno = 0;
			v = s && *s ? strtol(s, &end, 10) : -1;
			/* "3(x2)" (Slurm's per-node counts) is not a number */
			if (s && *s && !errno && !*end && v >= 0 && v <= INT32_MAX) {
				*val = v;
				if (name) {
					char *slot = names[next++ % 8];

					snprintf(slot, sizeof(names[0]), "%s", var);
					*name = slot;
				}
				return 0;
			}
		}
		p += n;
		p += strspn(p, ", ");
	}
	return -ENOENT;
}

void rank_host_short(char *buf, size_t len)
{
	if (!len)
		return;
	if (gethostname(buf, len) < 0) {
		buf[0] = 0;
		return;
	}
	buf[len - 1] = 0;
	buf[strcspn(buf, ".")] = 0;
	/* a name goes into file names: nothing that would make a folder */
	for (char *c = buf; *c; c++)
		if (*c == '/')
			*c = '_';
}

int rank_expand_name(const char *pattern, char *out, size_t len, char *err, size_t errlen)
{
	size_t o = 0;

	if (!len)
		return -EINVAL;
	for (const char *p = pattern; *p; p++) {
		char piece[256];
		long v;

		if (*p != '%') {
			piece[0] = *p;
			piece[1] = 0;
		} else if (p[1] == '%') {
			snprintf(piece, sizeof(piece), "%%");
			p++;
		} else if (p[1] == 'r' || p[1] == 'l') {
			const char *vars = p[1] == 'r' ? RANK_VARS : LOCAL_RANK_VARS;

			if (rank_from_env(vars, &v, NULL) < 0) {
				snprintf(err, errlen,
					 "-o %s: %%%c stands for the %s, and none of %s is set (run it under "
					 "torchrun --no-python, srun or mpirun, or leave %%%c out)",
					 pattern, p[1], p[1] == 'r' ? "rank" : "local rank", vars, p[1]);
				return -EINVAL;
			}
			snprintf(piece, sizeof(piece), "%ld", v);
			p++;
		} else if (p[1] == 'h') {
			rank_host_short(piece, sizeof(piece));
			if (!piece[0]) {
				snprintf(err, errlen, "-o %s: the host name for %%h cannot be read", pattern);
				return -EINVAL;
			}
			p++;
		} else if (p[1] == 'p') {
			snprintf(piece, sizeof(piece), "%ld", (long)getpid());
			p++;
		} else {
			snprintf(err, errlen,
				 "-o %s: '%%%.1s' is not a field of an output name (%%r rank, %%l local rank, "
				 "%%h host, %%p pid, %%%% a percent sign)", pattern, p[1] ? p + 1 : "");
			return -EINVAL;
		}
		size_t n = strlen(piece);

		if (o + n >= len) {
			snprintf(err, errlen, "-o %s: the expanded name is too long", pattern);
			return -EINVAL;
		}
		memcpy(out + o, piece, n);
		o += n;
	}
	out[o] = 0;
	return 0;
}

static void meta_long(struct recorder *r, const char *key, long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", v);
	rec_meta(r, key, buf);
}

void meta_record_rank(struct recorder *r)
{
	char host[256];
	const char *from;
	long v;

	rank_host_short(host, sizeof(host));
	if (host[0])
		rec_meta(r, "host.name", host);
	if (rank_from_env(RANK_VARS, &v, &from) == 0) {
		meta_long(r, "job.rank", v);
		rec_meta(r, "job.rank_from", from);
	}
	if (rank_from_env(LOCAL_RANK_VARS, &v, NULL) == 0)
		meta_long(r, "job.local_rank", v);
	if (rank_from_env(WORLD_VARS, &v, NULL) == 0)
		meta_long(r, "job.world_size", v);
	if (rank_from_env(LOCAL_WORLD_VARS, &v, NULL) == 0)
		meta_long(r, "job.local_world_size", v);
	meta_record_clock(r, "start");
}

static uint64_t ns_of(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void meta_record_clock(struct recorder *r, const char *when)
{
	uint64_t best_mono = 0, best_real = 0, best_err = UINT64_MAX;
	char key[64], buf[32];

	/* the tightest of a few tries: a reading interrupted by the scheduler
	 * would leave the pair microseconds apart */
	for (int i = 0; i < 8; i++) {
		uint64_t m0 = ns_of(CLOCK_MONOTONIC), re = ns_of(CLOCK_REALTIME), m1 = ns_of(CLOCK_MONOTONIC);

		if (m1 - m0 < best_err) {
			best_err = m1 - m0;
			best_mono = m0 + (m1 - m0) / 2;
			best_real = re;
		}
	}
	snprintf(key, sizeof(key), "clock.%s_mono_ns", when);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)best_mono);
	rec_meta(r, key, buf);
	snprintf(key, sizeof(key), "clock.%s_real_ns", when);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)best_real);
	rec_meta(r, key, buf);
	snprintf(key, sizeof(key), "clock.%s_err_ns", when);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(best_err / 2 + 1));
	rec_meta(r, key, buf);
}
