// The single translation unit of libcuzkgpu.so: layers from the field up to
// the C ABI (see docs/cuda.md).
#include "ff/bls12_381.cuh"
#include "ff/fp2.cuh"
#include "ec/xyzz.cuh"
#include "ntt/ntt.cuh"
#include "ntt/quotient.cuh"
#include "msm/pippenger.cuh"
#include "msm/table.cuh"
#include "fixedbase/fixedbase.cuh"
#include "abi.cu"
