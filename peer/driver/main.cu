// peer-driver: times sppark's MSM and NTT on input files that `cuzk bench
// peer` wrote, and writes what they computed back for cuzk to check against
// gnark-crypto. Usage:
//
//   peer-driver msm-g1 LOG POINTS SCALARS RUNS OUT
//   peer-driver msm-g2 LOG POINTS SCALARS RUNS OUT
//   peer-driver ntt    LOG DATA RUNS OUT
//
// The input files hold at least 2^LOG elements in gnark-crypto's in-memory
// layout (points affine, coordinates and scalars as little-endian 64-bit
// limbs in Montgomery form); only the first 2^LOG are used. OUT receives the
// result: the MSM's Jacobian point (X, Y, Z) or the NTT's output vector.
// On success one line goes to stdout, "times_ms: t1 t2 ...", one per timed
// run; on failure a sentence goes to stderr and the exit status is 1.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "driver.h"

static const char* kUsage =
    "usage: peer-driver msm-g1|msm-g2 LOG POINTS SCALARS RUNS OUT\n"
    "       peer-driver ntt LOG DATA RUNS OUT\n";

// read_prefix reads the first bytes of path into buf, or says why it cannot.
static std::string read_prefix(const char* path, size_t bytes, std::vector<uint8_t>& buf)
{
    FILE* f = std::fopen(path, "rb");
    if (!f)
        return std::string("open ") + path + ": " + std::strerror(errno);
    buf.resize(bytes);
    size_t got = std::fread(buf.data(), 1, bytes, f);
    std::fclose(f);
    if (got != bytes)
        return std::string("read ") + path + ": want " + std::to_string(bytes) +
               " bytes, the file has " + std::to_string(got);
    return "";
}

static std::string write_file(const char* path, const void* p, size_t bytes)
{
    FILE* f = std::fopen(path, "wb");
    if (!f)
        return std::string("create ") + path + ": " + std::strerror(errno);
    size_t put = std::fwrite(p, 1, bytes, f);
    int rc = std::fclose(f);
    if (put != bytes || rc != 0)
        return std::string("write ") + path + ": " + std::strerror(errno);
    return "";
}

// parse_int accepts a whole decimal number in [lo, hi].
static bool parse_int(const char* s, long lo, long hi, long& v)
{
    char* end = nullptr;
    errno = 0;
    v = std::strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' && v >= lo && v <= hi;
}

static int fail(const std::string& msg)
{
    std::fprintf(stderr, "peer-driver: %s\n", msg.c_str());
    return 1;
}

static void print_times(const std::vector<double>& ms)
{
    std::printf("times_ms:");
    for (double t : ms)
        std::printf(" %.4f", t);
    std::printf("\n");
}

static int run_msm(const std::string& kind, long lg, const char* points_path,
                   const char* scalars_path, long runs, const char* out_path)
{
    bool g2 = kind == "msm-g2";
    size_t n = (size_t)1 << lg;
    std::vector<uint8_t> points, scalars;
    std::string err = read_prefix(points_path, n * (g2 ? kG2AffineBytes : kG1AffineBytes), points);
    if (err.empty())
        err = read_prefix(scalars_path, n * kFrBytes, scalars);
    if (!err.empty())
        return fail(kind + ": " + err);
    MSMRun run{points.data(), scalars.data(), n, (int)runs, {}, {}};
    err = g2 ? msm_g2(run) : msm_g1(run);
    if (err.empty())
        err = write_file(out_path, run.result.data(), run.result.size());
    if (!err.empty())
        return fail(err);
    print_times(run.ms);
    return 0;
}

static int run_ntt(long lg, const char* data_path, long runs, const char* out_path)
{
    size_t n = (size_t)1 << lg;
    std::vector<uint8_t> data;
    std::string err = read_prefix(data_path, n * kFrBytes, data);
    if (!err.empty())
        return fail("ntt: " + err);
    NTTRun run{data.data(), (uint32_t)lg, (int)runs, {}};
    err = ntt_forward(run);
    if (err.empty())
        err = write_file(out_path, data.data(), data.size());
    if (!err.empty())
        return fail(err);
    print_times(run.ms);
    return 0;
}

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    std::string kind = argv[1];
    long lg = 0, runs = 0;
    // sppark's NTT is built for at most 2^28 (MAX_LG_DOMAIN_SIZE); its MSM
    // indexes points with 31 bits.
    if (kind == "msm-g1" || kind == "msm-g2") {
        if (argc != 7) {
            std::fputs(kUsage, stderr);
            return 2;
        }
        if (!parse_int(argv[2], 1, 28, lg))
            return fail(kind + ": LOG " + argv[2] + " is not a whole number in [1, 28]");
        if (!parse_int(argv[5], 1, 1000, runs))
            return fail(kind + ": RUNS " + argv[5] + " is not a whole number in [1, 1000]");
        return run_msm(kind, lg, argv[3], argv[4], runs, argv[6]);
    }
    if (kind == "ntt") {
        if (argc != 6) {
            std::fputs(kUsage, stderr);
            return 2;
        }
        if (!parse_int(argv[2], 1, 28, lg))
            return fail("ntt: LOG " + std::string(argv[2]) + " is not a whole number in [1, 28]");
        if (!parse_int(argv[4], 1, 1000, runs))
            return fail("ntt: RUNS " + std::string(argv[4]) + " is not a whole number in [1, 1000]");
        return run_ntt(lg, argv[3], runs, argv[5]);
    }
    std::fputs(kUsage, stderr);
    return fail("unknown kind " + kind);
}
