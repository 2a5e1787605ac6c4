/* Renderers of findings: terminal and JSON, fed by one findings structure. */
#ifndef GPUWHY_REPORT_H
#define GPUWHY_REPORT_H

struct report_opts {
	int verbose;
	int json;
	int color; /* -1 auto (TTY), 0 never, 1 always */
	const char *trace_out; /* also write a Chrome/Perfetto timeline here */
};

/* Analyzes and prints; returns 0, or 1 if a file could not be read at all. */
int report_files(const char **files, int n, const struct report_opts *o);

#endif
