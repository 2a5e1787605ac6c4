/* An output file that is written whole or not at all, and never destroys
 * what gpuwhy did not create.
 *
 *   "-"                      standard output
 *   a name that does not exist  a temporary file (mode 0600) in the same
 *                            folder, flushed to the disk (fsync) and given
 *                            the name on commit (renameat2 RENAME_NOREPLACE,
 *                            else link): a failed or aborted write leaves
 *                            nothing under the name
 *   an existing regular file -EEXIST: never overwritten; with OUTFILE_FORCE
 *                            replaced on commit by rename(), only if the
 *                            name still holds that same file (else -ESTALE),
 *                            so a failure leaves the old file whole
 *   a symbolic link to a     -EEXIST; with OUTFILE_FORCE -ELOOP: never
 *   regular file, or to      written through, never replaced
 *   nothing
 *   one of the inputs        -EINVAL (checked first: st_dev and st_ino),
 *                            whatever the flags
 *   a regular file that      -EPERM whatever the flags: a recording is never
 *   begins with the bytes    replaced by an output
 *   outfile_protect() names
 *   an existing non-regular  (/dev/null, a FIFO, /dev/stdout) opened and
 *   file                     written directly; never truncated or removed
 *   a folder                 -EISDIR
 *
 * With OUTFILE_GZIP_BY_NAME a name ending in ".gz" is written compressed
 * (gzip, which Perfetto and zcat open). Every write error, including a
 * full disk discovered at the last flush, surfaces as -errno from
 * outfile_commit(): the first error's own errno (ENOSPC, EDQUOT...), kept
 * through write, flush, fsync, close and rename. */
#ifndef GPUWHY_OUTFILE_H
#define GPUWHY_OUTFILE_H

#include <stdio.h>
#include <sys/types.h>

#define OUTFILE_GZIP_BY_NAME 1u
#define OUTFILE_FORCE 2u /* replace an existing regular file (see above) */

struct outfile {
	FILE *f;          /* write here */
	const char *path; /* the name given */
	char *tmp;        /* the temporary, NULL when written directly */
	int fd;           /* the temporary's descriptor while f is open; -1 */
	void *gz;         /* the gzip stream (gzFile) when compressing */
	int is_stdout;
	int err;          /* the first write error (errno) */
	int replace;      /* OUTFILE_FORCE: the regular file dev/ino is replaced */
	dev_t dev;
	ino_t ino;
};

/* 0 or -errno; on failure nothing was created. The stream refers to *o:
 * o must stay where it is until commit or abort, and one thread at a time
 * writes to o->f (it takes no lock). `inputs` is NULL or a
 * NULL-terminated list of files being read, which the output must not be. */
int outfile_open(struct outfile *o, const char *path, unsigned flags,
		 const char *const *inputs) __attribute__((warn_unused_result));
/* What outfile_open() would refuse now, without creating anything (a
 * command's check before the work): 0 or the same -errno. */
int outfile_check(const char *path, unsigned flags, const char *const *inputs);
/* Flushes, checks every error, closes and publishes: 0 or -errno. On
 * failure the temporary is removed and the name left as it was. Standard
 * output is flushed and checked but left open. */
int outfile_commit(struct outfile *o) __attribute__((warn_unused_result));
/* Drops the temporary (the name is never touched). */
void outfile_abort(struct outfile *o);
/* Files beginning with these bytes (at most 16) are never replaced, not
 * even with OUTFILE_FORCE: -EPERM. Called once at start-up (main). */
void outfile_protect(const void *magic, size_t len);
/* What a -errno of outfile_open/commit means for the user, with what to do. */
const char *outfile_strerror(int err);
/* A whole output in one call: opens path, hands its stream to render (a
 * result < 0: it failed), then commits, or aborts where rendering failed
 * without a write error (a write error is committed, so that commit says
 * which: a full disk, not just EIO); says what went wrong, or that `what`
 * was written to a file. 0 or -errno. */
int outfile_write(const char *path, unsigned flags, const char *const *inputs, const char *what,
		  int (*render)(FILE *f, const void *ctx), const void *ctx);

#endif
