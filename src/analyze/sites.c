/* Code sites: where in the job's Python code the GPU's idle time comes from.
 *
 * Each idle interval of the steady window gets, by its cause, the training
 * thread's Python stacks over it (for data_wait, the loader workers' stacks
 * that are in the user's code, since they do the work the trainer waits for),
 * weighted by how long each stack held within the interval. A stack counts
 * at its *site*: its innermost frame in the user's code, with the library
 * function that frame called as context. A synchronizing call or device-to-
 * host copy that carries its own stack (api.py_stack, read by the calling
 * thread) counts exactly at its site with its wait. docs/RULES.md, section 6.
 *
 * Memory: per thread the samples as varint pairs (load.c), per stack node
 * one index, per site one record; the intervals are not kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../util/util.h"

#define WRAPPED_MAX 3 /* decorators a called library function is named past */

#define SITE_CLASS_SHARE 0.5 /* a class decides a gap it covers at least half of */
/* a gap this long in an optimizer's step issued nothing: a launch takes
 * microseconds, and the GPU, idle, would have started it; a foreach
 * optimizer's Python over thousands of parameters, or a collection of the
 * garbage, takes a few milliseconds (at 2 ms the rule moved dozens of
 * fixtures, at 10 ms four by under 5% of a gain beside the job it is for,
 * c1_torch_cpu_embedding_sparseadam: SparseAdam over a CPU table) */
#define LAUNCH_SILENT_NS 10000000ull
#define MAX_GAP_STACKS 32    /* distinct stacks weighed per gap (more: the rest lumped) */
/* A site below 1% of its finding's idle (or waits) is not listed: it would
 * print as "0%", and every report (terminal, HTML, JSON) lists what is here */
#define SITE_MIN_SHARE 0.01
/* One activity's statements: lines of one function that each hold a
 * twentieth of the finding or more, with at most BLOCK_GAP lines between
 * two of them and BLOCK_SPAN lines in all (a loop's body, a metric's few
 * statements, a save and its fsync), are one site: the sampler puts the
 * time on whichever line runs, and the line the user changes is any of
 * them */
#define BLOCK_MIN_SHARE 0.05
#define BLOCK_GAP 3
#define BLOCK_SPAN 8

const char *site_class_name(enum site_class c)
{
	static const char *n[SC_NCLASSES] = { "", "input preparation", "serialization",
					      "synchronizing op", "logging", "launching work",
					      "host-to-device staging", "waiting", "host metric",
					      "host computation", "host callback" };

	return c < SC_NCLASSES ? n[c] : "";
}

struct site_pass {
	int has_main;
	struct py_holds main;
	struct py_holds *workers;
	size_t nworkers;
	struct py_holds *others; /* the training process's other Python threads */
	size_t nothers;
	size_t read_cursor; /* the training thread's calls, by end (read_site) */
};

#define READ_SLACK_NS 20000ull /* a read returning this close before a gap's start ended it */
#define LOOP_MAX_DEPTH 64      /* frames from the outermost to the loop's: deeper, no call lines */

struct weight {
	uint32_t node;
	double ns;
	double asleep_ns; /* ... of it with the thread asleep or blocked (state S) */
};

static void add_weight(struct weight *w, unsigned *n, uint32_t node, double ns, double asleep_ns)
{
	for (unsigned i = 0; i < *n; i++)
		if (w[i].node == node) {
			w[i].ns += ns;
			w[i].asleep_ns += asleep_ns;
			return;
		}
	if (*n < MAX_GAP_STACKS) {
		w[(*n)++] = (struct weight){ node, ns, asleep_ns };
	} else { /* rare: lumped with the last */
		w[MAX_GAP_STACKS - 1].ns += ns;
		w[MAX_GAP_STACKS - 1].asleep_ns += asleep_ns;
	}
}

struct weights {
	struct weight *w;
	unsigned *n;
};

static void add_hold(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e)
{
	struct weights *ws = ctx;

	add_weight(ws->w, ws->n, node, (double)(e - s), state == GW_PYSTATE_SLEEP ? (double)(e - s) : 0);
}

/* The stacks of a thread over [ga, gb] and how long each held; queries come
 * in time order, so the cursor only moves on. */
static void stacks_over(struct py_holds *c, uint64_t ga, uint64_t gb, struct weight *w, unsigned *n)
{
	struct weights ws = { w, n };

	holds_over(c, ga, gb, add_hold, &ws);
}

/* ---- sites of stack nodes --------------------------------------------- */

static const char *name(const struct analysis *a, uint32_t i)
{
	return i < a->t->names.n ? a->t->names.v[i] : "";
}

/* Code a compiler wrote, not the user: torch.compile's Inductor output
 * (`c` and a 51-character hash, `.py`, in its cache, wherever
 * TORCHINDUCTOR_CACHE_DIR puts it), the launchers it execs (`<string>`)
 * and FX's graph modules (`<eval_with_key>.N`). Its lines change with each
 * compilation; the user's line is the one that calls the compiled code. */
static int generated_code(const char *f)
{
	const char *b = strrchr(f, '/');
	size_t n;

	if (!strcmp(f, "<string>") || !strncmp(f, "<eval_with_key>", 15) || strstr(f, "/torchinductor_"))
		return 1;
	b = b ? b + 1 : f;
	n = strlen(b);
	if (n != 55 || b[0] != 'c' || strcmp(b + 52, ".py"))
		return 0;
	for (size_t i = 1; i < 52; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9')))
			return 0;
	return 1;
}

/* 1 for library code: third-party packages, the standard library, frozen
 * modules, generated code. */
static int is_library(const char *f)
{
	const char *p;

	if (!*f)
		return 1;
	if (generated_code(f))
		return 1;
	if (f[0] == '<')
		return !strncmp(f, "<frozen", 7) || !strncmp(f, "<built-in", 9);
	if (strstr(f, "site-packages/") || strstr(f, "dist-packages/"))
		return 1;
	/* the standard library: .../lib/python3.11/... or .../lib/pypy... */
	for (p = strstr(f, "/lib/python"); p; p = strstr(p + 1, "/lib/python")) {
		const char *q = p + 11;

		while (*q == '.' || (*q >= '0' && *q <= '9'))
			q++;
		if (*q == '/' && q > p + 11)
			return 1;
	}
	return strstr(f, "/lib/pypy") != NULL;
}

static const char *frame_func(const struct analysis *a, uint32_t fr)
{
	return fr < a->t->py_frames.n ? name(a, a->t->py_frames.v[fr].func) : "";
}

/* The stack node's frames from the innermost out, each given to match
 * (file, function): 1 at the first that says 1 (yes) or -1 (no, stop
 * looking), else 0. */
static int any_frame_walk(const struct analysis *a, uint32_t node, int (*match)(const char *file, const char *func))
{
	const struct trace *t = a->t;

	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;
		int m = fr < t->py_frames.n ? match(name(a, t->py_frames.v[fr].file), frame_func(a, fr)) : 0;

		if (m)
			return m > 0;
		n = t->py_nodes.v[n].parent;
	}
	return 0;
}

/* A byte per stack node (trace.py_nodes) in (v, n, cap), grown with the
 * nodes, the new ones 0: the answers kept about each node (2 yes, 1 no, 0
 * not yet). NULL without memory. */
static uint8_t *node_bytes(const struct analysis *a, uint8_t **v, size_t *n, size_t *cap)
{
	size_t need = a->t->py_nodes.n;

	if (*n < need) {
		if (vec_grow_((void **)v, cap, need, 1) < 0)
			return NULL;
		memset(*v + *n, 0, need - *n);
		*n = need;
	}
	return *v;
}

/* ... each node's answer walked once per predicate (struct frame_memo); a
 * predicate past FRAME_MEMOS, or no memory, walks each time */
int sites_any_frame(const struct analysis *a, uint32_t node, int (*match)(const char *file, const char *func))
{
	struct frame_memo *m = NULL;
	uint8_t *v;

	if (!node || node >= a->t->py_nodes.n)
		return 0;
	for (size_t i = 0; i < FRAME_MEMOS && !m; i++)
		if (a->x->frame_memo[i].match == match || !a->x->frame_memo[i].match)
			m = &a->x->frame_memo[i];
	if (!m || !(v = node_bytes(a, &m->v, &m->n, &m->cap)))
		return any_frame_walk(a, node, match);
	m->match = match;
	if (!v[node])
		v[node] = (uint8_t)(any_frame_walk(a, node, match) ? 2 : 1);
	return v[node] == 2;
}

/* A library file as users know it: from the package on. */
static const char *short_lib(const char *f)
{
	const char *p = strstr(f, "site-packages/");

	if (!p)
		p = strstr(f, "dist-packages/");
	if (p)
		return p + 14;
	for (p = strstr(f, "/lib/python"); p; p = strstr(p + 1, "/lib/python")) {
		const char *q = p + 11;

		while (*q == '.' || (*q >= '0' && *q <= '9'))
			q++;
		if (*q == '/')
			return q + 1;
	}
	return f;
}

static int has(const char *f, const char *const *pats)
{
	for (; *pats; pats++)
		if (strstr(f, *pats))
			return 1;
	return 0;
}

/* Library functions that copy host memory to the device on the calling
 * thread: what they do on the CPU before the copy is staging (C6). `own`:
 * the library copies a pageable source into its own pinned buffer first and
 * then copies from there (CuPy's asarray, JAX's PJRT transfers), so a pinned
 * copy after the gap is that staging's; the others leave staging to the
 * driver (a pageable copy), and a pinned copy after them is a pinned source
 * (torch's .to(device, non_blocking=True) of a pinned batch): no staging.
 * torch's own Tensor.to / .cuda() / copy_ are C methods with no Python frame:
 * their pageable copy calls cover their staging (docs/RULES.md section 3,
 * step 2b); the wrappers listed here have frames. */
static const struct lib_fn {
	const char *file;
	const char *const funcs[5]; /* the function's name, or its qualified name's end after '.' */
	uint8_t own; /* staging: the library copies into its own pinned buffer first */
} stage_fns[] = {
	{ "cupy/_creation/from_data.py", { "array", "asarray", "asanyarray", "ascontiguousarray" }, 1 },
	{ "jax/_src/api.py", { "device_put", "device_put_sharded", "device_put_replicated" }, 1 },
	{ "jax/_src/numpy/lax_numpy.py", { "array", "asarray" }, 1 },
	{ "jax/_src/numpy/array_creation.py", { "array", "asarray" }, 1 },
	{ "jax/_src/dispatch.py", { "_device_put_impl", "_batched_device_put_impl" }, 1 },
	{ "jax/_src/interpreters/pxla.py", { "batched_device_put", "_shard_np_array" }, 1 },
	{ "numba/cuda/api.py", { "to_device" }, 0 },
	{ "numba/cuda/cudadrv/devicearray.py", { "copy_to_device" }, 0 },
	{ "numba/cuda/cudadrv/driver.py", { "host_to_device" }, 0 },
	{ "lightning/fabric/utilities/apply_func.py", { "move_data_to_device" }, 0 },
	{ "pytorch_lightning/utilities/apply_func.py", { "move_data_to_device" }, 0 },
	{ "accelerate/utils/operations.py", { "send_to_device" }, 0 },
	{ "transformers/tokenization_utils_base.py", { "to" }, 0 },
	{ "transformers/feature_extraction_utils.py", { "to" }, 0 },
};

/* The entry of table fns (n of them) naming function func of file, or NULL. */
static const struct lib_fn *lib_fn_in(const struct lib_fn *fns, size_t n, const char *file, const char *func)
{
	const char *dot = strrchr(func, '.'), *base = dot ? dot + 1 : func;

	for (size_t i = 0; i < n; i++) {
		if (!strstr(file, fns[i].file))
			continue;
		for (size_t k = 0; k < 5 && fns[i].funcs[k]; k++)
			if (!strcmp(base, fns[i].funcs[k]))
				return &fns[i];
	}
	return NULL;
}

/* The staging function a frame is in, or NULL. */
static const struct lib_fn *stage_fn(const char *file, const char *func)
{
	return lib_fn_in(stage_fns, sizeof(stage_fns) / sizeof(stage_fns[0]), file, func);
}

/* What a library frame does (docs/RULES.md, section 6). */
/* Frameworks that dispatch device work op by op: what runs below them
 * (tracing, pytrees, numpy conversions) is their dispatch, not the job's
 * input code (jax/_src/numpy/ is jnp, not numpy). */
static const char *const dispatch[] = { "jax/", "jaxlib/", "optax/", "flax/", "equinox/",
					"cupy/_core/", "cupy/_math/", "cupy/linalg/", NULL };

/* JAX's reads of device values: they wait for the device (the work queued
 * before them), not dispatch work to it (jax/_src/array.py's methods that
 * read _value). */
static const struct lib_fn read_fns[] = {
	{ "jax/_src/api.py", { "device_get", "block_until_ready" }, 0 },
	{ "jax/_src/array.py", { "copy_to_host_async", "block_until_ready", "_value", "__float__", "__int__" }, 0 },
	{ "jax/_src/array.py", { "__bool__", "__index__", "tolist", "__array__" }, 0 },
};

static int jax_read(const char *file, const char *func)
{
	return lib_fn_in(read_fns, sizeof(read_fns) / sizeof(read_fns[0]), file, func) != NULL;
}

/* A host callback of a compiled step (jax.pure_callback, io_callback,
 * jax.debug.callback): XLA copies its operands to the host, runs the
 * Python function and copies its result back, the GPU waiting for it in
 * between. */
static const struct lib_fn callback_fns[] = {
	{ "jax/_src/callback.py", { "_wrapped_callback", "pure_callback_impl", "io_callback_impl", "_callback",
				    "__call__" }, 0 },
	{ "jax/_src/debugging.py", { "debug_callback_impl", "_callback" }, 0 },
};

static int host_callback(const char *file, const char *func)
{
	return lib_fn_in(callback_fns, sizeof(callback_fns) / sizeof(callback_fns[0]), file, func) != NULL;
}

/* A compiled step's run (pxla's ExecuteReplicated.__call__): JAX's
 * dispatch returns at once, unless the step calls back into Python, whose
 * run the calling thread then waits for there. */
static const struct lib_fn compiled_fns[] = {
	{ "jax/_src/interpreters/pxla.py", { "__call__" }, 0 },
};

static int compiled_call(const char *file, const char *func)
{
	return lib_fn_in(compiled_fns, sizeof(compiled_fns) / sizeof(compiled_fns[0]), file, func) != NULL;
}

/* A stack in a host callback: a callback's frame anywhere in it (its body
 * may call numpy or SciPy's Python), or, where the job's callbacks were
 * sampled (analysis.py_callback_ns), the compiled step's run as its
 * innermost frame: the thread waits there for them (JAX's dispatch returns
 * at once otherwise). Code below that frame (a batch staged to the device
 * there) stays what it is. */
static int node_in_callback(const struct analysis *a, uint32_t node)
{
	const struct trace *t = a->t;

	if (sites_any_frame(a, node, host_callback))
		return 1;
	if (!(a->py_callback_ns > 0) || !node || node >= t->py_nodes.n)
		return 0;
	uint32_t fr = t->py_nodes.v[node].frame;

	return fr < t->py_frames.n && compiled_call(name(a, t->py_frames.v[fr].file), frame_func(a, fr));
}

/* Libraries that read input also write output: an image, a plot or a sound
 * saved to a file is serialization (samples written every N steps, like a
 * checkpoint), not input preparation. */
static const struct lib_fn write_fns[] = {
	{ "PIL/Image.py", { "save" }, 0 },
	{ "torchvision/utils.py", { "save_image" }, 0 },
	{ "imageio/", { "imwrite", "imsave", "mimwrite", "mimsave", "volwrite" }, 0 },
	{ "matplotlib/", { "savefig", "print_figure" }, 0 },
	{ "torchaudio/", { "save" }, 0 },
	{ "soundfile.py", { "write" }, 0 },
	{ "scipy/io/wavfile.py", { "write" }, 0 },
};

static int writes_file(const char *file, const char *func)
{
	return lib_fn_in(write_fns, sizeof(write_fns) / sizeof(write_fns[0]), file, func) != NULL;
}

/* Serialization libraries' reading calls: a file loaded in the loop (a
 * feature array, an .npz's member, a pickled sample, a tensor shard) is
 * input read for the step, not a checkpoint written; the call the user
 * made (the outermost library frame) says which way the bytes go. Calls
 * that decode bytes already in memory (pickle.loads, safetensors' load)
 * read no file, and stay serialization. */
static const struct lib_fn load_fns[] = {
	{ "numpy/lib/_npyio_impl.py", { "load", "loadtxt", "genfromtxt", "fromregex", "__getitem__" }, 0 },
	{ "numpy/lib/npyio.py", { "load", "loadtxt", "genfromtxt", "fromregex", "__getitem__" }, 0 },
	{ "torch/serialization.py", { "load" }, 0 },
	{ "/pickle.py", { "load" }, 0 },
	{ "safetensors/", { "load_file" }, 0 },
	{ "h5py/", { "__getitem__", "read_direct" }, 0 },
};

static int loads_file(const char *file, const char *func)
{
	return lib_fn_in(load_fns, sizeof(load_fns) / sizeof(load_fns[0]), file, func) != NULL;
}

int sites_node_writes_output(const struct analysis *a, uint32_t node)
{
	return sites_any_frame(a, node, writes_file);
}

static enum site_class lib_class(const char *f, const char *func)
{
	static const char *const ser[] = { "torch/serialization.py", "/pickle.py", "_pickle",
					   "numpy/lib/npyio.py", "numpy/lib/_npyio_impl.py",
					   "h5py/", "safetensors/", "torch/distributed/checkpoint/",
					   NULL };
	static const char *const log[] = { "/logging/", "tqdm/", "wandb/", "tensorboard",
					   "mlflow/", "torch/_tensor_str.py", "/pprint.py", NULL };
	static const char *const input[] = { "PIL/", "cv2/", "torchvision/transforms",
					     "torchvision/io/", "torchvision/datasets/", "tokenizers/",
					     "transformers/tokenization", "torch/utils/data/",
					     "albumentations/", "imageio/", "decord/", "librosa/",
					     "torchaudio/", NULL };
	/* metrics computed on the host (on values the GPU made: they follow a
	 * synchronization) and plain numeric code, which may be input code or
	 * not: under DataLoader or next to input code it is input */
	static const char *const metric[] = { "sklearn/", "scipy/stats/", "torchmetrics/", "evaluate/",
					      "nltk/", "sacrebleu/", "jiwer/", "pycocotools/",
					      "seqeval/", "rouge_score/", NULL };
	static const char *const numeric[] = { "numpy/", "pandas/", "scipy/", NULL };
	/* blocking waits of the standard library (a lock or a thread's
	 * condition, a queue, select, a socket, a pipe to another process);
	 * time.sleep and a bare lock.acquire are C calls with no frame: the
	 * user's line and the thread's state (asleep) say those */
	static const char *const wait[] = { "/threading.py", "/queue.py", "/selectors.py",
					    "/socket.py", "/ssl.py", "multiprocessing/connection.py",
					    "multiprocessing/synchronize.py", "multiprocessing/queues.py",
					    "/subprocess.py", "concurrent/futures/", "asyncio/", NULL };
	/* and Triton's launcher (a @triton.jit kernel called from Python: its
	 * arguments bound, its compiled kernel looked up, the driver's launch) */
	static const char *const launch[] = { "torch/nn/", "torch/optim/", "torch/autograd/",
					      "torch/_tensor.py", "torch/functional.py", "torch/amp/",
					      "torch/cuda/amp/", "torch/_ops.py", "triton/runtime/jit.py",
					      "triton/backends/nvidia/driver.py", NULL };

	if (stage_fn(f, func))
		return SC_STAGE; /* before the others: jax/_src/numpy/ is no numpy input code */
	if (has(f, ser) || writes_file(f, func))
		return SC_SERIALIZE;
	if (has(f, log))
		return SC_LOG;
	if (jax_read(f, func))
		return SC_SYNC;
	if (host_callback(f, func))
		return SC_CALLBACK; /* the callback's work, on values the GPU made */
	if (has(f, dispatch))
		return SC_LAUNCH;
	if (has(f, metric))
		return SC_METRIC;
	if (has(f, input))
		return SC_INPUT;
	if (has(f, launch))
		return SC_LAUNCH;
	if (has(f, numeric))
		return SC_HOSTCALC;
	if (has(f, wait))
		return SC_WAIT;
	return SC_NONE;
}

/* When a stack's frames name several classes: the most specific decides
 * (a queue's wait under DataLoader is input preparation, not a wait). */
static const uint8_t class_rank[SC_NCLASSES] = { 0, 4, 10, 3, 8, 2, 6, 2, 8, 3, 9 };

static uint64_t site_key(const struct site *k)
{
	uint64_t h = 0;
	const uint32_t f[8] = { k->file,     k->line,      k->func,      k->lib_file,
				k->lib_func, k->call_file, k->call_line, k->call_func };

	for (unsigned i = 0; i < 8; i++)
		h = (h ^ f[i]) * 0x100000001b3ull + (h >> 29);
	return h;
}

static int same_site(const struct site *s, const struct site *k)
{
	return s->file == k->file && s->line == k->line && s->func == k->func &&
	       s->lib_file == k->lib_file && s->lib_func == k->lib_func && s->call_file == k->call_file &&
	       s->call_line == k->call_line && s->call_func == k->call_func;
}

/* The index of site k, found through a->x->site_index (by a hash of its key;
 * a scan only where two keys share one), added if new; UINT32_MAX when out
 * of memory. */
static uint32_t find_site(struct analysis *a, const struct site *k)
{
	uint64_t key = site_key(k), j = hmap_get(&a->x->site_index, key);

	if (j && same_site(&a->sites.v[j - 1], k)) {
		if (class_rank[k->cls] > class_rank[a->sites.v[j - 1].cls])
			a->sites.v[j - 1].cls = k->cls;
		return (uint32_t)(j - 1);
	}
	for (size_t i = 0; j && i < a->sites.n; i++) {
		const struct site *s = &a->sites.v[i];

		/* the class is not part of the key: exact sites set it to a
		 * synchronizing op after the fact, and one line (reached from
		 * one line of the loop) is one site */
		if (same_site(s, k)) {
			if (class_rank[k->cls] > class_rank[s->cls])
				a->sites.v[i].cls = k->cls;
			return (uint32_t)i;
		}
	}
	if (VEC_PUSH(a->sites, *k) < 0 || (!j && hmap_put(&a->x->site_index, key, a->sites.n) < 0)) {
		analysis_nomem(a, "listing the code sites");
		return UINT32_MAX;
	}
	return (uint32_t)a->sites.n - 1;
}

/* A module's call (torch.nn): the user's own model, called from the loop. */
static const char module_call[] = "torch/nn/modules/module.py";

/* The frame of the line in the training loop that leads to user_node's
 * frame, or 0 when that frame is the line itself. Under the loop's frame:
 * the outermost frame of the user's code below it, whatever library frames
 * lie between (a DataLoader's fetch of the user's dataset, a framework's
 * call of the user's validation_step). Elsewhere (a loader worker's stack,
 * or no loop frame found): outward through the user's frames and a
 * module's call only, up to another library's frame or the outermost
 * frame. */
/* 1 if stack node `node` is on the loop's path: its frame and its
 * ancestors' are the path's first frames (the sampler's and the injection
 * library's tries number their nodes apart). */
static int on_loop_path(const struct analysis *a, uint32_t node)
{
	const struct trace *t = a->t;
	uint32_t chain[LOOP_MAX_DEPTH];
	unsigned d = 0;

	if (!a->x->loop_depth)
		return 0;
	for (uint32_t m = node; m && m < t->py_nodes.n; m = t->py_nodes.v[m].parent) {
		if (d == a->x->loop_depth)
			return 0; /* deeper than the loop's frame */
		chain[d++] = t->py_nodes.v[m].frame;
	}
	for (unsigned i = 0; i < d; i++) { /* chain[d - 1] is the outermost */
		uint32_t fr = chain[d - 1 - i];
		const struct py_frame_rec *k = &a->x->loop_path[i];

		if (fr >= t->py_frames.n || t->py_frames.v[fr].file != k->file ||
		    t->py_frames.v[fr].func != k->func || t->py_frames.v[fr].line != k->line)
			return 0;
	}
	return d > 0;
}

/* The stack node one frame below the loop's that `node` lies under (a step
 * function's line, where the loop's frame calls it), or 0 where node is not
 * below the loop's frame or no loop was found. */
uint32_t sites_below_loop(const struct analysis *a, uint32_t node)
{
	const struct trace *t = a->t;
	unsigned depth = 0;
	uint32_t m = node;

	if (!a->x->loop_depth || !node || node >= t->py_nodes.n)
		return 0;
	for (uint32_t k = node; k && k < t->py_nodes.n && depth <= 4096; k = t->py_nodes.v[k].parent)
		depth++;
	if (depth <= a->x->loop_depth)
		return 0;
	for (unsigned d = depth; d > a->x->loop_depth + 1; d--)
		m = t->py_nodes.v[m].parent;
	return on_loop_path(a, t->py_nodes.v[m].parent) ? m : 0;
}

static uint32_t call_frame(struct analysis *a, uint32_t user_node, int *between)
{
	const struct trace *t = a->t;
	uint32_t n = user_node, top = user_node, near = user_node;
	int contiguous = 1, under = 0;

	for (unsigned depth = 0; depth < 4096; depth++) {
		uint32_t p = t->py_nodes.v[n].parent, fr;
		const char *file;

		if (!p || p >= t->py_nodes.n)
			break;
		if (on_loop_path(a, p)) {
			under = 1;
			break;
		}
		fr = t->py_nodes.v[p].frame;
		if (fr >= t->py_frames.n)
			break;
		file = name(a, t->py_frames.v[fr].file);
		if (!is_library(file)) {
			top = p;
			if (contiguous)
				near = p;
		} else if (!strstr(file, module_call)) {
			contiguous = 0;
		}
		n = p;
	}
	n = under ? top : near;
	/* the user's frames strictly between the site's and the call line's */
	*between = 0;
	for (uint32_t m = t->py_nodes.v[user_node].parent, depth = 0; n != user_node && m && m != n &&
	     m < t->py_nodes.n && depth < 4096; depth++, m = t->py_nodes.v[m].parent) {
		uint32_t fr = t->py_nodes.v[m].frame;

		if (fr < t->py_frames.n && !is_library(name(a, t->py_frames.v[fr].file))) {
			*between = 1;
			break;
		}
	}
	return n != user_node ? t->py_nodes.v[n].frame : 0;
}

/* A decorator's closure, as frames name them: `X.<locals>.wrapper`,
 * `_disable_dynamo.<locals>.inner`, `_no_grad.<locals>._no_grad_wrapper`,
 * `context_decorator.<locals>.decorate_context`; not a closure that is the
 * function itself (optax's `chain.<locals>.update_fn`). */
static int decorator_closure(const char *qual)
{
	const char *l = strstr(qual, ".<locals>."), *last;

	if (!l)
		return 0;
	last = strrchr(qual, '.') + 1;
	return strstr(last, "wrap") || !strcmp(last, "inner") || !strcmp(last, "_fn") ||
	       !strcmp(last, "decorate_context") || !strcmp(last, "_use_grad");
}

/* The library function a user's line called, named past a decorator's
 * closure (decorator_closure()): the next library frame in stands for the
 * function it wraps (`Adam.step` for `Optimizer.profile_hook_step.<locals>.
 * wrapper`), past at most WRAPPED_MAX of them. Where the stack stops inside
 * a wrapper's own code (a closure still, or a context manager's
 * `__enter__`, `__exit__`, `__init__`: the profiler's record_function), the
 * call as recorded is kept. libs: the last library frames walked from the
 * innermost out, n of them. */
static uint32_t wrapped(const struct analysis *a, const uint32_t *libs, unsigned n)
{
	const struct trace *t = a->t;
	unsigned i = n - 1, steps = 0;
	const char *f;

	while (steps < WRAPPED_MAX && i > 0 && n - i <= WRAPPED_MAX &&
	       decorator_closure(name(a, t->py_frames.v[libs[i % (WRAPPED_MAX + 1)]].func))) {
		i--;
		steps++;
	}
	f = name(a, t->py_frames.v[libs[i % (WRAPPED_MAX + 1)]].func);
	if (!steps || decorator_closure(f) || ends_with(f, ".__enter__") || ends_with(f, ".__exit__") ||
	    ends_with(f, ".__init__"))
		return libs[(n - 1) % (WRAPPED_MAX + 1)];
	return libs[i % (WRAPPED_MAX + 1)];
}

/* The site of a stack node (cached per node), or UINT32_MAX. */
static uint32_t site_of(struct analysis *a, uint32_t node)
{
	const struct trace *t = a->t;
	struct site k = { 0 };
	uint32_t callee = 0, inner = 0, user = 0, user_node = 0;
	uint32_t libs[WRAPPED_MAX + 1]; /* the library frames last walked, outermost last */
	unsigned nlibs = 0;
	uint8_t cls = SC_NONE;

	if (!node || node >= t->py_nodes.n)
		return UINT32_MAX;
	if (a->x->node_site.n < t->py_nodes.n) {
		size_t old = a->x->node_site.n;

		if (vec_grow_((void **)&a->x->node_site.v, &a->x->node_site.cap, t->py_nodes.n,
			      sizeof(uint32_t)) < 0) {
			analysis_nomem(a, "listing the code sites");
			return UINT32_MAX;
		}
		memset(a->x->node_site.v + old, 0, (t->py_nodes.n - old) * sizeof(uint32_t));
		a->x->node_site.n = t->py_nodes.n;
	}
	if (a->x->node_site.v[node])
		return a->x->node_site.v[node] - 1;
	/* innermost to outermost: the first user frame, the library frame it called */
	for (uint32_t n = node, depth = 0; n && n < t->py_nodes.n && depth < 4096; depth++) {
		uint32_t fr = t->py_nodes.v[n].frame;
		const char *file = fr < t->py_frames.n ? name(a, t->py_frames.v[fr].file) : "";

		if (!inner)
			inner = fr;
		if (!is_library(file)) {
			user = fr;
			user_node = n;
			break;
		}
		enum site_class c = lib_class(file, frame_func(a, fr));

		if (class_rank[c] > class_rank[cls])
			cls = (uint8_t)c;
		callee = fr;
		libs[nlibs++ % (WRAPPED_MAX + 1)] = fr;
		n = t->py_nodes.v[n].parent;
	}
	/* no class inside: the nearest classed library frame outside the user's
	 * frame (a Dataset's __getitem__ under DataLoader's fetch is input
	 * preparation; a Module's forward under torch/nn launches work) */
	for (uint32_t n = user ? t->py_nodes.v[user_node].parent : 0, depth = 0;
	     (cls == SC_NONE || cls == SC_HOSTCALC) && n && n < t->py_nodes.n && depth < 4096; depth++) {
		uint32_t fr = t->py_nodes.v[n].frame;
		const char *file = fr < t->py_frames.n ? name(a, t->py_frames.v[fr].file) : "";

		if (is_library(file)) {
			enum site_class c = lib_class(file, frame_func(a, fr));

			/* code above a wait runs: a thread's target under
			 * threading.py's run does not wait there */
			if (c == SC_WAIT)
				c = SC_NONE;
			/* numeric code under the input pipeline is input code */
			if (cls == SC_NONE || c == SC_INPUT)
				cls = (uint8_t)c;
			if (cls == SC_HOSTCALC && c != SC_NONE && c != SC_INPUT)
				break;
		}
		n = t->py_nodes.v[n].parent;
	}
	const struct py_frame_rec *f = &t->py_frames.v[user ? user : inner];

	if (cls == SC_SERIALIZE && user && callee &&
	    loads_file(name(a, t->py_frames.v[callee].file), frame_func(a, callee))) {
		cls = SC_INPUT;
		k.loads = 1;
	}
	/* the user called into a dispatching framework: its own frames below
	 * decide nothing, save a copy it stages or a read of device values
	 * (the read waits for the device) */
	if (user && callee && has(name(a, t->py_frames.v[callee].file), dispatch))
		cls = cls == SC_STAGE || cls == SC_SYNC ? cls : SC_LAUNCH;
	if (cls != SC_SERIALIZE && cls != SC_LOG && node_in_callback(a, node))
		cls = SC_CALLBACK;
	k.file = f->file;
	k.func = f->func;
	k.line = f->line;
	k.user = user != 0;
	k.cls = cls;
	uint32_t shown = user && callee ? wrapped(a, libs, nlibs) : 0;

	if (user && callee) {
		k.lib_file = trace_intern(a->t, short_lib(name(a, t->py_frames.v[callee].file)));
		k.lib_func = t->py_frames.v[callee].func;
	}
	int between = 0;
	uint32_t cf = user ? call_frame(a, user_node, &between) : 0;

	if (cf && cf < t->py_frames.n) {
		k.call_file = t->py_frames.v[cf].file;
		k.call_func = t->py_frames.v[cf].func;
		k.call_line = t->py_frames.v[cf].line;
	}
	uint32_t s = find_site(a, &k);

	/* (a site's stacks differ above its line: any inside a module's call) */
	if (s != UINT32_MAX && !a->sites.v[s].in_module && sites_stack_has(a, node, module_call))
		a->sites.v[s].in_module = 1;
	if (s != UINT32_MAX && cf && between)
		a->sites.v[s].elided = 1;
	/* the name a decorator's wrapper stands for, from the first stack
	 * that reaches inside it (the site stays the wrapper's call) */
	if (s != UINT32_MAX && shown != callee && !a->sites.v[s].shown_func) {
		a->sites.v[s].shown_file = trace_intern(a->t, short_lib(name(a, t->py_frames.v[shown].file)));
		a->sites.v[s].shown_func = t->py_frames.v[shown].func;
	}
	a->x->node_site.v[node] = s + 1;
	return s;
}

/* 1 if a stack is, below its user frame, in a library function that stages
 * into its own pinned buffer (struct lib_fn's `own`). */
static int node_own_staging(const struct analysis *a, uint32_t node)
{
	const struct trace *t = a->t;

	for (uint32_t n = node, depth = 0; n && n < t->py_nodes.n && depth < 4096; depth++) {
		uint32_t fr = t->py_nodes.v[n].frame;
		const char *file = fr < t->py_frames.n ? name(a, t->py_frames.v[fr].file) : "";
		const struct lib_fn *sf;

		if (!is_library(file))
			break;
		if ((sf = stage_fn(file, frame_func(a, fr))) && sf->own)
			return 1;
		n = t->py_nodes.v[n].parent;
	}
	return 0;
}

static enum site_class node_class(struct analysis *a, uint32_t node)
{
	uint32_t s = site_of(a, node);

	return s == UINT32_MAX ? SC_NONE : (enum site_class)a->sites.v[s].cls;
}

static const struct py_thread *driving_thread(const struct analysis *a);

enum site_class sites_node_class(struct analysis *a, uint32_t node)
{
	return node_class(a, node);
}

/* An answer about a stack node computed once, kept in a byte vector of
 * trace.py_nodes' length (v, n, cap): 2 yes, 1 no, 0 not yet. */
static int node_cached(struct analysis *a, uint8_t **v, size_t *n, size_t *cap, uint32_t node,
		       int (*test)(const struct analysis *a, uint32_t node))
{
	uint8_t *m;

	if (!node || node >= a->t->py_nodes.n)
		return 0;
	if (!(m = node_bytes(a, v, n, cap))) {
		analysis_nomem(a, "listing the code sites");
		return 0;
	}
	if (!m[node])
		m[node] = (uint8_t)(test(a, node) ? 2 : 1);
	return m[node] == 2;
}

/* An optimizer's own code (torch.optim's, with its schedulers; optax's
 * updates and transforms, not its losses or schedules; transformers',
 * timm's, bitsandbytes' and apex's optimizers; Lightning's and Accelerate's
 * wrappers, where the update runs). */
static const char *const optimizer_files[] = { "torch/optim/", "transformers/optimization.py",
					       "optax/_src/update.py", "optax/_src/transform.py",
					       "optax/_src/alias.py", "optax/_src/combine.py", "optax/transforms/",
					       "optax/contrib/", "timm/optim/", "bitsandbytes/optim/",
					       "apex/optimizers/", "lightning/pytorch/core/optimizer.py",
					       "pytorch_lightning/core/optimizer.py", "accelerate/optimizer.py", NULL };

static int in_optimizer(const struct analysis *a, uint32_t node)
{
	/* the update's own code: not a learning-rate schedule, an averaged
	 * model or optax's losses, which an optimizer's fusing does not remove */
	static const char *const not_update[] = { "torch/optim/lr_scheduler.py", "torch/optim/swa_utils.py", NULL };
	/* an optimizer that runs a closure (Lightning's training step, LBFGS,
	 * SAM) holds the forward and backward passes on its stack: below an
	 * optimizer's frame, these are the closure's work, not the update */
	static const char *const closure[] = { "torch/nn/modules/", "torch/autograd/__init__.py",
					       "torch/autograd/graph.py", "lightning/", "accelerate/",
					       "transformers/", "flax/", "equinox/", "haiku/", NULL };
	const struct trace *t = a->t;

	/* innermost to outermost: an optimizer's frame before any of a closure's */
	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (fr < t->py_frames.n) {
			const char *file = name(a, t->py_frames.v[fr].file), *fn = frame_func(a, fr);

			if (has(file, optimizer_files) && !has(file, not_update))
				return 1;
			if (has(file, closure) || strstr(fn, "closure") || strstr(fn, "training_step"))
				return 0;
		}
		n = t->py_nodes.v[n].parent;
	}
	return 0;
}

int sites_node_optimizer(struct analysis *a, uint32_t node)
{
	return node_cached(a, &a->x->node_optim.v, &a->x->node_optim.n, &a->x->node_optim.cap, node, in_optimizer);
}

static int model_frame(const char *file, const char *func)
{
	static const char *const model[] = { "transformers/models/", "timm/models/", "torchvision/models/",
					     "diffusers/models/", "torch/nn/modules/transformer.py", NULL };

	(void)func;
	return has(file, model);
}

/* 1 where the stack runs inside a model library's modules (Hugging Face's
 * models, timm's, torchvision's, diffusers', torch.nn's Transformer): such a
 * model iterates its own stack of identical layers (C10 tells that from a
 * loop of the user's) */
static int node_in_model(struct analysis *a, uint32_t node)
{
	return sites_any_frame(a, node, model_frame);
}

int sites_stack_has(const struct analysis *a, uint32_t node, const char *file_part)
{
	const struct trace *t = a->t;

	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (fr < t->py_frames.n && strstr(name(a, t->py_frames.v[fr].file), file_part))
			return 1;
		n = t->py_nodes.v[n].parent;
	}
	return 0;
}

int sites_is_library(const char *file)
{
	return is_library(file);
}

const struct py_thread *sites_driving_thread(const struct analysis *a)
{
	return driving_thread(a);
}

/* ---- the attribution's side ------------------------------------------- */

static int is_worker(const struct analysis *a, uint32_t pid)
{
	if (pid == a->main_pid)
		return 0;
	const struct proc_info *p = trace_proc(a->t, pid);

	return p ? !p->has_cuda : 1; /* another GPU process is a rank */
}

/* Staging needs its copy: the GPU waited for the data, so the operation
 * that ends the gap is a host-to-device copy, or the gap follows one from
 * pageable memory (the thread still in that batch's transfer once the copy
 * call returned: Lightning's batch_to_device with pin_memory off). From
 * pageable memory the driver stages it (whatever library made the call);
 * from pinned memory the CPU work was staging only where the library
 * copies into its own pinned buffer, else the source was pinned already
 * and the time was something else. A copy whose memory is not known
 * decides nothing. */
static int own_staged(int next_htod, double own_ns, double len)
{
	return next_htod == 1 + MEM_PINNED && own_ns >= SITE_CLASS_SHARE * len;
}

static int staged(int next_htod, int prev_htod, double own_ns, double len)
{
	return next_htod == 1 + MEM_PAGEABLE || prev_htod == 1 + MEM_PAGEABLE || own_staged(next_htod, own_ns, len);
}

/* The Python thread whose stacks explain the main GPU's idle time: the
 * training thread; where it runs no Python (JAX and XLA call CUDA from
 * runtime threads of their own), the main process's main thread if it was
 * sampled, else its most sampled Python thread. */
static const struct py_thread *driving_thread(const struct analysis *a)
{
	const struct trace *t = a->t;
	const struct py_thread *best = NULL, *train = NULL;
	uint64_t most = 0;

	/* the training thread, unless it ran Python only now and then (the
	 * autograd engine's thread, a thread the sampler saw once) */
	for (size_t i = 0; i < t->py_threads.n; i++) {
		const struct py_thread *th = &t->py_threads.v[i];

		if (th->pid != a->main_pid)
			continue;
		if (th->tid == a->main_tid)
			train = th;
		most = th->n > most ? th->n : most;
	}
	if (train && train->n * 10 >= most)
		return train;
	for (size_t i = 0; i < t->py_threads.n; i++) {
		const struct py_thread *th = &t->py_threads.v[i];

		if (th->pid != a->main_pid || !th->n)
			continue;
		if (th->tid == a->main_pid)
			return th;
		if (!best || th->n > best->n)
			best = th;
	}
	return best;
}

/* ---- long steps in the loop's own code ---------------------------------- */

/* The driving thread's time per stack node, in the marked steps and in the
 * others. */
struct step_stacks {
	double *in[2];
	size_t n;
	int marked;
};

static void add_step_stack(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e)
{
	struct step_stacks *ss = ctx;

	(void)state;
	if (node < ss->n)
		ss->in[ss->marked][node] += (double)(e - s);
}

double sites_marked_steps_apart(const struct analysis *a, const uint8_t *marked)
{
	const struct trace *t = a->t;
	const struct py_thread *th = driving_thread(a);
	struct step_stacks ss = { { NULL, NULL }, t->py_nodes.n, 0 };
	struct py_holds c;
	double tot[2] = { 0, 0 }, apart = 0;

	if (!th || !th->n || !ss.n || !a->steps.n)
		return -1;
	ss.in[0] = calloc(ss.n, sizeof(double));
	ss.in[1] = calloc(ss.n, sizeof(double));
	if (!ss.in[0] || !ss.in[1]) {
		apart = -ENOMEM;
		goto out;
	}
	holds_init(&c, t, th);
	for (size_t i = 0; i < a->steps.n; i++) {
		ss.marked = marked[i] != 0;
		holds_over(&c, a->steps.v[i].start, a->steps.v[i].end, add_step_stack, &ss);
	}
	for (size_t k = 0; k < ss.n; k++) {
		tot[0] += ss.in[0][k];
		tot[1] += ss.in[1][k];
	}
	if (!(tot[0] > 0) || !(tot[1] > 0)) {
		apart = -1;
		goto out;
	}
	for (size_t k = 0; k < ss.n; k++)
		apart += fabs(ss.in[0][k] / tot[0] - ss.in[1][k] / tot[1]);
	apart /= 2;
out:
	free(ss.in[0]);
	free(ss.in[1]);
	return apart;
}

/* ---- the training loop's path ------------------------------------------ */

/* The lines of input code where the training thread read from storage: it
 * waited there in state D for SITE_DISK_SHARE of its time or more (and
 * SITE_DISK_MIN_NS at least) while its process read more than READ_BYTES
 * from storage over the steady window. A short cold read between two
 * samples is on a CPU in one and in D in the next (the kernel's read path,
 * its page copies, then the wait for the disk): the line's time is one
 * activity, reading, and a gap it takes is storage's (C2), whichever state
 * the gap's own samples caught (the tango batch's SEG-Y reader: at its read
 * of a 4 KB trace, about a quarter of its steady time in D, the rest on a
 * CPU). Lines of launching work are left out: they wait in D for other
 * reasons (page faults, the driver). */
static void reading_sites(struct analysis *a, uint32_t pid)
{
	if (io_bytes_of(a->x->io_reads.v, a->x->io_reads.n, a->t0, a->t1, pid) <= READ_BYTES)
		return;
	for (size_t i = 0; i < a->sites.n; i++) {
		struct site *s = &a->sites.v[i];
		enum site_class c = (enum site_class)s->cls;

		if ((c == SC_INPUT || c == SC_HOSTCALC || c == SC_NONE) && s->disk_ns >= SITE_DISK_MIN_NS &&
		    s->disk_ns >= SITE_DISK_SHARE * s->held_ns)
			s->reads_storage = 1;
	}
}

/* of the driving thread's steady time, and of its launching work, under the loop's frame */
#define SITE_LOOP_SHARE 0.8

/* Per stack node, the driving thread's time, and of it the time awake and
 * outside its synchronizing calls and copies (`waits`, in time order). */
struct node_times {
	double *ns, *free_ns, *staging_ns, *disk_ns;
	size_t n;
	const struct host_call *const *waits;
	size_t nwaits, cur;
	uint64_t half; /* a sample's time from the start of its hold (unclipped: the window's
			* first hold may start later, a sample's worth at most) */
};

static void add_node_time(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e)
{
	struct node_times *nt = ctx;
	double waited = 0;

	if (node >= nt->n) /* a damaged file's sample may name no node */
		return;
	while (nt->cur < nt->nwaits && nt->waits[nt->cur]->end <= s)
		nt->cur++;
	for (size_t i = nt->cur; i < nt->nwaits && nt->waits[i]->start < e; i++) {
		uint64_t a = nt->waits[i]->start > s ? nt->waits[i]->start : s;
		uint64_t b = nt->waits[i]->end < e ? nt->waits[i]->end : e;

		waited += b > a ? (double)(b - a) : 0;
		/* a sample taken inside a pageable copy stands, with its hold,
		 * for the copies' time at its line: a hold only overlapping a
		 * short copy is the code before or after it */
		if (nt->waits[i]->cls == HC_MEMCPY && nt->waits[i]->copy_host == MEM_PAGEABLE &&
		    nt->waits[i]->copy_dir == COPY_HTOD && s + nt->half >= nt->waits[i]->start &&
		    s + nt->half < nt->waits[i]->end)
			nt->staging_ns[node] += (double)(e - s);
	}
	nt->ns[node] += (double)(e - s);
	/* in D outside its calls: a driver's call sleeps in D too */
	if (state == GW_PYSTATE_DISK && (double)(e - s) > waited)
		nt->disk_ns[node] += (double)(e - s) - waited;
	/* asleep or in the disk's wait (a blocking system call at the user's
	 * line, an os.sync) is no launching; a damaged file's overlapping
	 * calls cannot take more than the hold */
	if (state != GW_PYSTATE_SLEEP && state != GW_PYSTATE_DISK && (double)(e - s) > waited)
		nt->free_ns[node] += (double)(e - s) - waited;
}

/* 1 if a frame of the stack is a framework's launching work (a torch op, a
 * module's call, JAX's or CuPy's dispatch), and none reads device values
 * (JAX's device_get: its pytree frames below it dispatch nothing). */
static int launches(const struct analysis *a, uint32_t node)
{
	const struct trace *t = a->t;
	int launch = 0;

	for (uint32_t d = 0; node && node < t->py_nodes.n && d < 4096; node = t->py_nodes.v[node].parent, d++) {
		uint32_t fr = t->py_nodes.v[node].frame;
		const char *file = fr < t->py_frames.n ? name(a, t->py_frames.v[fr].file) : "";

		if (!is_library(file))
			continue;
		if (jax_read(file, frame_func(a, fr)))
			return 0;
		launch |= lib_class(file, frame_func(a, fr)) == SC_LAUNCH;
	}
	return launch;
}

int sites_node_launches(const struct analysis *a, uint32_t node)
{
	return launches(a, node);
}

/* The deepest node under which `share` of the time in own[] (by node) was
 * spent, sub[] taking each node's time with its descendants'; 0: none. With
 * `within`, only a node it marks counts. */
static uint32_t deepest_holding(const struct trace *t, const double *own, double *sub, double share,
				const uint8_t *within)
{
	size_t nn = t->py_nodes.n;
	double total = 0;
	uint32_t best = 0;
	unsigned best_depth = 0;

	memset(sub, 0, nn * sizeof(*sub));
	for (uint32_t n = 1; n < nn; n++) {
		if (!(own[n] > 0))
			continue;
		total += own[n];
		for (uint32_t m = n, d = 0; m && m < nn && d < 4096; m = t->py_nodes.v[m].parent, d++)
			sub[m] += own[n];
	}
	for (uint32_t n = 1; total > 0 && n < nn; n++) {
		unsigned d = 0;

		if (sub[n] < share * total || (within && !within[n]))
			continue;
		for (uint32_t m = n; m && m < nn && d < 4096; m = t->py_nodes.v[m].parent)
			d++;
		if (d > best_depth) {
			best = n;
			best_depth = d;
		}
	}
	return best;
}

/* The training loop's frame, with its ancestors, into a->x->loop_path: the
 * deepest stack node under which the driving thread spent SITE_LOOP_SHARE of
 * the steady window (a `step(i)` call, main's `train()`, a framework's fit
 * loop) that also holds that share of its launching work: a step launches
 * its work from inside the loop's frame, while an activity that takes most
 * of the time (a checkpoint, the input's preparation) launches none of it.
 * None (loop_depth 0) without samples, where no node holds that much (a
 * loop at a module's top level: each line is a node of its own) or the
 * loop's frame is deeper than LOOP_MAX_DEPTH: call lines then go outward
 * through the user's frames and module calls only (call_frame). From the
 * same pass over the thread's samples, each site's time awake outside its
 * waits on the GPU (site.launch_ns, which C11's sites rank by) and inside
 * its uploads from pageable memory (site.staging_ns, C6's). */
static void loop_path_find(struct analysis *a)
{
	const struct trace *t = a->t;
	const struct py_thread *th = driving_thread(a);
	size_t nn = t->py_nodes.n;
	double *own, *sub, *lown = NULL, *free_ns = NULL, *staging_ns = NULL, *disk_ns = NULL;
	uint8_t *above = NULL;
	uint32_t best = 0, l;
	struct py_holds c;
	const struct host_call **waits = NULL;
	size_t nwaits = 0;

	if (!th || nn < 2 || a->t1 <= a->t0)
		return;
	own = calloc(nn, sizeof(*own));
	sub = calloc(nn, sizeof(*sub));
	lown = calloc(nn, sizeof(*lown));
	free_ns = calloc(nn, sizeof(*free_ns));
	staging_ns = calloc(nn, sizeof(*staging_ns));
	disk_ns = calloc(nn, sizeof(*disk_ns));
	above = calloc(nn, 1);
	waits = calloc(t->calls.n + 1, sizeof(*waits));
	if (!own || !sub || !lown || !free_ns || !staging_ns || !disk_ns || !above || !waits) {
		analysis_nomem(a, "finding the training loop in the Python stacks");
		goto out;
	}
	/* the thread's waits on the GPU, in time order (one thread's calls do
	 * not overlap: by their end is by their start) */
	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *hc = &t->calls.v[i];

		if (hc->pid == th->pid && hc->tid == th->tid && (hc->cls == HC_SYNC || hc->cls == HC_MEMCPY))
			waits[nwaits++] = hc;
	}
	struct node_times nt = { own, free_ns, staging_ns, disk_ns, nn, waits, nwaits, 0, 0 };
	uint64_t hold;

	py_hold(t, &nt.half, &hold);

	holds_init(&c, t, th);
	holds_over(&c, a->t0, a->t1, add_node_time, &nt);
	for (uint32_t n = 1; n < nn; n++)
		if (own[n] > 0 && launches(a, n))
			lown[n] = own[n];
	/* the launching work's own loop (0: none sampled), and its ancestors */
	l = deepest_holding(t, lown, sub, SITE_LOOP_SHARE, NULL);
	for (uint32_t m = l, d = 0; m && m < nn && d < 4096; m = t->py_nodes.v[m].parent, d++)
		above[m] = 1;
	best = deepest_holding(t, own, sub, SITE_LOOP_SHARE, l ? above : NULL);
	unsigned depth = 0;

	for (uint32_t m = best; m && m < nn && depth <= LOOP_MAX_DEPTH; m = t->py_nodes.v[m].parent)
		depth++;
	if (depth > LOOP_MAX_DEPTH) /* a loop this deep is not looked for: no call lines */
		depth = 0;
	if (depth && !(a->x->loop_path = calloc(depth, sizeof(*a->x->loop_path))))
		analysis_nomem(a, "finding the training loop in the Python stacks");
	else
		a->x->loop_depth = depth;
	for (uint32_t m = best, d = depth; d && a->x->loop_path; m = t->py_nodes.v[m].parent) {
		uint32_t fr = t->py_nodes.v[m].frame;

		a->x->loop_path[--d] = fr < t->py_frames.n ? t->py_frames.v[fr] : (struct py_frame_rec){ 0, 0, 0 };
	}
	/* the thread's time awake and outside its waits on the GPU, by site
	 * (C11's sites pick from it), inside its pageable copies (C6's), and
	 * its time there in all, in state D (reading_sites) */
	for (uint32_t n = 1; n < nn; n++) {
		uint32_t st = free_ns[n] > 0 || staging_ns[n] > 0 || disk_ns[n] > 0 ? site_of(a, n) : UINT32_MAX;

		if (st != UINT32_MAX) {
			a->sites.v[st].launch_ns += free_ns[n];
			a->sites.v[st].staging_ns += staging_ns[n];
			a->sites.v[st].held_ns += own[n];
			a->sites.v[st].disk_ns += disk_ns[n];
		}
	}
	reading_sites(a, th->pid);
out:
	free(own);
	free(sub);
	free(lown);
	free(free_ns);
	free(staging_ns);
	free(disk_ns);
	free(above);
	free(waits);
}

/* A stack of another thread of the training process whose running the
 * training thread may wait for: input code, or the user's own that is not
 * a checkpoint, logging, a wait, GPU work or a read of GPU values (a thread
 * that prepares batches for a queue). Not the loader's pin-memory
 * thread: its copies run outside the interpreter lock. */
static int feeds(struct analysis *a, uint32_t node)
{
	uint32_t s = site_of(a, node);

	if (s == UINT32_MAX || sites_stack_has(a, node, "_utils/pin_memory.py"))
		return 0;
	enum site_class c = (enum site_class)a->sites.v[s].cls;

	return c == SC_INPUT || (a->sites.v[s].user && (c == SC_NONE || c == SC_HOSTCALC));
}

struct run_ctx {
	struct analysis *a;
	uint64_t ns; /* the thread's running time so collected */
};

static void add_run(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e)
{
	struct run_ctx *r = ctx;
	struct analysis *a = r->a;

	if (state != GW_PYSTATE_RUN || !feeds(a, node))
		return;
	if (VEC_PUSH(a->x->other_run, ((struct time_span){ s, e })) < 0) {
		analysis_nomem(a, "placing idle time in the code");
		return;
	}
	r->ns += e - s;
}

/* When the training process's other Python threads ran input or the
 * user's code over the steady window (a->x->other_run), and the thread
 * that ran most. Their own cursors stay at the start for the gaps. */
static void other_run_spans(struct analysis *a, struct site_pass *sp)
{
	uint64_t most = 0;

	a->x->other_run.n = 0;
	a->other_tid = 0;
	a->other_wait_gaps = 0;
	a->other_wait_idle_ns = 0;
	for (size_t k = 0; k < sp->nothers; k++) {
		struct py_holds c = sp->others[k];
		struct run_ctx r = { a, 0 };

		holds_over(&c, a->t0, a->t1, add_run, &r);
		if (r.ns > most) {
			most = r.ns;
			a->other_tid = c.th->tid;
		}
	}
	a->x->other_run.n = spans_merge(a->x->other_run.v, a->x->other_run.n);
}

/* Another thread of the process ran input or the user's code for at least
 * half of [s, e). */
static int others_ran(const struct analysis *a, uint64_t s, uint64_t e)
{
	return e > s && a->x->other_run.n &&
	       (double)spans_overlap(a->x->other_run.v, a->x->other_run.n, s, e) >= SITE_CLASS_SHARE * (double)(e - s);
}

/* Asleep at node in autograd's wait for its engine, which launches the
 * backward pass meanwhile: waiting for the GPU's work, not another thread. */
static int engine_wait(const struct analysis *a, uint32_t node)
{
	return sites_stack_has(a, node, "torch/autograd/");
}

int sites_waits_other(struct analysis *a, uint32_t node, uint64_t s, uint64_t e)
{
	return others_ran(a, s, e) && !engine_wait(a, node);
}

struct callback_seen {
	struct analysis *a;
	double ns;
};

static void add_callback_time(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e)
{
	struct callback_seen *cs = ctx;

	(void)state;
	if (sites_any_frame(cs->a, node, host_callback))
		cs->ns += (double)(e - s);
}

struct site_pass *sites_begin(struct analysis *a)
{
	const struct trace *t = a->t;
	struct site_pass *sp;

	if (!t->py_samples)
		return NULL;
	sp = calloc(1, sizeof(*sp));
	if (!sp || !(sp->workers = calloc(t->py_threads.n + 1, sizeof(*sp->workers))) ||
	    !(sp->others = calloc(t->py_threads.n + 1, sizeof(*sp->others)))) {
		if (sp)
			free(sp->workers);
		free(sp);
		analysis_nomem(a, "placing idle time in the code");
		return NULL;
	}
	const struct py_thread *drive = driving_thread(a);

	if (drive) { /* before the first site: a site's class reads it */
		struct py_holds c;
		struct callback_seen cs = { a, 0 };

		holds_init(&c, t, drive);
		holds_over(&c, a->t0, a->t1, add_callback_time, &cs);
		a->py_callback_ns = cs.ns;
	}
	loop_path_find(a); /* before the first site: its call line stops below the loop */
	for (size_t i = 0; i < t->py_threads.n; i++) {
		const struct py_thread *th = &t->py_threads.v[i];

		if (th == drive) {
			holds_init(&sp->main, t, th);
			sp->has_main = 1;
			a->py_thread_samples = th->n;
			a->py_site_tid = th->tid;
		} else if (is_worker(a, th->pid)) {
			holds_init(&sp->workers[sp->nworkers++], t, th);
		} else if (drive && th->pid == drive->pid) {
			holds_init(&sp->others[sp->nothers++], t, th);
		}
	}
	other_run_spans(a, sp);
	return sp;
}

/* The time the training thread spent asleep or blocked in its own code, in
 * a standard-library wait, or under a logging call (a handler blocked on
 * its socket, file or lock: not the GPU's wait, and no CPU work of logging
 * either): not in a CUDA call (those gaps are decided before), not in the
 * input pipeline's wait for its workers (C1), not in a framework's dispatch
 * (JAX blocks there on its own runtime threads). */
static double asleep_ns(struct analysis *a, const struct weight *w, unsigned n)
{
	double ns = 0;

	for (unsigned i = 0; i < n; i++) {
		enum site_class c = node_class(a, w[i].node);

		if (c == SC_NONE || c == SC_WAIT || c == SC_LOG)
			ns += w[i].asleep_ns;
	}
	return ns;
}

/* The stack of the training thread's call that read GPU data back (a
 * synchronize, or a device-to-host copy: `.item()`, `.cpu()`) and returned
 * at the gap's start, where its line is the user's: the code that read the
 * values. 0: none. Gaps come in time order and calls are sorted by end. */
static uint32_t read_stack(struct analysis *a, struct site_pass *sp, uint64_t ga, uint64_t gb)
{
	const struct trace *t = a->t;
	size_t i = sp->read_cursor;

	while (i < t->calls.n && t->calls.v[i].end + READ_SLACK_NS < ga)
		i++;
	sp->read_cursor = i;
	for (; i < t->calls.n && t->calls.v[i].end < gb; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->pid != a->main_pid || c->tid != a->main_tid || !c->py_stack ||
		    (c->cls != HC_SYNC && !(c->cls == HC_MEMCPY && c->copy_dir == COPY_DTOH)))
			continue;
		uint32_t s = site_of(a, c->py_stack);

		return s != UINT32_MAX && a->sites.v[s].user ? c->py_stack : 0;
	}
	return 0;
}

/* 1 if the stack runs in function `fr`'s code at its line or after it. */
static int runs_after(const struct analysis *a, uint32_t node, const struct py_frame_rec *r)
{
	const struct trace *t = a->t;

	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (fr < t->py_frames.n) {
			const struct py_frame_rec *f = &t->py_frames.v[fr];

			if (f->file == r->file && f->func == r->func)
				return f->line >= r->line;
		}
		n = t->py_nodes.v[n].parent;
	}
	return 0;
}

/* 1 if the stack runs, at the read's line or after it, in the function that
 * read (`topk(scores.cpu().numpy())`) or in one of the user's functions
 * that called it below the training loop's frame (a step that copies the
 * images back in a helper, then scores them: `psnr(to_img(out), gt)`): the
 * code that handles the values read, not the next step's (a step function
 * called again starts above the read). Without a loop frame, the read's
 * function only: a loop at a module's top level holds every line. The
 * read's own frame is its innermost user frame (read_stack: its site's). */
static int after_read(const struct analysis *a, uint32_t node, uint32_t read)
{
	const struct trace *t = a->t;
	int own = 1; /* the read's own frame comes first */

	for (uint32_t m = read, d = 0; m && m < t->py_nodes.n && d < 4096; d++, m = t->py_nodes.v[m].parent) {
		uint32_t fr = t->py_nodes.v[m].frame;

		if (fr >= t->py_frames.n || is_library(name(a, t->py_frames.v[fr].file)))
			continue;
		if (!own && on_loop_path(a, m))
			break;
		if (runs_after(a, node, &t->py_frames.v[fr]))
			return 1;
		if (!a->x->loop_depth)
			break;
		own = 0;
	}
	return 0;
}

/* 1 where the gap's code is the loader workers', not the training
 * thread's: it waited for them (C1), or for storage while it waited in
 * the input pipeline (the workers read: C2). Where the workers ran no code
 * of the user's in the gap, the training thread's stacks stay. (Waits for
 * a core, C7, keep the training thread's: its own thread pools may be the
 * ones that take the cores.) */
static int from_workers(struct analysis *a, int cause, const struct weight *w, unsigned n, double len)
{
	double input_ns = 0;

	if (cause == IDLE_DATA_WAIT)
		return 1;
	if (cause != IDLE_IO)
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (node_class(a, w[i].node) == SC_INPUT)
			input_ns += w[i].ns;
	return input_ns >= SITE_CLASS_SHARE * len;
}

/* Starting worker processes: multiprocessing's process creation (fork,
 * forkserver, spawn), as a DataLoader iterator without persistent workers
 * does at every epoch, or a Pool as it is made. */
static int starts_process(const char *file, const char *func)
{
	return strstr(file, "multiprocessing/popen_") ||
	       (strstr(file, "multiprocessing/process.py") && !strcmp(func, "BaseProcess.start"));
}

int sites_node_starts_workers(const struct analysis *a, uint32_t node)
{
	return sites_any_frame(a, node, starts_process);
}

/* Receiving a message from another process: multiprocessing's pipe reads
 * and the unpickling around them (a multiprocessing.Queue's get, a Pipe's
 * recv). Awake there, the thread copies the message itself. */
static int receives(const char *file, const char *func)
{
	(void)func;
	return strstr(file, "multiprocessing/connection.py") || strstr(file, "multiprocessing/queues.py");
}

int sites_node_receives(const struct analysis *a, uint32_t node)
{
	return sites_any_frame(a, node, receives);
}

/* The gap's time (w, n) in stacks `in` says yes to; awake: only the time
 * the thread was not asleep there. */
static double time_in(struct analysis *a, const struct weight *w, unsigned n,
		      int (*in)(const struct analysis *a, uint32_t node), int awake)
{
	double ns = 0;

	for (unsigned i = 0; i < n; i++)
		if (in(a, w[i].node))
			ns += awake ? w[i].ns - w[i].asleep_ns : w[i].ns;
	return ns;
}

/* 1 where the training thread spent at least half of the gap starting
 * worker processes: it waited for its input workers to start (a DataLoader
 * iterator without persistent workers, at each epoch), whatever the new
 * processes did meanwhile (imports read from storage, the data set sent to
 * each). Not inside a CUDA call or after a synchronization: the GPU set
 * those. */
static int starts_workers(struct analysis *a, int cause, const struct weight *w, unsigned n, double len)
{
	if (cause == IDLE_SYNC || cause == IDLE_COMM || cause == IDLE_LAUNCH_BLOCKING)
		return 0;
	return time_in(a, w, n, sites_node_starts_workers, 0) >= SITE_CLASS_SHARE * len;
}

/* 1 where the training thread spent at least half of the gap awake in a
 * receive from another process (multiprocessing's pipe, a queue's
 * unpickling): it copied the batch itself, so faster or more producers do
 * not shorten the gap; only a smaller or shared-memory message does. */
static int receives_batches(struct analysis *a, int cause, const struct weight *w, unsigned n, double len)
{
	if (cause != IDLE_DATA_WAIT && cause != IDLE_WAIT && cause != IDLE_UNKNOWN && cause != IDLE_HOST_COMPUTE &&
	    cause != IDLE_LAUNCH_OVERHEAD)
		return 0;
	return time_in(a, w, n, sites_node_receives, 1) >= SITE_CLASS_SHARE * len;
}

/* 1 where the training thread, asleep outside its CUDA calls and not in
 * autograd's wait for its engine, spent at least half of the gap while
 * another Python thread of its process ran input or the user's code: it
 * waited for that thread, on the queue it fills or for the interpreter lock
 * (GIL) it holds, whatever the gap looked like (launch gaps, a sleep). */
static int waits_other(struct analysis *a, int cause, const struct weight *w, unsigned n, uint64_t ga,
		       uint64_t gb)
{
	double len = (double)(gb - ga), asleep = 0;

	if (!a->x->other_run.n || (cause != IDLE_LAUNCH_OVERHEAD && cause != IDLE_WAIT && cause != IDLE_UNKNOWN &&
				   cause != IDLE_HOST_COMPUTE))
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (!engine_wait(a, w[i].node))
			asleep += w[i].asleep_ns;
	return asleep >= SITE_CLASS_SHARE * len && others_ran(a, ga, gb);
}

/* Whose time stands for a gap in place of the training thread's: loader
 * workers' where they ran the user's code (whatever their state), the
 * process's other threads' time running input or the user's code, or
 * (C7) any of the job's threads' time on a CPU in the user's code. */
enum helper_take { TAKE_USER, TAKE_FEEDS, TAKE_RUNNING_USER };

/* The gap's stacks from the threads of h[0..nh) and h2[0..nh2) taken as
 * `take` says, in place of the training thread's own (w, *n), scaled to
 * the gap. Where they show none, the training thread's stay: returns 0,
 * else 1. */
static int helper_stacks(struct analysis *a, struct py_holds *h, size_t nh, struct py_holds *h2, size_t nh2,
			 enum helper_take take, uint64_t ga, uint64_t gb, struct weight *w, unsigned *n)
{
	struct weight ww[MAX_GAP_STACKS];
	unsigned nw = 0;
	double wsum = 0, len = (double)(gb - ga);

	for (size_t k = 0; k < nh + nh2; k++) {
		struct weight tmp[MAX_GAP_STACKS];
		unsigned nt = 0;

		stacks_over(k < nh ? &h[k] : &h2[k - nh], ga, gb, tmp, &nt);
		for (unsigned i = 0; i < nt; i++) {
			uint32_t s = take == TAKE_FEEDS ? 0 : site_of(a, tmp[i].node);
			double ns = take == TAKE_USER ? tmp[i].ns : tmp[i].ns - tmp[i].asleep_ns;
			int user = s != UINT32_MAX && a->sites.v[s].user;
			int ok = take == TAKE_FEEDS ? ns > 0 && feeds(a, tmp[i].node)
				 : take == TAKE_USER ? user : ns > 0 && user;

			if (ok) {
				add_weight(ww, &nw, tmp[i].node, ns, take == TAKE_USER ? tmp[i].asleep_ns : 0);
				wsum += ns;
			}
		}
	}
	if (!(wsum > 0))
		return 0;
	for (unsigned i = 0; i < nw; i++)
		ww[i].ns *= len / wsum;
	memcpy(w, ww, sizeof(ww[0]) * nw);
	*n = nw;
	return 1;
}

enum { LOADED_NONE, LOADED_FILE, LOADED_AT_READ }; /* input_cause's IDLE_IO: how */

/* Input code on the training thread is host work (C1), unless it was
 * loading files (np.load, torch.load: load_ns of the gap) whose bytes came
 * from storage, more than READ_BYTES read by the training process itself in
 * the gap's window (its loader workers' or another process's reads are not
 * its load's), or it was at lines that read from storage (read_ns of the
 * gap: reading_sites): then the GPU waited for storage, whatever share of
 * the reading the thread spent on a CPU (the kernel's copies of pages it
 * read ahead), and reading ahead of the GPU is the fix (C2). Loaded from the
 * page cache, it stays host work. */
static int input_cause(struct analysis *a, double load_ns, double read_ns, uint64_t ga, uint64_t gb,
		       int *loaded)
{
	double len = (double)(gb - ga);
	uint64_t w0, w1;

	gap_window(ga, gb, &w0, &w1);
	if (load_ns >= SITE_CLASS_SHARE * len &&
	    io_bytes_of(a->x->io_reads.v, a->x->io_reads.n, w0, w1, a->main_pid) > READ_BYTES) {
		*loaded = LOADED_FILE;
		return IDLE_IO;
	}
	if (read_ns >= SITE_CLASS_SHARE * len) {
		*loaded = LOADED_AT_READ;
		return IDLE_IO;
	}
	return IDLE_HOST_COMPUTE;
}

/* PyTorch's eager ops (torch/_ops.py, torchvision's ops through them),
 * not a compiler's work (Dynamo, Inductor, FX): in a sync gap of
 * CPU_OPS_GAP_NS they launched nothing, so they ran on CPU tensors. */
static int eager_op(const char *file, const char *func)
{
	(void)func;
	return strstr(file, "torch/_ops.py") || strstr(file, "torchvision/ops/");
}

static int compiler_frame(const char *file, const char *func)
{
	(void)func;
	return strstr(file, "torch/_dynamo/") || strstr(file, "torch/_inductor/") || strstr(file, "torch/fx/");
}

static int cpu_ops(const struct analysis *a, uint32_t node)
{
	return sites_any_frame(a, node, eager_op) && !sites_any_frame(a, node, compiler_frame);
}

/* A compiler's own work, as a steady step can hold it: not the frames a
 * compiled function's every call passes through (Dynamo's eval frame,
 * Inductor's and Triton's runtime launchers, JAX's dispatch in pxla.py). */
static int compiles_now(const char *file, const char *func)
{
	static const char *const c[] = { "jax/_src/compiler.py", "jax/_src/interpreters/mlir.py",
					 "torch/_dynamo/convert_frame.py", "triton/compiler/",
					 "cupy/cuda/compiler.py", "numba/core/", NULL };

	for (int i = 0; c[i]; i++)
		if (strstr(file, c[i]))
			return 1;
	/* JAX's lowering and compiling steps in pxla.py, not its dispatch */
	return strstr(file, "jax/_src/interpreters/pxla.py") && (strstr(func, "ompile") || strstr(func, "lower"));
}

/* ... innermost first: importing a compiler's modules is importing */
static int compiling_frame(const char *file, const char *func)
{
	return !strncmp(file, "<frozen importlib", 17) ? -1 : compiles_now(file, func);
}

/* transformers' checks whether an attention mask can be left out (its
 * padding mask's .all() read on the host, innermost): the library skips them
 * while torch.compile traces the model (masking_utils' is_tracing holds
 * is_torchdynamo_compiling), so they vanish under the launch-bound fixes */
static int compile_skipped_check(const char *file, const char *func)
{
	if (!strstr(file, "transformers/masking_utils.py") && !strstr(file, "transformers/modeling_attn_mask_utils.py"))
		return -1;
	return strstr(func, "_ignore_causal_mask_sdpa") || strstr(func, "_ignore_bidirectional_mask_sdpa") ||
	       strstr(func, "_can_skip_");
}

int sites_sync_compile_skips(const struct analysis *a, uint32_t node)
{
	return sites_any_frame(a, node, compile_skipped_check);
}

int sites_node_compiles(const struct analysis *a, uint32_t node)
{
	return sites_any_frame(a, node, compiling_frame);
}

/* A gap's weights (its stacks' time) placed at their sites, by cause and
 * class; in a sync gap, the host's work on the values read (read: the
 * stack of the call that read them, 0: none) and a callback's. */
static void place_weights(struct analysis *a, int cause, const struct weight *w, unsigned n, uint32_t read,
			  int next_htod, uint64_t len)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t s = site_of(a, w[i].node);

		if (s == UINT32_MAX)
			continue;
		enum site_class c = (enum site_class)a->sites.v[s].cls;

		a->sites.v[s].ns[cause] += w[i].ns;
		a->site_class_ns[cause][c] += w[i].ns;
		if (sites_node_optimizer(a, w[i].node))
			a->site_optim_ns[cause] += w[i].ns;
		if (cause == IDLE_LAUNCH_OVERHEAD && node_in_model(a, w[i].node))
			a->site_model_ns[cause] += w[i].ns;
		/* a host callback's work (or the compiled step's run waiting for
		 * its callbacks): the GPU's values processed on the host, its
		 * answer sent back to the GPU that waits for it (not the next
		 * input, though a host-to-device copy ends its gap) */
		if (cause == IDLE_SYNC && c == SC_CALLBACK && node_in_callback(a, w[i].node)) {
			a->site_sync_post_ns += w[i].ns;
			a->site_callback_ns += w[i].ns;
			continue;
		}
		if (cause == IDLE_SYNC && next_htod)
			a->site_sync_to_htod_ns[c] += w[i].ns;
		/* framework ops in a gap this long launched nothing (a launch would
		 * have ended it): they ran on the CPU, on the values read (NMS on
		 * CPU tensors) */
		if (read &&
		    (c == SC_NONE || c == SC_HOSTCALC ||
		     (c == SC_LAUNCH && len >= CPU_OPS_GAP_NS && cpu_ops(a, w[i].node))) &&
		    after_read(a, w[i].node, read))
			a->site_sync_post_ns += w[i].ns;
	}
}

int sites_gap(struct analysis *a, struct site_pass *sp, int cause, enum site_decides decides,
	      const struct gap *g)
{
	uint64_t ga = g->start, gb = g->end;
	int next_htod = g->next_htod, prev_htod = g->prev_htod;
	struct weight w[MAX_GAP_STACKS];
	unsigned n = 0;
	double cls_ns[SC_NCLASSES] = { 0 }, len = (double)(gb - ga);
	/* storage's gap by the training thread's own code: its stacks stay */
	int loaded = LOADED_NONE;

	if (!sp || gb <= ga)
		return cause;
	if (sp->has_main)
		stacks_over(&sp->main, ga, gb, w, &n);
	if (decides != SD_NONE && decides != SD_ACTIVITY) {
		/* the training thread's code decides between input preparation
		 * (C1), checkpoint serialization (C14), host-to-device staging
		 * (C6) and launching work (C4). After a synchronization only
		 * the first two and a wait elsewhere: the host then ran the
		 * next batch's input code or a checkpoint, or slept on a lock
		 * or a queue, and that, not the synchronization, set the gap's
		 * length; launching or staging the next work is what the
		 * synchronization costs (C9). */
		double own_ns = 0, optim_ns = 0, load_ns = 0, read_ns = 0, compile_ns = 0;

		for (unsigned i = 0; i < n; i++) {
			uint32_t s = site_of(a, w[i].node);
			enum site_class c = s == UINT32_MAX ? SC_NONE : (enum site_class)a->sites.v[s].cls;

			cls_ns[c] += w[i].ns;
			if (sites_node_compiles(a, w[i].node))
				compile_ns += w[i].ns;
			if (s != UINT32_MAX && a->sites.v[s].loads)
				load_ns += w[i].ns;
			if (s != UINT32_MAX && a->sites.v[s].reads_storage)
				read_ns += w[i].ns;
			if (c == SC_STAGE && node_own_staging(a, w[i].node))
				own_ns += w[i].ns;
			if (c == SC_LAUNCH && sites_node_optimizer(a, w[i].node))
				optim_ns += w[i].ns;
		}
		if (compile_ns >= SITE_CLASS_SHARE * len && decides != SD_STAGE_ONLY) {
			/* a compiler's own work (a kernel built on its first use,
			 * a recompile): not the loop's, and no fix of a rule's
			 * takes it away; the warm-up left it in the steady window
			 * (docs/RULES.md sections 2 and 6) */
			cause = IDLE_COMPILE;
		} else if (decides == SD_COMPILE_ONLY) {
			; /* the writes are the job's own otherwise */
		} else if (decides == SD_PERIODIC_WAIT) {
			if (asleep_ns(a, w, n) >= SITE_CLASS_SHARE * len) {
				cause = IDLE_WAIT;
				a->periodic_wait_ns += len;
			}
		} else if (decides == SD_STAGE_ONLY) {
			/* the workers were busy, but the training thread was in
			 * the copy of a batch it already had: its staging, not
			 * the loader, held the GPU (a DataLoader without
			 * pin_memory, the driver staging pageable memory) */
			if (cls_ns[SC_STAGE] >= SITE_CLASS_SHARE * len && staged(next_htod, prev_htod, own_ns, len))
				cause = IDLE_PAGEABLE;
		} else if (cls_ns[SC_SERIALIZE] >= SITE_CLASS_SHARE * len)
			cause = IDLE_PERIODIC;
		else if (decides == SD_SERIALIZE_ONLY)
			; /* only serialization decides these */
		else if (asleep_ns(a, w, n) >= SITE_CLASS_SHARE * len)
			cause = IDLE_WAIT;
		else if (decides == SD_IDLE_HOST)
			; /* only a wait or serialization decides these (and an input copy, below) */
		else if (decides == SD_AFTER_SYNC && cls_ns[SC_INPUT] >= SITE_CLASS_SHARE * len)
			cause = input_cause(a, load_ns, read_ns, ga, gb, &loaded);
		else if (decides == SD_AFTER_SYNC)
			/* a library's copy of the next input into its own pinned
			 * buffer (CuPy, JAX) is host work a sync does not pace: the
			 * copy runs as long with the sync gone; pinned memory is
			 * its fix (C6) */
			cause = cls_ns[SC_STAGE] >= SITE_CLASS_SHARE * len && own_staged(next_htod, own_ns, len)
					? IDLE_PAGEABLE
					: cause;
		else if (cls_ns[SC_STAGE] >= SITE_CLASS_SHARE * len && staged(next_htod, prev_htod, own_ns, len))
			cause = IDLE_PAGEABLE;
		else if (cls_ns[SC_INPUT] + cls_ns[SC_HOSTCALC] + cls_ns[SC_METRIC] >= SITE_CLASS_SHARE * len)
			cause = input_cause(a, load_ns, read_ns, ga, gb, &loaded);
		else if (cls_ns[SC_LAUNCH] >= SITE_CLASS_SHARE * len)
			/* a launch would have ended the gap: an optimizer's step
			 * that issued nothing this long updated parameters kept
			 * on the host (an embedding table with SparseAdam on the
			 * CPU, an offloaded optimizer): CPU work, not launching */
			cause = len >= LAUNCH_SILENT_NS && optim_ns >= SITE_CLASS_SHARE * len ? IDLE_HOST_COMPUTE
											    : IDLE_LAUNCH_OVERHEAD;
	}
	if (decides != SD_ACTIVITY && starts_workers(a, cause, w, n, len)) {
		/* the training thread's own stacks: the line that made the iterator */
		cause = IDLE_DATA_WAIT;
		a->worker_start_gaps++;
		a->worker_start_idle_ns += len;
	} else if (decides != SD_ACTIVITY && receives_batches(a, cause, w, n, len)) {
		cause = IDLE_HOST_COMPUTE;
		a->pipe_recv_gaps++;
		a->pipe_recv_idle_ns += len;
	} else if (waits_other(a, cause, w, n, ga, gb)) {
		/* the other thread's work, where it ran input or the user's code */
		cause = IDLE_DATA_WAIT;
		a->other_wait_gaps++;
		a->other_wait_idle_ns += len;
		helper_stacks(a, sp->others, sp->nothers, NULL, 0, TAKE_FEEDS, ga, gb, w, &n);
	} else if ((cause == IDLE_LAUNCH_OVERHEAD || cause == IDLE_UNKNOWN) &&
		   (decides == SD_HOST_COMPUTE || decides == SD_IDLE_HOST) && next_htod && !g->next_value && n &&
		   gb - ga >= SHORT_GAP_NS && cls_ns[SC_LAUNCH] < SITE_CLASS_SHARE * len) {
		/* a gap the host ended with an input copy: it issued nothing for
		 * the whole gap (a launch would have ended it), then an input,
		 * so its own code there prepared that input; a scalar's copy (a
		 * Python number a jitted call sends first) is no input */
		cause = IDLE_HOST_COMPUTE;
		a->input_copy_gaps++;
		a->input_copy_idle_ns += len;
	} else if (cause == IDLE_OVERSUB) {
		/* the threads that took the cores, where they ran the user's code */
		if (helper_stacks(a, sp->workers, sp->nworkers, sp->others, sp->nothers, TAKE_RUNNING_USER, ga, gb,
				  w, &n))
			a->oversub.takers_ns += len;
	} else if (!loaded && from_workers(a, cause, w, n, len)) {
		/* the loader workers' work, where they were in the user's code */
		helper_stacks(a, sp->workers, sp->nworkers, NULL, 0, TAKE_USER, ga, gb, w, &n);
	}
	/* after a read that sends nothing back: the work on the values read */
	uint32_t read = cause == IDLE_SYNC && !next_htod && n ? read_stack(a, sp, ga, gb) : 0;

	place_weights(a, cause, w, n, read, next_htod, gb - ga);
	if (loaded && cause == IDLE_IO) /* not where another reading of the gap won */
		*(loaded == LOADED_AT_READ ? &a->read_site_io_ns : &a->load_io_ns) += gb - ga;
	return cause;
}

void sites_end(struct analysis *a, struct site_pass *sp)
{
	(void)a;
	if (!sp)
		return;
	free(sp->workers);
	free(sp->others);
	free(sp);
}

/* ---- the lines that launched C8's kernels ------------------------------ */

/* C8's sites are the lines that launched its matrix kernels. A kernel's
 * record has no stack, but its correlation id is CUPTI's count of the
 * process's CUDA calls, launches included, so the calls the recording timed
 * (synchronizations, copies, memsets, allocations: with --launches every
 * launch), from any of its threads, bracket it: between the two around it
 * the launches are placed evenly by id, no later than the kernel started,
 * and the training thread's sampled stack at that time is the line that
 * launched it (or waited for autograd's thread to). A
 * teacher model run outside autocast beside a student inside it: both
 * launch matrix work, only the teacher's is FP32. */
#define PLACED_MIN_SHARE 0.5 /* the kernels placed for the figures to rank by them */
/* the sampled thread makes this share of the process's timed calls at least:
 * it launches its work itself (PyTorch's main thread, 34% beside autograd's
 * backward thread on c8_torch_fp32_unet), not through a runtime's threads
 * that launch asynchronously while it runs ahead (JAX's Python thread: 3-9%
 * on c8_jax_highest, c11_jax_eager_grayscott, c4_jax_per_leaf_jit_adamw; the
 * tid field of `gpuwhy dump --type api`) */
#define LAUNCH_THREAD_SHARE 0.25

struct launch_pass {
	struct call_anchor *an; /* the main process's timed calls, by correlation id */
	size_t nan;
	uint64_t *ts; /* the thread's samples, in time order */
	uint32_t *node;
	size_t ns;
	uint64_t half, hold;
};

static int cmp_anchor(const void *x, const void *y)
{
	const struct call_anchor *p = x, *q = y;

	return p->corr < q->corr ? -1 : p->corr > q->corr;
}

void sites_launches_end(struct launch_pass *lp)
{
	if (!lp)
		return;
	free(lp->an);
	free(lp->ts);
	free(lp->node);
	free(lp);
}

struct launch_pass *sites_launches_begin(struct analysis *a)
{
	const struct trace *t = a->t;
	const struct py_thread *drive = driving_thread(a);
	struct launch_pass *lp;
	size_t pos = 0;
	uint64_t ts = 0;
	uint32_t node;
	uint8_t state;

	a->matrix_launch_ns = a->matrix_placed_ns = 0;
	if (!drive || drive->pid != a->main_pid || !drive->n)
		return NULL;
	if (!(lp = calloc(1, sizeof(*lp))))
		goto nomem;
	if (!(lp->an = malloc((t->anchors.n + 1) * sizeof(*lp->an))) ||
	    !(lp->ts = malloc(drive->n * sizeof(*lp->ts))) || !(lp->node = malloc(drive->n * sizeof(*lp->node))))
		goto nomem;
	/* the process's calls from every thread: the ids are one count (the
	 * backward pass's launches come from autograd's own thread) */
	size_t own = 0;

	for (size_t i = 0; i < t->anchors.n; i++)
		if (t->anchors.v[i].pid == a->main_pid) {
			own += t->anchors.v[i].tid == drive->tid;
			lp->an[lp->nan++] = t->anchors.v[i];
		}
	if ((double)own < LAUNCH_THREAD_SHARE * (double)lp->nan) { /* the launches are a runtime's */
		sites_launches_end(lp);
		return NULL;
	}
	qsort(lp->an, lp->nan, sizeof(*lp->an), cmp_anchor);
	while (lp->ns < drive->n && py_thread_next_state(drive, &pos, &ts, &node, &state)) {
		lp->ts[lp->ns] = ts;
		lp->node[lp->ns++] = node;
	}
	py_hold(t, &lp->half, &lp->hold);
	if (lp->nan < 2 || !lp->ns) {
		sites_launches_end(lp);
		return NULL;
	}
	return lp;
nomem:
	sites_launches_end(lp);
	analysis_nomem(a, "placing the matrix kernels at their lines");
	return NULL;
}

/* The training thread's stack at time x (0: none held then): the sample that
 * holds it, as pyholds.c's holds_start()/holds_end() define a sample's span,
 * found by a search (kernels come as read, not in time order, so the
 * cursor of pyholds.c, which moves forward only, does not serve). */
static uint32_t stack_at(const struct launch_pass *lp, uint64_t x)
{
	size_t lo = 0, hi = lp->ns;

	while (lo < hi) { /* the first sample that starts after x */
		size_t mid = lo + (hi - lo) / 2;

		if (lp->ts[mid] > x + lp->half)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (!lo)
		return 0;
	size_t j = lo - 1;
	uint64_t end = lp->ts[j] + lp->hold;

	if (j + 1 < lp->ns && lp->ts[j + 1] - lp->half < end)
		end = lp->ts[j + 1] - lp->half;
	return x < end ? lp->node[j] : 0;
}

void sites_launched(struct analysis *a, struct launch_pass *lp, const struct gpu_op *op, uint32_t corr)
{
	unsigned c = op->name_class;

	if (!lp || op->kind != OP_KERNEL || op->pid != a->main_pid || op->dev != a->main_dev ||
	    op->start < a->t0 || op->start >= a->t1 || op->end <= op->start ||
	    !(c == KC_MATMUL_FP32 || c == KC_MATMUL_TF32 || c == KC_MATMUL_FP64))
		return;
	double ns = (double)(op->end - op->start);

	a->matrix_launch_ns += ns;
	size_t lo = 0, hi = lp->nan;

	while (lo < hi) { /* the first timed call after the launch */
		size_t mid = lo + (hi - lo) / 2;

		if (lp->an[mid].corr > corr)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (!lo || lo >= lp->nan)
		return;
	const struct call_anchor *p = &lp->an[lo - 1], *q = &lp->an[lo];
	uint64_t x = p->ts;

	/* calls further apart than two samples place it no better than the
	 * stacks would be wrong by */
	if (p->corr != corr && (q->ts < p->ts || q->ts - p->ts > 4 * lp->half))
		return;
	if (p->corr != corr && q->ts > p->ts) /* a graph's launch call is its kernels' own */
		x = p->ts + (uint64_t)((double)(q->ts - p->ts) * (double)(corr - p->corr) /
				       (double)(q->corr - p->corr));
	x = x < op->start ? x : op->start;
	uint32_t node = stack_at(lp, x), s = node ? site_of(a, node) : UINT32_MAX;

	if (s == UINT32_MAX)
		return;
	a->sites.v[s].matrix_ns += ns;
	a->matrix_placed_ns += ns;
}

/* ---- findings ---------------------------------------------------------- */

/* The idle causes of a finding, by its cause id; 0 if it has none. */
static unsigned finding_causes(const char *cause, int *c)
{
	static const struct {
		const char *id;
		int causes[2];
		unsigned n;
	} map[] = {
		{ "C1", { IDLE_DATA_WAIT, IDLE_HOST_COMPUTE }, 2 },
		{ "C2", { IDLE_IO }, 1 },
		{ "C4", { IDLE_LAUNCH_OVERHEAD }, 1 },
		{ "C5", { IDLE_LAUNCH_BLOCKING }, 1 },
		{ "C6", { IDLE_PAGEABLE }, 1 },
		{ "C7", { IDLE_OVERSUB }, 1 },
		{ "C9", { IDLE_SYNC }, 1 },
		{ "C10", { IDLE_LAUNCH_OVERHEAD }, 1 },
		{ "C14", { IDLE_PERIODIC }, 1 },
		{ "C15", { IDLE_COMM }, 1 },
		{ "C16", { IDLE_WAIT }, 1 },
	};

	for (size_t i = 0; cause && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(cause, map[i].id)) {
			memcpy(c, map[i].causes, sizeof(map[i].causes));
			return map[i].n;
		}
	return 0;
}

struct ranked {
	uint32_t site;
	double v;       /* the ranked value (merge_lines: of every call line) */
	double own;     /* ... of the site shown alone */
	uint64_t calls; /* exact calls made at the line (of every call line) */
	uint32_t first, last; /* a block's lines (merge_blocks; 0: the site's own) */
	uint8_t cls, gone;     /* a block's class (its lines' one class); merged into another */
};

static int cmp_ranked(const void *x, const void *y)
{
	const struct ranked *p = x, *q = y;

	if (p->v != q->v)
		return p->v < q->v ? 1 : -1;
	return p->site < q->site ? -1 : p->site > q->site;
}

/* Exact sites: the training thread's synchronizing calls and copies in the
 * steady window that carry the stack that made them; those in a periodic
 * step are its activity's (a checkpoint's `.cpu()` of each tensor: C14's
 * idle), not counted as the step's own waits. */
static double exact_sites(struct analysis *a)
{
	const struct trace *t = a->t;
	double total = 0;
	size_t k = 0; /* the steps, in time order */

	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->pid != a->main_pid || c->tid != a->main_tid ||
		    (c->cls != HC_SYNC && c->cls != HC_MEMCPY) || c->start < a->t0 || c->end > a->t1)
			continue;
		if (c->cls == HC_MEMCPY && !c->py_stack)
			continue; /* copies count when the library read their stack (device to host) */
		while (k < a->steps.n && a->steps.v[k].end <= c->start)
			k++;
		int periodic = k < a->steps.n && a->steps.v[k].start <= c->start && a->steps.v[k].periodic;
		uint32_t s = c->py_stack ? site_of(a, c->py_stack) : UINT32_MAX;

		if (!periodic) {
			a->api_calls++;
			total += (double)(c->end - c->start);
		}
		if (s == UINT32_MAX)
			continue;
		if (!periodic) {
			a->api_calls_sited++;
			a->api_wait_sited_ns += (double)(c->end - c->start);
			a->sites.v[s].calls++;
			a->sites.v[s].wait_ns += c->end - c->start;
		}
		/* .item(), .tolist(), .cpu(): a C method at the user's line, no
		 * frame below it (a hook's, under the module's call, too); a
		 * call into a library that waits once deep inside (a model's
		 * forward with a check) stays what it mostly does, launching.
		 * A copy into pinned memory waits only with the synchronize
		 * call after it (.item()'s), which carries the same stack: a
		 * non_blocking copy_() into a pinned buffer does not wait */
		if ((a->sites.v[s].cls == SC_NONE || (a->sites.v[s].cls == SC_LAUNCH && !a->sites.v[s].lib_file)) &&
		    (c->cls == HC_SYNC || c->copy_dir != COPY_DTOH || c->copy_host != MEM_PINNED))
			a->sites.v[s].cls = SC_SYNC;
	}
	return total;
}

/* A line that runs a backward pass: it calls a library's backward
 * (Tensor.backward, torch.autograd.backward, Lightning's manual_backward,
 * Accelerate's and DeepSpeed's backward) or torch.autograd.grad; not an
 * autograd Function's forward (Function.apply). */
static int backward_line(const struct analysis *a, const struct site *s)
{
	const char *lib = s->lib_file ? name(a, s->lib_file) : "", *fn = s->lib_func ? name(a, s->lib_func) : "";
	const char *last = strrchr(fn, '.'), *b;

	last = last ? last + 1 : fn;
	b = strstr(last, "backward");
	return (b && !b[8] && (b == last || b[-1] == '_')) ||
	       (strstr(lib, "torch/autograd/__init__.py") && !strcmp(last, "grad"));
}

/* A site where the training thread issues work: launching work or its own
 * code with no other class (tensor arithmetic has no library frame; a launch
 * that waits on a full queue waits at its line), not a backward pass (its
 * kernels are the forward lines' gradients, launched by autograd's engine:
 * one line however many they are). */
static int issues_work(const struct analysis *a, const struct site *s)
{
	return (s->cls == SC_LAUNCH || s->cls == SC_NONE) && !backward_line(a, s);
}

/* C8's sites: lines that launch the model's work. An optimizer's update
 * and gradient clipping launch elementwise work and norms, never the
 * matrix products autocast would change. These are also the lines whose
 * work has gradients (backward_to_forward). */
static int issues_matrix_work(const struct analysis *a, const struct site *s)
{
	const char *lib = s->lib_file ? name(a, s->lib_file) : "";

	return issues_work(a, s) && !has(lib, optimizer_files) && !strstr(lib, "torch/nn/utils/clip_grad.py");
}

/* A line of the model's forward work, whose operations have gradients: it
 * issues work (not an optimizer's update or gradient clipping) inside a
 * torch.nn module's call or into torch.nn (a loss function); not an EMA's
 * or a hand-written optimizer's arithmetic, nor opt.zero_grad(). */
static int forward_line(const struct analysis *a, const struct site *s)
{
	const char *lib = s->lib_file ? name(a, s->lib_file) : "";

	return issues_matrix_work(a, s) && (s->in_module || strstr(lib, "torch/nn/"));
}

/* Launch-bound idle (C4, C10) at a backward pass's line is the forward
 * lines' gradients, launched by autograd's engine while the training thread
 * waits at `loss.backward()`, a line a user does not change: it is counted
 * at the forward lines, in proportion to their own (each forward operation
 * has its gradient's), and the finding says how much was moved. Returns the
 * share of the finding's idle moved (0: none). */
static double backward_to_forward(const struct analysis *a, struct ranked *r, size_t n, double idle)
{
	double back = 0, fwd = 0;

	for (size_t i = 0; i < n; i++) {
		const struct site *s = &a->sites.v[r[i].site];

		if (backward_line(a, s))
			back += r[i].v;
		else if (forward_line(a, s))
			fwd += r[i].v;
	}
	if (back <= 0 || fwd <= 0 || idle <= 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct site *s = &a->sites.v[r[i].site];

		if (backward_line(a, s))
			r[i].v = 0;
		else if (forward_line(a, s))
			r[i].v *= 1.0 + back / fwd;
	}
	return back / idle;
}

/* An activity finding's site inside the activity's own function leads back
 * to the line that calls it (activity_stat.call_*), the line its title
 * names: the loop's frame found by time share is no guide where the
 * activity takes most of the window (it is then the activity itself). The
 * site with that call line is a site of its own, holding no time, so no
 * other finding ranks it; merge_lines() then sums what it gathers. Returns
 * the site to rank in site's place. */
static uint32_t activity_call_site(struct analysis *a, const struct finding *f, uint32_t site)
{
	const struct activity_stat *act;
	struct site k;

	if (!f->activity || f->activity >= ACT_N)
		return site;
	act = &a->act[f->activity];
	k = a->sites.v[site];
	if (!act->call_line || !act->func ||
	    !((k.file == act->file && k.func == act->func) ||
	      (k.call_line && k.call_file == act->file && k.call_func == act->func)) ||
	    (k.call_file == act->call_file && k.call_line == act->call_line))
		return site;
	/* in the activity's own function, the call line calls it; else the
	 * activity's function lies between (its call line was in it) */
	k.elided = !(k.file == act->file && k.func == act->func);
	k.call_file = act->call_file;
	k.call_func = act->call_func;
	k.call_line = act->call_line;
	memset(k.ns, 0, sizeof(k.ns));
	k.launch_ns = k.staging_ns = k.matrix_ns = 0;
	k.calls = k.wait_ns = 0;
	uint32_t v = find_site(a, &k);

	return v != UINT32_MAX ? v : site;
}

/* One line reached from several lines of the loop (the timed loop and a
 * warm-up loop, one dataset line fetched from two places) ranks as one:
 * the values of sites that differ only in their call line are summed into
 * the one with the largest, which the report shows. Returns the count. */
static size_t merge_lines(const struct analysis *a, struct ranked *r, size_t n)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		const struct site *s = &a->sites.v[r[i].site];
		size_t j;

		for (j = 0; j < m; j++) {
			const struct site *q = &a->sites.v[r[j].site];

			if (q->file == s->file && q->line == s->line && q->func == s->func &&
			    q->lib_file == s->lib_file && q->lib_func == s->lib_func)
				break;
		}
		if (j == m) {
			r[m] = r[i];
			r[m].own = r[i].v;
			m++;
		} else {
			r[j].v += r[i].v;
			r[j].calls += r[i].calls;
			if (r[i].v > r[j].own) {
				r[j].site = r[i].site;
				r[j].own = r[i].v;
			}
		}
	}
	return m;
}

/* Two sites in one function: whatever loop line led to each (as
 * merge_lines ranks one line reached from several as one). */
static int same_func(const struct site *p, const struct site *q)
{
	return p->file == q->file && p->func == q->func;
}

/* A line that may join a block whose library call is lib's (NULL: none
 * yet) and whose class is cls (SC_NONE: none yet): a block holds one
 * library call at most (each is an activity of its own: a teacher's
 * forward and a student's are two lines calling the same module call),
 * and its class is unset or the same. */
static int joins_block(const struct site *s, const struct site *lib, uint8_t cls)
{
	return (!s->lib_func || !lib) && (s->cls == SC_NONE || cls == SC_NONE || s->cls == cls);
}

/* Merges one activity's statements into blocks (BLOCK_MIN_SHARE): r is
 * ranked, largest first; each block is led by its largest line, whose site
 * the report shows with the block's lines, and holds what every line of
 * the function inside it that may join it ranked. Two lines that each call
 * a library function (a model's forward and an optimizer's step, a
 * teacher's forward and a student's), or of two classes (a `.item()`'s
 * synchronization and a print's logging), are two activities, never one
 * block; the user's own statements (tensor arithmetic, a NumPy call, a C
 * method) join either; a block never spans a line of its function that
 * holds BLOCK_MIN_SHARE and may not join it. Returns the count left,
 * ranked again. */
static size_t merge_blocks(const struct analysis *a, struct ranked *r, size_t n, double base)
{
	/* the lines that may start or widen a block: ranked first, and about
	 * 1 / BLOCK_MIN_SHARE of them at most */
	enum { BIG_MAX = 24 };
	size_t nbig = 0, m = 0;

	while (nbig < n && nbig < BIG_MAX && base > 0 && r[nbig].v >= BLOCK_MIN_SHARE * base)
		nbig++;
	for (size_t i = 0; i < nbig; i++) {
		const struct site *h = &a->sites.v[r[i].site], *lib = h->lib_func ? h : NULL;
		uint8_t cls = h->cls, member[BIG_MAX] = { 0 };
		uint32_t lo = h->line, hi = h->line;
		int grew = !r[i].gone && h->line > 0;

		while (grew) {
			grew = 0;
			for (size_t j = i + 1; j < nbig; j++) {
				const struct site *s = &a->sites.v[r[j].site];
				uint32_t l = s->line, nlo = l < lo ? l : lo, nhi = l > hi ? l : hi;
				int over = 0;

				if (member[j] || r[j].gone || !l || !same_func(h, s) || !joins_block(s, lib, cls) ||
				    l + BLOCK_GAP + 1 < lo || l > hi + BLOCK_GAP + 1 || nhi - nlo + 1 > BLOCK_SPAN)
					continue;
				/* not over a line of its function that holds as much and
				 * may not join: a larger one (a site or block of its own
				 * already), or one of another library call or class */
				for (size_t k = 0; k < nbig && !over; k++) {
					const struct site *q = &a->sites.v[r[k].site];

					over = k != i && k != j && !member[k] && !r[k].gone && same_func(h, q) &&
					       q->line >= nlo && q->line <= nhi && (k < i || !joins_block(q, lib, cls));
				}
				if (over)
					continue;
				member[j] = grew = 1;
				lo = nlo;
				hi = nhi;
				if (s->lib_func && !lib)
					lib = s;
				if (s->cls != SC_NONE)
					cls = s->cls;
			}
		}
		if (lo == hi)
			continue;
		/* its members, and every smaller line of the function inside it
		 * that may join it */
		for (size_t j = i + 1; j < n; j++) {
			const struct site *s = &a->sites.v[r[j].site];

			if (r[j].gone || (j < nbig ? !member[j]
						   : !same_func(h, s) || s->line < lo || s->line > hi ||
							     !joins_block(s, lib, cls)))
				continue;
			r[i].v += r[j].v;
			r[i].calls += r[j].calls;
			r[j].gone = 1;
			if (s->lib_func && !lib)
				lib = s;
			if (s->cls != SC_NONE)
				cls = s->cls;
		}
		r[i].first = lo;
		r[i].last = hi;
		r[i].cls = cls;
	}
	for (size_t i = 0; i < n; i++)
		if (!r[i].gone)
			r[m++] = r[i];
	qsort(r, m, sizeof(*r), cmp_ranked);
	return m;
}

static void attach(struct analysis *a, struct finding *f, double exact_total)
{
	int causes[2];
	unsigned nc = finding_causes(f->cause, causes);
	struct ranked *r;

	/* C12's small copies claim the launch gaps before them: the lines
	 * that issued them are those gaps' */
	if (!nc && f->cause && !strcmp(f->cause, "C12") && (f->claim.idle_causes & IDLE_BIT(IDLE_LAUNCH_OVERHEAD))) {
		causes[0] = IDLE_LAUNCH_OVERHEAD;
		nc = 1;
	}
	size_t n = 0;
	double idle = 0;
	/* C9's sites are its calls' own stacks when those calls hold at least
	 * half the time waited; else (waits the library read no stack for,
	 * such as cudaFree's), or where the idle is mostly the host's work on
	 * what they read (a metric, results processed: the finding's gain takes
	 * that work away), the samples over the sync idle: that work's lines */
	int exact = f->cause && !strcmp(f->cause, "C9") && a->api_calls_sited > 0 &&
		    2 * a->api_wait_sited_ns >= exact_total && !(f->claim.host_classes & 1u << SC_METRIC);

	/* C11's and C8's time is the GPU's, busy: their sites are where the
	 * training thread launched its work, the lines that issue the most
	 * operations (C8: the model's, the line to wrap in autocast) */
	int matrix = !nc && f->cause && !strcmp(f->cause, "C8");
	int launching = matrix || (!nc && f->cause && !strcmp(f->cause, "C11"));
	/* C8's: the lines that launched its matrix kernels, where half of
	 * their time was placed (sites_launched); not a backward pass's line,
	 * whose kernels are the forward lines' gradients */
	int placed = matrix && a->matrix_launch_ns > 0 && a->matrix_placed_ns >= PLACED_MIN_SHARE * a->matrix_launch_ns;
	double launched = 0, staged = 0;

	/* C6's sites are the lines that made the pageable copies, where the
	 * samples fell inside them (the idle around a copy also holds the code
	 * before it: a file's read, the next batch's launches), given enough
	 * samples there: uploads only, all staging (a download's call also
	 * waits for the GPU's work before it: a synchronization, C9's) */
	for (size_t i = 0; f->cause && !strcmp(f->cause, "C6") && i < a->sites.n; i++)
		staged += a->sites.v[i].staging_ns;
	int staging = staged >= C6_SITES_SAMPLED_NS;

	f->nsites = 0;
	f->backward_share = 0;
	if ((!nc && !launching) || !a->sites.n)
		return;
	if (!(r = calloc(a->sites.n, sizeof(*r)))) {
		analysis_nomem(a, "ranking the code sites");
		return;
	}
	for (unsigned k = 0; k < nc; k++)
		idle += (double)a->idle_by_cause[causes[k]];
	for (size_t i = 0; i < a->sites.n; i++) {
		double v = 0;

		if (exact) {
			v = (double)a->sites.v[i].wait_ns;
		} else if (staging) {
			v = a->sites.v[i].staging_ns;
		} else if (placed) {
			v = issues_matrix_work(a, &a->sites.v[i]) ? a->sites.v[i].matrix_ns : 0;
			launched += v;
		} else if (launching) {
			v = (matrix ? issues_matrix_work(a, &a->sites.v[i]) : issues_work(a, &a->sites.v[i]))
				    ? a->sites.v[i].launch_ns
				    : 0;
			launched += v;
		} else {
			for (unsigned k = 0; k < nc; k++)
				v += a->sites.v[i].ns[causes[k]];
		}
		if (v > 0)
			r[n++] = (struct ranked){ .site = (uint32_t)i, .v = v, .own = v, .calls = a->sites.v[i].calls };
	}
	if (!strcmp(f->cause, "C4") || !strcmp(f->cause, "C10"))
		f->backward_share = backward_to_forward(a, r, n, idle);
	/* (after the loop: a site added here holds no time) */
	for (size_t i = 0; i < n; i++)
		r[i].site = activity_call_site(a, f, r[i].site);
	n = merge_lines(a, r, n);
	qsort(r, n, sizeof(*r), cmp_ranked);
	double base = exact ? exact_total : staging ? staged : launching ? launched : idle;

	n = merge_blocks(a, r, n, base);
	for (size_t i = 0; i < n && f->nsites < FINDING_SITES; i++) {
		double share = base > 0 ? r[i].v / base : 0;

		if (share < SITE_MIN_SHARE)
			break; /* ranked: the rest are smaller */
		f->sites[f->nsites++] = (struct finding_site){ .site = r[i].site,
								.share = share,
								.value = r[i].v,
								.calls = r[i].calls,
								.exact = (uint8_t)exact,
								.launching = (uint8_t)(launching && !placed),
								.staging = (uint8_t)staging,
								.launched = (uint8_t)placed,
								.line_first = r[i].first,
								.line_last = r[i].last,
								.block_cls = r[i].cls };
	}
	free(r);
}

/* The py_status of the process the report is about: the main process, or
 * without a GPU timeline the target. */
static const struct py_status_rec *status_of(const struct trace *t, uint32_t pid)
{
	const struct py_status_rec *best = NULL;

	for (size_t i = 0; i < t->py_status.n; i++) {
		const struct py_status_rec *s = &t->py_status.v[i];

		if (s->pid != pid)
			continue;
		/* a read process (after an exec) wins over a failure; the sampler's
		 * status (stream 0) over the injection library's */
		if (!best || (s->code == GW_PY_OK && best->code != GW_PY_OK) ||
		    (s->code == best->code && !s->stream))
			best = s;
	}
	return best;
}

/* The interpreter the sampler read most, other than pid: where a launcher
 * (a pyenv shim, a wrapper script) runs Python as its child. NULL if none. */
static const struct py_status_rec *sampled_other(const struct trace *t, uint32_t pid)
{
	const struct py_status_rec *best = NULL;

	for (size_t i = 0; i < t->py_status.n; i++) {
		const struct py_status_rec *s = &t->py_status.v[i];

		if (s->pid != pid && s->code == GW_PY_OK && s->samples &&
		    (!best || s->samples > best->samples))
			best = s;
	}
	return best;
}

/* A job that ended this soon after it was first seen may have been read
 * only before its exec (the stack reader looks again within about a
 * second) */
#define SHORT_JOB_NS 2000000000ull

/* 1 if a command line's program (its first word) is named as a Python
 * interpreter is (python, python3, /usr/bin/python3.12...). */
static int runs_python(const char *cmdline)
{
	char prog[256];
	const char *slash;
	size_t n;

	if (!cmdline)
		return 0;
	n = strcspn(cmdline, " ");
	snprintf(prog, sizeof(prog), "%.*s", (int)(n < sizeof(prog) ? n : sizeof(prog) - 1), cmdline);
	slash = strrchr(prog, '/');
	return gw_is_python_name(slash ? slash + 1 : prog);
}

/* The note for a process the sampler could not read (s): never blame a
 * launcher for the interpreter it started. If another process of the tree
 * was read, say which; if this pid later ran Python (its libraries say so),
 * it was read while it still ran the launcher. */
static void note_unread(struct analysis *a, uint32_t pid, const struct py_status_rec *s)
{
	const struct trace *t = a->t;
	const struct py_status_rec *other = s->code == GW_PY_NOT_PYTHON ? sampled_other(t, pid) : NULL;
	const struct proc_info *p = trace_proc(t, pid);

	if (other) { /* its detail: "Python 3.11.7, /path/to/python3.11" */
		snprintf(a->py_note, sizeof(a->py_note),
			 "Python stacks from pid %u (%s; %llu samples); pid %u, the command gpuwhy started, "
			 "runs no Python itself (a launcher such as a pyenv shim)",
			 other->pid, other->detail && *other->detail ? other->detail : "Python",
			 (unsigned long long)other->samples, pid);
		return;
	}
	/* a short job: read once, just after its fork and before its exec
	 * made it the interpreter its command line names, and ended before the
	 * next read */
	if (s->code == GW_PY_NOT_PYTHON && p && !p->python[0] && runs_python(p->cmdline) && p->exit_ts &&
	    p->exit_ts > p->first_ts && p->exit_ts - p->first_ts < SHORT_JOB_NS) {
		snprintf(a->py_note, sizeof(a->py_note),
			 "no Python stacks for pid %u: the stack reader looked at it before it started Python, "
			 "and it ended before the next look (a job this short has too little to sample)",
			 pid);
		return;
	}
	if (s->code == GW_PY_NOT_PYTHON && p && p->python[0]) {
		snprintf(a->py_note, sizeof(a->py_note),
			 "no Python stacks for pid %u: the sampler read it while it still ran a launcher "
			 "(not Python); the Python %s it exec'd ended before the next read",
			 pid, p->python);
		return;
	}
	snprintf(a->py_note, sizeof(a->py_note), "no Python stacks for pid %u: %s", pid,
		 s->detail && *s->detail ? s->detail : "the stack reader could not read it");
}

static void note(struct analysis *a)
{
	const struct trace *t = a->t;
	const char *rec = trace_meta(t, "record.py");
	uint32_t pid = a->main_pid;

	a->py_note[0] = 0;
	if (!rec && !t->py_status.n && !t->py_samples)
		return; /* a recording made before stacks existed: nothing to say */
	if (rec && !strcmp(rec, "off")) {
		snprintf(a->py_note, sizeof(a->py_note),
			 "no Python stacks: recorded with --no-py (code sites need them)");
		return;
	}
	if (rec && strcmp(rec, "sampled") != 0) {
		snprintf(a->py_note, sizeof(a->py_note), "no Python stacks: %s", rec);
		return;
	}
	if (!pid)
		for (size_t i = 0; i < t->procs.n; i++)
			if (t->procs.v[i].is_target)
				pid = t->procs.v[i].pid;
	const struct py_status_rec *s = status_of(t, pid);

	if (s && s->code != GW_PY_OK) {
		note_unread(a, pid, s);
		return;
	}
	if (a->py_site_tid && a->py_site_tid != a->main_tid) {
		snprintf(a->py_note, sizeof(a->py_note),
			 "code sites from Python thread %u of pid %u: the CUDA calls came from thread %u, "
			 "which ran no Python (a runtime's own thread)", a->py_site_tid, a->main_pid, a->main_tid);
		return;
	}
	if (a->main_pid && !a->py_thread_samples && !a->api_calls_sited)
		snprintf(a->py_note, sizeof(a->py_note),
			 "no Python stacks of the training thread (pid %u, thread %u)%s", a->main_pid,
			 a->main_tid, t->py_samples ? ": other threads were sampled" : "");
}

void sites_attach(struct analysis *a)
{
	double exact_total = 0;

	if (a->main_pid && a->t->nops) {
		const struct py_thread *drive = driving_thread(a);

		if (!a->py_thread_samples && drive) {
			a->py_thread_samples = drive->n;
			a->py_site_tid = drive->tid;
		}
		exact_total = exact_sites(a);
		for (size_t i = 0; i < a->findings.n; i++)
			attach(a, &a->findings.v[i], exact_total);
	}
	note(a);
}
