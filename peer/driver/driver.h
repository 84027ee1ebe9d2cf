// The peer driver times sppark's MSM and NTT on inputs that cuzk wrote, so
// that both libraries are measured on the same data in the same run. This
// header is the seam between main.cu, which knows files and arguments, and
// the files that include sppark's headers (msm.cu, ntt.cu): each of those is
// a separate translation unit because sppark's headers bind point_t, fr_t and
// friends by typedef, once per unit.
#ifndef CUZK_PEER_DRIVER_H
#define CUZK_PEER_DRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// Sizes of the layouts shared with gnark-crypto: little-endian 64-bit limbs,
// Montgomery form. The sppark units assert that their host types match.
constexpr size_t kFrBytes = 32;        // fr.Element
constexpr size_t kFpBytes = 48;        // fp.Element
constexpr size_t kG1AffineBytes = 96;  // G1Affine{X, Y}
constexpr size_t kG2AffineBytes = 192; // G2Affine{X{A0, A1}, Y{A0, A1}}
constexpr size_t kG1JacBytes = 144;    // G1Jac{X, Y, Z}
constexpr size_t kG2JacBytes = 288;    // G2Jac{X, Y, Z}

// MSMRun is one MSM case: n points and n scalars in host memory, timed runs
// after one warm-up. On return result holds the Jacobian point of the last
// timed run (kG1JacBytes or kG2JacBytes) and ms one figure per timed run.
struct MSMRun {
    const void* points;
    const void* scalars;
    size_t n;
    int runs;
    std::vector<double> ms;
    std::vector<uint8_t> result;
};

// Each returns "" on success, else a sentence that says what failed.
std::string msm_g1(MSMRun& run);
std::string msm_g2(MSMRun& run);

// NTTRun is one forward NTT of 2^lg elements, natural order in and out.
// data holds the input; on return it holds the output of the warm-up run
// (the first transform of the input), and ms one figure per timed run.
struct NTTRun {
    uint8_t* data;
    uint32_t lg;
    int runs;
    std::vector<double> ms;
};

std::string ntt_forward(NTTRun& run);

#endif
