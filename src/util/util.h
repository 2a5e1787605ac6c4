/* Small helpers shared by every part of gpuwhy (not the injection library). */
#ifndef GPUWHY_UTIL_H
#define GPUWHY_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The one clock of a recording: CLOCK_MONOTONIC in ns (docs/FORMAT.md). */
uint64_t gw_now_ns(void);

/* "gpuwhy: error: ..." / "gpuwhy: warning: ..." on stderr. */
void gw_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gw_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gw_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int gw_quiet; /* suppresses notes */

/* Reads a whole small file into buf (NUL-terminated). Returns bytes or -errno. */
ssize_t gw_read_file(const char *path, char *buf, size_t len);
/* MemTotal and MemAvailable from /proc/meminfo, in bytes: 0, or -errno. */
int gw_meminfo(uint64_t *total, uint64_t *avail);
/* Reads one unsigned number from a file; -errno on failure. */
int gw_read_u64(const char *path, uint64_t *out);
/* 1 if a file's base name is a Python interpreter's: python, python3,
 * python3.11. */
int gw_is_python_name(const char *base);

/* Growable string. */
struct strbuf {
	char *s;
	size_t len, cap;
};
int sb_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sb_addn(struct strbuf *sb, const char *s, size_t n);
void sb_free(struct strbuf *sb);

/* Human-readable durations and sizes into buf. */
const char *fmt_ns(char *buf, size_t len, double ns);
const char *fmt_bytes(char *buf, size_t len, double bytes);

/* 1 when the locale's character set is UTF-8 (LC_ALL, else LC_CTYPE, else
 * LANG, as setlocale reads them; the process's own locale is left alone, so
 * numbers keep their '.'): the terminal can show "µs". */
int gw_utf8_locale(void); /* 1, 0, or -ENOMEM */
/* Calls write(out, ctx) and puts what it wrote on f with "us" after a
 * number ("3.6 us") as "µs" (the column count stays the same);
 * with micro 0 write goes to f directly (micro < 0: gw_utf8_locale's
 * -ENOMEM, the same and -ENOMEM returned). 0, or -ENOMEM: no memory for the
 * text, which then went to f as written ("us"). */
int gw_with_units(FILE *f, int micro, void (*write)(FILE *out, const void *ctx), const void *ctx);

/* Prints text wrapped at 78 columns; continuation lines are indented by
 * `indent`; the first line starts at column `col` (its label already printed). */
void fprint_wrapped(FILE *f, const char *text, int indent, int col);

/* CPU lists as the kernel prints them ("0-3,8"). */
int cpulist_contains(const char *list, long cpu);
/* 1 if every CPU of `inner` is in `outer`. */
int cpulist_subset(const char *inner, const char *outer);

/* Practical host<->device bandwidth of a PCIe link, GB/s: about 80% of the
 * raw rate (0.2 GB/s per Gen1 lane, doubling each generation); 0 if unknown. */
double pcie_practical_gbs(unsigned gen, unsigned width);

/* Returns 1 if s starts with prefix. */
int starts_with(const char *s, const char *prefix);
/* Returns 1 if s ends with suffix. */
int ends_with(const char *s, const char *suffix);

/* Colour by default: fd is a terminal, TERM is set and not "dumb", and
 * NO_COLOR is unset or empty (no-color.org: set and non-empty turns colour
 * off). */
int gw_color_auto(int fd);

#endif
