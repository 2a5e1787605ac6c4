/* The analysis: a recording read once into a trace (load.c, one function
 * per record type; names.c), where the GPU operations are not kept but
 * summed, measured for order and given to the step finders as they come
 * (timeline.c, step_finder.c); the main GPU and process and the steps
 * (analyze.c, steps.c); one steady pass that reads the file again
 * (replay.c: in time order through the reorder buffer, ordered.c) and feeds
 * every operation to the idle attribution (attribute.c, each idle interval
 * gets one cause) and the op statistics (opstats.c); rules that read those
 * aggregates and turn them into findings (rules/, one file per rule; gains
 * bounded in gain.c). Renderers in src/report/ only format the findings, so
 * the terminal and JSON outputs never disagree.
 * Layers (tests/layering.sh keeps them without loops): analyze.c on top;
 * the passes (steps, attribute, sites, opstats, rules, gain, invariants,
 * facts, export) below it; under them the lookups they share (threads.c:
 * thread samples, windows.c: traced windows, gpus.c, framework.c, base.c:
 * warnings, out-of-memory); the trace model at the bottom, which calls
 * nothing above it (tests/layering.sh): the reading (load, names, samples,
 * timeline, replay, ordered, step_finder, steps_period, kclass: kernel
 * families, pyholds: Python samples' spans, quantile).
 * Ownership: struct trace owns every array and string in it; struct
 * analysis owns its findings and its passes' scratch (internal.h); both are
 * freed by their *_free(). */
#ifndef GPUWHY_ANALYZE_H
#define GPUWHY_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "../format/format.h"
#include "../util/hmap.h"
#include "../util/kname.h"
#include "../util/vec.h"


enum op_kind { OP_KERNEL, OP_MEMCPY, OP_MEMSET };
/* Pinned host-to-device copies this large run at the link's bandwidth
 * (C12 measures them; the replay speeds them up to it). */
#define BIG_PINNED_HTOD_BYTES (8u << 20)
enum copy_kind { COPY_HTOD = 1, COPY_DTOH = 2, COPY_DTOD = 8, COPY_PTOP = 10 };
enum mem_kind { MEM_PAGEABLE = 1, MEM_PINNED = 2, MEM_DEVICE = 3, MEM_MANAGED = 5 };

/* One per GPU operation, so kept to 40 bytes: only what the analysis reads
 * (`gpuwhy dump` shows every recorded field). The small fields are bit
 * fields sized to their enums; the loader maps values beyond them to 0. */
struct gpu_op {
	uint64_t start, end;
	union {
		uint64_t bytes; /* copies and memsets */
		struct {
			uint32_t blocks; /* kernels: grid x*y*z */
			uint16_t per_sm; /* ... blocks resident on one SM at once (occupancy), 0: unknown */
		};
	};
	uint32_t name;    /* index into trace.names */
	uint32_t pid;
	uint32_t stream;
	uint8_t dev;
	/* made by the same host call as the operation read before it (a CUDA
	 * graph's launch, a copy in pieces): one submission, never two steps */
	uint8_t same_call : 1;
	/* a kernel that only moves elements (kernel_moves_only(): roll, cat) */
	uint8_t moves_only : 1;
	/* a kernel that updates the parameters (an optimizer's): its work
	 * follows the model's size, not the batch */
	uint8_t updates_params : 1;
	/* a kernel whose template arguments say double: it works on FP64 data */
	uint8_t f64 : 1;
	/* ... say float and no 16-bit type: it works on FP32 data */
	uint8_t f32 : 1;
	/* launched by a graph launch call and started well after that call
	 * returned: it waited in the GPU's queue, the host was ahead of it */
	uint8_t queued : 1;
	/* its name says nothing of its data type (kernel_untyped()) */
	uint8_t untyped : 1;
	uint16_t kind : 2;       /* enum op_kind */
	uint16_t async : 1;
	uint16_t name_class : 3; /* enum kclass, kernels only */
	uint16_t copy_kind : 4;  /* enum copy_kind (CUPTI's memcpy kinds stop at 10) */
	uint16_t src_kind : 3, dst_kind : 3; /* enum mem_kind (CUPTI's stop at 7) */
};
_Static_assert(sizeof(struct gpu_op) == 40, "struct gpu_op grew: it is one per GPU operation");


/* Kernel families, from names (docs/RULES.md lists the patterns). */
/* KC_MATMUL_TF32: tensor cores on FP32 data (TF32), half bf16's rate; KC_MATMUL_TC the rest
 * of the tensor-core ones (bf16, fp16, fp8, int8) */
/* KC_MATMUL_FP64: on FP64 data (DMMA tensor cores on Ampere and Hopper, at FP32's SIMT rate) */
enum kclass { KC_OTHER, KC_COMM, KC_MATMUL_TC, KC_MATMUL_FP32, KC_ELEMENTWISE, KC_RNN, KC_MATMUL_TF32,
	      KC_MATMUL_FP64, KC_NCLASSES };
_Static_assert(KC_NCLASSES <= 8, "enum kclass outgrew gpu_op.name_class");
static inline int kclass_is_matmul(unsigned c)
{
	return c == KC_MATMUL_TC || c == KC_MATMUL_FP32 || c == KC_MATMUL_TF32 || c == KC_MATMUL_FP64;
}
/* The matrix families' kernel time (class_ns: a double per enum kclass). */
static inline double matmul_ns(const double *class_ns)
{
	double t = 0;

	for (unsigned c = 0; c < KC_NCLASSES; c++)
		t += kclass_is_matmul(c) ? class_ns[c] : 0;
	return t;
}

enum host_class { HC_OTHER, HC_LAUNCH, HC_MEMCPY, HC_SYNC, HC_ALLOC, HC_GRAPH, HC_MEMSET };

struct host_call {
	uint64_t start, end;
	uint32_t pid, tid, corr, name;
	uint8_t cls;
	/* HC_MEMCPY: its copy, joined by correlation id (analyze.c): direction
	 * (enum copy_kind, COPY_HTOD or COPY_DTOH) and host memory (enum
	 * mem_kind); 0 when unknown or not between host and device */
	uint8_t copy_dir, copy_host;
	uint32_t py_stack; /* the calling Python code: index into trace.py_nodes, 0 = none */
};
_Static_assert(sizeof(struct host_call) == 40, "struct host_call grew: a few are kept per step");

/* A host<->device copy's direction and host memory, by the call that made
 * it (pid, correlation id): joined to its host call after loading. */
struct copy_mem {
	uint32_t pid, corr;
	uint8_t dir, host;
};

struct host_wait {
	uint64_t start, end;
	uint32_t pid;
};

/* A CUDA call the recording timed, by its correlation id: CUPTI numbers
 * every call in the order the process makes them, launches included, so
 * the calls around a kernel's launch say when the host made it (sites.c,
 * the lines that launched C8's kernels). */
struct call_anchor {
	uint64_t ts;
	uint32_t pid, tid, corr;
};

struct sync_ev {
	uint64_t start, end;
	uint32_t pid, type;
};

/* A /proc sample of a thread (taken when its state or CPU time changed). */
struct tsample {
	uint64_t ts;
	uint64_t cpu_ticks; /* user + system, cumulative */
	uint32_t pid, tid;
	uint32_t ivcsw;     /* involuntary context switches, cumulative (C7) */
	char state;
	uint64_t run_delay; /* ns runnable but waiting for a core, cumulative (C7; 0: not recorded) */
};

/* One thread's samples, in time order, delta-coded (samples.c): every
 * SAMPLE_BLOCK-th whole in blocks, the others as varints in data. */
#define SAMPLE_BLOCK 16
struct sample_block {
	uint64_t ts, cpu_ticks;
	uint32_t ivcsw, off; /* off: where the next sample's differences start in data */
	char state;
	uint64_t run_delay;
};
struct thread_samples {
	uint32_t pid, tid; /* pid: of its first sample */
	size_t n;
	VEC(struct sample_block) blocks;
	VEC(uint8_t) data;
	struct tsample last;
};

struct proc_info {
	uint32_t pid, ppid;
	int is_target, has_cuda;
	char *cmdline;
	uint64_t first_ts, exit_ts;
	uint64_t read_bytes0, read_bytes1; /* first and last seen */
	unsigned libs;  /* GW_LIB_* bits of its proc_libs records, ORed (0: none recorded) */
	char python[16]; /* Python version its libraries name, "" if unknown */
};

struct io_sample {
	uint64_t ts;
	uint32_t pid;
	uint64_t read_bytes, write_bytes;
};

/* The machine's CPU time (sys_cpu), kept at most every 100 ms: whether its
 * CPUs were saturated during a gap (C7). */
struct sys_sample {
	uint64_t ts;
	uint64_t busy, total; /* clock ticks, cumulative, all CPUs */
};

struct gpu_samp {
	uint64_t ts;
	uint32_t gpu, valid;
	uint32_t sm_mhz, mem_mhz, power_mw, temp_c, util;
	uint64_t reasons, mem_used_mib;
};

/* Clock event reasons that mean power or thermal limits: SwPowerCap,
 * HwSlowdown, SwThermal, HwThermal, HwPowerBrake. */
#define GPU_THROTTLE_REASONS 0xECull
/* ... of them, those that mean something is wrong (heat, a hardware
 * slowdown, the power brake): all but SwPowerCap, which at the default
 * power limit is the GPU doing the most work it may (C13). */
#define GPU_FAULT_REASONS 0xE8ull

/* One GPU's NVML samples, summed while the recording is read (C3, C13). */
struct gpu_sample_totals {
	uint32_t max_sm_mhz;       /* the best SM clock seen */
	uint64_t busy;             /* samples with utilization > 0 and no idle reason */
	uint64_t throttled;        /* ... of them under power or thermal limits */
	double throttled_mhz;      /* SM clock summed over those */
	uint64_t max_mem_used_mib;
	uint64_t faulted;          /* busy samples with a GPU_FAULT_REASONS reason */
	double faulted_mhz;        /* SM clock summed over those */
};

struct gpm_samp {
	uint64_t ts;
	uint32_t gpu, valid;
	double sm_util, sm_occ, tensor, dram, fp32, fp16;
};

struct marker_range {
	uint64_t start, end;
	uint32_t pid, tid, name;
	uint32_t domain; /* a name; 0 ("") is NVTX's default domain */
};

struct gpu_info {
	uint32_t index, valid;
	char *name, *uuid, *bus_id, *cpus;
	uint32_t sm_count, pcie_gen, pcie_gen_max, pcie_width, pcie_width_max, persistence;
	int64_t numa_node;
	uint64_t mem_total_mib, power_limit_mw, power_default_mw, power_max_mw;
	uint32_t cc_major, cc_minor;
};

struct kv {
	char *key, *value;
	uint32_t pid; /* the process whose stream it came in (0: gpuwhy's own) */
};

struct inject_event {
	uint64_t ts;
	uint32_t pid, code;
	char *detail;
	uint64_t value;
};

/* Python stacks (load.c): frames and the nodes of the stack trie, from
 * every stream, renumbered into one space (index 0 = none). */
struct py_frame_rec {
	uint32_t file, func, line; /* file and func: indexes into trace.names */
};
struct py_node {
	uint32_t parent, frame; /* parent 0: the outermost frame */
};
/* One thread's stack samples in time order, as varint pairs (ts - previous
 * ts, node << 2 | state): a few bytes a sample; state is the thread's
 * GW_PYSTATE_* when its stack was read (0: unknown). */
struct py_thread {
	uint32_t pid, tid;
	uint64_t n, first_ts, last_ts;
	VEC(uint8_t) data;
};
struct py_status_rec {
	uint32_t pid, stream, code;
	char *detail;
	uint64_t samples, dropped;
};

/* A collective staged through host memory (hostcoll.c): from the end of
 * the copy out to pinned host memory to the start of the copy back. */
struct host_coll {
	uint64_t start, end, bytes;
	uint32_t pid, stream;
	uint8_t dev;
};

struct trace {
	char *path;
	char *shown; /* how reports name it where not by path: "FILE (pid N)", a view of one
		      * process of FILE (src/job/split.c); NULL: the path */
	VEC(struct gpu_op) ops;
	VEC(struct host_call) calls;
	VEC(struct call_anchor) anchors; /* every timed call with a correlation id, as read */
	VEC(struct sync_ev) syncs;
	VEC(struct thread_samples) threads; /* /proc samples, per thread, by first sample */
	struct hmap sample_index; /* tid -> index + 1 into threads */
	uint64_t nsamples, samples_back_in_time;
	VEC(struct proc_info) procs;
	VEC(struct io_sample) io;
	VEC(struct marker_range) markers;
	VEC(struct host_coll) host_colls; /* every process's (hostcoll.c) */
	VEC(struct gpu_info) gpus;
	VEC(struct kv) meta;
	VEC(struct inject_event) events;
	VEC(char *) names; /* names.v[0] = "" */
	/* per name: a kernel launched with the resources of a tiled matrix
	 * kernel (registers and shared memory: load.c), set by the first reading */
	VEC(uint8_t) name_tiled;
	struct name_table *name_index;
	uint64_t drops_activity, drops_api, drops_write;
	/* NVML samples, summed per GPU as they are read */
	struct gpu_sample_totals gsum[GW_MAX_GPUS];
	uint64_t ngsamples;
	uint64_t last_busy_ts; /* last NVML sample of any GPU with utilization >= 10% */
	char *damage;         /* non-NULL: the verdict is not ok, and this says so in words */
	struct gw_verdict verdict; /* the reader's one verdict on damage, side files added */
	unsigned parts_skipped;    /* entries of PATH.parts/ that are not regular files */
	char parts_skip_why[320];  /* the first one, and why */
	int complete;         /* record.complete meta seen */
	/* GPU operations: counted, summed and ordered while the file is read
	 * (scan), and read again by the analysis; kept in ops only with
	 * TRACE_KEEP_OPS (the timeline export), so memory does not grow with them */
	uint64_t nops;
	uint64_t ncalls; /* traced CUDA calls; calls keeps the synchronizations and
			  * copies (all of them with TRACE_KEEP_OPS) */
	struct op_scan *scan;
	int keep_ops;
	int spooled, spool_fd; /* a copy of an input that cannot be read twice (a pipe) */
	int ops_unordered;    /* kept ops not in (device, start) order: the analysis sorts them */
	unsigned parts_read;  /* unmerged injection streams read from PATH.parts/ */
	uint64_t records;
	int has_run_delay;    /* a thread sample carried a run-queue wait (schedstat) */
	VEC(struct sys_sample) sys;
	/* Python stacks */
	VEC(struct py_frame_rec) py_frames;
	VEC(struct py_node) py_nodes;
	VEC(struct py_thread) py_threads;
	VEC(struct py_status_rec) py_status;
	uint64_t py_samples, py_back_in_time;
	/* host<->device copies' memory kinds, until joined to t->calls (analyze.c) */
	VEC(struct copy_mem) copy_mems;
	/* pid << 32 | correlation id -> the operations a host call made, for the
	 * calls that made more than one on a stream (a CUDA graph's launch, a
	 * copy in pieces): set by the first reading (load.c) */
	struct hmap call_ops;
	/* lookups, index + 1 (load.c): pid -> procs, pid << 32 | tid ->
	 * py_threads; a stream's frame and stack ids, stream << 32 | id ->
	 * py_frames and py_nodes (a hash, not an array: an id read from a file
	 * must not size an allocation) */
	struct hmap proc_index, py_thread_index, py_frame_ids, py_node_ids;
	int nomem; /* an allocation failed while loading where the load went on
		    * (a name not interned): the analysis fails with -ENOMEM */
	/* every NVML and GPM sample as read, with TRACE_KEEP_SAMPLES only (the
	 * HTML report draws them); GPM samples arrive with the steady pass */
	int keep_samples;
	VEC(struct gpu_samp) gpu_samples;
	VEC(struct gpm_samp) gpm_samples;
};

/* Loads a recording. Returns 0, or -errno with err[] saying why. A damaged
 * or cut file still loads everything that validates (trace.verdict says
 * what was found, trace.damage says it in words). */
int trace_load(struct trace *t, const char *path, char *err, size_t errlen);
/* TRACE_KEEP_OPS: also keep every GPU operation in t->ops (40 bytes each),
 * sorted by the analysis; only the timeline export needs them. */
enum { TRACE_KEEP_OPS = 1 };
/* TRACE_KEEP_SAMPLES: also keep every NVML and GPM sample (t->gpu_samples,
 * t->gpm_samples; about 50 a second per GPU): the HTML report draws them. */
enum { TRACE_KEEP_SAMPLES = 2 };
int trace_load_flags(struct trace *t, const char *path, unsigned flags, char *err, size_t errlen);
void trace_free(struct trace *t);
const char *trace_meta(const struct trace *t, const char *key);
/* GPU dev's name as NVML gave it (the last record of it), NULL if none. */
const char *trace_gpu_name(const struct trace *t, uint32_t dev);
/* The processes with GPU work whose environment records a rank (RANK,
 * SLURM_PROCID, ...): the ranks of one job that one recording holds. */
size_t trace_gpu_ranks(const struct trace *t);
/* The recording as the reports name it. */
static inline const char *trace_shown(const struct trace *t)
{
	return t->shown ? t->shown : t->path;
}
/* The process of this pid, or NULL. */
const struct proc_info *trace_proc(const struct trace *t, uint32_t pid);
uint32_t trace_intern(struct trace *t, const char *s);

/* ---- analysis ---------------------------------------------------------- */

/* The idle causes, one row each: enum value, id (JSON, --trace), name as the
 * report prints it (base.c's table is made from the same rows). */
#define IDLE_CAUSES(X)                                                                                 \
	/* C4: short gaps, the host issues launches too slowly */                                      \
	X(IDLE_LAUNCH_OVERHEAD, "launch_overhead", "host too slow to issue work (launch/Python)")      \
	X(IDLE_LAUNCH_BLOCKING, "launch_blocking", "CUDA_LAUNCH_BLOCKING serialization") /* C5 */       \
	/* C9: host waited on the GPU, then refilled the queue */                                      \
	X(IDLE_SYNC, "sync", "synchronization stall (host waited on the GPU)")                         \
	X(IDLE_PAGEABLE, "pageable_copy", "pageable host copies") /* C6: around pageable host copies */ \
	/* C1: loader workers busy, training thread waiting */                                         \
	X(IDLE_DATA_WAIT, "data_wait", "waiting for input (loader workers, a thread)")                 \
	/* C1: training thread busy on the CPU (e.g. num_workers=0) */                                 \
	X(IDLE_HOST_COMPUTE, "host_compute", "CPU work on the training thread")                        \
	X(IDLE_IO, "storage_io", "storage reads") /* C2: storage reads (read_bytes grew) */            \
	/* C7: the job's threads waited for a core */                                                  \
	X(IDLE_OVERSUB, "cpu_oversubscription", "CPU oversubscription")                                \
	/* C14: inside steps that recur every N and run long */                                        \
	X(IDLE_PERIODIC, "periodic", "periodic stalls (validation, checkpoints)")                      \
	X(IDLE_COMM, "communication", "waiting on other GPUs") /* C15: waiting on another GPU */       \
	/* C14: threads in state D while the job wrote (checkpoints) */                                \
	X(IDLE_WRITE, "file_writes", "checkpoint / file writes")                                       \
	/* C16: the training thread asleep or blocked on something other than the GPU                 \
	 * (time.sleep, a lock, a queue, a socket) */                                                  \
	X(IDLE_WAIT, "host_wait", "training thread asleep or waiting elsewhere")                       \
	/* the training thread in a compiler (kernels built on first use, a recompile): no          \
	 * rule's fix takes it away, and a warm cache or fixed shapes do (the start-up's advice) */     \
	X(IDLE_COMPILE, "compiling", "compiling kernels (first use, recompiles)")                     \
	X(IDLE_UNKNOWN, "unknown", "unattributed")
#define IDLE_CAUSE_ENUM(e, id, name) e,
enum idle_cause { IDLE_CAUSES(IDLE_CAUSE_ENUM) IDLE_NCAUSES };

const char *idle_cause_name(enum idle_cause c);
/* The name as a report shows it for this job (no "/Python" for a job that
 * runs none). */
struct analysis;
struct depgraph;
const char *idle_cause_label(const struct analysis *a, enum idle_cause c);
const char *idle_cause_id(enum idle_cause c);

struct gap {
	uint64_t start, end;
	uint8_t cause;
	uint8_t at_step_start; /* the gap ends at a step boundary */
	uint8_t mech;          /* its cause before a periodic step's took it (attribute.c) */
	uint32_t step;         /* index of the step it falls in, or UINT32_MAX */
	uint32_t op;           /* the operation ending it in the replay's graph, or UINT32_MAX */
	uint8_t next_htod;     /* the operation ending it is a host-to-device copy:
				* 1 + its source memory (enum mem_kind); 0 = not one */
	uint8_t prev_htod;     /* ... the operation it follows, alike */
	uint8_t next_value;    /* ... the copy ending it carries a scalar (SCALAR_BYTES or less: a
				* Python number a jitted call sends first), not an input */
	uint32_t trace;        /* gpuwhy's own cost in it at most (attribute.c, gap_trace_cost) */
};

struct step {
	uint64_t start, end;
	uint64_t busy_ns, idle_ns;
	uint8_t periodic;
	uint8_t acts;  /* bit 1 << enum activity of each activity whose gaps fall in it (activities.c) */
	uint32_t nops; /* main GPU operations starting in it (C14: extra work in long steps) */
};

enum severity { SEV_INFO, SEV_WARN, SEV_HIGH };
enum confidence { CONF_LOW, CONF_MEDIUM, CONF_HIGH };

#define FINDING_TEXT 1536

/* What a finding's saving is made of (docs/RULES.md section 4): an idle
 * part, drawn on the idle time of some causes, and a busy part, the GPU time
 * a fix takes off some operations. Rules declare it; finding_set_gain() and
 * the settling after all rules (gain.c) bound it, in one place. */
#define IDLE_BIT(c) (1u << (c))
enum busy_set { /* families of operations, disjoint: what a busy part shortens */
	BUSY_MATMUL = 1,      /* matrix kernels (KC_MATMUL_TC, KC_MATMUL_FP32, KC_MATMUL_TF32) */
	BUSY_ELEMENTWISE = 2, /* KC_ELEMENTWISE */
	BUSY_OTHER = 4,       /* KC_OTHER, KC_RNN */
	BUSY_COMM = 8,        /* KC_COMM */
	BUSY_COPIES = 16,     /* copies and memsets */
	BUSY_ALL = 31
};
struct gain {
	unsigned idle_causes; /* IDLE_BIT() of each cause the idle part draws on */
	double idle_ns;       /* idle time a fix removes */
	unsigned busy_set;    /* enum busy_set: the families of the operations it names */
	double busy_ns;       /* busy time a fix removes */
	double busy_of_ns;    /* the time of the operations it names: the busy part's bound */
	unsigned host_classes; /* 1 << enum site_class: the training thread's work in code of these
				* classes goes with the fix (the replay, docs/RULES.md section 4) */
	double kept_ns;       /* work the fix still does, added back to the replayed window
				* (a snapshot's copies, made asynchronously from pinned memory) */
};

#define BATCH_POINTS 8 /* 2x .. 256x */
struct finding {
	const char *rule_id;  /* e.g. "C9.sync-stall" */
	const char *cause;    /* "C9" */
	char title[224];
	enum severity severity;
	enum confidence confidence;
	int assessed;         /* 0: not assessed (why[] says why) */
	double saved_ns;      /* estimated time saved over the steady window if fixed */
	double speedup;       /* whole-run speed-up if fixed (>= 1) */
	double per_step_ns;   /* time saved per step (0 if no steps) */
	char evidence[FINDING_TEXT];
	char fix[FINDING_TEXT];
	char why[256];        /* not assessed: what data was missing */
	/* the speed-up's range (the replay's error and the fix's assumptions);
	 * replayed: the gain is the replay's (simulate.c), not the bounded sum */
	double speedup_lo, speedup_hi;
	/* what the fix saves at least: the range's low end before the
	 * occurrence count widens it (the activity was seen; how often it
	 * recurs is the range's, not the finding's doubt). Severity's measure:
	 * a fix that may gain nothing is no warning (gain.c) */
	double least_saved_ns;
	int replayed;
	int in_combined; /* its fix is in the combined figure (fixes.c; gain.c without a replay) */
	uint16_t shared_note; /* where evidence says its idle went to another finding (0: it does not) */
	/* the gain's parts (gain.c): what the rule claimed, what the bounds left */
	struct gain claim;
	double idle_ns, busy_ns;        /* saved_ns = idle_ns + busy_ns */
	double idle_take[IDLE_NCAUSES]; /* the idle part, cause by cause */
	int capped;                     /* saved_ns cut to 95% of T: the speed-up is a floor,
					 * not an estimate */
	enum severity min_severity;     /* a rule's floor (a debugging switch left on: warning) */
	/* the causes whose fix this one keeps from working (syncs inside the
	 * model break CUDA graphs and compiled graphs: C4, C10): it ranks before
	 * them (rules.c) */
	const char *blocks[2];
	unsigned settle; /* its rule's settle rank: the order findings draw on shared idle (gain.c) */
	/* where in the job's code (sites.c): indexes into analysis.sites, best first */
	struct finding_site {
		uint32_t site;
		double share;  /* of the finding's idle time (exact call sites: of the wait) */
		/* what was ranked, over every call line of the site's line
		 * (sites.c merge_lines): the idle time, the exact calls' wait or
		 * the time launching work; and the exact calls made there */
		double value;
		uint64_t calls;
		uint8_t exact; /* from the synchronizing calls' own stacks, not from samples */
		/* of the training thread's time launching work, not of idle time
		 * (C11's busy time: the lines that issue the most operations) */
		uint8_t launching;
		/* of the training thread's sampled time inside its uploads from
		 * pageable memory (C6: the lines that make them) */
		uint8_t staging;
		/* of the GPU time of C8's matrix kernels, at the lines that
		 * launched them (by each launch's time) */
		uint8_t launched;
		/* a block of lines of one function (sites.c merge_blocks): the
		 * first and last (0: the site's own line alone), and its class
		 * (its lines' one class, enum site_class) */
		uint32_t line_first, line_last;
		uint8_t block_cls;
	} sites[10];
	unsigned nsites;
	/* launch-bound idle at a backward pass's line, counted at the forward
	 * lines whose gradients it launches (sites.c): its share of the idle */
	double backward_share;
	/* a batch fix (C3): the per-sample speed-up replayed at batches
	 * batch_k[i] times larger, which of them the figures use, and at that
	 * one the speed-up if every kernel's grid grew (batch_lo) */
	unsigned batch_n, batch_at;
	double batch_k[BATCH_POINTS], batch_x[BATCH_POINTS], batch_lo;
	double batch_mem_k; /* the factor the GPU's memory in use allows (0: unknown) */
	/* a periodic finding (C14): how many times its work came in the steady
	 * window (0: not counted); its rate is known to within one of them */
	unsigned occurrences;
	/* ... where its activity's runs over the job's iterations (its
	 * activity_stat's runs_whole) say it comes more often than the window
	 * shows: about occ_expected times in the window's steps at that rate
	 * (0: not), which its figures count (rate_extra_ns: the activity's time
	 * the window holds more at that rate; fixes.c) */
	double occ_expected, rate_extra_ns;
	/* ... and the activity it is about (enum activity; ACT_NONE: none):
	 * its sites lead back to the line that calls it (sites.c) */
	uint8_t activity;
	/* a sync finding (C9) whose syncs free memory every step, which the
	 * training thread then allocates again: its fix takes those
	 * allocations out too (rules/c09_sync_stall.c; fixes.c) */
	uint8_t allocs_again;
	/* a launch-bound finding (C4): the share of its launch wait the training
	 * thread spent in an optimizer's step, and the speed-up replayed with
	 * that step's per-tensor launches taken away (a foreach or fused
	 * optimizer); optim_x 0: not replayed (the share is under OPTIM_SHARE) */
	double optim_share, optim_x;
	/* a precision finding (C8): the speed-up replayed with its FP32 matrix
	 * kernels at the TF32 rate alone (tf32_x 0: not replayed; fixes.c) */
	double tf32_x;
	/* a finding that keeps others' fixes from working (blocks): the
	 * speed-up replayed with its fix and theirs together (unblock_x 0: not
	 * replayed), and the first of them (fixes.c replay_unblocked) */
	double unblock_x, unblock_lo, unblock_hi;
	const char *unblock_cause;
};
#define FINDING_SITES 10
/* The batch factor a finding's figures are for (0: not a batch fix, or
 * not replayed: then its figures are the bounded ones). */
static inline double finding_batch(const struct finding *f)
{
	return f->replayed && f->batch_n ? f->batch_k[f->batch_at] : 0;
}

struct device_summary {
	uint32_t dev;
	uint64_t window_ns;
	/* kernel_ns, copy_ns, comm_ns: summed while reading; after the analysis,
	 * where streams overlapped (their sum above busy_ns), scaled to shares of
	 * busy_ns, the union of the operations' intervals */
	uint64_t kernel_ns, copy_ns, comm_ns, busy_ns, idle_ns;
	uint64_t idle_by_cause[IDLE_NCAUSES];
	uint64_t nkernels, ncopies;
	uint64_t steady_busy_ns; /* busy inside the main GPU's steady window (t0..t1) */
	uint64_t first_start; /* of its operations; they end at first_start + window_ns */
};

/* Kernel durations in log-spaced bins, 16 per power of two (a bin is at most
 * 6.25% wide): medians without keeping every duration (opstats.c). */
#define DUR_BINS (64 * 16)

/* Aggregates over the main GPU's operations in the steady window, gathered
 * in one pass for the rules (opstats.c): memory does not grow with the
 * number of operations. */
/* Chains of back-to-back kernels fused into one (opstats.c): what fusing
 * each would save (its time less one kernel of each grid in it, and the
 * launch gaps inside it), of that the launch gaps, how many chains, their
 * kernels and time (C11) */
struct chain_sums {
	double saved, gaps, kernels, ns;
	uint32_t n;
};
struct op_stats {
	uint64_t kernels, short_kernels;      /* short: under 10 us */
	uint64_t distinct_names, matmul_kernels;
	double class_ns[KC_NCLASSES];         /* kernel time per family */
	double f64_ns[2];                     /* outside matrix kernels, on FP64 data: other, elementwise */
	double foreach_ns;                    /* elementwise: a foreach optimizer's (torch._foreach_*) */
	double matmul_fill_ns;                /* matrix kernels: time x min(blocks/SMs, 1) */
	double matmul_narrow_ns, matmul_narrow_short_ns; /* ... with fewer blocks than SMs: all, shorter
						  * than SMALL_MATMUL_NS */
	double small_ns, small_fill_ns;       /* kernels under one wave: time, time x fill */
	uint32_t dur_hist[DUR_BINS];
	/* host<->device copies of 1 MiB or more, by the host side's memory kind */
	uint64_t pageable_copies;
	double pageable_bytes, pageable_ns, pinned_bytes, pinned_ns;
	double big_pinned_htod_bytes, big_pinned_htod_ns; /* pinned HtoD >= 8 MiB */
	uint64_t small_dtoh;                  /* DtoH copies <= 64 KiB */
	/* chains of back-to-back elementwise kernels (one stream and step),
	 * and of the kernels GPM's counters show memory-bound (counters.c) */
	struct chain_sums chain;
	double copy_ns;       /* copies and memsets: their time (the BUSY_COPIES family) */
	/* copies made by the training thread's copy calls under checkpoint
	 * serialization (any size): the checkpoint's, left out of the figures
	 * above but copy_ns (C14) */
	uint64_t ckpt_copies;
	double ckpt_copy_ns, ckpt_copy_bytes;
	/* matrix kernels: durations (C3: how much work each launch carries) */
	uint32_t matmul_dur_hist[DUR_BINS];
	/* kernels inside a body of the same kernels with the same grids run
	 * LOOP_MIN_COPIES times or more in a row (a loop over time steps or
	 * items; a network's stack of layers repeats its block a few times) */
	uint64_t looped_kernels;
	/* attention computed unfused: between two matrix products on a stream,
	 * a softmax with the elementwise and dropout kernels around it, each a
	 * pass over the score matrix that a fused attention keeps on chip: how
	 * many such cores, their kernels and time, of it elementwise, and the
	 * chain savings counted inside them (C11) */
	uint64_t attn_cores;
	double attn_kernels, attn_ns, attn_ew_ns, attn_chain_saved_ns;
};
/* A matrix kernel shorter than this carries about as much GPU work as the
 * host spends issuing one launch (a few us each): a bigger batch lengthens it
 * at no extra launch cost (C3). */
#define SMALL_MATMUL_NS 20000ull

/* The runtime that issues the main process's GPU work (framework.c): from
 * the libraries it maps (proc_libs), else from kernel names. */
enum framework { FW_UNKNOWN, FW_TORCH, FW_JAX, FW_CUPY, FW_TF, FW_CUDA_C, FW_NFRAMEWORKS };
const char *framework_name(enum framework f); /* "PyTorch", "JAX", ... */
const char *framework_id(enum framework f);   /* "pytorch", "jax", ... (JSON) */

/* Run-queue waits over a window (analyze.c), as shares of its length:
 * the training thread's wait and CPU time, and the job's (the main process
 * and its loaders, not other GPU processes) in cores. */
struct rq_window {
	double train_wait, train_run, job_wait, job_run;
};

/* A code site (sites.c): the innermost frame of the user's code (not under
 * site-packages/, dist-packages/, the standard library or <frozen ...>),
 * with the library function it called as context, and what that library
 * code is (the classification the rules use: docs/RULES.md). */
enum site_class { SC_NONE, SC_INPUT, SC_SERIALIZE, SC_SYNC, SC_LOG, SC_LAUNCH, SC_STAGE,
		  SC_WAIT, SC_METRIC, SC_HOSTCALC, SC_CALLBACK, SC_NCLASSES };
const char *site_class_name(enum site_class c);
struct site {
	uint32_t file, func, line;   /* indexes into trace.names (file: as the job named it) */
	uint32_t lib_file, lib_func; /* the library function called, 0 = none */
	uint32_t shown_file, shown_func; /* ... named past a decorator's wrapper (Adam.step for
					  * Optimizer.profile_hook_step.<locals>.wrapper), for the
					  * reports; 0: lib_file's, lib_func's */
	uint8_t cls;                 /* enum site_class */
	uint8_t user;                /* 0: no frame of the user's code (the innermost frame) */
	uint8_t loads;               /* a serialization library's reading call (np.load, torch.load):
				      * input read from a file, classed input preparation */
	uint8_t reads_storage;       /* the training thread waited on storage here (state D) for
				      * SITE_DISK_SHARE of its time or more, while its process read from
				      * storage: the line's time is reading (sites.c, reading_sites) */
	uint8_t in_module;           /* some stack of it is inside a torch.nn module's call */
	uint8_t elided;              /* some stack of it has user frames between the call line and
				      * its own (a validate() between the loop's call and the model's
				      * forward): the reports show them as "..." */
	/* the line in the training loop that leads to it: the outermost user
	 * frame of the stack's innermost run of user frames, below the loop's
	 * own frame (a loop's `save_checkpoint(...)` call for a torch.save
	 * inside it); 0: the site's own frame is that line */
	uint32_t call_file, call_func, call_line;
	double ns[IDLE_NCAUSES];     /* idle time the samples put here, by cause */
	double launch_ns;            /* the training thread's time here awake, outside its waits on the
				      * GPU (steady window): C11's sites pick from it */
	uint64_t calls, wait_ns;     /* synchronizing calls and copies made here (exact) */
	double held_ns, disk_ns;     /* the training thread's sampled time here (steady window; of
				      * stacks asleep throughout, none), and of it in state D outside
				      * its CUDA calls: waiting on storage */
	double staging_ns;           /* the training thread's sampled time here inside its copies
				      * from pageable memory to the device (steady window): C6's sites */
	double matrix_ns;            /* GPU time of C8's matrix kernels this line launched (steady
				      * window; each kernel placed by its launch time: sites.c) */
};

/* What the training thread's code was doing (activities.c), from its
 * Python stacks: work a user turns off or moves as one thing, whatever the
 * mechanisms it stalls the GPU by (docs/RULES.md section 7). */
enum activity { ACT_NONE, ACT_CHECKPOINT, ACT_EVAL, ACT_N };
const char *activity_name(enum activity k);
struct activity_stat {
	double wall_ns;  /* the training thread's time in it, steady window */
	double idle_ns;  /* the main GPU's idle during it (its gaps, whatever their cause) */
	uint32_t steps;  /* steps its gaps fall in (the GPU's: the host runs ahead) */
	uint32_t runs;   /* times it ran: samples in it 20 ms or more apart start a new run */
	/* ... and outside the steady window, over the loop's iterations (from
	 * about one step before the first to the end): runs that hold its own
	 * site (the line that calls it, else its function), so that its rate
	 * over the whole run is known where the window cuts its period */
	uint32_t runs_out, runs_whole; /* ... and in all, in and out of the window */
	/* ... and the iterations between its runs over the whole run, where it
	 * ran twice or more (0: not known) */
	double period;
	uint32_t file, func, line; /* the user frame that holds it (trace.names ids; 0: none) */
	/* the line that called it: the first user frame outside its outermost
	 * frame (the loop's `evaluate()` or `save_checkpoint()` call: the line
	 * to run less often); 0: none seen */
	uint32_t call_file, call_func, call_line;
	/* checkpointing found by its device-to-host copies, not by serialization
	 * (activities.c): the holder's copies in the steady window, in bursts */
	uint32_t copies, copy_runs;
	uint8_t serializes; /* ... and it serializes too: a checkpoint written, not a snapshot */
	/* of its time, in writes of images, plots or sounds (PIL's save,
	 * save_image, savefig...): samples written out, not a checkpoint */
	double output_ns;
	/* ... or it computes on the host for most of its time (statistics,
	 * metrics, logging of the copied tensors): periodic host work on the
	 * model's state, which the fix does less often, not a snapshot */
	uint8_t processes;
};

enum startup_said { SAID_COMPILE = 1, SAID_IMPORT = 2, SAID_FIRST_OPS = 4, SAID_ONCE = 8, SAID_WORKERS = 16 };

/* A compiler whose output a persistent cache keeps between runs. */
enum startup_cache { STARTUP_CACHE_NONE, STARTUP_CACHE_XLA, STARTUP_CACHE_CUPY, STARTUP_CACHE_N };

/* What the training thread did in the start-up (first GPU operation to the
 * steady window), from its stacks (activities.c). */
struct startup_parts {
	double compile_ns; /* in a compiler: XLA, Inductor/Dynamo, Triton, CuPy, numba */
	double import_ns;  /* importing modules */
	/* ... of compile_ns, in a compiler whose output a persistent cache keeps
	 * between runs (XLA's, CuPy's), and which one most of it was */
	double cache_ns;
	enum startup_cache cache_kind;
	/* in the model's first operations: PyTorch's modules, autograd,
	 * optimizers and CUDA set-up called before the steps run alike (GPU
	 * library set-up, kernels loaded on first use, cudnn.benchmark's
	 * autotuning), neither compiling nor importing */
	double first_ops_ns;
	/* starting worker processes (a DataLoader's first iterator, a Pool) and
	 * waiting for them to come up */
	double workers_ns;
	/* the main GPU's kernels of names that never run after the start-up:
	 * tried once (autotuning's candidates) or one-off set-up (analyze.c) */
	double once_ns;
	uint64_t once_kernels;
	uint32_t once_names;
	uint32_t compile_file, compile_func, compile_line; /* the user's line that compiled most */
};

/* The start-up finding (rules/startup.c, docs/RULES.md section 2): a job that ran to
 * its end and spent most of it starting up, in a compiler whose work a
 * persistent cache keeps. Its gain is the next run's: the job's time as
 * recorded over that time less what a warm cache saves. */
struct startup_finding {
	int shown;
	double job_ns;                          /* start to exit, as recorded (tracing included) */
	double saved_ns, saved_lo_ns, saved_hi_ns; /* what a warm start saves, and its range */
	double speedup, speedup_lo, speedup_hi;    /* the job's, on its next run */
	const char *compiler, *compiler_id;        /* "XLA", "CuPy"; JSON's "xla", "cupy" */
	const char *fix;
	char title[224];
	char evidence[FINDING_TEXT];
};

/* After the last step, to the main GPU's last operation (kept apart like
 * the start-up; steps.c): how long, and with Python stacks how much of it
 * the training thread spent under an evaluation frame, with the user's line
 * that called it most (activities.c). Seen once in the recording, it is no
 * periodic stall: the report says what it was. */
struct tail_parts {
	double ns, eval_ns;
	uint32_t eval_file, eval_line;
	/* ... and a checkpoint's serialization there (a final save, or the
	 * first of a periodic one that the recording ended in) */
	double ckpt_ns;
	uint32_t ckpt_file, ckpt_line;
	/* ... and its time under a framework's per-step hook (Lightning's
	 * on_train_batch_end, transformers' on_step_end...: the loop's own
	 * work, not the teardown after the loop), with the hook's function */
	double hook_ns;
	uint32_t hook_func;
	/* ... and its time still inside the training loop's frame (sites.c's
	 * loop path), with the loop's line it spent most of it under (the step
	 * function's call of the work): an iteration, not the teardown after
	 * the loop */
	double loop_ns;
	uint32_t loop_file, loop_func, loop_line;
	int loop_called; /* loop_func is a function the steps never ran, called at loop_file:loop_line */
	double loop_called_ns; /* ... the tail's time under it */
};

/* What the outputs print that is not a finding, decided once (facts.c) so
 * that none works it out for itself. */
struct report_facts {
	const char *verdict; /* "healthy", "bottlenecked", "too-little" or "no-gpu-data" */
	int healthy;         /* no finding at warning or above, and a GPU timeline to judge */
	int gpu_paced;       /* gpu_set_the_pace() */
	/* without steps: the time windows with a length, and the GPU's busy
	 * share of them, median (the upper of the middle two) and lowest */
	size_t windows_busy_n;
	double window_busy_median_pct, window_busy_lowest_pct;
	/* the time after the last step is said (a tenth of the steady window
	 * or more: TAIL_SHOWN), and an evaluation or a checkpoint's
	 * serialization in it (a tenth of it); tail_eval_again: that
	 * evaluation is called at the line of the one inside the steps (C14's
	 * activity): its next run, not one seen once */
	int tail_shown, tail_eval_shown, tail_ckpt_shown, tail_eval_again;
	/* the step without gpuwhy's own tracing cost (TRACE_COST_SHOWN of the
	 * run or more) and the kernels built on first use (COMPILE_SHOWN) is
	 * said; the time the gains are of: that mean step, or the steady run
	 * without steps */
	int untraced_step_shown;
	double untraced_step_ns;
	/* the start-up's parts the steps section says (enum startup_said: a
	 * tenth of it or more each), and that a persistent cache keeps most of
	 * its compiling (STARTUP_CACHE_SAID) */
	unsigned startup_said;
	int startup_cache_said;
	/* a C14 finding's share of the run counts its idle and the GPU work
	 * of the periodic activity, which is busy time, not in the idle
	 * split: its two parts (the finding with the most work),
	 * said under the split where the work is PERIODIC_BUSY_SHOWN of the
	 * run or more; 0 otherwise */
	double periodic_idle_ns, periodic_busy_ns;
	/* the cause of the finding at warning or above that claims the
	 * periodic idle where no C14 finding does (C16: a wait every N steps),
	 * said under the split; NULL otherwise */
	const char *periodic_claimed_by;
	double step_mean_ns; /* the steps' mean length (0 without steps): long periodic steps lift it */
	/* info findings whose point estimate saves SEV_WARN_SHARE of the run
	 * or more, their range reaching less (the report without -v says how
	 * many there are and the largest: quiet_best, an index into findings) */
	unsigned quiet_n;
	size_t quiet_best;
	/* the training thread compiled for COMPILE_SHOWN of the steady run or
	 * more (`compiling` gaps: no finding claims them): said under the
	 * split with the site that compiled most (an index into sites,
	 * SIZE_MAX without one) */
	int compile_shown;
	size_t compile_site;
};

/* The analysis' results: what the outputs print and the rules read.
 * Renderers get it const; the passes' own indexes and working state are
 * behind `x` (struct analysis_scratch, internal.h), which no output sees. */
struct analysis {
	struct trace *t;
	struct analysis_scratch *x;
	/* Duty-cycled recordings: the traced windows [v[2i], v[2i+1]) of the main
	 * process; empty when everything was traced. Untraced time is neither
	 * busy nor idle: it is left out of every figure. */
	VEC(uint64_t) windows;
	uint32_t main_dev, main_pid, main_tid;
	/* host-staged collectives of the main process, counted as
	 * communication because it is one rank of several (hostcoll.c) */
	uint64_t host_colls;
	double host_coll_ns; /* their time, copy out to copy back, summed */
	/* the main process's NCCL kernels in the steady window while none of its
	 * other operations ran (exposed.c): communication left exposed */
	double comm_exposed_ns;
	uint32_t ndev;
	struct device_summary dev[GW_MAX_GPUS];
	/* steady state: from the first step's start to the last step's end */
	uint64_t t0, t1, startup_ns, steady_ns;
	uint64_t first_op, last_op; /* main GPU */
	uint64_t ops_end;           /* last end of any operation */
	VEC(struct step) steps;
	const char *step_source; /* "nvtx", "auto", "none" */
	char step_marker[160];   /* the NVTX name or kernel name that marks steps */
	uint32_t step_marker_name; /* ... its id in trace.names (0: none) */
	double step_median_ns, step_p95_ns, step_min_ns, step_max_ns;
	/* every steps_long_every steps one ran long (up to steps_long_max_ns) with
	 * the training thread in the same code as in the others: the loop's own
	 * work, no periodic stall (0: none such); an iteration of the loop may
	 * then span that many steps, step_iterations_if_long of them in the run,
	 * and the steps' confidence is medium at most */
	unsigned steps_long_every;
	double steps_long_max_ns;
	uint64_t step_iterations_if_long;
	/* the long steps' regular pattern (attribute.c), if any: how far apart
	 * the training thread's stacks in them are from those in the other
	 * steps (sites_marked_steps_apart; -1: no pattern, or no stacks) */
	double periodic_apart;
	/* main device, steady window: the idle intervals only with
	 * ANALYZE_KEEP_GAPS (--trace draws them); their counts always */
	VEC(struct gap) gaps;
	uint64_t gaps_by_cause[IDLE_NCAUSES];
	uint64_t gaps_at_step_start[IDLE_NCAUSES]; /* ... of them ending where a step starts */
	/* sync gaps in steps after a read (a device-to-host copy or a
	 * synchronize call, not a free of memory) */
	uint64_t sync_read_gaps;
	int keep_gaps;
	uint64_t idle_by_cause[IDLE_NCAUSES]; /* main device, steady window */
	uint64_t busy_ns, idle_ns;            /* main device, steady window */
	/* gpuwhy's own share of the launch gaps: an estimated cost per traced
	 * launch on the host (attribute.c). Gains are computed for the program
	 * as it runs without gpuwhy: steady_ns - trace_cost_ns. */
	uint64_t trace_cost_ns;
	/* gaps whose own cost is a CUDA graph's launch, more than one launch's */
	uint64_t trace_graph_gaps;
	/* main process blocked on a full GPU command queue (CUPTI's "command
	 * buffer full" overhead records: the GPU set the pace), steady window */
	uint64_t queue_full_ns;
	/* GPM samples of the main GPU in the steady window: tensor pipes (C8),
	 * and DRAM bandwidth while the SMs worked (C11), summed and counted */
	double gpm_tensor, gpm_dram;
	unsigned gpm_tensor_n, gpm_dram_n;
	/* kernels whose names say nothing of matrix work, launched as tiled
	 * matrix kernels are, that GPM's counters show on the FP32 pipes with
	 * the tensor cores idle (counters.c): their time, moved from KC_OTHER to
	 * KC_MATMUL_FP32, and what the counters read meanwhile */
	struct {
		double ns;                  /* 0: none such */
		unsigned intervals;         /* GPM intervals they held */
		double fp32, tensor, dram;  /* mean utilization there, % */
		uint32_t name;              /* the one with the most time (trace.names) */
	} fp32_counted;
	/* kernels of no known family, not launched as tiled matrix kernels
	 * are, that GPM's counters show keeping DRAM busy with the tensor and
	 * FP32 pipes quiet (counters.c): their time, moved from KC_OTHER to
	 * KC_ELEMENTWISE (their chains C11's), and the counters meanwhile */
	struct {
		double ns;                  /* 0: none such */
		unsigned intervals;
		double dram;                /* mean DRAM utilization there, % */
	} mem_counted;
	/* the FP32 matrix kernels known by name, over the GPM intervals they
	 * held (counters.c): the FP32 pipes' active time against theirs (an
	 * upper bound of their own use); intervals 0: not measured */
	struct {
		unsigned intervals;
		double share;
	} fp32_pipes;
	double clk_tck_ns;
	unsigned cpus_allowed;
	int launch_blocking;
	struct op_stats ops;
	VEC(struct finding) findings;
	double combined_saved_ns, combined_speedup; /* all warning+ findings fixed */
	double combined_lo, combined_hi;            /* ... its range (speed-ups) */
	int combined_replayed;                      /* ... one replay with every fix (fixes.c) */
	int combined_chosen;                        /* ... of the findings a user named (report
						     * --fixes), not those at warning and above */
	/* gains from the replay of the steady window's graph (simulate.c): the
	 * replayed window without gpuwhy's cost; uncertain: the replay of the
	 * recording missed it by more than 10% */
	int replay_used, replay_uncertain;
	double replay_base_ns;
	/* ... with gpuwhy's cost taken out as on the jobs where it cost most
	 * (TRACE_COST_HIGH_NS): the base of the ranges' far end; 0 where no
	 * launch gap holds that cost */
	double replay_base_hi_ns;
	/* ... with gpuwhy's cost kept (the base of the ranges' near end); each
	 * of these without the kernels built on first use, which the
	 * recording's own replay keeps */
	double replay_base0_ns;
	struct replay_facts {
		double recorded_ns, replayed_ns, err; /* the window; the replay as it ran; |diff| / it */
		double pace_ns;                       /* the host's own time per operation */
		uint64_t ops, waits;                  /* the graph's operations and host waits */
		double cpu_ns;                        /* building and replaying the graph (bench/replay.sh) */
		/* CUDA_LAUNCH_BLOCKING: a blocking launch's hold on the host
		 * beyond its kernel's run (0: none: not measured, or the
		 * kernels' gaps leave none), and what the job's blocking
		 * device copies measured before the gaps capped it */
		double blocking_ns, blocking_copies_ns;
	} replay;
	int combined_capped;                        /* ... cut like a finding's (struct finding) */
	double combined_batch;                      /* ... a batch fix's factor in it (0: none) */
	struct report_facts facts;                  /* after the rules (facts.c) */
	VEC(char *) warnings;     /* data quality: what is missing, drops */
	struct kname_cache *knames; /* kernel names as shown, by name id (analysis_kname) */
	/* how the steps were found (steps.c): confidence (CONF_LOW: none found),
	 * why, the repeating unit's size; with no steps, `steps` holds fixed
	 * time windows of step_window_ns instead (never steps: see has_steps()) */
	int step_confidence;
	int step_user; /* the steps were chosen with --steps */
	char step_why[512];
	/* too little of the job to diagnose (sufficiency.c): no finding above
	 * info, and the report says why in words */
	int too_little;
	char too_little_why[400];
	uint32_t step_ops;
	uint32_t warmup_steps;    /* leading steps taken as start-up (compilation, autotuning):
				   * STEP_WARMUP_FACTOR x the median or longer (steps.c) */
	uint64_t step_iterations; /* occurrences of the step's start over the whole run (start-up
				   * included): the count a user checks against their loop */
	uint64_t step_window_ns;
	/* long last steps the step finder left out, still in steps.v from
	 * steps.n on (steps.c may take back those that restarted workers) */
	size_t steps_long_last;
	/* of the steps, those taken back: the loop restarted its input workers
	 * in them (an epoch's DataLoader iterator), and ran on after */
	uint32_t restart_steps;
	/* C7: run-queue waits recorded (schedstat); over the idle attributed to
	 * oversubscription, what the training thread waited and ran, what the
	 * job's threads waited, and the machine's idle CPU share (ns-weighted);
	 * takers_ns: the idle whose sites are the job's other threads that ran
	 * meanwhile (sites.c), not the training thread's own lines */
	int rq_known;
	struct {
		double train_wait_ns, train_run_ns, job_wait_ns, machine_idle_ns, machine_ns, takers_ns;
	} oversub;
	/* C2 / C14: bytes read in storage_io gaps and written in file_writes
	 * gaps (each growth counted once); steps (or gaps) with file writes */
	double io_read_bytes, io_write_bytes;
	uint32_t io_gaps_dstate; /* storage_io gaps with a thread in state D */
	uint64_t load_io_ns;     /* ... idle the sites gave it: files loaded from storage on the training thread */
	uint64_t read_site_io_ns; /* ... and the training thread's reading at lines that read from
				   * storage (site.reads_storage) */
	uint32_t write_occurrences;
	uint64_t write_idle_periodic_ns; /* file_writes idle inside periodic steps */
	enum framework framework;
	const char *framework_source; /* "libraries", "kernel names", "none" */
	char python[16];              /* the main process's Python version, "" if unknown */
	/* activities of the training thread (activities.c) */
	struct activity_stat act[ACT_N];
	struct startup_parts startup;
	struct startup_finding startup_finding; /* after the rules (rules/startup.c) */
	double job_ns; /* the recording's start to the target's exit, tracing included (0: not known) */
	struct tail_parts tail;
	/* the training thread asleep or blocked (state S) outside its CUDA
	 * calls, steady window (activities.c): time it did no host work, the
	 * GPU busy or not (C16) */
	double asleep_ns;
	/* ... of it, while another Python thread of its process ran input or
	 * the user's code: it waited for that thread, on its queue or for the
	 * interpreter lock (GIL) (activities.c) */
	double other_wait_ns;
	/* idle intervals with the training thread so asleep, moved to waiting
	 * for input (C1), and their time (sites.c) */
	uint64_t other_wait_gaps;
	double other_wait_idle_ns;
	uint32_t other_tid; /* the thread it waited for most (0: none) */
	/* idle intervals the training thread spent mostly starting worker
	 * processes (a DataLoader iterator without persistent workers), moved to
	 * waiting for input (C1), and their time (sites.c) */
	uint64_t worker_start_gaps;
	double worker_start_idle_ns;
	/* idle of the long steps that recur (C14's) in which the training
	 * thread was asleep in a wait (a subprocess, a socket, a lock), moved
	 * to waiting elsewhere (C16) (sites.c) */
	double periodic_wait_ns;
	/* idle intervals the training thread spent mostly awake receiving
	 * batches from another process (copying them out of a pipe and
	 * unpickling them), moved to its own CPU work (C1), and their time
	 * (sites.c) */
	uint64_t pipe_recv_gaps;
	double pipe_recv_idle_ns;
	/* idle intervals the host ended with an input copy after issuing
	 * nothing, in its own code: input prepared on the training thread,
	 * moved from launch overhead to its CPU work (C1), and their time
	 * (sites.c) */
	uint64_t input_copy_gaps;
	double input_copy_idle_ns;
	/* Python code sites (sites.c) */
	VEC(struct site) sites;
	double site_class_ns[IDLE_NCAUSES][SC_NCLASSES]; /* idle under stacks of each class */
	double site_optim_ns[IDLE_NCAUSES]; /* ... under an optimizer's step (torch.optim, optax) */
	double site_model_ns[IDLE_NCAUSES]; /* ... inside a model library's modules (transformers, timm) */
	/* ... of the sync gaps that end in a host-to-device copy: the work after
	 * the synchronization made the next input (an environment stepped on
	 * the actions read); in the others it processed the values read */
	double site_sync_to_htod_ns[SC_NCLASSES];
	/* ... of the others, numeric or the user's own code in the function that
	 * read the values, at the read's line or after it: the values processed
	 * on the host (sites.c) */
	double site_sync_post_ns;
	/* ... of it, work in a host callback of a compiled step
	 * (jax.pure_callback): its answer goes back to the GPU, which waits */
	double site_callback_ns;
	/* the training thread's sampled time in host callbacks' code
	 * (jax/_src/callback.py, debugging.py frames), steady window: where
	 * there is any, its time inside a compiled step's run waits for them */
	double py_callback_ns;
	/* C8's matrix kernels in the steady window (their GPU time), and of it
	 * what sites.c placed at the line that launched each */
	double matrix_launch_ns, matrix_placed_ns;
	uint64_t site_moved_ns;   /* host-compute idle the classes moved to another cause */
	uint64_t site_ckpt_ns;    /* ... of it to periodic: checkpoint serialization (C14) */
	uint64_t site_stage_ns;   /* ... of it to pageable_copy: host-to-device staging (C6) */
	uint64_t site_stage_lib_ns; /* ... of that, before a pinned copy: into the library's buffer */
	uint64_t py_thread_samples; /* of the training thread (or the Python thread that stands for it) */
	uint32_t py_site_tid;       /* the Python thread the sites come from: the training thread,
				     * or where it ran no Python the main process's main thread */
	uint64_t api_calls, api_calls_sited; /* its sync/copy calls, and those with a stack */
	double api_wait_sited_ns;            /* the time in those with a stack */
	char py_note[256];        /* why the report names no code sites ("" when it does,
				   * or when the recording predates stacks) */
	/* an allocation failed (analysis_nomem()): analyze() returns -ENOMEM and
	 * err_msg says where; the figures are not a verdict and must not be shown */
	int err;
	char err_msg[256];
	struct depgraph *graph; /* the steady window as a dependency graph (depgraph.c), or NULL */
	/* main GPU, steady window: kernel time and count per name id (index
	 * into trace.names; name_totals_n entries), for `gpuwhy diff` */
	struct name_total {
		uint64_t ns, count;
	} *name_totals;
	size_t name_totals_n;
};

#define STEP_WARMUP_FACTOR 3.0 /* a first step this many medians long is warm-up */
#define WARMUP_COMPILE_SHARE 0.5 /* ... and one of the first third spent this much compiling */

/* Steps found (0 when the run is analysed in time windows instead). */
static inline size_t has_steps(const struct analysis *a)
{
	return a->step_window_ns ? 0 : a->steps.n;
}

/* ANALYZE_KEEP_GAPS: keep every idle interval in a->gaps (memory grows with
 * them; only the timeline export needs them). */
enum { ANALYZE_KEEP_GAPS = 1 };
struct analysis_scratch;
int analyze(struct trace *t, struct analysis *a, unsigned flags);
/* The same, with how steps are found (--steps): NULL or "auto", "none",
 * "nvtx:NAME", "kernel:NAME". -EINVAL when NAME is not in the recording:
 * a->step_why says so and lists candidates. */
int analyze_steps(struct trace *t, struct analysis *a, unsigned flags, const char *steps);
void analysis_free(struct analysis *a);
/* The combined replay of the fixes of the findings named in causes (a
 * comma list: "C1,C14"; report --fixes), whatever their severity, in place
 * of those at warning and above. -EINVAL where a name is no replayed
 * finding of this report (err says which, and what the report has), or
 * -ENOMEM. */
int analysis_combine(struct analysis *a, const char *causes, char *err, size_t len);
void analysis_warn(struct analysis *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An allocation on the analysis path failed while doing `what`: the first
 * is kept, and analyze() ends with -ENOMEM (a resource limit is never a
 * finding, nor the absence of one). */
void analysis_nomem(struct analysis *a, const char *what);

/* Helpers for rules. */
enum kclass classify_kernel(const char *name);
int kernel_moves_only(const char *name); /* roll, cat, gather: elementwise, free once fused */
int kernel_on_doubles(const char *name); /* its template arguments say double */
int kernel_on_floats(const char *name);  /* ... float, and no 16-bit type */
int kernel_untyped(const char *name);    /* its name names no data type (XLA, Triton) */
int kernel_updates_params(const char *name); /* an optimizer's update: follows the parameters */
/* A kernel name as a person reads it, for anything shown (findings' evidence,
 * the report, the timeline): KNAME_SHORT ("vectorized_elementwise_kernel
 * (add)") or KNAME_FULL (demangled), worked out once per name id when first
 * asked for (src/util/kname.h). JSON keeps the recorded name beside it. */
const char *analysis_kname(const struct analysis *a, uint32_t name, int form);
/* gpuwhy's estimated tracing cost is said beside the step time, with the
 * mean step the gains are of, from this share of the steady window on:
 * below it, that step and the recorded mean differ by less than 1%. */
#define TRACE_COST_SHOWN 0.01
#define PERIODIC_BUSY_SHOWN 0.01
/* ... and the periodic idle's claim by another finding from this share of
 * the run (the split shows a cause's line from 0.5%) */
#define PERIODIC_CLAIM_SHOWN 0.005
/* ... and the training thread compiling from this share of it */
#define COMPILE_SHOWN 0.05
/* The time after the last step is said from this share of the steady
 * window on, and an evaluation in it from this share of it. */
#define TAIL_SHOWN 0.10
/* The steps section says a persistent cache keeps most of the start-up's
 * compiling where a cached compiler had this share of the start-up or more. */
#define STARTUP_CACHE_SAID 0.50
/* ... and each part of the start-up from this share of it on. */
#define STARTUP_PART_SAID 0.10
/* The steady window as it would last without gpuwhy's tracing cost. */
double steady_untraced_ns(const struct analysis *a);
/* Launch-gap idle (C4) without gpuwhy's own estimated share of it. */
double launch_idle_untraced(const struct analysis *a);
/* 1 when the host was blocked on a full GPU command queue for GPU_PACED_PCT
 * of the steady window or more: the GPU, not the host, set the pace. */
int gpu_set_the_pace(const struct analysis *a);
/* 1 when the long steps that recur stall mostly in a wait of the training
 * thread (a subprocess, a socket, a lock: periodic_wait_ns at least what
 * they idle otherwise): C16's, not C14's. */
int periodic_is_wait(const struct analysis *a);
/* Records what the finding's saving is made of and fills in saved_ns,
 * speed-up, per-step saving and severity, bounded (gain.c): the idle part by
 * the idle of its causes, the busy part by the time of the operations it
 * names, the whole by 95% of T, against the run as
 * it would be without gpuwhy (steady_ns - trace_cost_ns). After every rule,
 * run_rules() settles the findings against each other: causes shared by
 * several findings are drawn on once, in the order of docs/RULES.md. */
void finding_set_gain(const struct analysis *a, struct finding *f, const struct gain *g);
/* Checks every report-level invariant (invariants.c): 0, or -1 with why[]
 * saying which failed and by how much. */
int analysis_check_invariants(const struct analysis *a, char *why, size_t len);

/* Python stacks (sites.c): a thread's next sample (*pos 0 at first; 1, or 0
 * at the end), and how long a sample holds: from half a period before it
 * until half a period before the thread's next, at most *hold after it. */
int py_thread_next(const struct py_thread *th, size_t *pos, uint64_t *ts, uint32_t *node);
/* ... with the thread's state at the sample (GW_PYSTATE_*). */
int py_thread_next_state(const struct py_thread *th, size_t *pos, uint64_t *ts, uint32_t *node,
			 uint8_t *state);
void py_hold(const struct trace *t, uint64_t *half, uint64_t *hold);

#endif
