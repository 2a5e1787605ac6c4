/* Streaming JSON writer (bpftool-style): one for every --json path. */
#ifndef GPUWHY_JSON_H
#define GPUWHY_JSON_H

#include <stdint.h>
#include <stdio.h>

struct json {
	FILE *f;
	int depth;
	int first[32]; /* no comma needed before the next item at this depth */
	int pretty;
};

void json_init(struct json *j, FILE *f, int pretty);
void json_obj_begin(struct json *j, const char *key);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j, const char *key);
void json_arr_end(struct json *j);
void json_str(struct json *j, const char *key, const char *v);
void json_strn(struct json *j, const char *key, const char *v, size_t n);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_dbl(struct json *j, const char *key, double v);
/* ns as microseconds with three decimals: exact, whatever the magnitude. */
void json_ns_us(struct json *j, const char *key, int64_t ns);
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);
/* Ends the document with a newline. */
void json_done(struct json *j);

#endif
