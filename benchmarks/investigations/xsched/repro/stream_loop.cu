// The smallest program we use to look for XSched 1.2's SIGSEGV: a created stream, a
// tiny kernel launched N times per iteration, a stream synchronize per iteration, for
// SECONDS; prints "done ITERS" before main returns, so a crash after that line is a
// crash while the process exits. Build: nvcc -O2 -arch=sm_90 -o stream_loop stream_loop.cu
// Run under the shim: LD_LIBRARY_PATH=ROOT/lib XSCHED_SCHEDULER=GLB XSCHED_AUTO_XQUEUE=ON ...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void axpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    int n = 1 << 16;
    float *x, *y;
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess) { fprintf(stderr, "stream create failed\n"); return 2; }
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemsetAsync(x, 0, n * sizeof(float), s);
    cudaMemsetAsync(y, 0, n * sizeof(float), s);
    auto t0 = std::chrono::steady_clock::now();
    long iters = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
        for (int k = 0; k < 8; ++k) axpy<<<(n + 255) / 256, 256, 0, s>>>(y, x, 1.0f, n);
        cudaError_t e = cudaStreamSynchronize(s);
        if (e != cudaSuccess) { fprintf(stderr, "sync failed: %s\n", cudaGetErrorString(e)); return 3; }
        ++iters;
    }
    cudaFree(x);
    cudaFree(y);
    cudaStreamDestroy(s);
    printf("done %ld\n", iters);
    fflush(stdout);
    return 0;
}
