/* Renderers of findings: terminal and JSON, fed by one findings structure. */
#ifndef GPUWHY_REPORT_H
#define GPUWHY_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct report_opts {
	int verbose;
	int json;
	int color; /* -1 auto (TTY), 0 never, 1 always */
	const char *trace_out; /* also write a Chrome/Perfetto timeline here */
};

/* The report holds every GPU operation in memory: about this many bytes per
 * byte of a compressed recording (bench/RESULTS.md: 7.6x on the launch-bound
 * input, 6.5x on the healthy one). */
#define REPORT_MEMORY_PER_FILE_BYTE 8

/* A warning for a recording of file_bytes when avail bytes of memory are
 * available: 1 and msg filled when the report may not fit, else 0. */
int report_memory_note(char *msg, size_t len, const char *path, uint64_t file_bytes,
		       uint64_t avail);

/* Analyzes and prints; returns 0, or 1 if a file could not be read at all. */
int report_files(const char **files, int n, const struct report_opts *o);

#endif
