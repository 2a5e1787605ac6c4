/* Text from a recording (command lines, kernel names, paths, environment)
 * shown on a terminal: control characters and bytes that are not UTF-8 are
 * written as visible escapes, so a recording can never move the cursor,
 * retitle the window or break a line. */
#ifndef GPUWHY_ESCAPE_H
#define GPUWHY_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Length (1-4) of the valid UTF-8 sequence at s (n bytes available), or 0:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
size_t utf8_valid_len(const unsigned char *s, size_t n);

/* Writes s[0..n) with every control character, C1 control and invalid
 * byte as \n, \t, \r, \xNN or \u00NN; with keep_lines newline and tab
 * pass, else the text stays on one line. */
void fput_escaped(FILE *f, const char *s, size_t n, int keep_lines);

/* s escaped as fput_escaped(..., 0) writes it (one line), into buf of len
 * bytes, cut to fit; returns buf. */
const char *escape_line(char *buf, size_t len, const char *s);

/* A stream over `out` that escapes what the recording may carry: control
 * characters other than newline and tab, C1 controls and invalid UTF-8.
 * With allow_sgr, colour sequences (ESC [ digits ; m) pass: the report's
 * own colours. Closing it flushes into out (not closed). NULL on failure. */
FILE *term_filter_open(FILE *out, int allow_sgr);

#endif
