/* src/util/outfile.c: an output is written whole or not at all, and never
 * replaces, truncates or removes a file gpuwhy did not create. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/outfile.h"
#include "t.h"

static char dir[] = "/tmp/gpuwhy-outfile-XXXXXX";

static const char *at(const char *name)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

static int same_text(const char *path, const char *text)
{
	char buf[256] = "";
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strcmp(buf, text) == 0;
}

/* Files in the folder other than the ones the test made: a leftover
 * temporary would show here. */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int main(void)
{
	struct outfile o;
	struct stat st;
	int r;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}

	/* a new name: written, published, no temporary left */
	r = outfile_open(&o, at("new.json"), 0, NULL);
	CHECK(r == 0, "open new: %d", r);
	CHECK(stat(at("new.json"), &st) != 0, "nothing under the name before commit");
	fputs("{\"a\":1}", o.f);
	r = outfile_commit(&o);
	CHECK(r == 0 && same_text(at("new.json"), "{\"a\":1}"), "commit: %d", r);
	CHECK(entries() == 1, "one file after commit, got %d", entries());

	/* an existing regular file is refused and left as it was */
	put(at("mine.json"), "precious");
	r = outfile_open(&o, at("mine.json"), 0, NULL);
	CHECK(r == -EEXIST, "existing file refused: %d", r);
	CHECK(same_text(at("mine.json"), "precious"), "existing file untouched");

	/* a file that begins with the protected bytes (a recording) is never
	 * replaced, not even with OUTFILE_FORCE; others still are */
	outfile_protect("GWREC\n", 6);
	put(at("rec.gwr"), "GWREC\nbody");
	r = outfile_open(&o, at("rec.gwr"), OUTFILE_FORCE, NULL);
	CHECK(r == -EPERM, "a protected file refused with --force: %d", r);
	CHECK(outfile_check(at("rec.gwr"), OUTFILE_FORCE, NULL) == -EPERM, "check says the same");
	CHECK(same_text(at("rec.gwr"), "GWREC\nbody"), "protected file untouched");
	CHECK(strstr(outfile_strerror(-EPERM), "recording") != NULL, "the refusal says it is a recording");
	put(at("short.txt"), "GWR");
	r = outfile_open(&o, at("short.txt"), OUTFILE_FORCE, NULL);
	CHECK(r == 0, "a file shorter than the protected bytes is no recording: %d", r);
	outfile_abort(&o);
	outfile_protect(NULL, 0);
	unlink(at("rec.gwr"));
	unlink(at("short.txt"));

	/* an input is refused as an input, even when given by another name */
	put(at("in.gwr"), "recording");
	{
		const char *inputs[] = {at("in.gwr"), NULL};

		CHECK(symlink(at("in.gwr"), at("alias")) == 0, "symlink");
		r = outfile_open(&o, at("alias"), 0, inputs);
		CHECK(r == -EINVAL, "output equal to an input refused: %d", r);
		CHECK(same_text(at("in.gwr"), "recording"), "input untouched");
	}

	/* aborted: nothing under the name, no temporary */
	r = outfile_open(&o, at("aborted.json"), 0, NULL);
	CHECK(r == 0, "open: %d", r);
	fputs("half", o.f);
	outfile_abort(&o);
	CHECK(stat(at("aborted.json"), &st) != 0, "aborted output absent");
	CHECK(entries() == 4, "no temporary left after abort: %d entries", entries());

	/* a folder, a missing folder */
	CHECK(outfile_open(&o, dir, 0, NULL) == -EISDIR, "folder refused");
	CHECK(outfile_open(&o, at("nope/x.json"), 0, NULL) == -ENOENT, "missing folder");

	/* a device is written directly and stays a device */
	r = outfile_open(&o, "/dev/null", 0, NULL);
	CHECK(r == 0, "open /dev/null: %d", r);
	if (!r) {
		fputs("x", o.f);
		r = outfile_commit(&o);
		CHECK(r == 0, "commit /dev/null: %d", r);
	}
	CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null still a device");

	/* a full device: the error surfaces at commit */
	if (stat("/dev/full", &st) == 0) {
		r = outfile_open(&o, "/dev/full", 0, NULL);
		CHECK(r == 0, "open /dev/full: %d", r);
		if (!r) {
			fputs("x", o.f);
			r = outfile_commit(&o);
			CHECK(r == -ENOSPC, "commit to /dev/full: %d", r);
		}
	}

	/* gzip by name, and not without the flag */
	r = outfile_open(&o, at("t.json.gz"), OUTFILE_GZIP_BY_NAME, NULL);
	CHECK(r == 0, "open gz: %d", r);
	if (!r) {
		int i;

		for (i = 0; i < 10000; i++)
			fprintf(o.f, "line %d\n", i);
		r = outfile_commit(&o);
		CHECK(r == 0, "commit gz: %d", r);
	}
	{
		gzFile g = gzopen(at("t.json.gz"), "rb");
		char buf[32] = "";
		int direct = g ? gzdirect(g) : 1;

		if (g) {
			gzgets(g, buf, sizeof(buf));
			gzclose(g);
		}
		CHECK(!direct && strcmp(buf, "line 0\n") == 0, "gzip readable: direct %d '%s'", direct, buf);
	}
	r = outfile_open(&o, at("plain.gz"), 0, NULL);
	if (!r) {
		fputs("plain", o.f);
		r = outfile_commit(&o);
	}
	CHECK(r == 0 && same_text(at("plain.gz"), "plain"), "no gzip without the flag: %d", r);

	/* a 255-byte name (the longest a folder entry can have) */
	{
		char name[256];

		memset(name, 'n', 255);
		name[255] = 0;
		r = outfile_open(&o, at(name), 0, NULL);
		CHECK(r == 0, "open a 255-byte name: %d", r);
		if (!r) {
			fputs("long", o.f);
			r = outfile_commit(&o);
			CHECK(r == 0 && same_text(at(name), "long"), "commit a 255-byte name: %d", r);
		}
	}

	/* a name that appeared while writing is not replaced */
	r = outfile_open(&o, at("race.json"), 0, NULL);
	CHECK(r == 0, "open race: %d", r);
	if (!r) {
		put(at("race.json"), "theirs");
		fputs("ours", o.f);
		r = outfile_commit(&o);
		CHECK(r == -EEXIST && same_text(at("race.json"), "theirs"), "no replace on race: %d", r);
	}

	/* a full device, the writer stopping at the first error as the
	 * renderers do: the error is the device's own (ENOSPC), not the EIO
	 * that ferror() alone says once stdio's buffer is empty */
	if (stat("/dev/full", &st) == 0) {
		r = outfile_open(&o, "/dev/full", 0, NULL);
		if (!r) {
			for (int i = 0; i < 20000 && !ferror(o.f); i++)
				fprintf(o.f, "line %d\n", i);
			r = outfile_commit(&o);
			CHECK(r == -ENOSPC, "a long write to /dev/full: %d (%s)", r, strerror(-r));
		}
	}

	/* a report holds the command line: readable by the user alone, whatever the umask */
	{
		mode_t old = umask(022);

		r = outfile_open(&o, at("private.json"), 0, NULL);
		if (!r) {
			fputs("{}", o.f);
			r = outfile_commit(&o);
		}
		umask(old);
		CHECK(r == 0 && stat(at("private.json"), &st) == 0 && (st.st_mode & 0777) == 0600,
		      "new output mode %o, want 600", r ? 0 : (unsigned)(st.st_mode & 0777));
	}

	/* OUTFILE_FORCE replaces a regular file whole, with a new file of mode 0600 */
	{
		struct stat before;

		put(at("old.json"), "old");
		chmod(at("old.json"), 0644);
		stat(at("old.json"), &before);
		r = outfile_open(&o, at("old.json"), OUTFILE_FORCE, NULL);
		CHECK(r == 0, "force open over a file: %d", r);
		if (!r) {
			CHECK(same_text(at("old.json"), "old"), "the old file stays whole while writing");
			fputs("new", o.f);
			r = outfile_commit(&o);
			CHECK(r == 0 && same_text(at("old.json"), "new"), "force commit: %d", r);
			CHECK(stat(at("old.json"), &st) == 0 && (st.st_mode & 0777) == 0600 &&
				      st.st_ino != before.st_ino,
			      "replaced by a new file of mode 600: mode %o", (unsigned)(st.st_mode & 0777));
		}
		/* aborted: the old file is left as it was */
		r = outfile_open(&o, at("old.json"), OUTFILE_FORCE, NULL);
		if (!r) {
			fputs("half", o.f);
			outfile_abort(&o);
		}
		CHECK(same_text(at("old.json"), "new"), "an aborted replace left the old file");
		/* the name taken by another file meanwhile: nothing replaced */
		r = outfile_open(&o, at("old.json"), OUTFILE_FORCE, NULL);
		if (!r) {
			CHECK(rename(at("mine.json"), at("old.json")) == 0, "rename");
			fputs("ours", o.f);
			r = outfile_commit(&o);
			CHECK(r == -ESTALE && same_text(at("old.json"), "precious"),
			      "a file swapped in while writing is not replaced: %d", r);
		}
		/* the name removed meanwhile: written as new */
		r = outfile_open(&o, at("old.json"), OUTFILE_FORCE, NULL);
		if (!r) {
			unlink(at("old.json"));
			fputs("again", o.f);
			r = outfile_commit(&o);
			CHECK(r == 0 && same_text(at("old.json"), "again"), "force after removal: %d", r);
		}
	}

	/* OUTFILE_FORCE never writes through a link nor replaces one, never an input */
	{
		const char *inputs[] = {at("in.gwr"), NULL};

		put(at("target.json"), "target");
		CHECK(symlink(at("target.json"), at("link.json")) == 0, "symlink");
		r = outfile_open(&o, at("link.json"), OUTFILE_FORCE, NULL);
		CHECK(r == -ELOOP, "force onto a link to a file: %d", r);
		CHECK(same_text(at("target.json"), "target"), "the link's target untouched");
		CHECK(lstat(at("link.json"), &st) == 0 && S_ISLNK(st.st_mode), "the link stays a link");
		CHECK(outfile_open(&o, at("link.json"), 0, NULL) == -EEXIST, "a link to a file without force");
		CHECK(symlink(at("nowhere"), at("dangling")) == 0, "symlink");
		r = outfile_open(&o, at("dangling"), OUTFILE_FORCE, NULL);
		CHECK(r == -ELOOP && stat(at("nowhere"), &st) != 0, "force onto a dangling link: %d", r);
		r = outfile_open(&o, at("in.gwr"), OUTFILE_FORCE, inputs);
		CHECK(r == -EINVAL && same_text(at("in.gwr"), "recording"), "force onto an input: %d", r);
		CHECK(link(at("in.gwr"), at("hard.gwr")) == 0, "hard link");
		r = outfile_open(&o, at("hard.gwr"), OUTFILE_FORCE, inputs);
		CHECK(r == -EINVAL, "force onto a hard link of an input: %d", r);
		CHECK(outfile_open(&o, dir, OUTFILE_FORCE, NULL) == -EISDIR, "force onto a folder");
		r = outfile_open(&o, "/dev/null", OUTFILE_FORCE, NULL);
		if (!r) {
			fputs("x", o.f);
			r = outfile_commit(&o);
		}
		CHECK(r == 0 && stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode),
		      "force into a device writes into it: %d", r);
	}

	CHECK(strstr(outfile_strerror(-EEXIST), "remove") != NULL, "EEXIST message says what to do");
	CHECK(strstr(outfile_strerror(-EEXIST), "--force") != NULL, "EEXIST message names --force");

	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			printf("note: could not remove %s\n", dir);
	}
	T_DONE();
}
