// Host model of the batched-affine bucket accumulation (src/msm/affine.cuh,
// CUZK_MSM_AFFINE=1) and of the field inversion it uses (src/ff/inverse.cuh),
// for checking them without a GPU: the device's own code, compiled for the
// host, over host arrays with the device's indexing (the lists interleaved
// by thread slot, each slot looping over chunks s, s + G, ... as the kernel's
// threads do). It also fails where the device would go silently wrong: a
// bucket written twice, a slot not written exactly once, a list or pre[]
// index past its capacity, the forward and backward walks disagreeing on the
// batched pairs, slot keys out of order, an inversion that did not reach
// g = 0 within its bound or whose Bezout coefficients left [0, p).
//
// Input, one command a line:
//   inv fp A               A^-1 (A in Montgomery form, hex) and the batches it took
//   inv fp2 A0 A1
//   acc g1|g2 E G MINPAIRS W0 WC N BW NPOINTS
//     then NPOINTS lines of coordinates (g1: x y; g2: x0 x1 y0 y1), then
//     WC * N lines "digit val" (val: point index | sign << 31), sorted by
//     digit within each window of N. Output: a line "stats ..." and one line
//     a bucket, (W0 + WC) * BW of them: the bucket's Jacobian X Y Z after the
//     accumulation and the fixup's sum of each key's slots into its bucket.
// Field elements are 96 hex digits: the 384-bit Montgomery representation,
// gnark-crypto's fp.Element limbs read as one integer.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace model {
[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "affinemodel: %s\n", what);
    std::exit(2);
}
std::vector<int> bucket_writes, slot_writes;
long rounds = 0, batched = 0, finishes = 0, kinds[5] = {0, 0, 0, 0, 0};
void wrote_bucket(uint64_t k) {
    if (k >= bucket_writes.size()) fail("bucket key out of range");
    if (++bucket_writes[k] > 1) fail("bucket written twice");
}
void wrote_slot(uint64_t i) {
    if (i >= slot_writes.size()) fail("slot index out of range");
    slot_writes[i]++;
}
}  // namespace model

#define CUZK_AFFINE_CHECK(cond, what) \
    do {                              \
        if (!(cond)) model::fail(what); \
    } while (0)
#define CUZK_INV30_CHECK(cond, what) CUZK_AFFINE_CHECK(cond, what)
#define CUZK_AFFINE_WROTE_BUCKET(k) model::wrote_bucket(k)
#define CUZK_AFFINE_WROTE_SLOT(i) model::wrote_slot(i)
#define CUZK_AFFINE_ROUND(q) (model::rounds++, model::batched += (q))
#define CUZK_AFFINE_PAIR(kind) (model::kinds[kind]++)
#define CUZK_AFFINE_FINISH(len) (model::finishes += (len) > 0)

#include "../src/msm/affine.cuh"

using namespace cuzk;
namespace affine = cuzk::msm::affine;

namespace {

fp_t read_fp() {
    char buf[128];
    if (std::scanf("%127s", buf) != 1 || std::strlen(buf) != 96) model::fail("bad field element");
    fp_t r;
    for (int i = 0; i < 12; i++) {
        char w[9];
        std::memcpy(w, buf + 8 * (11 - i), 8);
        w[8] = 0;
        r.v[i] = (uint32_t)std::strtoul(w, nullptr, 16);
    }
    return r;
}

void write_fp(const fp_t& x) {
    for (int i = 11; i >= 0; i--) std::printf("%08x", x.v[i]);
}

void read(fp_t& x) { x = read_fp(); }
void read(fp2_t& x) {
    x.c0 = read_fp();
    x.c1 = read_fp();
}
void write(const fp_t& x) { write_fp(x); }
void write(const fp2_t& x) {
    write_fp(x.c0);
    std::printf(" ");
    write_fp(x.c1);
}

template <class F>
void accumulate() {
    unsigned E, min_pairs, w0, wc, Bw;
    unsigned long long G, n, npoints;
    if (std::scanf("%u %llu %u %u %u %llu %u %llu", &E, &G, &min_pairs, &w0, &wc, &n, &Bw, &npoints) != 8)
        model::fail("bad acc line");
    if (E < 1 || G < 1 || n < 1 || wc < 1 || Bw < 2) model::fail("bad acc parameters");
    std::vector<affine_t<F>> points(npoints);
    for (auto& P : points) {
        read(P.x);
        read(P.y);
    }
    const uint64_t M = (uint64_t)wc * n;
    std::vector<uint32_t> keys(M), vals(M);
    for (uint64_t p = 0; p < M; p++) {
        unsigned k, v;
        if (std::scanf("%u %u", &k, &v) != 2) model::fail("bad entry");
        if (k >= Bw || (v & 0x7fffffffu) >= npoints) model::fail("entry out of range");
        if (p % n > 0 && k < keys[p - 1]) model::fail("entries not sorted within their window");
        keys[p] = k;
        vals[p] = v;
    }
    const uint64_t nbuckets = (uint64_t)(w0 + wc) * Bw;
    const uint64_t nchunks = (M + E - 1) / E;
    const uint64_t threads = G < nchunks ? G : nchunks;
    std::vector<xyzz_t<F>> buckets(nbuckets, xyzz_t<F>::inf()), slots(2 * nchunks);
    std::vector<uint32_t> slot_keys(2 * nchunks);
    model::rounds = model::batched = model::finishes = 0;
    for (long& k : model::kinds) k = 0;
    model::bucket_writes.assign(nbuckets, 0);
    model::slot_writes.assign(2 * nchunks, 0);
    // The lists start as garbage, as scratch does: a read of anything not
    // written first shows up as a wrong sum.
    const uint64_t cap = affine::list_cap(E), pcap = affine::pre_cap(E);
    std::vector<uint32_t> lkey(threads * cap, 0xa5a5a5a5u);
    std::vector<F> lx(threads * cap), ly(threads * cap), lpre(threads * pcap);
    for (auto* v : {&lx, &ly, &lpre}) std::memset((void*)v->data(), 0xa5, v->size() * sizeof(F));

    affine::job<F> J;
    J.keys = keys.data();
    J.vals = vals.data();
    J.M = M;
    J.n = n;
    J.w0 = w0;
    J.Bw = Bw;
    J.points = points.data();
    J.buckets = buckets.data();
    J.slot_keys = slot_keys.data();
    J.slots = slots.data();
    J.lkey = lkey.data();
    J.lx = lx.data();
    J.ly = ly.data();
    J.lpre = lpre.data();
    J.G = threads;
    J.E = E;
    J.min_pairs = min_pairs;
    for (uint64_t s = 0; s < threads; s++)
        for (uint64_t t = s; t < nchunks; t += threads) affine::chunk(J, t, s);

    for (uint64_t i = 0; i < 2 * nchunks; i++) {
        if (model::slot_writes[i] != 1) model::fail("slot not written exactly once");
        if (i > 0 && slot_keys[i] < slot_keys[i - 1]) model::fail("slot keys out of order");
        if (slot_keys[i] >= nbuckets) model::fail("slot key out of range");
    }
    // The fixup levels' net effect: each key's partial sums added to its bucket.
    for (uint64_t i = 0; i < 2 * nchunks; i++) buckets[slot_keys[i]].add(slots[i]);

    std::printf("stats chunks %llu threads %llu rounds %ld batched %ld add %ld dbl %ld first %ld second %ld inf %ld "
                "finishes %ld\n",
                (unsigned long long)nchunks, (unsigned long long)threads, model::rounds, model::batched,
                model::kinds[affine::PAIR_ADD], model::kinds[affine::PAIR_DBL], model::kinds[affine::PAIR_FIRST],
                model::kinds[affine::PAIR_SECOND], model::kinds[affine::PAIR_INF], model::finishes);
    for (const auto& b : buckets) {
        const jacobian_t<F> j = b.to_jacobian();
        write(j.X);
        std::printf(" ");
        write(j.Y);
        std::printf(" ");
        write(j.Z);
        std::printf("\n");
    }
}

}  // namespace

int main() {
    char cmd[16], field[16];
    while (std::scanf("%15s %15s", cmd, field) == 2) {
        const std::string c(cmd), f(field);
        if (c == "inv" && f == "fp") {
            const fp_t a = read_fp();
            int batches = 0;
            (void)inv30::inverse_raw(a, &batches);
            if (batches < 0 && !a.is_zero()) model::fail("inversion did not reach g = 0");
            write(inverse(a));
            std::printf(" %d\n", batches);
        } else if (c == "inv" && f == "fp2") {
            fp2_t a;
            read(a);
            write(inverse(a));
            std::printf("\n");
        } else if (c == "acc" && f == "g1") {
            accumulate<fp_t>();
        } else if (c == "acc" && f == "g2") {
            accumulate<fp2_t>();
        } else {
            model::fail("unknown command");
        }
        std::fflush(stdout);
    }
    return 0;
}
