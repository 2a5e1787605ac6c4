// Shared CLI and JSON line for the corpus's CUDA C scenarios: the same options
// and last line as cc.py (--fix, --seconds S, --warmup N, --device, --smoke).
#pragma once
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

struct Args { bool fix = false; double seconds = 2.0; int warmup = 3; bool smoke = false; };

static Args parse_args(int argc, char **argv) {
  Args a;
  if (const char *s = getenv("GW_SECONDS")) a.seconds = atof(s);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--fix")) a.fix = true;
    else if (!strcmp(argv[i], "--smoke")) a.smoke = true;
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) a.seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) a.warmup = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
      if (strcmp(argv[++i], "cuda")) { fprintf(stderr, "%s: CUDA C runs on the GPU only\n", argv[0]); exit(2); }
    } else { fprintf(stderr, "usage: %s [--fix] [--seconds S] [--warmup N]\n", argv[0]); exit(2); }
  }
  return a;
}

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs step(i) for the warm-up, then for a.seconds; prints the JSON line.
template <class F> static void run(const char *name, const Args &a, F step, double samples_per_step) {
  for (int i = 0; i < a.warmup; i++) step(i);
  CK(cudaDeviceSynchronize());
  double t0 = now_s();
  long n = 0;
  while (now_s() - t0 < a.seconds) { step(a.warmup + (int)n); n++; }
  CK(cudaDeviceSynchronize());
  double dt = now_s() - t0;
  printf("{\"scenario\": \"%s\", \"fix\": %s, \"steps\": %ld, \"iterations_total\": %ld, \"steady_steps\": %ld, "
         "\"warmup_steps\": %d, \"seconds\": %.4f, \"step_ms\": %.4f, \"samples_per_s\": %.2f}\n",
         name, a.fix ? "true" : "false", a.warmup + n, a.warmup + n, n, a.warmup, dt, dt / (n ? n : 1) * 1e3,
         n * samples_per_step / dt);
  fflush(stdout);
}
