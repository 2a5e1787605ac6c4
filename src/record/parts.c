/* The parts folder, held open from its creation (parts.h). Every entry is
 * reached relative to the held descriptor with O_NOFOLLOW, and only the
 * stream files of the contract (src/format/contract.h) that gpuwhy's user
 * made are read or deleted: a job that writes its own files there, puts a
 * link in, or swaps the whole folder for a link to another one, loses
 * nothing to gpuwhy. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../format/contract.h"
#include "parts.h"

/* n digits or more at s; returns the characters after them, or NULL. */
static const char *digits(const char *s, size_t n)
{
	size_t k = 0;

	while (s[k] >= '0' && s[k] <= '9')
		k++;
	return k >= n && k <= 10 ? s + k : NULL;
}

int parts_name_kind(const char *name)
{
	const char *p;
	size_t ni = strlen(GW_PARTS_INJECT_PREFIX), ns = strlen(GW_PARTS_SAMPLER_PREFIX);

	if (!strncmp(name, GW_PARTS_SAMPLER_PREFIX, ns) && name[ns] == '.') {
		p = digits(name + ns + 1, 6);
		return p && !strcmp(p, ".gws") ? PARTS_SAMPLER_SEGMENT : PARTS_NOT_OURS;
	}
	if (strncmp(name, GW_PARTS_INJECT_PREFIX, ni) != 0 || !(p = digits(name + ni, 1)))
		return PARTS_NOT_OURS;
	if (!strcmp(p, ".gws") || !strcmp(p, ".head.gws"))
		return PARTS_INJECT_STREAM;
	if (*p == '.' && (p = digits(p + 1, 6)) && !strcmp(p, ".gws"))
		return PARTS_INJECT_SEGMENT;
	return PARTS_NOT_OURS;
}

int parts_create(struct parts *p, const char *output)
{
	const char *slash = strrchr(output, '/');
	char dir[PATH_MAX], cwd[PATH_MAX];
	struct stat st;
	int ret;

	memset(p, 0, sizeof(*p));
	p->parent = p->dfd = -1;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == output)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - output), output);
	snprintf(p->name, sizeof(p->name), "%s%s", slash ? slash + 1 : output, GW_PARTS_SUFFIX);
	/* the job may change directory: it gets an absolute path */
	if (output[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(p->path, sizeof(p->path), "%s%s", output, GW_PARTS_SUFFIX);
	else
		snprintf(p->path, sizeof(p->path), "%s/%s%s", cwd, output, GW_PARTS_SUFFIX);
	p->parent = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (p->parent < 0)
		return -errno;
	if (mkdirat(p->parent, p->name, 0700) < 0) {
		ret = -errno;
		goto out_parent;
	}
	p->dfd = openat(p->parent, p->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p->dfd < 0) {
		ret = -errno;
		/* not opened: removed only if it is an empty folder (ours, then) */
		if (ret != -ELOOP && ret != -ENOTDIR)
			unlinkat(p->parent, p->name, AT_REMOVEDIR);
		goto out_parent;
	}
	/* swapped for another user's folder between mkdir and open: not ours */
	if (fstat(p->dfd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		ret = -EPERM;
		goto out_dfd;
	}
	fchmod(p->dfd, 0700); /* whatever the umask: the job's processes write here */
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	return 0;

out_dfd:
	close(p->dfd);
	p->dfd = -1;
out_parent:
	close(p->parent);
	p->parent = -1;
	return ret;
}

int parts_still_named(const struct parts *p)
{
	struct stat st;

	return p->dfd >= 0 && p->parent >= 0 &&
	       fstatat(p->parent, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_dev == p->dev && st.st_ino == p->ino;
}

int parts_stop(struct parts *p)
{
	struct stat st;
	int fd;

	if (p->dfd < 0)
		return -EBADF;
	fd = openat(p->dfd, GW_PARTS_STOP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno; /* one there already stops the tracing too */
	if (fstat(fd, &st) == 0) {
		p->made_stop = 1;
		p->stop_dev = st.st_dev;
		p->stop_ino = st.st_ino;
	}
	close(fd);
	return 0;
}

/* The entries of the folder, read from the held descriptor itself (no
 * other descriptor is needed: the job may have used them all): *out is
 * NULL-terminated (NULL when empty). Entries, or -errno. */
static int list_names(int dfd, char ***out)
{
	char buf[8192] __attribute__((aligned(8)));
	char **names = NULL;
	int n = 0, cap = 0;
	ssize_t got;

	*out = NULL;
	if (lseek(dfd, 0, SEEK_SET) < 0)
		return -errno;
	while ((got = getdents64(dfd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < got;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);

			off += de->d_reclen;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (n + 1 >= cap) {
				char **q = realloc(names, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(*q));

				if (!q)
					goto nomem;
				names = q;
			}
			if (!(names[n] = strdup(de->d_name)))
				goto nomem;
			names[++n] = NULL;
		}
	}
	*out = names;
	/* ENOENT: the folder was removed (what it held is gone with it) */
	return got < 0 && errno != ENOENT ? -errno : n;
nomem:
	*out = names;
	return -ENOMEM;
}

static void free_names(char **names)
{
	for (int i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

/* A stream file gpuwhy may read and delete: of the contract's names, a
 * regular file (not followed through a link), of gpuwhy's user, with one
 * link. Its descriptor (O_NOFOLLOW, never blocking); -EPERM for an entry
 * that is not such a file, -ENOENT for one gone, or why it did not open. */
static int open_ours(int dfd, const char *name, struct stat *st)
{
	struct stat now;
	int fd;

	if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? -ENOENT : -EPERM;
	if (!S_ISREG(st->st_mode) || st->st_uid != geteuid() || st->st_nlink != 1)
		return -EPERM;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return -EPERM; /* replaced between the two looks */
	}
	return fd;
}

uint64_t parts_size(const struct parts *p)
{
	uint64_t total = 0;
	struct stat st;
	char **names = NULL;

	if (p->dfd >= 0)
		list_names(p->dfd, &names);
	for (int i = 0; names && names[i]; i++)
		if (parts_name_kind(names[i]) &&
		    fstatat(p->dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			total += (uint64_t)st.st_size;
	free_names(names);
	return total;
}

/* Segments in their order: inject-12.000002 before inject-12.000010, and
 * gpuwhy's own ("sampler.") after every process's ("inject-"). */
static int cmp_name(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

static void note_name(char *dst, size_t len, const char *name, unsigned count)
{
	if (count == 1)
		snprintf(dst, len, "%s", name);
}

/* Merges one stream file: 1 merged (and deleted), 0 kept. */
static int merge_one(int dfd, const char *name, struct gw_writer *w, struct parts_merge *m)
{
	struct stat st, now;
	char err[256];
	int fd = open_ours(dfd, name, &st);

	if (fd == -ENOENT)
		return 0;
	if (fd == -EPERM) {
		m->foreign++;
		note_name(m->foreign_name, sizeof(m->foreign_name), name, m->foreign);
		return 0;
	}
	if (fd < 0) { /* ours, but it did not open (no descriptor left): kept */
		m->lost++;
		note_name(m->lost_name, sizeof(m->lost_name), name, m->lost);
		if (m->lost == 1)
			snprintf(m->lost_why, sizeof(m->lost_why), "cannot open it: %s", strerror(-fd));
		return 0;
	}
	off_t at = lseek(w->fd, 0, SEEK_CUR);
	uint64_t bytes = w->bytes_written;
	int k = gw_copy_chunks_fd(fd, name, w->fd, w->compress, &w->bytes_written, err, sizeof(err));

	if (k < 0) {
		/* cut the partial copy off the output; the file stays for the report */
		if (at >= 0 && ftruncate(w->fd, at) == 0)
			lseek(w->fd, at, SEEK_SET);
		w->bytes_written = bytes;
		m->lost++;
		note_name(m->lost_name, sizeof(m->lost_name), name, m->lost);
		if (m->lost == 1)
			snprintf(m->lost_why, sizeof(m->lost_why), "%s", err);
		return 0;
	}
	/* the reader passes over damage: chunks after it are merged too */
	if (err[0]) {
		m->damaged++;
		note_name(m->damaged_name, sizeof(m->damaged_name), name, m->damaged);
		if (m->damaged == 1)
			snprintf(m->damaged_why, sizeof(m->damaged_why), "%s", err);
	}
	/* deleted only while the name is still the file that was merged */
	if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
	    now.st_ino == st.st_ino)
		unlinkat(dfd, name, 0);
	m->files++;
	return 1;
}

int parts_merge(int dfd, struct gw_writer *w, struct parts_merge *m)
{
	char **names;
	int n;

	memset(m, 0, sizeof(*m));
	n = list_names(dfd, &names);
	if (n < 0) {
		free_names(names);
		return n;
	}
	if (n)
		qsort(names, (size_t)n, sizeof(*names), cmp_name);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			int kind = parts_name_kind(names[i]);

			if ((kind == PARTS_SAMPLER_SEGMENT) != (pass == 0))
				continue;
			if (kind == PARTS_NOT_OURS) {
				/* the stop file gpuwhy made is its own, not the job's */
				if (strcmp(names[i], GW_PARTS_STOP) != 0) {
					m->foreign++;
					note_name(m->foreign_name, sizeof(m->foreign_name), names[i],
						  m->foreign);
				}
				continue;
			}
			if (merge_one(dfd, names[i], w, m) && kind == PARTS_INJECT_STREAM)
				m->streams++; /* one per process: its stream or its head file */
		}
	}
	free_names(names);
	return 0;
}

int parts_remove(struct parts *p, int samplers)
{
	struct stat st;
	char **names = NULL;

	if (p->dfd < 0)
		return 0;
	if (p->made_stop && fstatat(p->dfd, GW_PARTS_STOP, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == p->stop_dev && st.st_ino == p->stop_ino)
		unlinkat(p->dfd, GW_PARTS_STOP, 0);
	if (samplers)
		list_names(p->dfd, &names);
	for (int i = 0; names && names[i]; i++) {
		int fd = parts_name_kind(names[i]) == PARTS_SAMPLER_SEGMENT
				 ? open_ours(p->dfd, names[i], &st) : -1;

		if (fd >= 0) {
			close(fd);
			unlinkat(p->dfd, names[i], 0);
		}
	}
	free_names(names);
	/* rmdir removes only an empty folder; the name is checked to be it */
	if (!parts_still_named(p))
		return 0;
	return unlinkat(p->parent, p->name, AT_REMOVEDIR) == 0 ? 1 : -errno;
}

void parts_close(struct parts *p)
{
	if (p->dfd >= 0)
		close(p->dfd);
	if (p->parent >= 0)
		close(p->parent);
	p->dfd = p->parent = -1;
}
