/* Shared between the analysis passes (not for renderers). */
#ifndef GPUWHY_ANALYZE_INTERNAL_H
#define GPUWHY_ANALYZE_INTERNAL_H

#include <string.h>

#include "../format/format.h"
#include "analyze.h"
#include "thresholds.h"


/* Validity bits as read, named as the writers name them (format.h's
 * GW_VALID_BIT): a field not marked valid was not supported or not read, and
 * is never taken for 0. FIELD_VALID(s, GPU_VALID_UTIL) reads one. */
#define FIELD_VALID(s, bit) (((s)->valid & (bit)) != 0)
#define GPU_VALID_SMCLK GW_VALID_BIT(GW_GPU_SMCLK, GW_GPU_VALID)
#define GPU_VALID_REASONS GW_VALID_BIT(GW_GPU_REASONS, GW_GPU_VALID)
#define GPU_VALID_UTIL GW_VALID_BIT(GW_GPU_UTIL, GW_GPU_VALID)
#define GPU_VALID_POWER GW_VALID_BIT(GW_GPU_POWER_MW, GW_GPU_VALID)
#define GPM_VALID_SM_UTIL GW_VALID_BIT(GW_GPM_SM_UTIL, GW_GPM_VALID)
#define PCIE_VALID_BOTH (GW_VALID_BIT(GW_PCIE_TX_KBS, GW_PCIE_VALID) | GW_VALID_BIT(GW_PCIE_RX_KBS, GW_PCIE_VALID))
#define GPM_VALID_TENSOR GW_VALID_BIT(GW_GPM_TENSOR, GW_GPM_VALID)
#define GPM_VALID_DRAM GW_VALID_BIT(GW_GPM_DRAM, GW_GPM_VALID)
#define GPM_VALID_FP32 GW_VALID_BIT(GW_GPM_FP32, GW_GPM_VALID)
#define GINFO_VALID_PCIE_GEN GW_VALID_BIT(GW_GINFO_PCIE_GEN, GW_GINFO_VALID)
#define GINFO_VALID_PCIE_GEN_MAX GW_VALID_BIT(GW_GINFO_PCIE_GEN_MAX, GW_GINFO_VALID)
#define GINFO_VALID_PCIE_WIDTH GW_VALID_BIT(GW_GINFO_PCIE_WIDTH, GW_GINFO_VALID)
#define GINFO_VALID_PCIE_WIDTH_MAX GW_VALID_BIT(GW_GINFO_PCIE_WIDTH_MAX, GW_GINFO_VALID)
#define GINFO_VALID_CC_MAJOR GW_VALID_BIT(GW_GINFO_CC_MAJOR, GW_GINFO_VALID)
_Static_assert(GPU_VALID_SMCLK == 1 && GPU_VALID_REASONS == 4 && GPU_VALID_UTIL == 1u << 6 &&
		       GPM_VALID_TENSOR == 4 && GPM_VALID_DRAM == 8 && GINFO_VALID_PCIE_GEN == 1u << 5 &&
		       GINFO_VALID_PCIE_WIDTH_MAX == 1u << 8 && GINFO_VALID_CC_MAJOR == 1u << 14 &&
		       GPU_VALID_POWER == 8 && GPM_VALID_SM_UTIL == 1 && PCIE_VALID_BOTH == 3,
	       "validity bits moved: recordings already written keep theirs");

/* Decoded blocks of thread samples, shared by the threads (analyze.c): at
 * most DEC_SLOTS, so that the memory does not grow with the threads (a
 * crafted file can hold 200,000 processes); a thread whose slot was taken
 * by another decodes its block again. */
#define DEC_SLOTS 1024
#define FRAME_MEMOS 16 /* predicates sites_any_frame keeps answers for */
struct dec_slot {
	const void *owner; /* the struct thread_range that decoded it */
	size_t block;
	struct tsample s[SAMPLE_BLOCK];
};
struct dec_pool {
	struct dec_slot *v;
	size_t n, next; /* next: the slot to take next, round robin */
};

/* A thread with /proc samples, as the analysis sees it, with the two blocks
 * of samples it decoded last (lookups come in time order and mostly fall in
 * them: a window's two ends can lie in neighbouring blocks). */
struct thread_range {
	const struct thread_samples *s; /* its pid, tid and samples */
	int other_gpu_process; /* another process using the GPU (a DDP rank), not a loader */
	/* over all its samples: its CPU time, its run-queue wait never grew, it
	 * was never seen runnable (most of a runtime's pool threads): the window
	 * sums skip it, as it adds nothing to any of them */
	unsigned cpu_flat : 1, wait_flat : 1, never_runnable : 1;
	size_t block[2];       /* SIZE_MAX: none decoded yet */
	uint32_t slot[2];      /* ... where in the pool (valid while the slot's owner is this) */
	unsigned older;        /* which of the two to decode into next */
	struct dec_pool *pool;
};

struct time_span {
	uint64_t start, end;
};

struct io_event {
	uint64_t start, end, bytes;
	uint32_t pid; /* the process whose counter grew */
};

/* The passes' indexes and working state: read by the passes only, freed
 * with the analysis (analysis_free()). */
struct analysis_scratch {
	VEC(struct thread_range) threads;
	/* a thread of the tree in state D: from the sample that saw it to the
	 * thread's next sample (sampling is change-only), sorted by start, with
	 * the largest end so far, so that one search answers "any in a window" */
	VEC(struct time_span) dstate;
	VEC(uint64_t) dstate_maxend;
	/* what the processes read and wrote (proc_io read_bytes, write_bytes):
	 * each growth placed in the time since the check before it, sorted by end */
	VEC(struct io_event) io_reads, io_writes;
	/* the times another Python thread of the training process ran input or
	 * the user's code (sites.c), sorted and disjoint: the training thread
	 * asleep then waited for it, for its queue or for the interpreter lock */
	VEC(struct time_span) other_run;
	VEC(uint64_t) iter_starts; /* every iteration's start over the whole run, start-up's
				    * repeats left out as step_iterations leaves them (steps.c) */
	/* the main process's host-staged collectives, sorted and disjoint (hostcoll.c) */
	VEC(struct time_span) comm_spans;
	uint64_t io_period_ns; /* how often proc_io is checked (5 /proc ticks) */
	VEC(uint32_t) node_site;  /* per trace.py_nodes: site index + 1, 0 = not yet (sites.c) */
	VEC(uint8_t) node_optim;  /* per trace.py_nodes: 2 in an optimizer's step, 1 not, 0 not yet */
	struct hmap site_index;   /* a hash of a site's key -> index + 1 into sites (sites.c) */
	/* the training loop's path, outermost first: the frames (file, func,
	 * line: names ids) of the deepest stack node that holds most of the
	 * driving thread's steady time and of its ancestors. By frame, not by
	 * node: the injection library's own stacks (exact sync sites) are a
	 * trie of their own (sites.c: a site's call line stops below it) */
	struct py_frame_rec *loop_path;
	unsigned loop_depth; /* 0: no loop found (sites_begin looks once) */
	struct dec_pool dec;      /* decoded thread samples (struct thread_range) */
	/* sites_any_frame's answers by predicate, per trace.py_nodes: 2 yes,
	 * 1 no, 0 not yet (a gap asks them of each of its stacks: the walk
	 * and its string searches were most of a report's time) */
	struct frame_memo {
		int (*match)(const char *file, const char *func);
		uint8_t *v;
		size_t n, cap;
	} frame_memo[FRAME_MEMOS];
};

/* Consumers of operations in time order (per device). */
typedef void (*op_fn)(void *ctx, const struct gpu_op *o);

/* A reorder buffer (ordered.c): operations of one device go in as read,
 * and come out in (start, arrival) order once a start `window` ns later has
 * gone in. */
struct ro_entry {
	struct gpu_op op;
	uint64_t seq;
};
struct ro_run { /* sorted: v[head..n) */
	struct ro_entry *v;
	size_t head, n, cap;
};
struct ro_heap { /* a binary min-heap on (start, seq) */
	struct ro_entry *v;
	size_t n, cap;
};
#define RO_RUNS 8
struct reorder {
	struct ro_run run[RO_RUNS];
	unsigned nruns;
	struct ro_heap heap;
	uint64_t window, max_start, last_out, seq;
	size_t pending, peak;
	size_t inserts; /* arrivals that fit no run's end (put in the heap) */
	uint64_t sifts; /* heap levels moved: O(inserts x log(peak)) */
	int violated; /* an operation came later than the window allowed */
};
int reorder_push(struct reorder *ro, const struct gpu_op *op, op_fn fn, void *ctx);
void reorder_flush(struct reorder *ro, op_fn fn, void *ctx);
void reorder_free(struct reorder *ro);

/* Step detection from the operations of one device (step_finder.c), fed as they
 * are read: the repeating unit is found on the first STEP_PREFIX_OPS of them
 * (all, when the run has fewer), put in time order; after that only the
 * starts of its boundary operation are kept. */
#define STEP_PREFIX_OPS (1u << 19) /* 12 MiB: c4's fixture has 328,693 on its GPU */
/* warm-up steps: at most this many, of the first tenth (steps.c, steps_period.c) */
#define WARMUP_MAX_STEPS 20
/* ... of the first tenth or the first this many, the more (steps.c) */
#define WARMUP_MIN_STEPS 3
extern size_t step_prefix_ops;     /* STEP_PREFIX_OPS; tests lower it */
struct sf_entry {
	uint64_t start;
	uint32_t dur : 31;      /* ns, clipped at 2.1 s: it only closes idle gaps */
	uint32_t same_call : 1; /* gpu_op.same_call */
	uint32_t name, pid, stream;
};
_Static_assert(sizeof(struct sf_entry) == 24, "struct sf_entry grew: the prefix holds 2^19 of them");
/* The repeating unit of a token sequence (steps_period.c). */
struct step_period {
	uint32_t tok;      /* the token that starts each step; UINT32_MAX: none */
	unsigned stride;   /* ... at every stride-th of its occurrences: 1, or 2 on names and
			    * streams only; set wherever tok is (confidence()) */
	size_t nseg;       /* steps in the sequence examined */
	uint32_t ops;      /* operations in the modal step */
	double share;      /* of the steps holding the modal step's operations (within 10%) */
	double coverage;   /* of the sequence from the first to the last boundary */
	int confidence;    /* enum confidence; CONF_LOW: none found */
	int varying;       /* its steps hold it plus extra work that differs (steps_period.c) */
	char why[400];
};
/* tok[i] < ntok: the operations in time order, their starts and the idle
 * time before each; inner[t] (NULL: none) marks the tokens of operations
 * that a host call made after its first (a CUDA graph's), which never start
 * a step. 0, or -ENOMEM (out->why says so). */
int step_period_find(const uint32_t *tok, const uint64_t *start, const double *gap, size_t n,
		     uint32_t ntok, const uint8_t *inner, unsigned max_stride, struct step_period *out);
struct step_finder {
	struct sf_entry *pre; /* the prefix, until the unit is found */
	size_t npre, cap, nown;
	uint32_t pid;    /* the process whose operations mark steps */
	int decided;
	uint32_t marker, marker_stream; /* the boundary operation's name (0: none) and stream (UINT32_MAX: any) */
	uint8_t marker_role;            /* and role (step_finder.c: tok_key) */
	uint8_t mode;                   /* how operations became tokens (step_finder.c) */
	uint64_t occ;                   /* the marker's occurrences so far (per.stride: every how many start a step) */
	struct hmap held;               /* stream -> a start its next operation decides (by role) */
	struct step_period per;
	VEC(uint64_t) starts; /* of the marker, in the order read */
};
void step_finder_add(struct trace *t, struct step_finder *f, const struct gpu_op *o);
/* Chooses the marker now if the prefix did not fill up, among the
 * operations of process pid. */
void step_finder_end(struct trace *t, struct step_finder *f, uint32_t pid);
void step_finder_free(struct step_finder *f);
/* Steps between consecutive starts, less warm-up and long last steps, and
 * their length statistics. */
struct step_set {
	VEC(struct step) steps;
	double median, p95, min, max;
	/* long last steps left out, still in steps.v from steps.n on, in order */
	size_t long_last;
	int nomem; /* an allocation failed: the set is not to be used */
};
/* The steps between consecutive starts (step_finder.c), warm-up and long
 * last steps left out; ss->nomem when an allocation failed. */
void steps_from_starts(struct step_set *ss, const uint64_t *starts, size_t n);
/* spec: NULL or "auto", "none", "nvtx:NAME", "kernel:NAME" (--steps).
 * 0, or -EINVAL when NAME is not there (a->step_why says so). */
int detect_steps(struct analysis *a, const char *spec);
const char *step_confidence_name(int c);

/* Names (names.c): the table behind trace_intern(), set up and freed with
 * the trace; a stream's string id as an index into trace.names (cached);
 * a STRING record that redefines an id; the class of a host call's name. */
int names_init(struct trace *t); /* 0 or -ENOMEM */
void names_free(struct trace *t);
uint32_t name_of(struct trace *t, struct gw_reader *rd, uint32_t stream, uint64_t id);
void forget_id(struct trace *t, struct gw_reader *rd, uint32_t stream, uint64_t id);
uint8_t call_class(struct trace *t, uint32_t name); /* enum host_class */

/* Thread samples (samples.c). */
int samples_add(struct trace *t, const struct tsample *s); /* 0 or -ENOMEM */
void samples_free(struct trace *t);
struct sample_iter {
	const struct thread_samples *th;
	size_t i;          /* index of s */
	struct tsample s;
	const uint8_t *p;  /* the next sample's differences */
};
/* Positions it at sample i (< th->n). */
void sample_at(struct sample_iter *it, const struct thread_samples *th, size_t i);
/* Moves to the next sample: 1, or 0 at the end (it->s stays the last). */
int sample_next(struct sample_iter *it);
/* Decodes block b (samples b * SAMPLE_BLOCK on) into out; returns how many. */
size_t samples_block(const struct thread_samples *th, size_t b, struct tsample *out);

/* Operations per process (timeline.c), for pick_main(). */
struct pid_counts {
	uint32_t pid[64];
	uint64_t n[64];
	int npids;
};

/* What the reading pass learned of the GPU timeline (timeline.c). */
struct op_namer {
	uint8_t *cls;         /* per kernel name: enum kclass | moves bit, 0xff = not yet */
	size_t ncls;
	uint32_t copy[16][8]; /* interned copy names by direction and host memory, 0 = not yet */
	uint32_t memset;
};
struct scan_file {
	char *path;
	uint64_t records; /* read in the first pass: a second reading stops there */
};
/* Traced CUDA calls per thread (timeline.c), for the training thread. */
struct thread_calls {
	uint32_t pid, tid;
	uint64_t calls, syncs;
};
/* A pinned copy, to or from the GPU (staged.c). */
struct staged_copy {
	uint64_t start, end, bytes;
	uint32_t pid, stream;
	uint8_t dev, out; /* out: device to host */
};

struct op_scan {
	struct device_summary dev[GW_MAX_GPUS]; /* counts, times, first start, window */
	uint64_t last_end[GW_MAX_GPUS], max_start[GW_MAX_GPUS];
	uint64_t late_ns[GW_MAX_GPUS]; /* the most an operation arrived behind a later start */
	uint64_t updates[GW_MAX_GPUS]; /* kernels that update the parameters (an optimizer's), any process */
	struct pid_counts pc;
	uint64_t ops_end;
	struct step_finder finder[GW_MAX_GPUS];
	struct op_namer nm;
	struct scan_file *files;
	size_t nfiles, files_cap;
	struct thread_calls *threads; /* every thread that made a traced CUDA call */
	size_t nthreads, threads_cap;
	struct hmap thread_index;     /* pid << 32 | tid -> index + 1 */
	VEC(struct staged_copy) staged; /* pinned copies, until the pairs are found (staged.c) */
	size_t replay_peak;    /* operations held at once by one device's reorder buffer */
	size_t replay_inserts; /* ... and those that fit no sorted run */
	uint64_t replay_sifts;  /* heap levels moved by the reorder buffers */
};
int timeline_begin(struct trace *t);
void timeline_add(struct trace *t, struct gpu_op *o);
/* Counts a traced CUDA call of a thread (class enum host_class): 0, or -ENOMEM. */
int timeline_call(struct trace *t, uint32_t pid, uint32_t tid, int cls);
int timeline_file_done(struct trace *t, const char *path, uint64_t records);
void timeline_end(struct trace *t);
void timeline_free(struct op_scan *s);
/* Host-staged collectives: found while the file is read (staged.c), kept
 * in t->host_colls; the main process's as spans, where it is one rank of
 * several, and the time of [ga, gb) inside them (hostcoll.c). */
/* Collectives not overlapped with the main process's other work (exposed.c),
 * fed in start order by the steady pass. */
struct comm_exposure {
	struct time_span comm, other; /* the unions' intervals being built */
	int has_comm, has_other;
	VEC(struct time_span) queue;  /* finished collectives' intervals still open to cover */
	double comm_ns, covered_ns;
};
void exposed_add(struct analysis *a, struct comm_exposure *x, const struct gpu_op *o);
void exposed_end(struct analysis *a, struct comm_exposure *x);
void hostcoll_scan(struct trace *t, const struct gpu_op *o);
void hostcoll_pair(struct trace *t);
void hostcoll_spans(struct analysis *a);
/* Spans (spans.c): sorted and merged in place (returns the count), and the
 * time of [ga, gb) they cover. */
size_t spans_merge(struct time_span *v, size_t n);
uint64_t spans_overlap(const struct time_span *v, size_t n, uint64_t ga, uint64_t gb);
uint64_t hostcoll_overlap(const struct analysis *a, uint64_t ga, uint64_t gb);
/* Names an operation (copies and memsets by kind, "[memcpy HtoD pageable]")
 * and classifies a kernel's name, once per name (timeline.c). */
void timeline_name_op(struct trace *t, struct gpu_op *o);
/* Where a reading hands on what it reads: operations, "command buffer
 * full" waits and GPM samples (any may be NULL), all with ctx. */
struct op_sinks {
	op_fn op;
	void (*wait)(void *ctx, const struct host_wait *w);
	void (*gpm)(void *ctx, const struct gpm_samp *s);
	void *ctx;
	/* each kernel with its correlation id, named, as read (not in time
	 * order; NULL: not wanted) */
	void (*issued)(void *ctx, const struct gpu_op *op, uint32_t corr);
};
/* The second reading (replay.c): each device's operations in time order
 * (of device only_dev, or all with UINT32_MAX), waits and GPM samples as
 * they are read. */
int timeline_replay(struct trace *t, uint32_t only_dev, const struct op_sinks *k, char *err,
		    size_t errlen);
/* Sums an NVML sample into t->gsum (timeline.c). */
void timeline_gpu_sample(struct trace *t, const struct gpu_samp *s);
/* load.c: the operations, waits and GPM samples of the first `records`
 * records of one file, as read (not yet named, not in order). */
int trace_read_ops(struct trace *t, const char *path, uint64_t records, const struct op_sinks *k,
		   char *err, size_t errlen);
/* Idle attribution (attribute.c), fed the main GPU's operations in time
 * order up to the end of the steady window. */
struct cause_sum { /* idle time of one cause; individual gaps only for --trace */
	uint64_t ns, cost; /* cost: gpuwhy's own estimated share, for launch gaps */
	uint32_t n, at_start;
};
struct site_pass;
struct act_pass;
struct attr_pass {
	struct cause_sum tot[IDLE_NCAUSES];
	/* code sites: the current step's gaps, held until its host-compute
	 * gaps are decided; the causes the site classes moved gaps to */
	struct site_pass *sp;
	struct act_pass *ap; /* activities (activities.c), with the sites */
	VEC(struct gap) pend;
	VEC(size_t) pend_idx; /* their indexes in a->gaps (--trace) */
	struct cause_sum moved_out[IDLE_NCAUSES], moved_in[IDLE_NCAUSES];
	VEC(uint64_t) overrides; /* --trace: gap index << 8 | new cause */
	struct step_hc *hc; /* per step: its host-compute gaps, until the step's end */
	uint64_t cur_end, per_launch;
	struct gpu_op prev; /* the operation that ended last so far */
	int has_prev;
	size_t step_cursor, call_cursor;
	/* the training thread's synchronize and copy calls (indexes into
	 * t->calls, by end), and the first that may still overlap a gap */
	VEC(uint32_t) tcalls;
	size_t tcall_cursor;
	/* the main process's CUDA graph launch calls (indexes into t->calls, by
	 * end), and the first that may still overlap a gap */
	VEC(uint32_t) gcalls;
	size_t gcall_cursor;
	uint64_t read_counted, write_counted; /* io_bytes_in's cursors */
	uint32_t graph_op; /* the operation attr_add() is given, in the replay's graph */
	VEC(struct gap) graph_hc; /* without code sites: its host-compute gaps, decided at the end */
	uint32_t last_write_step;             /* step of the last file_writes gap + 1 */
};
/* The framework of the main process (framework.c). */
void detect_framework(struct analysis *a);
int attr_begin(struct analysis *a, struct attr_pass *p); /* 0, or -ENOMEM (warned) */
/* Code sites (sites.c): NULL when the recording has no Python samples. */
struct site_pass *sites_begin(struct analysis *a);
/* Which site classes may change a gap's cause: none (final), all of them
 * (CPU work on the training thread), or only input preparation and
 * serialization (the host work after a synchronization returned). */
enum site_decides { SD_NONE, SD_HOST_COMPUTE, SD_AFTER_SYNC,
		   SD_IDLE_HOST,     /* no cause, or a launch gap: only a wait (state S) or
				      * serialization decides */
		   SD_SERIALIZE_ONLY, /* a pageable copy's gap: only serialization decides (the
				      * state dict's copies inside torch.save are the checkpoint's) */
		   SD_ACTIVITY, /* an activity took the gap (checkpoint, evaluation): final, as
				* SD_NONE, and its restarts of workers stay its own */
		   SD_PERIODIC_WAIT, /* a long step's that recurs, after no copy of its own:
				      * only a wait (state S) decides (C16 every N steps) */
		   SD_STAGE_ONLY, /* waiting for input: only host-to-device staging decides
				   * (the thread copies a batch it already holds) */
		   SD_COMPILE_ONLY /* writing to storage: only a compiler's own work decides (it
				    * writes its persistent cache as it builds) */ };
/* Gap g of cause `cause` (its span and the copies around it): adds its
 * samples to the sites; returns the cause the site classes give it
 * (docs/RULES.md). */
int sites_gap(struct analysis *a, struct site_pass *sp, int cause, enum site_decides decides,
	      const struct gap *g);
void sites_end(struct analysis *a, struct site_pass *sp);
/* The lines that launched C8's matrix kernels (sites.c): each kernel of the
 * steady window, as read with its correlation id, placed by its launch time
 * at the training thread's stack then (site.matrix_ns). NULL: no stacks of
 * the thread that made the CUDA calls, or no timed calls to place by. */
struct launch_pass;
struct launch_pass *sites_launches_begin(struct analysis *a);
void sites_launched(struct analysis *a, struct launch_pass *lp, const struct gpu_op *op, uint32_t corr);
void sites_launches_end(struct launch_pass *lp);
/* A thread's Python samples and how long each holds (pyholds.c): sample i
 * over [ts - half, min(next ts - half, ts + hold)). */
struct py_holds {
	const struct py_thread *th;
	size_t pos;
	uint64_t ts, nts, half, hold;
	uint32_t node, nnode;
	uint8_t state, nstate; /* GW_PYSTATE_* */
	int have, nhave;
};
void holds_init(struct py_holds *c, const struct trace *t, const struct py_thread *th);
void holds_next(struct py_holds *c);
uint64_t holds_start(const struct py_holds *c);
uint64_t holds_end(const struct py_holds *c);
/* fn(ctx, node, state, s, e) for each sample holding in [ga, gb), clipped to
 * it (node 0, no Python, left out); calls come in time order, so c moves on */
typedef void (*hold_fn)(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e);
void holds_over(struct py_holds *c, uint64_t ga, uint64_t gb, hold_fn fn, void *ctx);
/* The class of a stack node's site (SC_NONE without one). */
enum site_class sites_node_class(struct analysis *a, uint32_t node);
/* 1 where the stack is in an optimizer's step (a frame of torch.optim, optax,
 * timm's, bitsandbytes' or apex's optimizers): a user's optimizer written as
 * a torch.optim.Optimizer runs under torch.optim's step wrapper */
int sites_node_optimizer(struct analysis *a, uint32_t node);
/* 1 where the training thread, asleep at stack node over [s, e), waited
 * for another Python thread of its process that ran input or the user's
 * code for at least half of it (not autograd's wait for its engine) */
int sites_waits_other(struct analysis *a, uint32_t node, uint64_t s, uint64_t e);
/* 1 where the stack is starting worker processes (multiprocessing's fork,
 * forkserver or spawn: a DataLoader iterator, a Pool) */
int sites_node_starts_workers(const struct analysis *a, uint32_t node);
/* 1 where the stack is receiving from another process (multiprocessing's
 * connection or queue) */
int sites_node_receives(const struct analysis *a, uint32_t node);
/* 1 where the stack is a framework's launching work (a torch op, a module's
 * call, JAX's or CuPy's dispatch) and reads no device values */
int sites_node_launches(const struct analysis *a, uint32_t node);
/* 1 where a frame of the stack writes an image, a plot or a sound to a
 * file (PIL's save, torchvision's save_image, matplotlib's savefig...) */
int sites_node_writes_output(const struct analysis *a, uint32_t node);
/* 1 where the stack is in a compiler's own work (XLA, Inductor, Triton,
 * CuPy, Numba), not in what a compiled function's calls pass through */
int sites_node_compiles(const struct analysis *a, uint32_t node);
/* 1 at the stack node's first frame, innermost out, that match(file,
 * function) says 1 for; 0 where one says -1 first, or none says either */
int sites_any_frame(const struct analysis *a, uint32_t node, int (*match)(const char *file, const char *func));
/* 1 where the stack's innermost frames are a library's check that the
 * library itself skips while torch.compile traces it (transformers'
 * attention-mask checks): a sync there is gone under compiled code */
int sites_sync_compile_skips(const struct analysis *a, uint32_t node);
uint32_t sites_below_loop(const struct analysis *a, uint32_t node);
/* 1 if a frame of the stack node's stack has `file_part` in its file name. */
int sites_stack_has(const struct analysis *a, uint32_t node, const char *file_part);
/* 1 for library code (third-party packages, the standard library). */
int sites_is_library(const char *file);
/* The Python thread whose stacks explain the main GPU's idle (NULL: none). */
const struct py_thread *sites_driving_thread(const struct analysis *a);
/* How far apart the driving thread's stacks are in the marked steps and in
 * the others: the total variation distance between the shares of its time
 * in each stack (0: alike, 1: no stack in common; -1: no samples in either,
 * -ENOMEM) */
double sites_marked_steps_apart(const struct analysis *a, const uint8_t *marked);
/* Activities (activities.c): what the training thread's code was doing,
 * from its stacks over the steady window. NULL without Python samples. */
struct act_pass *activities_begin(struct analysis *a);
/* A gap of cause `cause` in step `step` (UINT32_MAX: none), in time order:
 * the cause an activity covering at least half of it gives it (checkpointing
 * and evaluation: periodic), else `cause`; adds the gap to the idle of the
 * activity that covers it and marks the step as one it ran in. */
int activities_gap(struct analysis *a, struct act_pass *ap, int cause, uint32_t step, uint64_t ga,
		   uint64_t gb);
void activities_end(struct analysis *a, struct act_pass *ap);
/* 1 if the stack node runs in the function found checkpointing by its
 * device-to-host copies (activity_stat.copies): its copies are the
 * checkpoint's. */
int activities_copy_holder_on(const struct analysis *a, uint32_t node);
/* After the rules: the exact call sites, each finding's top sites, and the
 * note saying why there are none. */
void sites_attach(struct analysis *a);
void attr_add(struct analysis *a, struct attr_pass *p, const struct gpu_op *o);
void attr_end(struct analysis *a, struct attr_pass *p);
void run_rules(struct analysis *a);      /* rules/rules.c */
void analysis_facts(struct analysis *a); /* after the rules: a->facts (facts.c) */
/* Enough of the job to diagnose (sufficiency.c): sets too_little, after the
 * steady pass and before the rules. */
void judge_sufficiency(struct analysis *a);
/* The order in which findings draw on the idle time of causes several of
 * them claim (a rule's settle rank, rules/rule.h: lower first). Only launch
 * gaps are shared (C11's chains, C10, C3 and C4): the findings that say why
 * the host launches so many small kernels come before C4, which is that
 * symptom, and C4 gets what they leave. A rule that claims no idle part
 * says SETTLE_NO_IDLE; the invariants fail for a finding that claims idle
 * with it, so a new rule cannot settle last unnoticed. */
#define SETTLE_NO_IDLE 1000u
#define BUSY_FAMILIES 5 /* the bits of enum busy_set */
/* ---- the run as a dependency graph, replayed (depgraph.c, simulate.c) ----
 * The main GPU's operations in the steady window with what each waited for
 * (its stream, an operation of another stream, the host issuing it), the
 * training thread's waits on the GPU with the operation each waited for, and
 * what its Python samples say it was doing: enough to replay the window with
 * a fix applied (docs/RULES.md section 4). */
#define DG_WAVE 4096u /* dg_op.size of a kernel that fills one wave */
/* A copy of at most this many bytes reads or writes a value, not a batch */
#define BATCH_VALUE_BYTES (64u << 10)
enum dg_flag { DG_HOST_BOUND = 1, DG_PAGEABLE = 2,
	       DG_PINNED_BIG = 4 /* a host-to-device copy from pinned memory, BIG_PINNED_HTOD_BYTES or more */,
	       DG_SMALL = 8 /* under one wave */,
	       DG_OWN = 16 /* issued by the blocking copy call it started in, at the call's start */,
	       DG_SMALL_COPY = 32 /* a device-to-host copy of 64 KiB or less: reading a value */,
	       DG_HTOD = 64 /* a host-to-device copy: the host prepared an input before it */,
	       DG_FUSED = 128 /* inside an elementwise chain, after its first kernel (opstats.c): fused,
			       * the host issues it with the first */ };
struct dg_op {
	uint64_t start, end; /* as recorded */
	uint32_t late;       /* how long after its stream (and what it waited for) let it start
			      * (saturates at 4.29 s, as lead does) */
	uint32_t lead;       /* how long before its start the host issued it (estimated:
			      * docs/RULES.md) */
	uint32_t stream;
	uint32_t dep;        /* the operation of another stream it waited for, or UINT32_MAX */
	uint32_t size;       /* kernels: the share of one wave of the SMs their grid fills
			      * (occupancy), x DG_WAVE; copies, memsets: bytes (saturating) */
	uint8_t kind : 2;    /* enum op_kind */
	uint8_t params : 1;  /* a kernel that updates the parameters (an optimizer's) */
	uint8_t host : 1;    /* a copy between host and device memory */
	uint8_t read_work : 1; /* computed only to be read: between two value reads of the host,
				* with nothing but elementwise work and the read (depgraph.c) */
	uint8_t tiled : 1;   /* a kernel of no known family launched as a tiled matrix kernel is */
	uint8_t f64 : 1;     /* a kernel outside the matrix families on FP64 data (gpu_op.f64) */
	uint8_t attn : 1;    /* inside an attention core, between its matrix products (opstats.c):
			      * a fused attention computes it on chip */
	uint8_t cls : 4;     /* enum kclass */
	uint8_t queued : 1;  /* a graph's operation that waited in the GPU's queue (gpu_op.queued) */
	uint8_t untyped : 1; /* a kernel whose name says nothing of its data type (gpu_op.untyped) */
	uint8_t f32 : 1;     /* a kernel outside the matrix families on FP32 data (gpu_op.f32) */
	uint8_t merged : 1;  /* a small copy from or to pinned memory issued right after another of its
			      * direction and stream, no synchronization between: one copy would hold
			      * both (depgraph.c, mark_copy_runs) */
	uint8_t cause;       /* of the idle gap that ends at its start; IDLE_NCAUSES: none */
	uint8_t flags;       /* enum dg_flag */
};
_Static_assert(sizeof(struct dg_op) == 40, "struct dg_op grew: it is one per operation of the window");
static inline uint64_t dg_iss(const struct dg_op *o)
{
	return o->start - o->lead;
}
/* DW_COPY_DTOH: a blocking device-to-host copy of more than a value (results
 * read back); DW_COPY, DW_COPY_PAGEABLE: the other blocking copies */
enum dg_wait_kind { DW_SYNC, DW_COPY_SMALL, DW_COPY, DW_COPY_PAGEABLE, DW_QUEUE, DW_LAUNCH, DW_COPY_DTOH,
		    DW_NKINDS };
/* A host wait that no longer blocks still costs its call (simulate.c; and
 * a launch call that does not block, depgraph.c), unless the fix no longer
 * makes the call (sim_fix.waits_gone: C9's reads) */
#define WAIT_CALL_NS 2000.0
struct dg_wait {
	uint64_t start, end;
	uint32_t op;  /* the operation whose end it waited for, or UINT32_MAX */
	uint8_t kind; /* enum dg_wait_kind */
	uint8_t act;  /* enum activity it ran in */
	uint8_t merged; /* a merged copy's call (dg_op.merged): one copy a run makes none */
	uint8_t value;  /* a value read with no call seen (value_waits): the host waited */
};
/* The training thread's samples, merged while they say the same. */
struct dg_host {
	uint64_t start, end;
	uint8_t act, cls; /* enum activity, enum site_class */
	uint8_t asleep;   /* state S (outside CUDA calls: those are waits) */
	uint8_t optim;    /* in an optimizer's step (sites_node_optimizer) */
	uint8_t other;    /* asleep while another thread of the process ran Python (sites_waits_other) */
	uint8_t gap;      /* the idle cause of the GPU gap it lies in (IDLE_NCAUSES: none) */
	uint8_t alloc;    /* inside an allocation call (cudaMalloc...: depgraph.c, mark_alloc_hosts):
			   * DG_ALLOC_HELD in a sample's hold, DG_ALLOC_UNHELD in none */
};
enum { DG_ALLOC_HELD = 1, DG_ALLOC_UNHELD = 2 };
struct depgraph {
	VEC(struct dg_op) ops;
	VEC(struct dg_wait) waits;
	VEC(struct dg_host) host;
	uint64_t lat_ns;    /* host issue to GPU start on an idle stream */
	double trace_ns;    /* gpuwhy's own cost per launch gap (attribute.c's estimate) */
	struct hmap trace_more; /* op -> its gap's own cost where more than trace_ns (a graph's
				 * launch: attribute.c, gap_trace_cost) */
	unsigned sms;       /* the main GPU's SMs (0: unknown) */
	double pace_ns;     /* the host's own time per operation it issues */
	uint64_t blocking_ns; /* CUDA_LAUNCH_BLOCKING: a blocking launch's hold on the host
			       * beyond its kernel's run (depgraph.c) ... */
	uint64_t blocking_copies_ns; /* ... as the job's blocking device copies measured it, before
				      * the kernels' gaps capped it */
	uint64_t last_end;  /* the last end of its operations */
	double recorded_ns; /* the window the replay reproduces: first op start to last end */
	double replayed_ns; /* ... as the replay of the recording makes it */
	double err;         /* |replayed - recorded| / recorded */
	double build_cpu_ns; /* CPU time of depgraph_finish() (the waits, issue times, first replay) */
	int full;           /* too many operations: no graph (claim-bounded gains) */
	double read_work_ns; /* the read_work operations' GPU time */
	size_t read_work_n;  /* ... and their count, the reads included */
	/* the merged copies (dg_op.merged): how many, the GPU's idle before them
	 * while the host issued them, their copies' time, and the host's time
	 * in their copy calls */
	size_t merged_n;
	double merged_late_ns, merged_busy_ns, merged_call_ns;
};
/* The one-line setting that allows TF32 for FP32 matrix work, per framework:
 * C8's advice (rules/advice.c) and its TF32 point's evidence (fixes.c) */
#define TF32_SETTING_TORCH "torch.backends.cuda.matmul.allow_tf32 = True"
#define TF32_SETTING_JAX "jax.default_matmul_precision(\"tensorfloat32\")"
#define TF32_SETTING_CUPY "CUPY_TF32=1"
#define DG_MAX_OPS (1u << 23) /* 512 MiB of graph: larger windows keep the bounded gains */
/* depgraph.c: fed by the steady pass */
void depgraph_begin(struct analysis *a);
uint32_t depgraph_op(struct analysis *a, const struct gpu_op *o); /* its index, or UINT32_MAX */
void depgraph_gap(struct analysis *a, uint32_t op, int cause);
/* gpuwhy's own cost in the gap that ends at op, where it is more than trace_ns */
void depgraph_trace(struct analysis *a, uint32_t op, uint64_t ns);
void depgraph_fused(struct analysis *a, uint32_t op); /* flags it DG_FUSED */
void depgraph_attention(struct analysis *a, uint32_t op); /* flags it attn */
void depgraph_queue_wait(struct analysis *a, const struct host_wait *q);
void depgraph_host(struct analysis *a, uint64_t s, uint64_t e, int act, int cls, int asleep, int optim,
		   int other);
void depgraph_finish(struct analysis *a); /* waits, issue times, the replay's error */
void depgraph_free(struct depgraph *g);
double replay_cpu_now(void); /* the thread's CPU time, ns: what the replay costs */
/* The graph holds the steady window: gains will come from its replay. */
int replay_available(const struct analysis *a);
/* simulate.c: what the replay takes out or changes (a finding's fix) */
#define RATE_WINDOW 1
#define RATE_OPS 2
struct sim_fix {
	unsigned gap_causes;               /* IDLE_BIT: the host's lateness before these gaps goes */
	double gap_frac[IDLE_NCAUSES];     /* ... this share of it (0 counts as 1) */
	unsigned acts;                     /* 1 << enum activity: its host time, work and waits go */
	int acts_keep_ops;                 /* ... but not the operations issued inside it: another
					    * thread issued them (cut_ns stands for its work) */
	int periodic_host;                 /* the Python thread's time in `periodic` gaps goes (it
					    * issues the work; not where a runtime's thread does) */
	unsigned host_classes;             /* 1 << enum site_class: its host time goes */
	int asleep;                        /* the training thread's sleeps and waits outside CUDA go */
	int other;                         /* ... those while another thread of its process ran Python
					    * go (its input moved to worker processes) */
	double input_after_sync;           /* this share of the host's lateness after a sync before a
					    * host-to-device copy goes (the next input prepared on the
					    * thread: the share its own and numeric code held) */
	unsigned waits;                    /* 1 << enum dg_wait_kind: no longer block the host */
	unsigned waits_gone;               /* ... of those, the calls no longer made at all (the reads
					    * C9's advice takes out): not even a call's cost */
	double scale[KC_NCLASSES];         /* kernel durations by class x (0 counts as 1) */
	double small_scale;                /* kernels under one wave of the SMs x (0 counts as 1) */
	double pageable_scale;             /* pageable copies x (0 counts as 1) */
	int copies_aside;                  /* the pageable copies run on a copy stream of their own (pinned,
					    * non_blocking: C6's advice), the host no longer waits for those
					    * to the device */
	int copies_back_free;              /* ... nor for those back (their values not processed) */
	double f32_scale;                  /* elementwise kernels on FP32 data x (0 counts as 1) */
	int f32_untyped;                   /* ... and those whose names say no type (an FP32 job's) */
	double f64_scale[2];               /* kernels on FP64 data outside matrix work, other and
					    * elementwise, x (0 counts as 1) */
	double pinned_scale;               /* big pinned host-to-device copies x (0 counts as 1) */
	double cut_ns;                     /* GPU work the fix removes whose place the graph does
					    * not hold (long steps' extra work): off the end */
	int attention;                     /* attention fused: its cores' inner kernels go, with the host's
					    * time issuing them */
	int fuse_chains;                   /* the elementwise chains are one kernel each: the host's
					    * time before their later operations goes */
	double pace_ns;                    /* > 0: launch gaps are the host issuing a graph at this
					    * cost per operation (CUDA graphs, compiled code) */
	double floor_step_ns;              /* a step takes at least this (a throughput the fix keeps) */
	double batch;                      /* > 1: the batch this many times larger, the result per
					    * sample (kernels' grids, input copies and input work x k) */
	int batch_all_grow;                /* ... every kernel's grid grows with it (the range's low end) */
	double uncertainty;                /* of the transformation's assumptions, as a share */
	int rate;                          /* RATE_WINDOW: the fix sets the step's rate (a graph's
					    * pace, a batch, fused chains or loops): its doubt is a
					    * share of the window left; RATE_OPS: the rate of the
					    * operations it changes (pinned copies, tensor-core or
					    * clocked kernels): a share of their replayed time and of
					    * what it removes; 0: it takes recorded work or waits out,
					    * a share of what it removes (at most of the window left) */
	int keep_trace;                    /* keep gpuwhy's own cost (the recording as it ran) */
	int keep_compile;                  /* keep the kernels built on first use (compiling gaps: the
					    * recording as it ran; every other replay takes them out) */
	double trace_scale;                /* ... else take it out at this multiple of the estimate
					    * (0 counts as 1; TRACE_COST_HIGH_NS's: the range's far end) */
	int read_work;                     /* the operations computed only to be read go, with the
					    * host's time issuing them (values logged every N steps) */
	int optimizer;                     /* the training thread's time in an optimizer's step goes
					    * (its launches tensor by tensor: a foreach or fused one) */
	int merge_copies;                  /* the merged copies go, with the host's time issuing them and
					    * in their calls: one copy a run (C12's small copies) */
	int allocs;                        /* the training thread's time in allocation calls goes (memory
					    * no longer freed every step: nothing to allocate again) */
};
struct sim_result {
	double T;        /* the window's length, replayed */
	double busy_cut; /* GPU time the fix removed */
	double rated;    /* the replayed time of the operations it runs at a new rate */
};
int simulate(const struct analysis *a, const struct sim_fix *f, struct sim_result *r);
void sim_fix_merge(struct sim_fix *into, const struct sim_fix *f);
/* fixes.c: a finding's fix as a transformation of the graph (0: none fits) */
int fix_of_finding(const struct analysis *a, const struct finding *f, struct sim_fix *out);
/* gains from the replay: every finding's and the combined one (after settle_gains) */
void replay_gains(struct analysis *a);

void replay_combined(struct analysis *a); /* after the ranking: the warning+ findings' fixes at once */
void replay_unblocked(struct analysis *a); /* after the ranking: a blocker's fix with those it blocks */
/* 1 if f's cause keeps the fix of `cause` from working (finding.blocks) */
static inline int finding_blocks(const struct finding *f, const char *cause)
{
	for (int k = 0; k < 2; k++)
		if (f->blocks[k] && !strcmp(f->blocks[k], cause))
			return 1;
	return 0;
}

/* Gains (gain.c), shared with the invariants' check. */
double gain_pool(const struct analysis *a, enum idle_cause c); /* idle a finding may draw on */
double gain_limit(const struct analysis *a); /* 95% of T */
double gain_limit_batch(const struct analysis *a, double k); /* ... with a batch k times larger */
void gain_busy_shares(const struct analysis *a, double share[BUSY_FAMILIES]);
double gain_busy_bound(const struct analysis *a, const struct gain *g);
/* Severity from the share of the run the fix saves at least: the low end
 * of a replayed finding's range (least_saved_ns), else its saving. */
double severity_saved_ns(const struct finding *f);
enum severity gain_severity(const struct analysis *a, const struct finding *f);
void settle_gains(struct analysis *a);  /* every finding against the others */
double gain_combine_busy(const struct analysis *a, const struct finding *const *fs, size_t n);
void combine_gains(struct analysis *a); /* the combined estimate */
/* The op statistics, fed the main GPU's operations of the steady window in
 * time order (opstats.c). */
/* An elementwise chain holds kernels of at most this many grids (tensor
 * shapes); another grid starts a new chain (opstats.c). */
#define CHAIN_GRIDS 8

/* Kernel families checked against GPM's counters (counters.c), fed by the
 * steady pass */
#define COUNTED_NAMES 8
struct counters_pass {
	uint64_t bin;       /* ns a bin */
	size_t nbins;       /* 0: nothing to do */
	double *busy, *cand; /* kernel time starting in each bin: all, the candidates' */
	double cand_ns;
	double *mcand, mcand_ns; /* ... the memory-bound candidates' (no known family, not tiled) */
	double *fp32mm;          /* ... FP32 matrix kernels' by name (their FP32 pipes' use) */
	VEC(struct gpm_samp) gpm;
	int dropped;
	uint32_t names[COUNTED_NAMES]; /* the candidates' names whose time is kept apart */
	double name_ns[COUNTED_NAMES];
	size_t nnames;
};
int trace_name_tiled(const struct trace *t, uint32_t name); /* load.c */
int counters_begin(struct analysis *a, struct counters_pass *c);
void counters_op(const struct analysis *a, struct counters_pass *c, const struct gpu_op *o);
void counters_gpm(const struct analysis *a, struct counters_pass *c, const struct gpm_samp *g);
void counters_end(struct analysis *a, struct counters_pass *c);
/* 1 where the memory-bound candidates are (counters_end decided it) */
int counters_membound(const struct analysis *a);
void counters_free(struct counters_pass *c);
void depgraph_counted_fp32(struct analysis *a); /* the candidates' operations become KC_MATMUL_FP32 */
void depgraph_counted_mem(struct analysis *a);  /* the memory-bound ones' become KC_ELEMENTWISE */

/* A chain of kernels that each run once in it holds at most this many
 * (opstats.c: a user's kernels, one of each an iteration) */
#define CHAIN_NAMES 16
/* A chain of back-to-back kernels being followed (opstats.c): its
 * stream, step and grids (their blocks, kernels, moves-only kernels and
 * time). What its chains add up to: struct chain_sums (analyze.h). */
struct chain_run {
	unsigned len, grids;
	double time, gaps;
	uint64_t prev_end;
	uint32_t stream, step;
	uint32_t grid_blocks[CHAIN_GRIDS], grid_kernels[CHAIN_GRIDS], grid_moves[CHAIN_GRIDS];
	double grid_ns[CHAIN_GRIDS];
	/* where each kernel may run once in a chain: the names it holds */
	uint32_t names[CHAIN_NAMES];
	unsigned nnames;
};
/* An attention core: a matrix product, at most this many elementwise,
 * softmax or dropout kernels (scaling, masking, softmax, dropout), then the
 * next matrix product (opstats.c) */
#define ATTN_MAX_BETWEEN 6
struct op_stats_pass {
	double sms;
	uint8_t *seen; /* one bit per kernel name */
	size_t names_n; /* the kernel names seen holds */
	/* the training thread's copy calls made under checkpoint serialization
	 * (torch.save of a state dict on the GPU): their copies are the
	 * checkpoint's, not C6's or C9's (indexes into t->calls, by time) */
	VEC(uint32_t) ckpt_calls;
	size_t ckpt_cursor;
	size_t step_cursor;
	/* the elementwise chain being followed; the operation just fed joined
	 * it (or is a scalar copied inside it): fused, the host issues it with
	 * the chain's first */
	struct chain_run ew; /* its sums: op_stats.chain */
	int fused;
	/* the same for kernels of no known family, not tiled (GPM's counters
	 * may show them memory-bound: counters.c), with their own sums and
	 * the graph operations their chains fuse (mem_fused: the last fed) */
	struct chain_run mem;
	struct chain_sums mem_sums;
	int mem_fused;
	VEC(uint32_t) mem_ops;
	/* the loop finder: the last LOOP_MAX_BODY kernels' (name, grid), and
	 * per body length p, how many kernels in a row equal the one p before */
	uint64_t loop_keys[2 * LOOP_MAX_BODY];
	uint64_t loop_run[LOOP_MAX_BODY + 1];
	uint64_t loop_seen;    /* kernels fed to it */
	uint64_t loop_covered; /* kernels before this one are counted already */
	uint32_t loop_step;    /* the step they are in */
	/* an attention core being followed on one stream: after
	 * a matrix kernel, the elementwise, softmax and dropout kernels before
	 * the next (their graph operations, their time, the chain savings
	 * counted meanwhile); the graph operation fed (UINT32_MAX: none); the
	 * operations of a core just found, for the graph (attn_done_n) */
	uint8_t *attn_kind;    /* per kernel name: 0 not looked at, 1 none, 2 softmax, 3 dropout */
	int attn_open, attn_softmax;
	uint32_t attn_stream;
	unsigned attn_n, attn_done_n;
	double attn_time, attn_ew, attn_snap;
	uint32_t graph_op;
	uint32_t attn_ops[ATTN_MAX_BETWEEN], attn_done[ATTN_MAX_BETWEEN];
};
void op_stats_begin(struct analysis *a, struct op_stats_pass *p);
void op_stats_add(struct analysis *a, struct op_stats_pass *p, const struct gpu_op *o);
void op_stats_end(struct analysis *a, struct op_stats_pass *p);
/* The memory-bound kernels' chains join the elementwise ones' (after the
 * counters said so: counters_membound) */
void op_stats_add_mem_chains(struct analysis *a, const struct op_stats_pass *p);
/* Median kernel duration in ns from the histogram (0 without kernels). */
double median_kernel_ns(const struct op_stats *s);
/* The median duration of the matrix kernels, from their histogram (C3). */
double median_matmul_ns(const struct op_stats *s);
/* The main GPU (gpus.c): SM count, 0 if unknown; practical host<->device
 * bandwidth of its PCIe link at its maximum generation and width, GB/s
 * (about 80% of raw), 0 if unknown; compute capability major, 0 if unknown. */
unsigned main_gpu_sms(const struct analysis *a);
double main_gpu_link_gbs(const struct analysis *a);
unsigned main_gpu_cc(const struct analysis *a);
/* 1 where GPM showed the FP32 matrix kernels known by name not limited by
 * their math (counters.c): no tensor-core gain for them (c8_speedup 1) */
int c8_fp32_not_math_bound(const struct analysis *a);
/* C8: how much faster a matrix kernel of class c (KC_MATMUL_FP32 or
 * KC_MATMUL_TF32) runs in bf16 on the main GPU (thresholds.h) */
double c8_speedup(const struct analysis *a, enum kclass c);
/* The job's matrix work is on FP64 data (>= C8_FP32_SHARE of busy): C8 then
 * claims its other kernels on doubles too */
int c8_on_doubles(const struct analysis *a);
/* its peak memory in use (NVML's samples) and its memory, MiB (0: unknown) */
void main_gpu_mem(const struct analysis *a, double *used_mib, double *total_mib);
/* 1 when the target looks like PyTorch (its kernels come from ATen; framework.c). */
int target_is_pytorch(const struct analysis *a);
/* Thread samples indexed for the lookups below (threads.c): per-thread
 * ranges, state-D spans, I/O growths; then which threads belong to other
 * GPU processes (after the main process is known). */
void index_host_samples(struct analysis *a);
void mark_gpu_processes(struct analysis *a);
/* The traced windows of a duty-cycled recording (windows.c). */
void build_windows(struct analysis *a);
/* Index of the step holding time t, or UINT32_MAX (attribute.c). For times
 * visited in order: *cursor (0 at first) only moves on. */
uint32_t step_at(const struct analysis *a, uint64_t t, size_t *cursor);
/* CPU cores used over [t0, t1] by the main process and by the rest of the
 * tree except other GPU processes (threads.c), in one pass over the threads. */
/* The training thread's CPU time over [t0, t1], or -1 without its samples. */
double training_cpu_ns(const struct analysis *a, uint64_t t0, uint64_t t1);
int training_in_d(const struct analysis *a, uint64_t t0, uint64_t t1);
/* The CPU time of thread (pid, tid) in [t0, t1) from its /proc samples; -1: none. */
double thread_cpu_ns(const struct analysis *a, uint32_t pid, uint32_t tid, uint64_t t0, uint64_t t1);
void cpu_cores_split(const struct analysis *a, uint64_t t0, uint64_t t1, double *main,
		     double *workers);
/* Run-queue waits and CPU time over [t0, t1] (threads.c), in one pass over
 * the threads. */
void run_queue_split(const struct analysis *a, uint64_t t0, uint64_t t1, struct rq_window *q);
/* Share of the machine's CPU time idle over about [t0, t1] (sys_cpu), or -1
 * when unknown (threads.c). */
double machine_idle_share(const struct analysis *a, uint64_t t0, uint64_t t1);
/* 1 if a thread of the tree was in state D at some time of [w0, w1]. */
int dstate_in(const struct analysis *a, uint64_t w0, uint64_t w1);
/* Bytes of the growths of v[0..n) (sorted by end) in [w0, w1], each taken
 * at an even rate over its span (a growth is known to within a check
 * period). With counted: whole growths that overlap the window and end after
 * *counted, which then moves to the last one summed (each counted once over
 * windows visited in order). */
double io_bytes_in(const struct io_event *v, size_t n, uint64_t w0, uint64_t w1, uint64_t *counted);
/* ... read by process pid alone, at an even rate over each growth's span */
double io_bytes_of(const struct io_event *v, size_t n, uint64_t w0, uint64_t w1, uint32_t pid);
/* The host window a gap is judged over: the gap, padded to HOST_WINDOW_NS
 * where shorter (two /proc samples at least). */
void gap_window(uint64_t ga, uint64_t gb, uint64_t *w0, uint64_t *w1);
/* Threads runnable at some point in [w0, w1] (threads.c). */
unsigned runnable_threads(const struct analysis *a, uint64_t w0, uint64_t w1);
/* 1 if a time of the sorted list v[0..n) falls in [w0, w1]. */
int any_time_in(const uint64_t *v, size_t n, uint64_t w0, uint64_t w1);
/* 1 if [t0, t1] lies inside one traced window (always, without duty cycling). */
int traced(const struct analysis *a, uint64_t t0, uint64_t t1);
/* End of the traced window holding t (UINT64_MAX without duty cycling), 0 if none. */
uint64_t traced_until(const struct analysis *a, uint64_t t);
/* qsort comparison of uint64_t values (quantile.c). */
int cmp_u64(const void *x, const void *y);
/* q-quantile of x[0..n) (reorders x). */
double quantile(double *x, size_t n, double q);
/* The k-th smallest of v[0..n), k < n (reorders v). */
uint32_t select_u32(uint32_t *v, size_t n, size_t k);

#endif
