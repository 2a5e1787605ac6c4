/* libFuzzer target: the merge of a parts folder (src/record/parts.c) and
 * the report on what it merged. The input is split at SEP into stream
 * files, written into a fresh folder on tmpfs under names the contract
 * gives them (a process's stream, its ring head and segments, gpuwhy's own
 * segments) or a name gpuwhy did not make; parts_merge() appends them to a
 * recording in memory, which is then read, analyzed and rendered as
 * fuzz_report does. Checks what the merge promises: an entry that is not a
 * stream file is never deleted, and every file is either merged (and gone)
 * or kept. Built with -DGW_FUZZING (chunk CRCs skipped). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "record/parts.h"

#define SEP "\nGWPART\n"
#define MAX_FILES 8

static const char *const name_fmt[] = {
	"inject-%u.gws", "inject-%u.head.gws", "inject-%u.%06u.gws", "sampler.%06u.gws",
	"notes-%u.txt",
};

static char tmpl[64];
static int base_fd = -1;

static void remove_base(void)
{
	unlinkat(base_fd, "p", AT_REMOVEDIR);
	rmdir(tmpl);
}

/* The folder all inputs use: /dev/shm where it exists (no disk writes);
 * removed at exit. */
static int base_dir(void)
{
	int fd;

	if (base_fd >= 0)
		return base_fd;
	snprintf(tmpl, sizeof(tmpl), "/dev/shm/gwfuzz-merge-XXXXXX");
	if (!mkdtemp(tmpl)) {
		snprintf(tmpl, sizeof(tmpl), "/tmp/gwfuzz-merge-XXXXXX");
		if (!mkdtemp(tmpl))
			abort();
	}
	fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		abort();
	base_fd = fd;
	atexit(remove_base);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char names[MAX_FILES][64];
	int base = base_dir(), dfd, out, nfiles = 0;
	const uint8_t *p = data, *end = data + size;
	struct gw_writer w;
	struct parts_merge m;
	struct stat st;

	unlinkat(base, "p", AT_REMOVEDIR);
	if (mkdirat(base, "p", 0700) < 0 || (dfd = openat(base, "p", O_RDONLY | O_DIRECTORY)) < 0)
		abort();
	/* each piece's first byte picks its name; the rest is the file */
	while (p < end && nfiles < MAX_FILES) {
		const uint8_t *q = memmem(p, (size_t)(end - p), SEP, strlen(SEP));
		const uint8_t *stop = q ? q : end;
		unsigned pick = *p % (unsigned)(sizeof(name_fmt) / sizeof(name_fmt[0]));
		int fd;

		snprintf(names[nfiles], sizeof(names[0]), name_fmt[pick], (unsigned)nfiles + 1,
			 (unsigned)nfiles + 1);
		fd = openat(dfd, names[nfiles], O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd >= 0) {
			if (write(fd, p + 1, (size_t)(stop - p - 1)) < 0)
				abort();
			close(fd);
			nfiles++;
		}
		p = q ? q + strlen(SEP) : end;
	}
	out = memfd_create("gwmerge", 0);
	if (out < 0 || gw_write_file_header(out) < 0 || gw_writer_init(&w, out, 0, size % 3 ? 0 : 1, 4096) < 0)
		abort();
	if (parts_merge(dfd, &w, &m) < 0)
		abort();
	for (int i = 0; i < nfiles; i++) {
		int gone = fstatat(dfd, names[i], &st, 0) < 0;

		if (gone && !parts_name_kind(names[i]))
			abort(); /* a file gpuwhy did not make was deleted */
		if (!gone && parts_name_kind(names[i]) && m.lost == 0)
			abort(); /* a stream file neither merged nor kept as lost */
		if (!gone)
			unlinkat(dfd, names[i], 0);
	}
	if (m.files + m.lost + m.foreign != (unsigned)nfiles)
		abort();
	gw_writer_free(&w);
	close(dfd);
	fuzz_report_fd(out, size);
	close(out);
	return 0;
}
