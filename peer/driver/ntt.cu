// sppark's NTT over BLS12-381's Fr: forward, natural order in and out, on
// data already on the device. NTT::Base_dev_ptr is the entry point that
// leaves the data where it is; NTT::Base would add a copy each way.
#include <cuda.h>
#include <cuda_runtime.h>

#include <exception>

#include <ff/bls12-381.hpp>
#include <ntt/ntt.cuh>

#include "driver.h"

#ifndef __CUDA_ARCH__
static_assert(sizeof(fr_t) == kFrBytes, "fr_t is not gnark-crypto's fr.Element");
#endif

static std::string cuda_call(cudaError_t rc, const char* what)
{
    if (rc == cudaSuccess)
        return "";
    return std::string(what) + ": " + cudaGetErrorString(rc);
}

// transform runs one forward NTT on sppark's default stream of the GPU.
static void transform(const gpu_t& gpu, fr_t* d, uint32_t lg)
{
    NTT::Base_dev_ptr(gpu, d, lg, NTT::InputOutputOrder::NN,
                      NTT::Direction::forward, NTT::Type::standard);
}

// ntt_forward: a warm-up run on the input (its output goes back to the
// caller to be checked; it also builds sppark's twiddle tables), then timed
// runs that transform the previous output in place, each between two CUDA
// events on the stream the NTT runs on.
std::string ntt_forward(NTTRun& run)
{
    size_t n = (size_t)1 << run.lg;
    size_t bytes = n * sizeof(fr_t);
    fr_t* d = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    std::string err;
    try {
        const gpu_t& gpu = select_gpu(0);
        err = cuda_call(cudaMalloc(&d, bytes), "cudaMalloc data");
        if (err.empty())
            err = cuda_call(cudaMemcpy(d, run.data, bytes, cudaMemcpyHostToDevice), "copy data to the device");
        if (err.empty())
            err = cuda_call(cudaEventCreate(&e0), "cudaEventCreate");
        if (err.empty())
            err = cuda_call(cudaEventCreate(&e1), "cudaEventCreate");
        if (err.empty()) {
            transform(gpu, d, run.lg);
            gpu.sync();
            err = cuda_call(cudaMemcpy(run.data, d, bytes, cudaMemcpyDeviceToHost), "copy the warm-up output to the host");
        }
        cudaStream_t s = gpu;
        for (int i = 0; err.empty() && i < run.runs; i++) {
            err = cuda_call(cudaEventRecord(e0, s), "cudaEventRecord");
            if (!err.empty())
                break;
            transform(gpu, d, run.lg);
            err = cuda_call(cudaEventRecord(e1, s), "cudaEventRecord");
            if (err.empty())
                err = cuda_call(cudaEventSynchronize(e1), "cudaEventSynchronize");
            float ms = 0;
            if (err.empty())
                err = cuda_call(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
            if (err.empty())
                run.ms.push_back(ms);
        }
    } catch (const cuda_error& e) {
        err = std::string("CUDA error ") + std::to_string(e.code()) + ": " + e.what();
    } catch (const std::exception& e) {
        err = std::string("exception: ") + e.what();
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (d) cudaFree(d);
    if (!err.empty())
        return "NTT 2^" + std::to_string(run.lg) + ": " + err;
    return "";
}
