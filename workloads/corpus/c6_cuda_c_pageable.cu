// C6 pageable copies (CUDA C): a signal-processing loop whose 64 MB input blocks live in
// malloc'd (pageable) host memory and are copied with cudaMemcpy: each copy is staged by the
// driver through its own pinned buffer, slowly and synchronously, while the GPU waits.
// --fix: the blocks are allocated with cudaMallocHost and copied with cudaMemcpyAsync on two
// streams, one block ahead of the compute (double buffering).
#include "cudac.h"

// launched with 256 x 256 = 65536 threads: thread t only ever touches acc[t] (no race)
__global__ void normalize_accumulate(const float *x, float *acc, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    acc[i & 65535] += x[i] * x[i] * 1e-6f;
}

int main(int argc, char **argv) {
  Args a = parse_args(argc, argv);
  const int n = a.smoke ? 1 << 16 : 16 << 20, nblocks = 4;
  const size_t bytes = (size_t)n * sizeof(float);
  float *host[nblocks], *dev[2], *acc;
  for (int k = 0; k < nblocks; k++) {
    if (a.fix) CK(cudaMallocHost(&host[k], bytes));
    else host[k] = (float *)malloc(bytes);  // gpuwhy: plants C6 (pageable host memory)
    for (int i = 0; i < n; i++) host[k][i] = (float)((i + k) % 977) * 1e-3f;
  }
  for (int k = 0; k < 2; k++) CK(cudaMalloc(&dev[k], bytes));
  CK(cudaMalloc(&acc, 65536 * sizeof(float)));
  CK(cudaMemset(acc, 0, 65536 * sizeof(float)));
  cudaStream_t copy, comp;
  cudaEvent_t arrived[2], consumed[2];
  CK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  for (int k = 0; k < 2; k++) {
    CK(cudaEventCreateWithFlags(&arrived[k], cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&consumed[k], cudaEventDisableTiming));
  }
  auto upload = [&](int i) {
    CK(cudaStreamWaitEvent(copy, consumed[i % 2], 0));
    CK(cudaMemcpyAsync(dev[i % 2], host[i % nblocks], bytes, cudaMemcpyHostToDevice, copy));
    CK(cudaEventRecord(arrived[i % 2], copy));
  };
  if (a.fix) upload(0);
  auto step = [&](int i) {
    if (a.fix) {
      CK(cudaStreamWaitEvent(comp, arrived[i % 2], 0));
      normalize_accumulate<<<256, 256, 0, comp>>>(dev[i % 2], acc, n);
      CK(cudaEventRecord(consumed[i % 2], comp));
      upload(i + 1);
    } else {
      CK(cudaMemcpy(dev[0], host[i % nblocks], bytes, cudaMemcpyHostToDevice));
      normalize_accumulate<<<256, 256>>>(dev[0], acc, n);  // default stream, after the copy
    }
    CK(cudaGetLastError());
  };
  run("c6_cuda_c_pageable", a, step, 1);
  return 0;
}
