// healthy (CUDA C): a streaming pipeline done right: pinned host chunks, three streams, each
// chunk's host-to-device copy, compute kernel and small result copy queued asynchronously
// on its stream, so copies overlap compute and the GPU never waits for the host.
// --fix changes nothing: this is a control.
#include "cudac.h"

__global__ void transform(const float *in, float *partial, int n, int iters) {
  __shared__ float acc[256];
  float s = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float x = in[i];
    for (int k = 0; k < iters; k++) x = fmaf(x, 0.999f, 0.001f) * (1.0f + 1e-7f * x);  // compute-heavy
    s += x;
  }
  acc[threadIdx.x] = s;
  __syncthreads();
  for (int w = 128; w > 0; w >>= 1) {
    if (threadIdx.x < w) acc[threadIdx.x] += acc[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = acc[0];
}

int main(int argc, char **argv) {
  Args a = parse_args(argc, argv);
  const int n = a.smoke ? 1 << 16 : 4 << 20, nstreams = 3, blocks = 1024, iters = 2000;
  float *host[nstreams], *hres[nstreams], *dev[nstreams], *dres[nstreams];
  cudaStream_t st[nstreams];
  for (int k = 0; k < nstreams; k++) {
    CK(cudaMallocHost(&host[k], n * sizeof(float)));
    CK(cudaMallocHost(&hres[k], blocks * sizeof(float)));
    memset(hres[k], 0, blocks * sizeof(float));
    CK(cudaMalloc(&dev[k], n * sizeof(float)));
    CK(cudaMalloc(&dres[k], blocks * sizeof(float)));
    CK(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking));
    for (int i = 0; i < n; i++) host[k][i] = (float)((i * 2654435761u + k) % 1000) * 1e-3f;
  }
  double total = 0;
  auto step = [&](int i) {
    int k = i % nstreams;
    // the chunk's buffers are reused every third step: wait for that chunk only (the other
    // streams keep the GPU busy meanwhile)
    CK(cudaStreamSynchronize(st[k]));
    total += hres[k][0];
    CK(cudaMemcpyAsync(dev[k], host[k], n * sizeof(float), cudaMemcpyHostToDevice, st[k]));
    transform<<<blocks, 256, 0, st[k]>>>(dev[k], dres[k], n, iters);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(hres[k], dres[k], blocks * sizeof(float), cudaMemcpyDeviceToHost, st[k]));
  };
  run("h_cuda_stream", a, step, 1);
  return total == 12345.678 ? 3 : 0;  // keeps the result live
}
