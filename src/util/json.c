#include <math.h>
#include <string.h>

#include "escape.h"
#include "json.h"

void json_init(struct json *j, FILE *f, int pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
	j->first[0] = 1;
}

/* Always valid JSON: controls as \uXXXX, bytes that are not UTF-8 as
 * U+FFFD (a recording's strings are whatever the program handed CUDA). */
static void escaped(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, start = 0;

	fputc('"', f);
	while (i < n) {
		unsigned char c = p[i];
		size_t k = c < 0x80 ? 1 : utf8_valid_len(p + i, n - i);
		const char *rep = NULL;
		char u[8];

		if (c == '"')
			rep = "\\\"";
		else if (c == '\\')
			rep = "\\\\";
		else if (c == '\n')
			rep = "\\n";
		else if (c == '\t')
			rep = "\\t";
		else if (c < 0x20 || c == 0x7f)
			snprintf(u, sizeof(u), "\\u%04x", c), rep = u;
		else if (!k)
			rep = "\xef\xbf\xbd"; /* U+FFFD */
		if (rep) {
			fwrite(p + start, 1, i - start, f);
			fputs(rep, f);
			i += k ? k : 1;
			start = i;
		} else {
			i += k;
		}
	}
	fwrite(p + start, 1, n - start, f);
	fputc('"', f);
}

static void item(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = 0;
	if (j->pretty && j->depth) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	if (key) {
		escaped(j->f, key, strlen(key));
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open_(struct json *j, const char *key, char c)
{
	item(j, key);
	fputc(c, j->f);
	if (j->depth < 31)
		j->depth++;
	j->first[j->depth] = 1;
}

static void close_(struct json *j, char c)
{
	int empty = j->first[j->depth];

	if (j->depth)
		j->depth--;
	if (j->pretty && !empty) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(c, j->f);
}

void json_obj_begin(struct json *j, const char *key) { open_(j, key, '{'); }
void json_obj_end(struct json *j) { close_(j, '}'); }
void json_arr_begin(struct json *j, const char *key) { open_(j, key, '['); }
void json_arr_end(struct json *j) { close_(j, ']'); }

void json_strn(struct json *j, const char *key, const char *v, size_t n)
{
	item(j, key);
	escaped(j->f, v, n);
}

void json_str(struct json *j, const char *key, const char *v)
{
	if (!v) {
		json_null(j, key);
		return;
	}
	json_strn(j, key, v, strlen(v));
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
	item(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_i64(struct json *j, const char *key, int64_t v)
{
	item(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void json_dbl(struct json *j, const char *key, double v)
{
	item(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);
}

void json_ns_us(struct json *j, const char *key, int64_t ns)
{
	uint64_t a = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;

	item(j, key);
	fprintf(j->f, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000),
		(unsigned long long)(a % 1000));
}

void json_bool(struct json *j, const char *key, int v)
{
	item(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	item(j, key);
	fputs("null", j->f);
}

void json_done(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}
