// sppark's Pippenger MSM for G1 and G2 of BLS12-381, with the points and the
// scalars resident on the device before the clock starts, as in cuzk's own
// `bench msm`. One unit holds both groups, as sppark's own
// poc/msm-cuda/cuda/pippenger_inf.cu does: its header instantiates its
// kernels for the typedefs below, and the G2 kernels are instantiated by use.
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <exception>

#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#include <msm/pippenger.cuh>

#include "driver.h"

typedef jacobian_t<fp2_t> point_fp2_t;
typedef xyzz_t<fp2_t> bucket_fp2_t;
typedef bucket_fp2_t::affine_t affine_fp2_t;

// The files cuzk writes are read as these host types without conversion.
// (Only the host types: on the device sppark's fp2_t holds one half of an
// element per thread.)
#ifndef __CUDA_ARCH__
static_assert(sizeof(scalar_t) == kFrBytes, "fr_t is not gnark-crypto's fr.Element");
static_assert(sizeof(affine_t) == kG1AffineBytes, "G1 affine_t is not gnark-crypto's G1Affine");
static_assert(sizeof(affine_fp2_t) == kG2AffineBytes, "G2 affine_t is not gnark-crypto's G2Affine");
static_assert(sizeof(point_t) == kG1JacBytes, "G1 jacobian_t is not gnark-crypto's G1Jac");
static_assert(sizeof(point_fp2_t) == kG2JacBytes, "G2 jacobian_t is not gnark-crypto's G2Jac");
#endif

// cuda_call turns a CUDA error into the driver's error sentence.
static std::string cuda_call(cudaError_t rc, const char* what)
{
    if (rc == cudaSuccess)
        return "";
    return std::string(what) + ": " + cudaGetErrorString(rc);
}

// time_msm runs one MSM case for one group. msm_t's constructor uploads the
// points and allocates the buckets, once, outside the clock; the scalars are
// copied to the device beforehand and handed over as a dev_ptr_t, which
// msm_t::invoke takes as "already on the device". Each timed run is wall
// time around invoke, which returns once the sum is on the host (its last
// window sums are added on the CPU), the same span cuzk's MSM is timed over.
template<class bucket, class point, class affine>
static std::string time_msm(MSMRun& run, const char* group)
{
    std::string err;
    scalar_t* d_scalars = nullptr;
    try {
        (void)select_gpu(0);
        err = cuda_call(cudaMalloc(&d_scalars, run.n * sizeof(scalar_t)), "cudaMalloc scalars");
        if (err.empty())
            err = cuda_call(cudaMemcpy(d_scalars, run.scalars, run.n * sizeof(scalar_t),
                                       cudaMemcpyHostToDevice), "copy scalars to the device");
        if (!err.empty()) {
            if (d_scalars) cudaFree(d_scalars);
            return std::string(group) + " MSM: " + err;
        }
        msm_t<bucket, point, affine, scalar_t> msm{
            static_cast<const affine*>(run.points), run.n};
        point out;
        for (int i = 0; i <= run.runs; i++) {
            err = cuda_call(cudaDeviceSynchronize(), "synchronize before a run");
            if (!err.empty())
                break;
            auto start = std::chrono::steady_clock::now();
            // The null host pointer of the points' own type selects the
            // points msm_t already holds; the dev_ptr_t marks the scalars as
            // device memory (mont = true: gnark's scalars are Montgomery).
            RustError rc = msm.invoke(out, static_cast<const affine*>(nullptr), run.n,
                                      dev_ptr_t<scalar_t>{d_scalars}, true);
            auto stop = std::chrono::steady_clock::now();
            if (rc.code != 0) {
                err = "invoke failed with code " + std::to_string(rc.code);
                if (rc.message) {
                    err += std::string(": ") + rc.message;
                    free(rc.message);
                }
                break;
            }
            if (i > 0)
                run.ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
        }
        if (err.empty()) {
            run.result.resize(sizeof(point));
            std::memcpy(run.result.data(), &out, sizeof(point));
        }
    } catch (const cuda_error& e) {
        err = std::string("CUDA error ") + std::to_string(e.code()) + ": " + e.what();
    } catch (const std::exception& e) {
        err = std::string("exception: ") + e.what();
    }
    if (d_scalars)
        cudaFree(d_scalars);
    if (!err.empty())
        return std::string(group) + " MSM of " + std::to_string(run.n) + " points: " + err;
    return "";
}

std::string msm_g1(MSMRun& run)
{
    return time_msm<bucket_t, point_t, affine_t>(run, "G1");
}

std::string msm_g2(MSMRun& run)
{
    return time_msm<bucket_fp2_t, point_fp2_t, affine_fp2_t>(run, "G2");
}
