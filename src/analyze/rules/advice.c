/* Every rule's fix, in the words of the framework the program uses: one
 * table, looked up by (advice, framework). A missing entry falls back to the
 * framework-neutral wording (FW_UNKNOWN), so a framework gets its own text
 * only where it has its own way to do it. Each text names only what exists
 * in that framework. */
#include "rule.h"

#define T(fw, text) [fw] = text

static const char *const table[ADV_N][FW_NFRAMEWORKS] = {
	[ADV_C1_MAIN_THREAD] = {
		T(FW_UNKNOWN, "Prepare batches in parallel worker processes or threads ahead of the "
			      "training loop (prefetch several batches), move augmentation to the GPU, "
			      "and, for images, use a faster decoder."),
		T(FW_TORCH, "Load data in worker processes: DataLoader(num_workers=N) with N up to the "
			    "free cores. Use DataLoader(..., pin_memory=True, prefetch_factor=4, "
			    "persistent_workers=True); move augmentation onto the GPU "
			    "(torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI); for images, a fast "
			    "decoder (libjpeg-turbo / torchvision.io.decode_jpeg on the GPU)."),
		T(FW_JAX, "Build batches off the training thread: a Grain DataLoader (worker_count=N) or a "
			  "tf.data pipeline (map(..., num_parallel_calls=tf.data.AUTOTUNE) and "
			  ".prefetch(tf.data.AUTOTUNE)); put the next batches on the GPU from a background "
			  "thread with jax.device_put (a small queue of device arrays) so their copy "
			  "overlaps the running step; move augmentation into the jitted step."),
		T(FW_CUPY, "Prepare batches in worker processes or threads ahead of the loop (a queue of "
			   "ready batches); copy them from pinned host buffers (cupyx.empty_pinned) with "
			   "ndarray.set(host, stream=s) on a non-default cupy.cuda.Stream so the copy "
			   "overlaps compute; decode and augment on the GPU where you can."),
		T(FW_TF, "Feed the model from tf.data: map(..., num_parallel_calls=tf.data.AUTOTUNE), "
			 "interleave the file reads, end with .prefetch(tf.data.AUTOTUNE), .cache() what "
			 "fits in memory; pass the tf.data.Dataset to model.fit instead of a Python "
			 "generator."),
		T(FW_CUDA_C, "Prepare the next batches on other CPU threads while the GPU computes (a "
			     "producer-consumer queue) and copy them with cudaMemcpyAsync from pinned "
			     "buffers (cudaMallocHost) on a separate stream, so preparation, copies and "
			     "kernels overlap; decode on the GPU (nvJPEG) where you can."),
	},
	[ADV_C1_WORKERS] = {
		T(FW_UNKNOWN, "Add input workers until the wait disappears, or make each sample cheaper; "
			      "prefetch several batches ahead, move augmentation to the GPU, and, for "
			      "images, use a faster decoder."),
		T(FW_TORCH, "Add loader workers (num_workers) until the wait disappears, or make each "
			    "sample cheaper. Use DataLoader(..., pin_memory=True, prefetch_factor=4, "
			    "persistent_workers=True); move augmentation onto the GPU "
			    "(torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI); for images, a fast "
			    "decoder (libjpeg-turbo / torchvision.io.decode_jpeg on the GPU)."),
		T(FW_JAX, "The input workers cannot keep up: raise the pipeline's parallelism (Grain "
			  "worker_count, tf.data num_parallel_calls=tf.data.AUTOTUNE) or make each sample "
			  "cheaper; prefetch several batches and put them on the GPU from a background "
			  "thread with jax.device_put; move augmentation into the jitted step."),
		T(FW_TF, "The input pipeline cannot keep up: num_parallel_calls=tf.data.AUTOTUNE in map "
			 "and interleave, .prefetch(tf.data.AUTOTUNE), .cache() what fits; find the slow "
			 "stage with the TensorBoard profiler's input-pipeline analyzer; make each sample "
			 "cheaper (decode once, store pre-processed)."),
		T(FW_CUDA_C, "Add producer threads (or make each sample cheaper) until the GPU no longer "
			     "waits; copy batches with cudaMemcpyAsync from pinned buffers "
			     "(cudaMallocHost) on a separate stream; decode on the GPU (nvJPEG) where "
			     "you can."),
	},
	[ADV_C1_HOST_WORK] = {
		T(FW_UNKNOWN, "Take this work off the thread that feeds the GPU: run it in a background "
			      "thread or process that hands results over a queue, do it every N steps "
			      "instead of every step, or vectorize it; if it prepares the next batch, "
			      "prepare batches ahead in loader workers."),
	},
	[ADV_C1_RESTART] = {
		T(FW_UNKNOWN, "Start the input workers once and keep them for the whole run instead of at "
			      "each epoch or pass over the data; make what each new worker receives small "
			      "(file paths or a memory-mapped array, not the data itself)."),
		T(FW_TORCH, "Keep the loader's workers between epochs: DataLoader(..., "
			    "persistent_workers=True) starts them once. Make what each worker is sent small "
			    "(with the forkserver or spawn start method the Dataset is pickled to every "
			    "worker: hold file paths or a memory-mapped numpy array, not the data)."),
	},
	[ADV_C1_PIPE] = {
		T(FW_UNKNOWN, "Do not send batches through a pipe: the thread that feeds the GPU copies "
			      "and unpickles each one itself, so more or faster producers do not help. "
			      "Pass them through shared memory (multiprocessing.shared_memory buffers "
			      "reused in a ring, the queue carrying only their index), or send less "
			      "(uint8 pixels instead of float32, normalized on the GPU)."),
		T(FW_TORCH, "Do not send batches through a pipe: the thread that feeds the GPU copies and "
			    "unpickles each one itself, so more or faster producers do not help. Send "
			    "torch tensors through torch.multiprocessing queues (their storage moves "
			    "through shared memory, only a handle is pickled), or produce the batches in "
			    "DataLoader workers, which do the same; send less (uint8 pixels instead of "
			    "float32, normalized on the GPU)."),
	},
	[ADV_C2_STORAGE] = {
		T(FW_UNKNOWN, "Read ahead of the GPU: more loader workers with prefetching; keep the data "
			      "set on local SSD/NVMe or in RAM (page cache warm-up, /dev/shm); store it in "
			      "large sequential shards (WebDataset, TFRecord, LMDB) or pre-decoded arrays "
			      "instead of many small files."),
	},
	[ADV_C3_BATCH] = {
		T(FW_UNKNOWN, "Raise the batch size (and scale the learning rate) until GPU utilization "
			      "stops rising or memory runs short; if the model is small, train several "
			      "models or sequences per batch; if the code loops over the batch's items "
			      "(one graph, sequence or sample at a time), run them together in one call "
			      "(concatenated, padded or as one disjoint graph). The gain shown is per "
			      "sample of throughput."),
	},
	[ADV_C4_LAUNCH] = {
		T(FW_UNKNOWN, "Capture the repeated launches in a CUDA graph, fuse small kernels into "
			      "larger ones, or give each kernel more work (larger batches)."),
		T(FW_TORCH, "Capture the step in a CUDA graph (torch.cuda.CUDAGraph / "
			    "torch.compile(mode=\"reduce-overhead\")), or fuse the small ops with "
			    "torch.compile; use foreach/fused optimizers; raise the batch size so each "
			    "kernel does more work."),
		T(FW_JAX, "jax.jit the whole training step (forward, backward and optimizer update in one "
			  "jitted function) so XLA fuses it into few kernels, instead of jitting small "
			  "pieces or running ops eagerly; run several steps per call with jax.lax.scan "
			  "where the input allows; raise the batch size so each kernel does more work."),
		T(FW_CUPY, "Fuse elementwise chains into one kernel (cupy.fuse, cupy.ElementwiseKernel, "
			   "cupy.RawKernel) and capture the repeated launch sequence in a CUDA graph "
			   "(stream capture: cupy.cuda.Stream.begin_capture() / end_capture() gives a "
			   "cupy.cuda.Graph to launch()); give each kernel more work (larger batches)."),
		T(FW_TF, "Compile the step with XLA: tf.function(jit_compile=True) (Keras: "
			 "model.compile(jit_compile=True)) fuses ops into fewer kernels; run several "
			 "steps per call (Keras steps_per_execution); raise the batch size."),
		T(FW_CUDA_C, "Capture the repeated launch sequence in a CUDA graph "
			     "(cudaStreamBeginCapture / cudaStreamEndCapture, cudaGraphInstantiate, "
			     "cudaGraphLaunch), fuse small kernels into larger ones, and give each kernel "
			     "more work (larger batches)."),
	},
	[ADV_C5_BLOCKING] = {
		T(FW_UNKNOWN, "Unset CUDA_LAUNCH_BLOCKING (it is a debugging aid); check shell profiles, "
			      "job scripts and launchers that export it."),
	},
	[ADV_C6_PAGEABLE] = {
		T(FW_UNKNOWN, "Copy from pinned (page-locked) host memory and asynchronously, so copies "
			      "run at full speed and overlap compute (cudaMallocHost / cudaHostRegister "
			      "and cudaMemcpyAsync underneath)."),
		T(FW_TORCH, "Allocate host tensors in pinned memory (DataLoader(pin_memory=True) or "
			    "tensor.pin_memory()) and copy with .to(device, non_blocking=True); for copies "
			    "the GPU waits for, issue them on a side torch.cuda.Stream a batch or a layer "
			    "ahead (an event before use) so they overlap compute."),
		T(FW_JAX, "Overlap the copies with compute: call jax.device_put on the next batches from a "
			  "background thread (a small queue of device arrays) so their transfer runs while "
			  "the current step computes; keep each batch in one contiguous NumPy array."),
		T(FW_CUPY, "Allocate host buffers with cupyx.empty_pinned (or cupyx.zeros_pinned) and copy "
			   "with ndarray.set(host, stream=s) on a non-default cupy.cuda.Stream so the copy "
			   "overlaps compute."),
		T(FW_TF, "Let tf.data put batches on the GPU ahead of the step: end the pipeline with "
			 "tf.data.experimental.prefetch_to_device(\"/gpu:0\") (or .prefetch(tf.data.AUTOTUNE)) "
			 "so host-to-device copies overlap compute."),
		T(FW_CUDA_C, "Allocate host buffers with cudaMallocHost / cudaHostRegister and copy with "
			     "cudaMemcpyAsync on a separate stream to overlap compute."),
	},
	[ADV_C7_OVERSUB] = {
		T(FW_UNKNOWN, "Bound the thread pools to the cores the job may use: OMP_NUM_THREADS, "
			      "MKL_NUM_THREADS / OPENBLAS_NUM_THREADS per process (1 inside worker "
			      "processes), the framework's own intra-op thread settings, and no more "
			      "worker processes than free cores."),
		T(FW_TORCH, "Bound the thread pools to the cores: torch.set_num_threads(cores / processes), "
			    "OMP_NUM_THREADS and MKL_NUM_THREADS per process (1 inside data-loader workers), "
			    "and no more loader workers than free cores."),
		T(FW_JAX, "Bound the CPU work to the cores the job may use: NumPy's BLAS threads "
			  "(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS / MKL_NUM_THREADS per process, 1 inside "
			  "input workers), no more input workers (Grain worker_count) than free cores, and "
			  "a bounded tf.data thread pool (options.threading.private_threadpool_size) if "
			  "tf.data feeds the job."),
		T(FW_CUPY, "Bound the CPU thread pools to the cores: OMP_NUM_THREADS and MKL_NUM_THREADS / "
			   "OPENBLAS_NUM_THREADS for NumPy per process (1 inside worker processes), and no "
			   "more worker processes or threads than free cores."),
		T(FW_TF, "Bound TensorFlow's thread pools to the cores per process: "
			 "tf.config.threading.set_intra_op_parallelism_threads and "
			 "set_inter_op_parallelism_threads, tf.data's "
			 "options.threading.private_threadpool_size, OMP_NUM_THREADS; no more input "
			 "workers than free cores."),
		T(FW_CUDA_C, "Size the program's CPU threads to the cores it may use: OpenMP "
			     "(OMP_NUM_THREADS), BLAS and worker pools per process, no more runnable "
			     "threads than cores; check that other jobs do not share those cores "
			     "(taskset, cgroups)."),
	},
	[ADV_C8_PRECISION] = {
		T(FW_UNKNOWN, "Run matrix multiplications in bf16/fp16 (mixed precision) or TF32 so they "
			      "use tensor cores."),
		T(FW_TORCH, "Wrap the forward pass and loss in torch.autocast(\"cuda\", dtype=torch.bfloat16) "
			    "(bf16 needs no GradScaler; for fp16 add torch.amp.GradScaler); at least allow "
			    "TF32: " TF32_SETTING_TORCH "."),
		T(FW_JAX, "Run the matrix work in bf16: keep parameters in float32 and compute in "
			  "jnp.bfloat16 (Flax layers take dtype=jnp.bfloat16, param_dtype=jnp.float32), or "
			  "at least allow TF32 for float32 matmuls: "
			  TF32_SETTING_JAX " or precision= on jnp.dot / "
			  "jnp.matmul."),
		T(FW_CUPY, "Run matrix products on tensor cores: float16 inputs to cupy.matmul / cuBLAS "
			   "where accuracy allows, or TF32 for float32 with the environment variable "
			   TF32_SETTING_CUPY " (Ampere and newer)."),
		T(FW_TF, "Enable mixed precision: tf.keras.mixed_precision.set_global_policy("
			 "\"mixed_bfloat16\") (or \"mixed_float16\", with loss scaling, which Keras "
			 "model.fit adds); keep TF32 on (it is, unless "
			 "tf.config.experimental.enable_tensor_float_32_execution(False) turned it off)."),
		T(FW_CUDA_C, "Use tensor cores: cublasGemmEx / cublasLt with bf16 or fp16 inputs and FP32 "
			     "accumulation, or TF32 for FP32 data (cublasSetMathMode(handle, "
			     "CUBLAS_TF32_TENSOR_OP_MATH) or CUBLAS_COMPUTE_32F_FAST_TF32); WMMA/MMA in "
			     "hand-written kernels."),
	},
	[ADV_C9_POST] = {
		T(FW_UNKNOWN, "Process the results where they are: on the GPU (a top-k, a sort, an argmax "
			      "there), copying only the small answer; copy it asynchronously into pinned "
			      "memory and read it one step later (after an event) or in a background "
			      "thread, so the next step runs on the GPU while the host works."),
		T(FW_TORCH, "Process the results on the GPU (torch.topk, torch.sort, torch.argmax, "
			    "torchmetrics) and copy only the small answer: into a pinned tensor with "
			    "copy_(x, non_blocking=True), read one step later after a torch.cuda.Event, or "
			    "handed to a background thread; .cpu().numpy() every step waits for the GPU and "
			    "then leaves it idle while numpy works."),
		T(FW_JAX, "Process the results inside the jitted step (jax.lax.top_k, jnp.argsort) and "
			  "fetch only the small answer, one step later (jax.device_get of the previous "
			  "step's output) or from a background thread. A host callback in the step "
			  "(jax.pure_callback, io_callback, jax.debug.print or jax.debug.callback) stops "
			  "the GPU until it returns: write its work in jnp and lax (a neighbour search as "
			  "distances and jax.lax.top_k), return what it prints from the step and print "
			  "it every N steps, or run it outside the step on the previous step's values."),
		T(FW_CUPY, "Process the results on the GPU (cupy.argpartition, cupy.sort) and copy only "
			   "the answer, into pinned memory on a non-default stream, read after a "
			   "cupy.cuda.Event one step later."),
	},
	/* the FP32 data's matrix work runs as TF32 already: allowing TF32 is
	 * no remedy, bf16 is */
	[ADV_C8_FROM_TF32] = {
		T(FW_UNKNOWN, "Run matrix multiplications in bf16/fp16 (mixed precision): TF32, already "
			      "on, runs on the tensor cores at half their bf16 rate."),
		T(FW_TORCH, "Wrap the forward pass and loss in torch.autocast(\"cuda\", dtype=torch.bfloat16) "
			    "(bf16 needs no GradScaler; for fp16 add torch.amp.GradScaler): TF32, already on, "
			    "runs at half the tensor cores' bf16 rate."),
		T(FW_JAX, "Run the matrix work in bf16: keep parameters in float32 and compute in "
			  "jnp.bfloat16 (Flax layers take dtype=jnp.bfloat16, param_dtype=jnp.float32): TF32, "
			  "already on, runs at half the tensor cores' bf16 rate."),
		T(FW_CUPY, "Run matrix products on 16-bit inputs (float16 to cupy.matmul / cuBLAS) where "
			   "accuracy allows: TF32, already on, runs at half the tensor cores' 16-bit rate."),
		T(FW_TF, "Enable mixed precision: tf.keras.mixed_precision.set_global_policy("
			 "\"mixed_bfloat16\") (or \"mixed_float16\", with loss scaling, which Keras "
			 "model.fit adds): TF32, already on, runs at half the tensor cores' bf16 rate."),
		T(FW_CUDA_C, "Use 16-bit inputs: cublasGemmEx / cublasLt with bf16 or fp16 inputs and FP32 "
			     "accumulation; TF32, already on, runs at half their rate."),
	},
	[ADV_C9_SYNC] = {
		T(FW_UNKNOWN, "Remove per-step synchronizations (reading a GPU value on the host, explicit "
			      "synchronize calls): read results every N steps and copy them "
			      "asynchronously."),
		T(FW_TORCH, "Keep values on the GPU: accumulate losses/metrics as tensors and call .item() "
			    "or print every N steps; avoid Python control flow on GPU values; use "
			    "non_blocking=True copies; do not call torch.cuda.empty_cache() or "
			    "torch.cuda.synchronize() every step; find the call sites with "
			    "torch.cuda.set_sync_debug_mode(\"warn\")."),
		T(FW_JAX, "Keep values on the device: no float(x), x.item(), np.asarray(x) or "
			  ".block_until_ready() on a step's results inside the loop; accumulate metrics "
			  "as device arrays and fetch them every N steps (jax.device_get), so JAX's "
			  "asynchronous dispatch runs ahead of the GPU."),
		T(FW_CUPY, "Avoid per-step host reads: float(x), x.item(), x.get() / cupy.asnumpy() and "
			   "Stream.synchronize() wait for the GPU; keep results on the GPU and read them "
			   "every N steps, or copy them into pinned memory on a non-default stream and "
			   "wait on a cupy.cuda.Event later."),
		T(FW_TF, "Avoid reading tensors on the host each step: .numpy(), float(t), print(t) and "
			 "Python conditions on tensors wait for the GPU; keep the loop inside a "
			 "tf.function and log every N steps."),
		T(FW_CUDA_C, "Remove per-step synchronizations (cudaStreamSynchronize, blocking "
			     "device-to-host copies): read results every N steps, use events and async "
			     "copies."),
	},
	[ADV_C10_SERIAL] = {
		T(FW_UNKNOWN, "Where the loop's iterations are independent (per sample, per item), do "
			      "them as one batched operation; for a recurrent cell use a fused kernel "
			      "over the whole sequence (cuDNN RNN); or capture the loop in a CUDA graph."),
		T(FW_TORCH, "Where the loop's iterations are independent (a per-sample loss or metric), "
			    "compute them on the whole batch at once; replace a per-time-step cell loop "
			    "with a fused layer (torch.nn.LSTM / nn.GRU use cuDNN over the whole "
			    "sequence); or capture the loop in a CUDA graph / torch.compile it; larger "
			    "hidden sizes and batches fill the GPU better."),
		T(FW_JAX, "Where the loop's iterations are independent, jax.vmap them into one batched "
			  "operation; write a time loop as jax.lax.scan inside jax.jit rather than a "
			  "Python loop, so XLA compiles the cell once and fuses it; larger hidden sizes "
			  "and batches fill the GPU better."),
		T(FW_CUPY, "Fuse the per-time-step cell into one kernel (cupy.RawKernel / "
			   "ElementwiseKernel), or capture the time loop in a CUDA graph "
			   "(cupy.cuda.Stream.begin_capture); larger batches fill the GPU better."),
		T(FW_TF, "Use tf.keras.layers.LSTM / GRU with their default activations (they then run the "
			 "fused cuDNN kernel over the whole sequence) instead of a loop over time steps, "
			 "or compile the loop with tf.function(jit_compile=True)."),
	},
	[ADV_C11_FUSION] = {
		T(FW_UNKNOWN, "Fuse consecutive elementwise operations into one kernel (your framework's "
			      "compiler, or a hand-written kernel) so the data crosses DRAM once."),
		T(FW_TORCH, "Fuse the chains: torch.compile the function (Inductor generates one kernel "
			    "per chain), or write a fused kernel (Triton); use in-place ops and "
			    "channels_last for convolutions."),
		T(FW_JAX, "jax.jit the whole function that holds the chain (XLA fuses elementwise ops "
			  "inside one jitted computation) instead of running them eagerly or in separate "
			  "jitted pieces; for what XLA leaves unfused, a Pallas kernel."),
		T(FW_CUPY, "Fuse the chains: decorate the function with @cupy.fuse(), or write one "
			   "cupy.ElementwiseKernel / ReductionKernel (or RawKernel) for the chain, so the "
			   "data crosses DRAM once."),
		T(FW_TF, "Compile the function with XLA: tf.function(jit_compile=True) fuses elementwise "
			 "ops into fewer kernels, so the data crosses DRAM once."),
		T(FW_CUDA_C, "Fuse consecutive elementwise kernels into one (or into the producing GEMM's "
			     "epilogue with cuBLASLt / CUTLASS), so the data crosses DRAM once."),
	},
	[ADV_C12_PLACEMENT] = {
		T(FW_UNKNOWN, "Bind the job to the GPU's NUMA node (numactl --cpunodebind=N --membind=N, "
			      "or taskset with the GPU-local CPUs); reseat the card or move it to a full "
			      "x16 slot of the right generation; check BIOS PCIe settings."),
	},
	[ADV_C12_COPIES] = {
		T(FW_UNKNOWN, "Copy contiguous memory: store the data in the layout it is copied in (the "
			      "selected columns or features together), gather it on the host into one "
			      "pinned buffer and copy that, or copy whole rows and select on the GPU; "
			      "replace many small or 2D copies (cudaMemcpy2DAsync of short rows) with one "
			      "large cudaMemcpyAsync."),
		T(FW_TORCH, "Copy contiguous tensors: make the host tensor contiguous in pinned memory "
			    "before the copy (x[:, cols].contiguous().pin_memory(), or a pinned buffer "
			    "filled with torch.index_select(..., out=buf)), or copy the whole rows and "
			    "select on the GPU; one large .to(device, non_blocking=True) rather than many "
			    "small ones."),
		T(FW_CUPY, "Copy contiguous memory: store the table in the layout it is read in (the "
			   "selected features together), or gather them on the host into one pinned buffer "
			   "(cupyx.empty_pinned) and copy it with one ndarray.set()/cudaMemcpyAsync; avoid "
			   "cupy.cuda.runtime.memcpy2DAsync of short rows."),
	},
	[ADV_C13_POWER] = {
		T(FW_UNKNOWN, "Check cooling and airflow (nvidia-smi -q -d TEMPERATURE,PERFORMANCE); "
			      "restore the default power limit (nvidia-smi -pl, needs root); ask the "
			      "cluster admins about power capping. gpuwhy never changes these settings."),
	},
	[ADV_C14_PERIODIC] = {
		/* long steps whose stacks show neither a checkpoint nor an
		 * evaluation: the sites name what they run */
		T(FW_UNKNOWN, "Do the work of the long steps (validation, a checkpoint, garbage "
			      "collection, cache clearing, logging: the sites, where listed, name its lines) "
			      "less often, on a subset, outside the loop, or in a separate thread or process "
			      "that works while training continues; keep metrics on the GPU and read them once "
			      "per evaluation."),
		T(FW_TORCH, "Do the work of the long steps (validation, a checkpoint, gc.collect(), "
			    "torch.cuda.empty_cache(), logging: the sites, where listed, name its lines) less "
			    "often, on a subset, outside the loop, or asynchronously (a separate thread or "
			    "process, torch.distributed.checkpoint.async_save); keep validation metrics on the "
			    "GPU instead of calling .item() per batch."),
		T(FW_JAX, "Do the work of the long steps (validation, a checkpoint, logging: the sites, "
			  "where listed, name its lines) less often, on a subset, outside the loop, or "
			  "asynchronously (Orbax's "
			  "CheckpointManager / AsyncCheckpointer save in a background thread); keep "
			  "validation metrics as device arrays and fetch them once per evaluation."),
		T(FW_TF, "Do the work of the long steps (the sites, where listed, name it) less often: "
			 "validate less often (Keras validation_freq) or on a subset (validation_steps), "
			 "checkpoint less often; "
			 "keep validation metrics in Keras metrics (on the device) rather than reading them "
			 "per batch."),
	},
	[ADV_C14_WRITES] = {
		T(FW_UNKNOWN, "Write checkpoints less often or from a background thread or process (copy "
			      "the state to host memory, then write it while training continues); do not "
			      "force writeback (os.sync(), fsync) in the loop; write to fast local storage "
			      "and copy to slow or network storage afterwards."),
		T(FW_TORCH, "Write checkpoints less often or off the training thread "
			    "(torch.distributed.checkpoint.async_save, or copy the state_dict to CPU and "
			    "torch.save it from a background thread); do not call os.sync() / fsync in the "
			    "loop; write to fast local storage and copy to slow or network storage "
			    "afterwards."),
		T(FW_JAX, "Write checkpoints less often or asynchronously (Orbax's CheckpointManager / "
			  "AsyncCheckpointer write in a background thread); do not call os.sync() / fsync "
			  "in the loop; write to fast local storage and copy to slow or network storage "
			  "afterwards."),
	},
	[ADV_C14_OUTPUTS] = {
		T(FW_UNKNOWN, "Write samples, images and plots less often (every few hundred or thousand "
			      "steps, or with the evaluation), or hand them to a background process that "
			      "encodes and writes them; copy the tensors to the host asynchronously first."),
		T(FW_TORCH, "Write samples, images and plots less often (every few hundred or thousand "
			    "steps, or with the evaluation), or hand them to a background process "
			    "(multiprocessing) that encodes and writes them: copy the tensors with "
			    ".to('cpu', non_blocking=True) into pinned memory after the step, then queue "
			    "the arrays to it."),
	},
	[ADV_C14_SNAPSHOT] = {
		T(FW_UNKNOWN, "Copy the state to the host without stopping training: into pinned host "
			      "buffers allocated once, with asynchronous copies on a second stream that "
			      "start after the update, waiting for them (an event) only before the next "
			      "update changes the weights; or take the snapshot less often, or keep it in "
			      "GPU memory where there is room."),
		T(FW_TORCH, "Copy the state to the host without stopping training: into pinned buffers "
			    "allocated once (torch.empty(..., pin_memory=True)), with "
			    "buf.copy_(t, non_blocking=True) under torch.cuda.stream(side) after "
			    "side.wait_stream(torch.cuda.current_stream()), and make the next "
			    "optimizer step wait for an event recorded after the copies; .cpu() and "
			    ".to('cpu') copy into pageable memory and wait for each tensor. Or take the "
			    "snapshot less often, or keep it on the GPU (a clone) where there is room."),
		T(FW_JAX, "Copy the state to the host without stopping training: jax.device_get of the "
			  "whole tree at once (one transfer, not one per leaf) from a background thread, "
			  "or Orbax's AsyncCheckpointer; or take the snapshot less often."),
	},
	[ADV_C14_STATS] = {
		T(FW_UNKNOWN, "Compute statistics of the weights and gradients less often (histograms of "
			      "every tensor every few hundred steps), or on the GPU, copying only the "
			      "results (a histogram, a norm, a mean); where they must run often, in a "
			      "background thread on a copy made asynchronously into pinned memory."),
		T(FW_TORCH, "Compute statistics of the weights and gradients less often (wandb.watch(..., "
			    "log_freq=N), SummaryWriter.add_histogram every N steps), or on the GPU: "
			    "torch.histc, torch.linalg.vector_norm, mean and std of each tensor, stacked "
			    "and copied once, instead of .cpu().numpy() of every tensor; where they must "
			    "run often, in a background thread on a copy made with non_blocking=True into "
			    "pinned memory."),
		T(FW_JAX, "Compute statistics of the parameters and gradients less often, or inside the "
			  "jitted step (jnp.histogram, norms), fetching only the results with "
			  "jax.device_get every N steps."),
	},
	[ADV_C14_EVAL] = {
		T(FW_UNKNOWN, "Evaluate less often (every N steps or once per epoch), on fewer batches, "
			      "or in a separate process or on another GPU; keep its metrics on the GPU "
			      "and read them once at the end of the pass."),
		T(FW_TORCH, "Evaluate less often (Lightning: val_check_interval / check_val_every_n_epoch "
			    "and limit_val_batches; transformers: eval_steps), on fewer batches, or in a "
			    "separate process on a saved checkpoint; run it under torch.inference_mode() "
			    "with a larger batch, and accumulate its metrics on the GPU (torchmetrics) "
			    "instead of calling .item() per batch."),
		T(FW_JAX, "Evaluate less often or on fewer batches, jit the evaluation step, and "
			  "accumulate its metrics on the device, reading them once at the end."),
	},
	[ADV_C15_COMM] = {
		T(FW_UNKNOWN, "Balance the work per rank (equal batch shards, sequence bucketing), look for "
			      "a slower GPU or host (clocks, NUMA, data loading on that rank), and overlap "
			      "communication with compute (bucketed, asynchronous collectives)."),
		T(FW_TORCH, "Balance the work per rank (equal batch shards, sequence bucketing), look for a "
			    "slower GPU or host (clocks, NUMA, data loading on that rank), and overlap "
			    "communication with compute (DDP bucket_cap_mb, FSDP prefetching)."),
		T(FW_JAX, "Balance the work per device (equal shards, sequence bucketing), look for a "
			  "slower GPU or host (clocks, NUMA, the input pipeline on that host), and jit the "
			  "whole step so XLA can schedule collectives alongside compute."),
	},
	[ADV_C15_HOST] = {
		T(FW_UNKNOWN, "Use a collective library that works on GPU memory (NCCL, or an MPI built "
			      "with CUDA support), one GPU per rank: its collectives run on the GPU and "
			      "overlap with compute, instead of a copy to host memory, a reduction on the "
			      "CPUs and a copy back for each one."),
		T(FW_TORCH, "Use the NCCL backend for CUDA tensors (torch.distributed.init_process_group("
			    "\"nccl\"), one GPU per rank): its all-reduces run on the GPU and overlap with "
			    "the backward pass, where gloo copies each gradient bucket to host memory, "
			    "reduces it over TCP and copies it back. Where gloo must stay, larger buckets "
			    "(DDP bucket_cap_mb) mean fewer round trips."),
		T(FW_JAX, "Run the collectives on the GPUs (one process per GPU with NCCL, the default of "
			  "jax.distributed on GPUs) rather than through host memory."),
	},
	[ADV_C16_WAIT] = {
		T(FW_UNKNOWN, "Do not sleep or poll on the thread that feeds the GPU: block on the queue, "
			      "event or condition that signals the work (queue.get(), Event.wait()) "
			      "instead of a time.sleep() loop; hold locks shared with other threads "
			      "(loggers, monitors) only briefly; move socket, RPC and subprocess waits "
			      "to a background thread that prefetches the next batch; if the thread "
			      "waits on a producer, make the producer faster or run several."),
	},
	/* the start-up finding (rules/startup.c): by the compiler, not the job's framework */
	[ADV_STARTUP_CACHE] = {
		T(FW_UNKNOWN, "Keep the compiler's output between runs: point its persistent cache at a "
			      "directory that outlives the job (not a fresh container's /tmp; where one is set "
			      "already, this was its first run), and compile fewer distinct programs (fixed "
			      "shapes, one compiled step)."),
		T(FW_JAX, "Keep XLA's compiled programs between runs: "
			  "jax.config.update(\"jax_compilation_cache_dir\", DIR) (or JAX_COMPILATION_CACHE_DIR) "
			  "on a disk that outlives the job, with jax_persistent_cache_min_compile_time_secs=0 "
			  "(by default programs that compile in under a second are not kept); where a cache "
			  "is set already, this was its first run, and the next one on the same disk starts "
			  "warm. Compile fewer distinct programs: fixed shapes and static arguments, one "
			  "jitted step rather than many eager operations."),
		T(FW_CUPY, "Keep CuPy's compiled kernels between runs: CuPy caches them in "
			   "~/.cupy/kernel_cache (CUPY_CACHE_DIR), which a fresh container or machine loses, "
			   "and this run compiled them anew: point CUPY_CACHE_DIR at a directory that "
			   "outlives the job, and build fewer distinct kernels (fixed dtypes and shapes for "
			   "ElementwiseKernel, RawKernel and cupy.fuse)."),
	},
};

const char *advice(enum advice what, enum framework fw)
{
	if ((unsigned)what >= ADV_N)
		return "";
	if ((unsigned)fw < FW_NFRAMEWORKS && table[what][fw])
		return table[what][fw];
	return table[what][FW_UNKNOWN];
}
