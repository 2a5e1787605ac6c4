/* Command-line helpers every command shares: one strict number parser, and
 * the standard descriptors kept occupied. */
#ifndef GPUWHY_ARGS_H
#define GPUWHY_ARGS_H

#include <stdint.h>

/* The whole of s as a finite number (strtod's syntax) in [min, max]: 0, or
 * -EINVAL (empty, not a number, text after it, nan, inf) or -ERANGE. */
int gw_parse_double(const char *s, double min, double max, double *out);
/* The whole of s as a decimal integer in [min, max]: 0, -EINVAL or -ERANGE. */
int gw_parse_long(const char *s, long min, long max, long *out);
/* A size in bytes: a number with an optional K, M or G (powers of 1024) and
 * an optional B, whole string, at most max: 0, -EINVAL or -ERANGE. */
int gw_parse_size(const char *s, uint64_t max, uint64_t *out);

struct option;
/* getopt_long for every command, without glibc's messages (which print
 * the option's bytes raw): one "gpuwhy: error:" line, the option escaped,
 * for an unknown, ambiguous or valueless option, and '?' returned. An
 * option whose val is in file_opts takes a file name: an empty value, or
 * one that starts with '-' other than "-" (standard output), such as the
 * "--" of "--html -- a.gwr", is refused the same way; the vals after a '/'
 * in file_opts take no "-" either (a recording, a folder). Otherwise what
 * getopt_long returns. */
int gw_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
	      const char *file_opts);

/* Opens /dev/null on each of descriptors 0-2 that is closed, so that nothing
 * gpuwhy opens later takes a standard descriptor (a message to stderr would
 * land in the recording). Call first thing in main(). Returns the bit mask
 * (1 << fd) of the descriptors it filled; gw_std_filled keeps it, so that a
 * launched job can get them back closed, as the user gave them. */
unsigned gw_fill_std_fds(void);
extern unsigned gw_std_filled;

#endif
