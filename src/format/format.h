/* The gpuwhy recording format (docs/FORMAT.md): one writer and one reader,
 * shared by the gpuwhy executable and the injection library.
 *
 * A file is a 16-byte header followed by self-delimiting chunks. Each chunk
 * carries a CRC and a stream id (the pid that produced it, 0 for gpuwhy's
 * own samplers), so chunks from several producers can simply be
 * concatenated, a file cut at any byte still reads up to the cut, and a
 * reader passes over damaged bytes to the next chunk that validates.
 * Records inside a chunk are varint-coded against a schema table
 * (schema.c); time fields are delta-coded from the previous time field of
 * the chunk, so every chunk decodes on its own except for string ids,
 * which are interned per stream.
 *
 * Ownership: a writer owns its buffers and intern table; the reader owns
 * every string it hands out until gw_reader_close().
 */
#ifndef GPUWHY_FORMAT_H
#define GPUWHY_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GW_MAGIC "GPUWHY\x1a\n" /* 8 bytes */
#define GW_VERSION_MAJOR 1
#define GW_VERSION_MINOR 0
#define GW_FILE_HEADER_SIZE 16
#define GW_CHUNK_MAGIC 0x31435747u /* "GWC1" little endian */
#define GW_CHUNK_HEADER_SIZE 24
#define GW_CHUNK_ZLIB 0x1u
#define GW_CHUNK_MAX_RAW (4u << 20) /* reader refuses larger chunks */
/* What a file's chunks may inflate to in all: 16 times the file's size
 * (real recordings inflate 1.9x to 4.4x) plus 8 MiB. A reader stops at the
 * chunk that would pass it (a compression bomb: docs/FORMAT.md "Damage"). */
#define GW_INFLATE_LIMIT(file_bytes) (((uint64_t)8 << 20) + (uint64_t)(file_bytes) * 16)
#define GW_MAX_FIELDS 24
/* GPUs one recording describes and the analysis summarizes: device
 * indexes 0..GW_MAX_GPUS-1; operations and samples of others are left out. */
#define GW_MAX_GPUS 16

/* Record types. Numbers are part of the format: never reuse one. */
enum gw_rec_type {
	GW_REC_STRING = 1,       /* interned string: id, bytes */
	GW_REC_META = 2,         /* key/value metadata: key, value */
	GW_REC_KERNEL = 10,
	GW_REC_MEMCPY = 11,
	GW_REC_MEMSET = 12,
	GW_REC_SYNC = 13,
	GW_REC_API = 14,
	GW_REC_MARKER = 15,
	GW_REC_OVERHEAD = 16,
	GW_REC_DROPS = 17,
	GW_REC_INJECT_EVENT = 18,
	GW_REC_THREAD = 20,
	GW_REC_THREAD_NAME = 21,
	GW_REC_PROCESS = 22,
	GW_REC_PROC_IO = 23,
	GW_REC_PROC_EXIT = 24,
	GW_REC_SYS_CPU = 25,
	GW_REC_PROC_LIBS = 26,   /* runtime libraries mapped into a process (framework) */
	GW_REC_GPU = 30,
	GW_REC_GPM = 31,
	GW_REC_PCIE = 32,
	GW_REC_GPU_INFO = 40,
	GW_REC_PY_FRAME = 50,  /* a Python frame: id, file, function, line */
	GW_REC_PY_STACK = 51,  /* a node of the stack trie: id, parent (0 = root), frame */
	GW_REC_PY_SAMPLE = 52, /* a thread's Python stack at a time */
	GW_REC_PY_STATUS = 53, /* a process's stacks: why none, samples taken and dropped */
	GW_REC_TYPE_MAX = 64
};

/* inject_event codes: what happened inside the injection library. */
enum gw_inject_event {
	GW_IEV_STARTED = 1,     /* value: CUPTI version */
	GW_IEV_CUPTI_ERROR = 2, /* detail: call and error; value: CUPTI error code */
	GW_IEV_CUPTI_BUSY = 3,  /* another tool holds CUPTI's callback API */
	GW_IEV_NO_FLUSHER = 4,  /* periodic flush thread could not start */
	GW_IEV_FINISHED = 5,    /* clean exit flush */
	GW_IEV_TRACE_ON = 6,    /* duty cycle: tracing window opens */
	GW_IEV_TRACE_OFF = 7,   /* duty cycle: tracing window closes */
	GW_IEV_NO_CUPTI = 8,    /* no usable CUPTI: detail says what was found or what to install */
};

/* Field encodings. */
enum gw_field_kind {
	GW_F_U = 'u', /* unsigned varint */
	GW_F_I = 'i', /* signed, zigzag varint */
	GW_F_T = 't', /* absolute ns timestamp, delta from the chunk's last time */
	GW_F_D = 'd', /* ns timestamp coded as an unsigned offset from the record's previous 't' */
	GW_F_S = 's', /* string id (per stream); 0 means none */
};

struct gw_field_desc {
	const char *name;
	char kind;
};

struct gw_rec_desc {
	const char *name; /* NULL: type unknown to this version */
	uint8_t nfields;
	struct gw_field_desc fields[GW_MAX_FIELDS];
};

const struct gw_rec_desc *gw_rec_desc(unsigned type);
/* Index of a field by name in a record type, or -1. */
int gw_field_index(unsigned type, const char *name);

/* Field indexes used by code. They must match schema.c (checked by a unit test). */
enum { GW_KERNEL_START, GW_KERNEL_END, GW_KERNEL_NAME, GW_KERNEL_DEVICE, GW_KERNEL_CONTEXT,
       GW_KERNEL_STREAM, GW_KERNEL_GX, GW_KERNEL_GY, GW_KERNEL_GZ, GW_KERNEL_BX, GW_KERNEL_BY,
       GW_KERNEL_BZ, GW_KERNEL_CORR, GW_KERNEL_REGS, GW_KERNEL_SHMEM, GW_KERNEL_GRAPH,
       GW_KERNEL_NF };
enum { GW_MEMCPY_START, GW_MEMCPY_END, GW_MEMCPY_KIND, GW_MEMCPY_SRC, GW_MEMCPY_DST,
       GW_MEMCPY_BYTES, GW_MEMCPY_ASYNC, GW_MEMCPY_DEVICE, GW_MEMCPY_STREAM, GW_MEMCPY_CORR,
       GW_MEMCPY_NF };
enum { GW_MEMSET_START, GW_MEMSET_END, GW_MEMSET_BYTES, GW_MEMSET_MEMKIND, GW_MEMSET_ASYNC,
       GW_MEMSET_DEVICE, GW_MEMSET_STREAM, GW_MEMSET_CORR, GW_MEMSET_NF };
enum { GW_SYNC_START, GW_SYNC_END, GW_SYNC_TYPE, GW_SYNC_STREAM, GW_SYNC_CORR, GW_SYNC_NF };
enum { GW_API_START, GW_API_END, GW_API_CBID, GW_API_TID, GW_API_CORR, GW_API_NAME,
       GW_API_DOMAIN, GW_API_PY_STACK, GW_API_NF };
enum { GW_MARKER_TS, GW_MARKER_FLAGS, GW_MARKER_ID, GW_MARKER_NAME, GW_MARKER_TID,
       GW_MARKER_DOMAIN, GW_MARKER_NF };
enum { GW_OVERHEAD_START, GW_OVERHEAD_END, GW_OVERHEAD_KIND, GW_OVERHEAD_NF };
/* overhead_kind values are CUPTI's CUpti_ActivityOverheadKind */
#define GW_OVERHEAD_COMMAND_BUFFER_FULL (6u << 16)
enum { GW_DROPS_TS, GW_DROPS_ACTIVITY, GW_DROPS_API, GW_DROPS_WRITE, GW_DROPS_NF };
enum { GW_IEV_TS, GW_IEV_CODE, GW_IEV_DETAIL, GW_IEV_VALUE, GW_IEV_NF };
enum { GW_THREAD_TS, GW_THREAD_PID, GW_THREAD_TID, GW_THREAD_STATE, GW_THREAD_UTIME,
       GW_THREAD_STIME, GW_THREAD_VCSW, GW_THREAD_IVCSW, GW_THREAD_RUN_DELAY, GW_THREAD_NF };
enum { GW_TNAME_PID, GW_TNAME_TID, GW_TNAME_NAME, GW_TNAME_NF };
enum { GW_PROC_TS, GW_PROC_PID, GW_PROC_PPID, GW_PROC_START, GW_PROC_CMDLINE,
       GW_PROC_TARGET, GW_PROC_NF };
enum { GW_PIO_TS, GW_PIO_PID, GW_PIO_READ, GW_PIO_WRITE, GW_PIO_RCHAR, GW_PIO_WCHAR,
       GW_PIO_NF };
enum { GW_PEXIT_TS, GW_PEXIT_PID, GW_PEXIT_STATUS, GW_PEXIT_NF };
/* flags: GW_LIB_* below; python: "3.11", or 0 when unknown */
enum { GW_PLIBS_TS, GW_PLIBS_PID, GW_PLIBS_FLAGS, GW_PLIBS_PYTHON, GW_PLIBS_NF };
/* proc_libs.flags: runtime libraries mapped into a process (/proc/PID/maps),
 * which tell the framework that issues its GPU work. Recorded as they are,
 * so bits may only be added. */
enum {
	GW_LIB_TORCH = 1u << 0,   /* libtorch_cuda.so, libtorch_python.so, libtorch*.so, libc10*.so */
	GW_LIB_JAX = 1u << 1,     /* jaxlib (xla_extension.so, jaxlib/..., libjax*, xla_cuda_plugin) */
	GW_LIB_CUPY = 1u << 2,    /* cupy/_core, cupy_backends */
	GW_LIB_TF = 1u << 3,      /* libtensorflow_framework.so, libtensorflow_cc.so */
	GW_LIB_PYTHON = 1u << 4,  /* libpython3.X.so or a python3.X executable */
	GW_LIB_TRITON = 1u << 5,  /* libtriton.so */
	GW_LIB_CUDA = 1u << 6,    /* libcuda.so (the driver: the process can use a GPU) */
	GW_LIB_CUDART = 1u << 7,  /* libcudart.so */
};
#define GW_LIB_FRAMEWORKS (GW_LIB_TORCH | GW_LIB_JAX | GW_LIB_CUPY | GW_LIB_TF)
enum { GW_SCPU_TS, GW_SCPU_USER, GW_SCPU_NICE, GW_SCPU_SYSTEM, GW_SCPU_IDLE,
       GW_SCPU_IOWAIT, GW_SCPU_IRQ, GW_SCPU_SOFTIRQ, GW_SCPU_STEAL, GW_SCPU_NCPU, GW_SCPU_NF };
enum { GW_GPU_TS, GW_GPU_INDEX, GW_GPU_VALID, GW_GPU_SMCLK, GW_GPU_MEMCLK, GW_GPU_REASONS,
       GW_GPU_POWER_MW, GW_GPU_TEMP, GW_GPU_MEMUSED_MIB, GW_GPU_UTIL, GW_GPU_MEMUTIL,
       GW_GPU_NF };
/* GPM values are stored as hundredths (percent * 100, MiB/s * 100). */
enum { GW_GPM_TS, GW_GPM_INDEX, GW_GPM_VALID, GW_GPM_SM_UTIL, GW_GPM_SM_OCC, GW_GPM_TENSOR,
       GW_GPM_DRAM, GW_GPM_FP32, GW_GPM_FP16, GW_GPM_FP64, GW_GPM_PCIE_TX, GW_GPM_PCIE_RX,
       GW_GPM_NF };
enum { GW_PCIE_TS, GW_PCIE_INDEX, GW_PCIE_VALID, GW_PCIE_TX_KBS, GW_PCIE_RX_KBS, GW_PCIE_NF };
enum { GW_GINFO_INDEX, GW_GINFO_VALID, GW_GINFO_NAME, GW_GINFO_UUID, GW_GINFO_BUSID,
       GW_GINFO_SMS, GW_GINFO_MEM_MIB, GW_GINFO_PCIE_GEN, GW_GINFO_PCIE_GEN_MAX,
       GW_GINFO_PCIE_WIDTH, GW_GINFO_PCIE_WIDTH_MAX, GW_GINFO_NUMA, GW_GINFO_PERSIST,
       GW_GINFO_POWER_LIMIT_MW, GW_GINFO_POWER_DEFAULT_MW, GW_GINFO_POWER_MAX_MW,
       GW_GINFO_CC_MAJOR, GW_GINFO_CC_MINOR, GW_GINFO_CPUS, GW_GINFO_NF };

enum { GW_PYF_ID, GW_PYF_FILE, GW_PYF_FUNC, GW_PYF_LINE, GW_PYF_NF };
enum { GW_PYK_ID, GW_PYK_PARENT, GW_PYK_FRAME, GW_PYK_NF };
enum { GW_PYS_TS, GW_PYS_PID, GW_PYS_TID, GW_PYS_STACK, GW_PYS_STATE, GW_PYS_NF };
/* py_sample.state: what the thread was doing when its stack was read
 * (/proc/PID/task/TID/stat); 0 in recordings made before the field */
enum { GW_PYSTATE_UNKNOWN, GW_PYSTATE_RUN, GW_PYSTATE_SLEEP, GW_PYSTATE_DISK };
enum { GW_PYST_TS, GW_PYST_PID, GW_PYST_CODE, GW_PYST_DETAIL, GW_PYST_SAMPLES, GW_PYST_DROPPED,
       GW_PYST_NF };
/* py_status codes: why a process has Python stacks or not. */
enum gw_py_status {
	GW_PY_OK = 0,          /* stacks read; samples and dropped count them */
	GW_PY_NOT_PYTHON = 1,  /* not a Python interpreter */
	GW_PY_UNSUPPORTED = 2, /* a Python version or build the reader does not know */
	GW_PY_DENIED = 3,      /* reading its memory was not permitted */
	GW_PY_NO_SYMBOLS = 4,  /* stripped or static interpreter: no runtime symbol */
	GW_PY_ERROR = 5,       /* anything else (detail says what) */
};
/* The status of a py_proc_open error (-errno, src/pystack/pystack.h). */
enum gw_py_status gw_py_status_of(int err);

/* Validity bits: bit i set means field (GW_x_VALID + 1 + i) holds a real value. */
#define GW_VALID_BIT(field, valid_field) (1u << ((field) - (valid_field)-1))

/* ---- writer ---------------------------------------------------------- */

struct gw_intern;

struct gw_writer {
	int fd;
	uint32_t stream;
	int compress; /* zlib level, 0 = store */
	uint8_t *buf;
	size_t len, cap;
	uint64_t last_time;
	struct gw_intern *strings;
	uint64_t bytes_written;
	uint64_t chunks_written;
	uint64_t records_lost; /* records in chunks whose write failed */
	uint64_t records_in_chunk;
	int error; /* first write error, -errno */
	uint32_t intern_gen; /* bumped whenever the string table is cleared (a lost
			      * chunk, a new ring segment): definitions must be written again */
};

/* Writes the 16-byte file header to fd. */
int gw_write_file_header(int fd);
int gw_writer_init(struct gw_writer *w, int fd, uint32_t stream, int compress, size_t chunk_size);
void gw_writer_free(struct gw_writer *w);
/* Appends one record; flushes the chunk when full. Values in v[] are decoded
 * (absolute) values in schema order; n may be less than the schema's count. */
int gw_emit(struct gw_writer *w, unsigned type, const uint64_t *v, unsigned n);
/* Returns the id of s in this stream, emitting a STRING record the first time. 0 for NULL. */
uint64_t gw_intern(struct gw_writer *w, const char *s);
int gw_emit_meta(struct gw_writer *w, const char *key, const char *value);
/* Writes the current chunk (if any) to fd. */
int gw_flush(struct gw_writer *w);
/* Writes an already-encoded chunk payload as one chunk (used when merging). */
int gw_write_chunk(int fd, uint32_t stream, const uint8_t *raw, size_t raw_len, int compress,
		   uint64_t *bytes_out);

/* ---- reader ---------------------------------------------------------- */

struct gw_record {
	unsigned type;
	uint32_t stream;
	unsigned nfields; /* fields present in the file (missing ones read as 0) */
	uint64_t v[GW_MAX_FIELDS];
	const uint8_t *blob; /* STRING / META payload */
	size_t blob_len;
	const uint8_t *blob2; /* META value */
	size_t blob2_len;
};

struct gw_reader;

/* Opens a recording. On failure returns -errno, and -EPROTO for a file that
 * is not a recording or of a newer major version; err gets a sentence. */
int gw_reader_open(struct gw_reader **out, const char *path, char *err, size_t errlen);
/* GW_OPEN_REGULAR: only a regular file, not through a symbolic link, and
 * without blocking on a FIFO (-EINVAL, err says what it is instead). */
#define GW_OPEN_REGULAR 0x1u
int gw_reader_open_flags(struct gw_reader **out, const char *path, unsigned flags, char *err,
			 size_t errlen);
/* The same on a descriptor opened by the caller (taken over: closed on
 * failure and by gw_reader_close); path names it in messages. */
int gw_reader_open_fd(struct gw_reader **out, int fd, const char *path, unsigned flags, char *err,
		      size_t errlen);
/* Reads the next record: 1 = got one, 0 = end (clean or after damage). */
int gw_reader_next(struct gw_reader *r, struct gw_record *rec);
/* Decode only the first n fields of records of this type (the rest read as
 * 0): a reader that needs a few fields of a large record skips the others.
 * Time (delta) fields, which later records are coded against, are always
 * decoded. */
void gw_reader_fields(struct gw_reader *r, unsigned type, unsigned n);
/* String of (stream, id), or "?" if unknown. Valid until close. */
const char *gw_reader_string(struct gw_reader *r, uint32_t stream, uint64_t id);
/* After the end: non-NULL if the file was damaged, with what happened and where. */
const char *gw_reader_damage(const struct gw_reader *r);

/* The one verdict on damage, for every command that reads a recording
 * (docs/FORMAT.md "Damage"). */
enum gw_verdict_kind {
	GW_VERDICT_OK = 0,        /* every chunk valid, and the end record read */
	GW_VERDICT_TRUNCATED = 1, /* the file stops early: cut inside its last chunk, or
				   * (a main recording) no end record */
	GW_VERDICT_DAMAGED = 2,   /* bytes were skipped: chunks that did not validate,
				   * malformed records, repeated chunks, or the rest of a
				   * file that inflates past GW_INFLATE_LIMIT */
};
#define GW_END_KEY "record.end_ns" /* the meta record the recorder writes last */
#define GW_EXIT_DAMAGED 3          /* exit status of every command for a verdict not ok */
struct gw_verdict {
	enum gw_verdict_kind kind;
	uint64_t bytes_skipped;     /* damaged bytes passed over (chunks after them were read) */
	uint64_t chunks_skipped;    /* chunk headers among them, at least 1 per damaged region */
	uint64_t records_malformed; /* malformed records; the rest of each one's chunk is skipped */
	uint64_t cut_bytes;         /* an incomplete chunk at the end of the file */
	uint64_t chunks_repeated;   /* chunks that repeat an earlier chunk of the file byte for
				     * byte (a bad copy), skipped: their records count once */
	uint64_t bytes_repeated;    /* their bytes */
	uint64_t bytes_refused;     /* not read: the rest of the file from refused_at */
	uint64_t refused_at;        /* the chunk that would inflate past GW_INFLATE_LIMIT */
	int refused;                /* reading stopped there */
	uint64_t file_bytes;        /* the file's size (0: not a regular file) */
	int cut;                    /* the file ends inside a chunk */
	int ended;                  /* the end record was read */
	char first[256];            /* the first damage: what and where */
};
/* After the end: what the reader found. main_file: an end record is
 * expected (a recording, not an injection library's side file). */
void gw_reader_verdict(const struct gw_reader *r, int main_file, struct gw_verdict *v);
/* Adds a side file's damage to a recording's verdict. */
void gw_verdict_add(struct gw_verdict *v, const struct gw_verdict *side);
const char *gw_verdict_name(const struct gw_verdict *v); /* "ok", "truncated", "damaged" */
/* One sentence: what happened, where, and what to do ("" when ok). */
void gw_verdict_describe(const struct gw_verdict *v, char *buf, size_t len);
/* 0, or GW_EXIT_DAMAGED when the verdict is not ok. */
int gw_verdict_exit(const struct gw_verdict *v);
unsigned gw_reader_version_minor(const struct gw_reader *r);
uint64_t gw_reader_unknown_records(const struct gw_reader *r);
/* Bytes the chunks read so far inflated to (bounded by GW_INFLATE_LIMIT). */
uint64_t gw_reader_inflated(const struct gw_reader *r);
void gw_reader_close(struct gw_reader *r);
/* 1 if an allocation failed while reading: the records read are incomplete
 * (an analysis must fail, not go on). */
int gw_reader_nomem(const struct gw_reader *r);

/* Reads the chunks of an injection side file (a regular file only) and
 * appends them, recompressed, to fd. Returns chunks copied or -errno; passes
 * over damage to the next valid chunk, and err then says what was found. */
int gw_copy_chunks(const char *path, int fd, int compress, uint64_t *bytes_out,
		   char *err, size_t errlen);
/* The same from a descriptor the caller opened (taken over and closed). */
int gw_copy_chunks_fd(int in, const char *name, int fd, int compress, uint64_t *bytes_out,
		      char *err, size_t errlen);

/* ---- ring mode (segments.c) -------------------------------------------- */

struct gw_segments {
	char dir[4096];
	char prefix[64];
	uint64_t seg_bytes;  /* rotate past this many bytes */
	unsigned keep;       /* segments kept: the newest ones */
	unsigned seq, first; /* current and oldest kept segment numbers */
	uint64_t seg_start;  /* writer's bytes_written when this segment began */
	uint64_t dropped;    /* segments deleted */
	int fd;
	int dfd;             /* the folder held open (gw_seg_open_at), else -1 */
};

/* Opens DIR/PREFIX.000001.gws; returns its fd (give it to gw_writer_init) or -errno. */
int gw_seg_open(struct gw_segments *s, const char *dir, const char *prefix, uint64_t seg_bytes,
		unsigned keep);
/* The same in a folder held open as dfd (borrowed, not closed): segments
 * are made and deleted relative to it, never through its name. */
int gw_seg_open_at(struct gw_segments *s, int dfd, const char *prefix, uint64_t seg_bytes,
		   unsigned keep);
/* After a flush: moves the writer to a new segment when this one is full,
 * deleting the oldest beyond `keep`. 1 = rotated, 0 = not needed, -errno. */
int gw_seg_rotate_if_full(struct gw_segments *s, struct gw_writer *w);
void gw_seg_close(struct gw_segments *s);

/* 1 if an environment variable may be stored (envlist.c); never store others:
 * an allowlisted name (exact, or under a prefix and free of secret-bearing
 * words) whose value holds no credential (gw_env_value_secret). */
int gw_env_allowed(const char *name);
int gw_env_value_secret(const char *value); /* user:pw@ in a URL, token=, key=... */
int gw_env_keep(const char *name, const char *value);
/* A command line joined by spaces into out (len bytes, NUL-terminated,
 * cut short where it does not fit), with the values of options and
 * assignments named like secrets (--api-key=V, --token V, password=V) and
 * a URL's user:pw replaced by "[redacted]". Returns the length the whole
 * takes (snprintf-like). argv: NULL-terminated; args: n bytes of
 * NUL-separated arguments, as /proc/PID/cmdline holds them. */
size_t gw_argv_scrubbed(char *const *argv, char *out, size_t len);
size_t gw_cmdline_scrubbed(const char *args, size_t n, char *out, size_t len);

/* ---- Python stacks as a trie (pytrie.c) --------------------------------
 * Frames and stacks interned per stream: a stack is a node (parent, frame)
 * with the outermost frame at the root, so a sample is one id. Ids are
 * stable for the trie's life; gw_pytrie_emit() writes the definitions a
 * writer has not had yet (all of them again after w->intern_gen changed).
 * Nodes never move once made, so one thread may emit nodes below a count it
 * read under the caller's lock while another adds more. */
struct gw_pyframe {
	const char *file, *func;
	uint32_t line;
};
struct gw_pytrie;
struct gw_pytrie *gw_pytrie_new(uint32_t max_nodes);
void gw_pytrie_free(struct gw_pytrie *t);
/* The stack of frames[0..n) (innermost first): its id, or 0 when the trie
 * is full or out of memory (n == 0 also gives 0: no Python stack). */
uint32_t gw_pytrie_stack(struct gw_pytrie *t, const struct gw_pyframe *frames, int n);
/* How many frames and stacks exist now (for gw_pytrie_emit_upto). */
void gw_pytrie_counts(const struct gw_pytrie *t, uint32_t *nframes, uint32_t *nstacks);
/* Emits the definitions w lacks, up to the given counts. */
void gw_pytrie_emit_upto(struct gw_pytrie *t, struct gw_writer *w, uint32_t nframes,
			 uint32_t nstacks);
void gw_pytrie_emit(struct gw_pytrie *t, struct gw_writer *w);

/* ---- varints (also used by the analysis's compact sample store) ------- */
size_t gw_put_uvarint(uint8_t *p, uint64_t v); /* writes at most 10 bytes */
/* Returns bytes consumed or 0 on overrun/overlong. */
size_t gw_get_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *v);

/* Signed values as unsigned varints: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ... */
static inline uint64_t gw_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)); /* no signed shift */
}

static inline int64_t gw_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif
