/* gpuwhy dump: every record of a recording, as text or JSON lines, driven by
 * the schema table so a new field shows up here without code. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../format/format.h"
#include "../util/args.h"
#include "../util/escape.h"
#include "../util/json.h"
#include "../util/kname.h"
#include "../util/util.h"
#include "cmds.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuwhy dump [--json] [--demangle] [--type NAME[,NAME...]] FILE\n"
		   "       gpuwhy dump --schema\n\n"
		   "Print the records of a recording, one per line, for debugging or for your\n"
		   "own analysis. Strings (kernel names, command lines) are resolved.\n\n"
		   "options:\n"
		   "      --json        JSON lines: {\"type\":..., \"producer\":..., fields...}\n"
		   "  -t, --type LIST   only these record types (e.g. kernel,memcpy,meta)\n"
		   "  -C, --demangle    C++ kernel names demangled (as recorded otherwise)\n"
		   "      --schema      print the record schema (Markdown) and exit\n"
		   "  -h, --help        this help\n\n"
		   "Record types and fields are specified in docs/FORMAT.md.\n\n"
		   "exit status: 0 printed; 1 the file could not be read; 2 bad arguments; 3 the\n"
		   "file is damaged or cut short (every intact record was printed; a warning says\n"
		   "what was skipped).\n");
}

static int type_wanted(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!list)
		return 1;
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
			return 1;
	return 0;
}

/* Every name of a --type list is a record type, and there is at least
 * one (an empty list or an empty name would select nothing, or be taken
 * for everything): 0, or -1 after saying which is wrong and listing the
 * types. */
static int types_valid(const char *list)
{
	const char *p = list;

	for (;;) {
		size_t n = strcspn(p, ",");
		int found = 0;

		for (unsigned t = 0; t < GW_REC_TYPE_MAX && !found; t++) {
			const struct gw_rec_desc *d = gw_rec_desc(t);

			found = n && d && strlen(d->name) == n && !strncmp(d->name, p, n);
		}
		if (!found) {
			if (!*list)
				gw_error("--type wants a list of record types, not an empty one; the types are:");
			else if (!n)
				gw_error("--type '%s' has an empty name; the types are:", list);
			else
				gw_error("--type: no record type '%.*s'; the types are:", (int)n, p);
			for (unsigned t = 0; t < GW_REC_TYPE_MAX; t++)
				if (gw_rec_desc(t))
					fprintf(stderr, " %s", gw_rec_desc(t)->name);
			fputc('\n', stderr);
			return -1;
		}
		p += n;
		if (!*p)
			return 0;
		p++; /* the comma: a name must follow */
	}
}

/* --demangle: each string demangled once, by its stream and id; NULL: off */
static struct kname_cache *demangled;

static const char *shown(const char *s, uint32_t stream, uint64_t id)
{
	return demangled ? kname_cached(demangled, (uint64_t)stream << 32 | (id & 0xffffffffu), s, KNAME_FULL) : s;
}

static void dump_one(struct gw_reader *rd, const struct gw_record *rec, int as_json)
{
	const struct gw_rec_desc *d = gw_rec_desc(rec->type);
	struct json j;

	if (as_json) {
		json_init(&j, stdout, 0);
		json_obj_begin(&j, NULL);
		json_str(&j, "type", d->name);
		/* the chunk's stream (docs/FORMAT.md): "stream" is a field of
		 * several records (a CUDA stream) */
		json_u64(&j, "producer", rec->stream);
	} else {
		printf("%-12s %-7u", d->name, rec->stream);
	}
	if (rec->type == GW_REC_STRING && demangled) {
		/* a string (re)defined: shown demangled, through its own copy */
		uint64_t key = (uint64_t)rec->stream << 32 | (rec->v[0] & 0xffffffffu);
		const char *s = gw_reader_string(rd, rec->stream, rec->v[0]);

		kname_cache_drop(demangled, key);
		s = kname_cached(demangled, key, s, KNAME_FULL);
		if (as_json) {
			json_u64(&j, "id", rec->v[0]);
			json_str(&j, "value", s);
		} else {
			printf(" id=%llu value=", (unsigned long long)rec->v[0]);
			fput_escaped(stdout, s, strlen(s), 0);
		}
	} else if (rec->type == GW_REC_STRING || rec->type == GW_REC_META) {
		const char *k = rec->type == GW_REC_STRING ? "id" : "key";

		if (as_json) {
			if (rec->type == GW_REC_STRING)
				json_u64(&j, k, rec->v[0]);
			else
				json_strn(&j, k, (const char *)rec->blob, rec->blob_len);
			json_strn(&j, "value",
				  (const char *)(rec->type == GW_REC_STRING ? rec->blob : rec->blob2),
				  rec->type == GW_REC_STRING ? rec->blob_len : rec->blob2_len);
		} else if (rec->type == GW_REC_STRING) {
			/* one line per record, whatever the bytes */
			printf(" id=%llu value=", (unsigned long long)rec->v[0]);
			fput_escaped(stdout, (const char *)rec->blob, rec->blob_len, 0);
		} else {
			putchar(' ');
			fput_escaped(stdout, (const char *)rec->blob, rec->blob_len, 0);
			putchar('=');
			fput_escaped(stdout, (const char *)rec->blob2, rec->blob2_len, 0);
		}
	} else {
		for (unsigned i = 0; i < d->nfields; i++) {
			const struct gw_field_desc *f = &d->fields[i];
			uint64_t v = rec->v[i];

			if (f->kind == GW_F_S) {
				const char *s = shown(gw_reader_string(rd, rec->stream, v), rec->stream, v);

				if (as_json)
					json_str(&j, f->name, s);
				else {
					printf(" %s=", f->name);
					fput_escaped(stdout, s, strlen(s), 0);
				}
			} else if (f->kind == GW_F_I) {
				if (as_json)
					json_i64(&j, f->name, (int64_t)v);
				else
					printf(" %s=%lld", f->name, (long long)(int64_t)v);
			} else if (as_json) {
				json_u64(&j, f->name, v);
			} else {
				printf(" %s=%llu", f->name, (unsigned long long)v);
			}
		}
	}
	if (as_json) {
		json_obj_end(&j);
		json_done(&j);
	} else {
		putchar('\n');
	}
}

/* The schema table as Markdown: docs/FORMAT.md embeds this output. */
static void print_schema(void)
{
	static const char *const kinds[] = { ['u'] = "uvarint", ['i'] = "signed (zigzag)",
					     ['t'] = "time (delta)", ['d'] = "time (offset)",
					     ['s'] = "string id" };

	printf("| type | name | fields (encoding) |\n|---|---|---|\n");
	for (unsigned t = 0; t < GW_REC_TYPE_MAX; t++) {
		const struct gw_rec_desc *d = gw_rec_desc(t);

		if (!d)
			continue;
		printf("| %u | %s | ", t, d->name);
		if (t == GW_REC_STRING)
			printf("id (uvarint), then the string's bytes to the end of the record");
		else if (t == GW_REC_META)
			printf("key length (uvarint), key bytes, then the value's bytes to the end");
		for (unsigned i = 0; t != GW_REC_STRING && i < d->nfields; i++)
			printf("%s%s (%s)", i ? ", " : "", d->fields[i].name,
			       kinds[(unsigned char)d->fields[i].kind]);
		printf(" |\n");
	}
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, 0, 'j' },
		{ "type", required_argument, 0, 't' },
		{ "demangle", no_argument, 0, 'C' },
		{ "schema", no_argument, 0, 's' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *types = NULL;
	int c, as_json = 0, demangle = 0, ret = 0;
	struct gw_reader *rd;
	struct gw_record rec;
	char err[512];

	optind = 1;
	while ((c = gw_getopt(argc, argv, "t:Ch", longopts, "")) != -1) {
		switch (c) {
		case 'j': as_json = 1; break;
		case 't': types = optarg; break;
		case 'C': demangle = 1; break;
		case 's': print_schema(); return 0;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "'gpuwhy dump --help' lists the options\n");
			return 2;
		}
	}
	if (types && types_valid(types) < 0)
		return 2;
	if (optind != argc - 1) {
		gw_error("dump wants exactly one recording: gpuwhy dump FILE");
		return 2;
	}
	if (gw_reader_open(&rd, argv[optind], err, sizeof(err)) < 0) {
		gw_error("%s", err);
		return 1;
	}
	if (demangle && !(demangled = kname_cache_new())) {
		gw_error("out of memory");
		gw_reader_close(rd);
		return 1;
	}
	while (gw_reader_next(rd, &rec) == 1 && !ferror(stdout)) {
		if (type_wanted(types, gw_rec_desc(rec.type)->name))
			dump_one(rd, &rec, as_json);
	}
	/* a write error (a full disk, a closed pipe) is said at exit (main.c);
	 * the reading stopped early then, which says nothing of the file */
	fflush(stdout);
	if (ferror(stdout)) {
		ret = 1;
	} else {
		/* the verdict every command gives; .gws files (the injection
		 * library's streams, ring segments) have no end record */
		size_t len = strlen(argv[optind]);
		struct gw_verdict v;
		char why[1024];

		gw_reader_verdict(rd, !(len > 4 && !strcmp(argv[optind] + len - 4, ".gws")), &v);
		if (gw_verdict_exit(&v)) {
			gw_verdict_describe(&v, why, sizeof(why));
			gw_warn("%s: %s", argv[optind], why);
			ret = gw_verdict_exit(&v);
		}
	}
	gw_reader_close(rd);
	kname_cache_free(demangled);
	demangled = NULL;
	return ret;
}
