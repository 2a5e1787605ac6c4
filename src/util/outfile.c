/* Output files written whole or not at all (outfile.h says the rules). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "outfile.h"
#include "util.h"

/* fopencookie glue (its write returns the bytes taken, 0 on error): every
 * stream writes through one of these, which keep the first write error's
 * errno, since stdio's later calls (and ferror) would say only EIO. After an
 * error nothing more is written: the file is lost anyway. */
static ssize_t fd_cookie_write(void *c, const char *buf, size_t n)
{
	struct outfile *o = c;
	size_t done = 0;

	while (!o->err && done < n) {
		ssize_t w = write(o->fd, buf + done, n - done);

		if (w > 0)
			done += (size_t)w;
		else if (w < 0 && errno == EINTR)
			continue;
		else
			o->err = w < 0 ? errno : ENOSPC; /* 0 bytes for n: nothing fits */
	}
	if (o->err)
		errno = o->err;
	return o->err ? 0 : (ssize_t)n;
}

static ssize_t gz_cookie_write(void *c, const char *buf, size_t n)
{
	struct outfile *o = c;
	size_t done = 0;

	while (!o->err && done < n) {
		unsigned part = n - done > INT32_MAX ? INT32_MAX : (unsigned)(n - done);
		int w;

		errno = 0;
		w = gzwrite((gzFile)o->gz, buf + done, part);
		if (w <= 0) {
			int zerr;

			gzerror((gzFile)o->gz, &zerr);
			o->err = zerr == Z_ERRNO && errno ? errno : zerr == Z_MEM_ERROR ? ENOMEM : EIO;
		} else {
			done += (size_t)w;
		}
	}
	if (o->err)
		errno = o->err;
	return o->err ? 0 : (ssize_t)n;
}

static int gz_cookie_close(void *c)
{
	struct outfile *o = c;
	int r;

	errno = 0;
	r = gzclose((gzFile)o->gz);
	o->gz = NULL;
	if (r != Z_OK) {
		if (!o->err)
			o->err = r == Z_ERRNO && errno ? errno : r == Z_MEM_ERROR ? ENOMEM : EIO;
		errno = o->err;
		return -1;
	}
	return 0;
}

/* A fresh file beside `path`, created exclusively and readable by the user
 * alone (0600: reports hold the command line and the working directory, as
 * recordings do). Its name does not depend on the target's length, so a
 * 255-byte name still works. */
static int create_temporary(struct outfile *o)
{
	const char *slash = strrchr(o->path, '/');
	size_t dirlen = slash ? (size_t)(slash - o->path) + 1 : 0;
	size_t len = dirlen + 64;
	unsigned i;
	int err;

	o->tmp = malloc(len);
	if (!o->tmp)
		return -ENOMEM;
	for (i = 0; i < 1000; i++) {
		snprintf(o->tmp, len, "%.*s.gpuwhy-%ld-%u.tmp", (int)dirlen, o->path,
			 (long)getpid(), i);
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (o->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	err = -errno;
	free(o->tmp);
	o->tmp = NULL;
	return err;
}

static int is_input(const struct stat *st, const char *const *inputs)
{
	struct stat in;

	for (; inputs && *inputs; inputs++)
		if (stat(*inputs, &in) == 0 && in.st_dev == st->st_dev && in.st_ino == st->st_ino)
			return 1;
	return 0;
}

/* The first bytes of a file no output replaces, even with OUTFILE_FORCE
 * (outfile_protect): a recording is the one thing a rerun cannot make. */
static char protect_magic[16];
static size_t protect_len;

void outfile_protect(const void *magic, size_t len)
{
	protect_len = len <= sizeof(protect_magic) ? len : 0;
	if (protect_len)
		memcpy(protect_magic, magic, protect_len);
}

/* 1 if the regular file at path begins with the protected bytes. */
static int is_protected(const char *path)
{
	char head[sizeof(protect_magic)];
	ssize_t n;
	int fd;

	if (!protect_len || (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)) < 0)
		return 0;
	do
		n = read(fd, head, protect_len);
	while (n < 0 && errno == EINTR);
	close(fd);
	return n == (ssize_t)protect_len && memcmp(head, protect_magic, protect_len) == 0;
}

/* What is under the name decides (outfile.h): 0 to write a temporary
 * (o->replace set when OUTFILE_FORCE replaces a regular file), 1 to write
 * into the existing device or FIFO, or -errno. */
static int judge_target(struct outfile *o, unsigned flags, const char *const *inputs)
{
	struct stat st, lst;

	if (stat(o->path, &st) != 0) {
		if (errno != ENOENT)
			return -errno;
		if (lstat(o->path, &lst) == 0) /* a link to nothing */
			return flags & OUTFILE_FORCE ? -ELOOP : -EEXIST;
		return errno == ENOENT ? 0 : -errno;
	}
	if (is_input(&st, inputs))
		return -EINVAL;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return 1;
	if (is_protected(o->path))
		return -EPERM;
	if (!(flags & OUTFILE_FORCE))
		return -EEXIST;
	if (lstat(o->path, &lst) != 0)
		return -errno;
	if (!S_ISREG(lst.st_mode)) /* replacing the link would not replace the file */
		return -ELOOP;
	o->replace = 1;
	o->dev = lst.st_dev;
	o->ino = lst.st_ino;
	return 0;
}

int outfile_open(struct outfile *o, const char *path, unsigned flags, const char *const *inputs)
{
	static const cookie_io_functions_t fd_io = { .write = fd_cookie_write };
	static const cookie_io_functions_t gz_io = { .write = gz_cookie_write, .close = gz_cookie_close };
	int err;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->path = path;
	if (strcmp(path, "-") == 0) {
		o->f = stdout;
		o->is_stdout = 1;
		return 0;
	}
	err = judge_target(o, flags, inputs);
	if (err < 0)
		return err;
	if (err == 1) {
		/* a device or a FIFO: written into as the shell's '>' would,
		 * never truncated or removed */
		o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (o->fd < 0)
			return -errno;
	} else {
		err = create_temporary(o);
		if (err)
			return err;
	}
	if (o->tmp && (flags & OUTFILE_GZIP_BY_NAME) && ends_with(path, ".gz")) {
		int fd2 = dup(o->fd); /* gzclose closes it; o->fd stays for fsync */

		o->gz = fd2 >= 0 ? gzdopen(fd2, "wb6") : NULL;
		if (!o->gz) {
			err = fd2 >= 0 ? -ENOMEM : -errno;
			if (fd2 >= 0)
				close(fd2);
			goto fail;
		}
		o->f = fopencookie(o, "w", gz_io);
		if (!o->f) {
			gzclose((gzFile)o->gz);
			o->gz = NULL;
		}
	} else {
		o->f = fopencookie(o, "w", fd_io);
	}
	if (o->f) {
		/* one thread writes it: a cookie stream would otherwise lock on
		 * every call (fputc 8x slower than on a plain file) */
		__fsetlocking(o->f, FSETLOCKING_BYCALLER);
		return 0;
	}
	err = -ENOMEM;
fail:
	close(o->fd);
	o->fd = -1;
	if (o->tmp) {
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
	return err;
}

int outfile_check(const char *path, unsigned flags, const char *const *inputs)
{
	struct outfile o = { .path = path, .fd = -1 };
	int r;

	if (strcmp(path, "-") == 0)
		return 0;
	r = judge_target(&o, flags, inputs);
	return r < 0 ? r : 0;
}

/* Gives the finished temporary its name: without replacing anything that
 * appeared there meanwhile, or (OUTFILE_FORCE) replacing the very file that
 * was judged at open, and nothing else. 0 or -errno. */
static int publish(const struct outfile *o)
{
	struct stat st;

	if (o->replace) {
		if (lstat(o->path, &st) == 0) {
			if (!S_ISREG(st.st_mode) || st.st_dev != o->dev || st.st_ino != o->ino)
				return -ESTALE;
			return rename(o->tmp, o->path) == 0 ? 0 : -errno;
		}
		if (errno != ENOENT)
			return -errno;
	}
	if (renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* a filesystem without RENAME_NOREPLACE: link() refuses to replace too */
	if (link(o->tmp, o->path) == 0) {
		unlink(o->tmp);
		return 0;
	}
	return -errno;
}

int outfile_commit(struct outfile *o)
{
	int err = 0;

	if (!o->f)
		return -EBADF;
	/* the first error's errno, each step's own otherwise */
	errno = 0;
	if (fflush(o->f) != 0 || ferror(o->f))
		err = o->err ? o->err : errno ? errno : EIO;
	if (o->is_stdout) {
		o->f = NULL;
		return -err;
	}
	errno = 0;
	if (fclose(o->f) != 0 && !err)
		err = o->err ? o->err : errno ? errno : EIO;
	o->f = NULL;
	/* on the disk before the name points at it: a crash never leaves an
	 * empty file under the name, or in place of the file replaced */
	if (!err && o->tmp && fsync(o->fd) != 0)
		err = errno;
	if (close(o->fd) != 0 && !err && errno != EINTR)
		err = errno;
	o->fd = -1;
	if (o->tmp) {
		if (!err)
			err = -publish(o);
		if (err)
			unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
	return -err;
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
		return "it exists; gpuwhy does not overwrite files: choose another name, remove it, or "
		       "add --force";
	case -EINVAL:
		return "it is a file being read; choose another name";
	case -EPERM:
		return "it is a gpuwhy recording, which no output replaces, not even with --force: give "
		       "the output another name";
	case -EISDIR:
		return "it is a folder; give a file name";
	case -ELOOP:
		return "it is a symbolic link; --force replaces only a regular file, never through a "
		       "link: give the file's own name";
	case -ESTALE:
		return "it changed while the output was written; nothing was replaced: run again";
	case -ENOSPC:
		return "no space left on the device; the name was left as it was";
	default:
		return strerror(-err);
	}
}

int outfile_write(const char *path, unsigned flags, const char *const *inputs, const char *what,
		  int (*render)(FILE *f, const void *ctx), const void *ctx)
{
	struct outfile o;
	int r = outfile_open(&o, path, flags, inputs);

	if (r < 0) {
		gw_error("cannot write the %s to %s: %s", what, path, outfile_strerror(r));
		return r;
	}
	r = render(o.f, ctx);
	if (r < 0 && !ferror(o.f))
		outfile_abort(&o);
	else
		r = outfile_commit(&o);
	if (r < 0)
		gw_error("writing the %s to %s failed: %s", what, path, outfile_strerror(r));
	else if (strcmp(path, "-"))
		gw_note("%s written to %s", what, path);
	return r < 0 ? r : 0;
}
