/* One recording of several GPU processes (gpuwhy run -- torchrun ..., or a
 * program that spawns its ranks) as one recording per process, so that
 * each rank gets the analysis of a recording alone (src/analyze/ takes one
 * main process): gpuwhy's own stream (samplers, meta) goes into every
 * view and each GPU process's stream into its own; the streams of
 * processes without GPU work (loader workers that made CUDA calls) are
 * left out: their host calls are never the main process's. gpuwhy's
 * records of one process (its samples, stacks, threads, reads) go only into
 * the view of the GPU process it is or descends from, so that a rank's view
 * holds the launcher and that rank's own processes, as a recording of the
 * rank alone would. String ids are per stream and per writer: each is
 * resolved and interned again. The views are temporary files (docs/RULES.md
 * section 8). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/hmap.h"
#include "job.h"

#define SPLIT_MAX 256 /* GPU processes split out of one recording */

struct view {
	uint32_t pid;
	long rank;        /* from the process's own environment (env.RANK ...), -1: none */
	uint32_t dev;     /* its first kernel's device */
	uint64_t kernels;
	int fd;
	struct gw_writer w0, wp; /* gpuwhy's stream, the process's */
	char path[4096];
};

static int view_of(struct view *v, size_t n, uint32_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid)
			return (int)i;
	return -1;
}

/* The process a record of gpuwhy's own stream is about, or 0 for one
 * about the machine or the job (the GPU's samples, meta). */
static uint32_t record_pid(const struct gw_record *rec)
{
	switch (rec->type) {
	case GW_REC_THREAD_NAME:
		return rec->nfields > GW_TNAME_PID ? (uint32_t)rec->v[GW_TNAME_PID] : 0;
	case GW_REC_THREAD:
	case GW_REC_PROCESS:
	case GW_REC_PROC_IO:
	case GW_REC_PROC_EXIT:
	case GW_REC_PROC_LIBS:
	case GW_REC_PY_SAMPLE:
	case GW_REC_PY_STATUS:
		/* each of these has its pid second, after its time */
		return rec->nfields > 1 ? (uint32_t)rec->v[1] : 0;
	default:
		return 0;
	}
}

/* The view whose process pid is or descends from (parents from the
 * recording's process records, ppids: pid -> ppid + 1), or -1: the
 * launcher's, a process of no rank. Answers are kept in seen (pid ->
 * view + 2, 1: none). */
static int owner_of(struct view *v, size_t nv, const struct hmap *ppids, struct hmap *seen, uint32_t pid)
{
	uint64_t known = hmap_get(seen, pid);
	int k = -1;

	if (known)
		return (int)known - 2;
	for (uint32_t p = pid, depth = 0; p && depth < 64 && k < 0; depth++) {
		uint64_t pp = hmap_get(ppids, p);

		k = view_of(v, nv, p);
		if (!pp || pp - 1 == p)
			break;
		p = (uint32_t)(pp - 1);
	}
	if (hmap_put(seen, pid, (uint64_t)(k + 2)) < 0)
		return k; /* a cache: a failure only costs time */
	return k;
}

/* The first reading of the recording: the streams that ran GPU work, and
 * the rank each one's own environment records. */
static int survey(const char *path, struct view *v, size_t *nv, struct hmap *ppids)
{
	struct gw_reader *rd;
	struct gw_record rec;
	char err[256];
	int ret = 0;

	*nv = 0;
	if (gw_reader_open_flags(&rd, path, GW_OPEN_REGULAR, err, sizeof(err)) < 0)
		return -EIO;
	while (ret == 0 && gw_reader_next(rd, &rec) == 1) {
		int k = rec.stream ? view_of(v, *nv, rec.stream) : -1;

		if (rec.type == GW_REC_PROCESS && !rec.stream && rec.nfields > GW_PROC_PPID &&
		    rec.v[GW_PROC_PID] && rec.v[GW_PROC_PID] <= UINT32_MAX && rec.v[GW_PROC_PPID] < UINT32_MAX)
			ret = hmap_put(ppids, rec.v[GW_PROC_PID], rec.v[GW_PROC_PPID] + 1);

		/* a process's meta (its environment) comes before its kernels */
		if ((rec.type == GW_REC_KERNEL || rec.type == GW_REC_META) && rec.stream && k < 0 &&
		    *nv < SPLIT_MAX) {
			v[*nv] = (struct view){ .pid = rec.stream, .rank = -1, .fd = -1 };
			k = (int)(*nv)++;
		}
		if (rec.type == GW_REC_KERNEL && rec.stream) {
			if (k >= 0 && !v[k].kernels++)
				v[k].dev = (uint32_t)rec.v[GW_KERNEL_DEVICE];
		} else if (rec.type == GW_REC_META && rec.stream && k >= 0 && rec.blob2_len < 16) {
			static const char *const keys[] = { "env.RANK", "env.SLURM_PROCID", "env.OMPI_COMM_WORLD_RANK",
							    "env.PMI_RANK" };
			char val[16];

			memcpy(val, rec.blob2, rec.blob2_len);
			val[rec.blob2_len] = 0;
			for (size_t i = 0; i < 4; i++)
				if (rec.blob_len == strlen(keys[i]) && !memcmp(rec.blob, keys[i], rec.blob_len) &&
				    v[k].rank < 0)
					v[k].rank = strtol(val, NULL, 10);
		}
	}
	gw_reader_close(rd);
	size_t n = 0; /* the processes that ran GPU work */

	for (size_t i = 0; i < *nv; i++)
		if (v[i].kernels)
			v[n++] = v[i];
	*nv = n;
	return ret;
}

/* A record again, in writer w, its string fields interned there. */
static int copy_record(struct gw_writer *w, struct gw_reader *rd, const struct gw_record *rec)
{
	const struct gw_rec_desc *d = gw_rec_desc(rec->type);
	uint64_t v[GW_MAX_FIELDS];

	if (rec->type == GW_REC_STRING || !d || !d->name)
		return 0; /* strings are defined again as they are used */
	if (rec->type == GW_REC_META) {
		char *k = strndup((const char *)rec->blob, rec->blob_len);
		char *val = strndup((const char *)rec->blob2, rec->blob2_len);
		int ret = k && val ? (strncmp(k, "job.", 4) ? gw_emit_meta(w, k, val) : 0) : -ENOMEM;

		free(k);
		free(val);
		return ret;
	}
	for (unsigned i = 0; i < d->nfields; i++)
		v[i] = i < rec->nfields ? rec->v[i] : 0;
	for (unsigned i = 0; i < d->nfields && i < rec->nfields; i++)
		if (d->fields[i].kind == GW_F_S && v[i])
			v[i] = gw_intern(w, gw_reader_string(rd, rec->stream, v[i]));
	return gw_emit(w, rec->type, v, rec->nfields < d->nfields ? rec->nfields : d->nfields);
}

static int open_views(struct view *v, size_t nv, const char *dir, const char *orig, int numbered)
{
	for (size_t i = 0; i < nv; i++) {
		char b[64];
		int ret;

		const char *base = strrchr(orig, '/') ? strrchr(orig, '/') + 1 : orig;
		int keep = (int)strlen(base) - (strlen(base) > 4 && !strcmp(base + strlen(base) - 4, ".gwr") ? 4 : 0);

		/* named by the recording, as --rank N's report shows it */
		snprintf(v[i].path, sizeof(v[i].path), "%s/%.*s.pid-%u.gwr", dir, keep > 200 ? 200 : keep, base,
			 v[i].pid);
		v[i].fd = open(v[i].path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (v[i].fd < 0)
			return -errno;
		ret = gw_write_file_header(v[i].fd);
		if (ret == 0)
			ret = gw_writer_init(&v[i].w0, v[i].fd, 0, 1, 256 << 10);
		if (ret == 0)
			ret = gw_writer_init(&v[i].wp, v[i].fd, v[i].pid, 1, 256 << 10);
		if (ret < 0)
			return ret;
		/* which process of which recording this view is, and its rank */
		gw_emit_meta(&v[i].w0, "job.split_of", orig);
		snprintf(b, sizeof(b), "%u", v[i].pid);
		gw_emit_meta(&v[i].w0, "job.split_pid", b);
		snprintf(b, sizeof(b), "%ld", numbered ? (long)i : v[i].rank);
		gw_emit_meta(&v[i].w0, "job.rank", b);
		gw_emit_meta(&v[i].w0, "job.rank_from", numbered ? "GPU and pid" : "the process's environment");
		snprintf(b, sizeof(b), "%zu", nv);
		gw_emit_meta(&v[i].w0, "job.world_size", b);
		gw_flush(&v[i].w0);
	}
	return 0;
}

static int by_dev_pid(const void *x, const void *y)
{
	const struct view *a = x, *b = y;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* The second reading, once the views are known: every record into the
 * views it belongs to. */
static int fill(const char *path, struct view *v, size_t nv, const struct hmap *ppids)
{
	struct gw_reader *rd;
	struct gw_record rec;
	struct hmap seen = { 0 };
	char err[256];
	int ret = 0;

	if (gw_reader_open_flags(&rd, path, GW_OPEN_REGULAR, err, sizeof(err)) < 0)
		return -EIO;
	while (ret == 0 && gw_reader_next(rd, &rec) == 1) {
		int k = rec.stream ? view_of(v, nv, rec.stream) : -1;
		uint32_t pid = rec.stream ? 0 : record_pid(&rec);
		int own = pid ? owner_of(v, nv, ppids, &seen, pid) : -1;

		if (k >= 0)
			ret = copy_record(&v[k].wp, rd, &rec);
		else if (!rec.stream && own >= 0) /* one rank's process: its view alone */
			ret = copy_record(&v[own].w0, rd, &rec);
		else if (!rec.stream) /* the host calls of processes without GPU work are left out */
			for (size_t i = 0; i < nv && ret == 0; i++)
				ret = copy_record(&v[i].w0, rd, &rec);
	}
	gw_reader_close(rd);
	hmap_free(&seen);
	return ret;
}

int job_split(const char *path, const char *dir, char ***out, size_t *nout)
{
	struct view *v = calloc(SPLIT_MAX, sizeof(*v));
	struct hmap ppids = { 0 };
	size_t nv = 0;
	int ret, numbered = 0;

	*out = NULL;
	*nout = 0;
	if (!v)
		return -ENOMEM;
	ret = survey(path, v, &nv, &ppids);
	if (ret < 0 || nv < 2)
		goto done;
	qsort(v, nv, sizeof(*v), by_dev_pid);
	for (size_t i = 0; i < nv; i++)
		numbered |= v[i].rank < 0; /* one without: all numbered by GPU and pid */
	ret = open_views(v, nv, dir, path, numbered);
	if (ret == 0)
		ret = fill(path, v, nv, &ppids);
	for (size_t i = 0; i < nv; i++) {
		if (v[i].fd < 0)
			continue;
		if (gw_flush(&v[i].wp) < 0 || gw_flush(&v[i].w0) < 0)
			ret = ret ? ret : -EIO;
		gw_writer_free(&v[i].wp);
		gw_writer_free(&v[i].w0);
		if (close(v[i].fd) < 0 && !ret)
			ret = -errno;
	}
	if (ret == 0 && (*out = calloc(nv, sizeof(**out)))) {
		for (size_t i = 0; i < nv; i++)
			if (((*out)[i] = strdup(v[i].path)))
				(*nout)++;
	} else if (ret == 0) {
		ret = -ENOMEM;
	}
done:
	hmap_free(&ppids);
	free(v);
	return ret;
}
