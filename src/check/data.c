/* check --data: how fast the data under a folder reads. The tree is walked
 * (the usual train/CLASS/NAME.jpg is two levels down) within bounds of depth,
 * entries and time, never through a symbolic link and never into a kernel
 * pseudo file system; a uniform sample of its regular files (a reservoir,
 * so the last folders count as much as the first) is read in shuffled
 * order, as a shuffling loader reads them, until 1 GiB or 30 s is spent. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "../util/util.h"
#include "check.h"

#define SET(field, ...) snprintf(c->field, sizeof(c->field), __VA_ARGS__)

#define DATA_READ_BYTES (1ull << 30)
#define DATA_READ_NS 30000000000ull  /* the whole check: listing and reading */
#define DATA_LIST_NS 10000000000ull  /* of which the listing at most */
#define DATA_DEPTH 16                /* folder levels below DIR walked */
#define DATA_ENTRIES 2000000u        /* directory entries looked at, at most */
#define DATA_SAMPLE 8192u            /* files kept for reading */

/* Kernel pseudo file systems: their files are interfaces, not data (reading
 * /proc/kmsg blocks and consumes the kernel log). */
static const char *pseudo_fs(long type)
{
	switch ((unsigned long)type) {
	case 0x9fa0: return "proc";
	case 0x62656572: return "sysfs";
	case 0x64626720: return "debugfs";
	case 0x74726163: return "tracefs";
	case 0x27e0eb: case 0x63677270: return "cgroup";
	case 0x1cd1: return "devpts";
	case 0x73636673: return "securityfs";
	case 0x42494e4d: return "binfmt_misc";
	case 0xcafe4a11: return "bpf";
	default: return NULL;
	}
}

struct walk {
	char *sample[DATA_SAMPLE]; /* paths below DIR */
	unsigned n;                /* in sample */
	uint64_t files;            /* regular files seen */
	uint64_t entries, t0, rng;
	unsigned dirs, denied;
	int cut;                   /* a bound stopped the walk: files were left unseen */
	int nomem;
	char path[4096];
};

static uint64_t next_rand(struct walk *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

/* A regular file at path: kept with probability sample / files seen. */
static void keep_file(struct walk *w)
{
	uint64_t slot = w->files < DATA_SAMPLE ? w->files : next_rand(w) % (w->files + 1);

	w->files++;
	if (slot >= DATA_SAMPLE)
		return;
	char *p = strdup(w->path);

	if (!p) {
		w->nomem = 1;
		return;
	}
	if (slot < w->n) {
		free(w->sample[slot]);
	} else {
		slot = w->n++;
	}
	w->sample[slot] = p;
}

/* Lists the folder open at dfd (closed here), whose path below DIR is
 * w->path[0, plen). */
static void walk_dir(struct walk *w, int dfd, size_t plen, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	w->dirs++;
	while ((de = readdir(d)) && !w->nomem) {
		if (++w->entries > DATA_ENTRIES || gw_now_ns() - w->t0 > DATA_LIST_NS) {
			w->cut = 1;
			break;
		}
		if (de->d_name[0] == '.')
			continue;
		unsigned type = de->d_type;
		size_t nl = strlen(de->d_name);
		struct stat st;

		if (type == DT_UNKNOWN && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
		if ((type != DT_DIR && type != DT_REG) || plen + nl + 2 > sizeof(w->path))
			continue; /* links, FIFOs, devices, sockets: not data */
		memcpy(w->path + plen, de->d_name, nl + 1);
		if (type == DT_REG) {
			keep_file(w);
			continue;
		}
		if (depth + 1 > DATA_DEPTH) {
			w->cut = 1;
			continue;
		}
		int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct statfs sf;

		if (sub < 0) {
			w->denied += errno == EACCES || errno == EPERM;
			continue;
		}
		if (fstatfs(sub, &sf) == 0 && pseudo_fs(sf.f_type)) {
			close(sub); /* /proc mounted inside the tree */
			continue;
		}
		w->path[plen + nl] = '/';
		walk_dir(w, sub, plen + nl + 1, depth + 1);
	}
	closedir(d);
}

/* Opens root/rel for reading, one folder at a time, following no symbolic
 * link (one put in place of a folder after the walk included), and without
 * blocking (a FIFO put in place of a file). */
static int open_below(int root, const char *rel)
{
	char part[256];
	const char *p = rel, *slash;
	int fd = root, nfd, err;

	while ((slash = strchr(p, '/'))) {
		size_t n = (size_t)(slash - p);

		if (n >= sizeof(part)) {
			err = -ENAMETOOLONG;
			goto out;
		}
		memcpy(part, p, n);
		part[n] = 0;
		nfd = openat(fd, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			err = -errno;
			goto out;
		}
		if (fd != root)
			close(fd);
		fd = nfd;
		p = slash + 1;
	}
	nfd = openat(fd, p, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
	err = nfd < 0 ? -errno : nfd;
out:
	if (fd != root)
		close(fd);
	return err;
}

/* Reads one file into buf until the byte or time budget is spent. Only a
 * non-empty regular file is read: a FIFO or a device put in its place
 * after the walk is left alone. The time limit is checked after every
 * read, so one slow file cannot hold the check beyond it. Returns bytes
 * read, -ENODATA for a file not read, or -errno when it could not be
 * opened. */
static int64_t data_read_file(int root, const char *rel, uint64_t total, uint64_t t0)
{
	static char buf[1 << 20];
	int64_t got = 0;
	struct stat st;
	int fd = open_below(root, rel);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd); /* /proc- and /sys-style files say 0 */
		return -ENODATA;
	}
	while (total + (uint64_t)got < DATA_READ_BYTES && gw_now_ns() - t0 < DATA_READ_NS) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) /* end, an error, or EAGAIN: nothing more without waiting */
			break;
		got += r;
	}
	close(fd);
	return got;
}

static void open_failed(struct check *c, const char *shown, int err)
{
	c->status = CK_WARN;
	SET(measured, "cannot list %s: %s", shown, strerror(err));
	SET(why, "A data folder this user cannot read cannot be measured; a job run as this user "
		 "could not read it either.");
	SET(fix, err == EACCES ? "Run gpuwhy check as the user the job runs as, or give that user "
				 "read and search rights on the folder (chmod u+rx, or a group)."
			       : "Check that the folder exists and is readable.");
}

/* Reads the sample in shuffled order; returns the files read. */
static int read_sample(struct walk *w, int root, uint64_t *total)
{
	int files = 0;

	for (unsigned i = w->n; i > 1; i--) {
		unsigned j = (unsigned)(next_rand(w) % i);
		char *t = w->sample[i - 1];

		w->sample[i - 1] = w->sample[j];
		w->sample[j] = t;
	}
	for (unsigned i = 0; i < w->n && *total < DATA_READ_BYTES && gw_now_ns() - w->t0 < DATA_READ_NS; i++) {
		int64_t got = data_read_file(root, w->sample[i], *total, w->t0);

		if (got < 0) {
			w->denied += got == -EACCES || got == -EPERM;
			continue;
		}
		files++;
		*total += (uint64_t)got;
	}
	return files;
}

/* Read throughput over the regular files under dir (at most 1 GiB, 30 s). */
void data_read_check(struct check_list *l, const char *dir, const char *shown, long fs_type)
{
	struct check *c = check_add(l, "data", "storage.read");
	struct walk *w = calloc(1, sizeof(*w));
	uint64_t total = 0;
	int files = 0, root = -1;
	char of[64] = "";

	if (pseudo_fs(fs_type)) {
		SET(measured, "%s is a kernel pseudo file system (%s), not storage: nothing read", shown,
		    pseudo_fs(fs_type));
		SET(fix, "Give --data the folder the training data is read from.");
		goto out;
	}
	if (!w) {
		l->err = -ENOMEM;
		goto out;
	}
	w->t0 = gw_now_ns();
	w->rng = 0x9e3779b97f4a7c15ull; /* fixed: the same tree gives the same sample */
	root = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
	if (root < 0) {
		if (errno == ENOMEM)
			l->err = -ENOMEM; /* not a verdict on the folder */
		open_failed(c, shown, errno);
		goto out;
	}
	int dup_root = dup(root);

	if (dup_root < 0) {
		open_failed(c, shown, errno);
		goto out;
	}
	walk_dir(w, dup_root, 0, 0);
	if (w->nomem)
		l->err = -ENOMEM;
	if (w->dirs == 0) { /* fdopendir failed: out of memory */
		l->err = -ENOMEM;
		open_failed(c, shown, ENOMEM);
		goto out;
	}
	files = read_sample(w, root, &total);
	double secs = (double)(gw_now_ns() - w->t0) / 1e9;

	if (!files && w->denied) {
		c->status = CK_WARN;
		SET(measured, "none of the %u files or folders under %s could be opened: permission denied",
		    w->denied, shown);
		SET(why, "Files this user cannot read cannot be measured; a job run as this user could not "
			 "read them either.");
		SET(fix, "Run gpuwhy check as the user the job runs as, or give that user read rights on "
			 "the files (chmod u+r, or a group).");
		goto out;
	}
	if (!files || total < (1u << 20)) {
		SET(measured, "no regular files to read under %s (or under 1 MiB in all, %u folders looked at)",
		    shown, w->dirs);
		goto out;
	}
	double mbs = (double)total / secs / 1e6;

	if (w->files > (uint64_t)files || w->cut) /* a sample: of how many */
		snprintf(of, sizeof(of), " of %llu%s", (unsigned long long)w->files, w->cut ? "+" : "");
	c->status = mbs < 200 ? CK_WARN : CK_PASS;
	SET(measured, "%.0f MB/s reading %.0f MB from %d%s files in %u folders (page cache included)", mbs,
	    total / 1e6, files, of, w->dirs);
	SET(expected, "at least 200 MB/s");
	SET(why, "The loaders cannot deliver data faster than storage reads it, unless it is "
		 "cached.");
	SET(fix, "Faster storage, caching, fewer larger files, pre-decoded formats.");
out:
	if (w)
		for (unsigned i = 0; i < w->n; i++)
			free(w->sample[i]);
	free(w);
	if (root >= 0)
		close(root);
}
