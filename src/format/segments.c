/* Ring mode: a writer's chunks go to numbered segment files
 * (DIR/PREFIX.000001.gws, ...); past a size the writer moves to a new segment
 * and the oldest beyond `keep` is deleted, so the newest data survives within
 * a bound. Each segment is a complete recording file; strings are defined
 * again in every segment, so any suffix of segments decodes on its own.
 * Shared by gpuwhy's samplers and the injection library. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "intern.h"

/* The segment's name: relative to s->dfd when the folder is held open
 * (gpuwhy's parts folder), else the whole path. */
static void seg_path(const struct gw_segments *s, unsigned seq, char *buf, size_t len)
{
	if (s->dfd >= 0)
		snprintf(buf, len, "%s.%06u.gws", s->prefix, seq);
	else
		snprintf(buf, len, "%s/%s.%06u.gws", s->dir, s->prefix, seq);
}

static int seg_create(struct gw_segments *s)
{
	char path[4200];
	int fd, at = s->dfd >= 0 ? s->dfd : AT_FDCWD, ret;

	seg_path(s, s->seq, path, sizeof(path));
	fd = openat(at, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	ret = gw_write_file_header(fd);
	if (ret < 0) {
		close(fd);
		unlinkat(at, path, 0);
		return ret;
	}
	return fd;
}

/* The first segment of a set, in `dir` or in the folder open as dfd. */
static int seg_begin(struct gw_segments *s, int dfd, const char *dir, const char *prefix, uint64_t seg_bytes,
		     unsigned keep)
{
	int fd;

	memset(s, 0, sizeof(*s));
	s->dfd = dfd;
	if (dir)
		snprintf(s->dir, sizeof(s->dir), "%s", dir);
	snprintf(s->prefix, sizeof(s->prefix), "%s", prefix);
	s->seg_bytes = seg_bytes < 4096 ? 4096 : seg_bytes;
	s->keep = keep < 2 ? 2 : keep;
	s->seq = s->first = 1;
	fd = seg_create(s);
	if (fd < 0)
		return fd;
	s->fd = fd;
	return fd;
}

int gw_seg_open(struct gw_segments *s, const char *dir, const char *prefix, uint64_t seg_bytes,
		unsigned keep)
{
	return seg_begin(s, -1, dir, prefix, seg_bytes, keep);
}

int gw_seg_open_at(struct gw_segments *s, int dfd, const char *prefix, uint64_t seg_bytes,
		   unsigned keep)
{
	return seg_begin(s, dfd, NULL, prefix, seg_bytes, keep);
}

int gw_seg_rotate_if_full(struct gw_segments *s, struct gw_writer *w)
{
	char path[4200];
	int fd;

	if (w->bytes_written - s->seg_start < s->seg_bytes)
		return 0;
	s->seq++;
	fd = seg_create(s);
	if (fd < 0) {
		s->seq--;
		return fd; /* keep writing to the current segment */
	}
	close(s->fd);
	s->fd = fd;
	w->fd = fd;
	s->seg_start = w->bytes_written;
	gw_intern_clear(w->strings); /* the new segment defines its strings again */
	w->intern_gen++;
	while (s->seq - s->first + 1 > s->keep) {
		seg_path(s, s->first, path, sizeof(path));
		unlinkat(s->dfd >= 0 ? s->dfd : AT_FDCWD, path, 0);
		s->first++;
		s->dropped++;
	}
	return 1;
}

void gw_seg_close(struct gw_segments *s)
{
	if (s->fd > 0)
		close(s->fd);
	s->fd = -1;
}
