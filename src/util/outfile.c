/* Output files written whole or not at all (outfile.h says the rules). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "outfile.h"

/* fopencookie glue: what the caller writes to o->f goes through gzwrite. */
static ssize_t gz_cookie_write(void *c, const char *buf, size_t n)
{
	struct outfile *o = c;
	int w;

	if (n == 0)
		return 0;
	if (n > INT32_MAX)
		n = INT32_MAX;
	w = gzwrite((gzFile)o->gz, buf, (unsigned)n);
	if (w <= 0) {
		int zerr;

		gzerror((gzFile)o->gz, &zerr);
		o->err = zerr == Z_ERRNO && errno ? errno : EIO;
		errno = o->err;
		return -1;
	}
	return w;
}

static int gz_cookie_close(void *c)
{
	struct outfile *o = c;
	int r = gzclose((gzFile)o->gz);

	o->gz = NULL;
	if (r != Z_OK) {
		if (!o->err)
			o->err = r == Z_ERRNO && errno ? errno : EIO;
		errno = o->err;
		return -1;
	}
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A fresh file beside `path`, created exclusively with the mode a new file
 * would get (0666 less the umask). Its name does not depend on the target's
 * length, so a 255-byte name still works. */
static int create_temporary(struct outfile *o)
{
	const char *slash = strrchr(o->path, '/');
	size_t dirlen = slash ? (size_t)(slash - o->path) + 1 : 0;
	size_t len = dirlen + 64;
	unsigned i;

	o->tmp = malloc(len);
	if (!o->tmp)
		return -ENOMEM;
	for (i = 0; i < 1000; i++) {
		snprintf(o->tmp, len, "%.*s.gpuwhy-%ld-%u.tmp", (int)dirlen, o->path,
			 (long)getpid(), i);
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (o->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	{
		int err = errno == EEXIST ? -EEXIST : -errno;

		free(o->tmp);
		o->tmp = NULL;
		return err;
	}
}

static int is_input(const struct stat *st, const char *const *inputs)
{
	struct stat in;

	for (; inputs && *inputs; inputs++)
		if (stat(*inputs, &in) == 0 && in.st_dev == st->st_dev && in.st_ino == st->st_ino)
			return 1;
	return 0;
}

int outfile_open(struct outfile *o, const char *path, unsigned flags, const char *const *inputs)
{
	struct stat st;
	int err;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->path = path;
	if (strcmp(path, "-") == 0) {
		o->f = stdout;
		o->is_stdout = 1;
		return 0;
	}
	if (stat(path, &st) == 0) {
		if (is_input(&st, inputs))
			return -EINVAL;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (S_ISREG(st.st_mode))
			return -EEXIST;
		/* a device or a FIFO: write into it as the shell's '>' would,
		 * without truncating it or ever removing it */
		o->f = fopen(path, "we");
		return o->f ? 0 : -errno;
	}
	if (errno != ENOENT)
		return -errno;
	err = create_temporary(o);
	if (err)
		return err;
	if ((flags & OUTFILE_GZIP_BY_NAME) && ends_with(path, ".gz")) {
		static const cookie_io_functions_t io = {
			.write = gz_cookie_write,
			.close = gz_cookie_close,
		};
		int fd2 = dup(o->fd);

		o->gz = fd2 >= 0 ? gzdopen(fd2, "wb6") : NULL;
		if (!o->gz) {
			err = fd2 >= 0 ? -ENOMEM : -errno;
			if (fd2 >= 0)
				close(fd2);
			goto fail;
		}
		o->f = fopencookie(o, "w", io);
		if (!o->f) {
			err = -ENOMEM;
			gzclose((gzFile)o->gz);
			o->gz = NULL;
			goto fail;
		}
		return 0;
	}
	o->f = fdopen(o->fd, "w");
	if (!o->f) {
		err = -errno;
		goto fail;
	}
	o->fd = -1; /* owned by f now */
	return 0;
fail:
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	unlink(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	return err;
}

/* Gives the finished temporary its name without replacing anything that
 * appeared there meanwhile. */
static int publish(const char *tmp, const char *path)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* a filesystem without RENAME_NOREPLACE: link() refuses to replace too */
	if (link(tmp, path) == 0) {
		unlink(tmp);
		return 0;
	}
	return -errno;
}

int outfile_commit(struct outfile *o)
{
	int err = 0;

	if (!o->f)
		return -EBADF;
	if (fflush(o->f) != 0)
		err = -(o->err ? o->err : errno ? errno : EIO);
	if (!err && ferror(o->f))
		err = -(o->err ? o->err : EIO);
	if (o->is_stdout) {
		o->f = NULL;
		return err;
	}
	if (fclose(o->f) != 0 && !err)
		err = -(o->err ? o->err : errno ? errno : EIO);
	o->f = NULL;
	if (o->fd >= 0) { /* gzip: the stream wrote through a dup */
		if (close(o->fd) != 0 && !err)
			err = -errno;
		o->fd = -1;
	}
	if (o->tmp) {
		if (!err)
			err = publish(o->tmp, o->path);
		if (err)
			unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
	return err;
}

void outfile_abort(struct outfile *o)
{
	if (o->f && !o->is_stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp) {
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
}

const char *outfile_strerror(int err)
{
	switch (err) {
	case -EEXIST:
		return "it exists; gpuwhy does not overwrite files: choose another name, or remove it";
	case -EINVAL:
		return "it is a file being read; choose another name";
	case -EISDIR:
		return "it is a folder; give a file name";
	case -ENOSPC:
		return "no space left on the device; nothing was written under that name";
	default:
		return strerror(-err);
	}
}
