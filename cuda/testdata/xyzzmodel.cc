// Host model of the point formulas' variants (src/ec/xyzz.cuh's MUL, what
// CUZK_MSM_MUL selects on the device): each addition with every MUL must give
// the same bits as with plain products, on the host's field arithmetic (whose
// mul2 is the plain a b + c d and sqr_rows a * a, so this checks the
// regrouping; the fused product and the squaring themselves are checked by
// montmodel.cc). Sums with both point forms, the
// doubling and cancelling branches included.
//
// Input: "g1 N", then N lines "x y" (affine points, Montgomery form, 96 hex
// digits each). Output: one line "additions K", or a failure on stderr.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../src/ec/xyzz.cuh"
#include "../src/ff/bls12_381.cuh"

using namespace cuzk;
typedef xyzz_t<fp_t> point;

namespace {

bool from_hex(const char* s, fp_t& x) {
    std::memset(x.v, 0, sizeof x.v);
    const size_t n = std::strlen(s);
    if (n == 0 || n > 96) return false;
    for (size_t i = 0; i < n; i++) {
        const char ch = s[n - 1 - i];
        uint32_t d;
        if (ch >= '0' && ch <= '9') d = ch - '0';
        else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
        else return false;
        x.v[i / 8] |= d << (4 * (i % 8));
    }
    return true;
}

bool same(const point& a, const point& b) { return a.X == b.X && a.Y == b.Y && a.ZZ == b.ZZ && a.ZZZ == b.ZZZ; }

long checked = 0;

template <int MUL>
void check_add_mul(const point& acc, const point& q) {
    point a = acc, b = acc;
    a.add<0>(q);
    b.add<MUL>(q);
    if (!same(a, b)) {
        std::fprintf(stderr, "xyzzmodel: add with MUL %d differs (addition %ld)\n", MUL, checked);
        std::exit(2);
    }
    checked++;
}

template <int MUL>
void check_add_affine_mul(const point& acc, const affine_t<fp_t>& q) {
    point a = acc, b = acc;
    a.add_affine<0>(q.x, q.y);
    b.add_affine<MUL>(q.x, q.y);
    if (!same(a, b)) {
        std::fprintf(stderr, "xyzzmodel: add_affine with MUL %d differs (addition %ld)\n", MUL, checked);
        std::exit(2);
    }
    checked++;
}

void check_add(const point& acc, const point& q) {
    check_add_mul<1>(acc, q);
    check_add_mul<2>(acc, q);
    check_add_mul<3>(acc, q);
}

void check_add_affine(const point& acc, const affine_t<fp_t>& q) {
    check_add_affine_mul<1>(acc, q);
    check_add_affine_mul<2>(acc, q);
    check_add_affine_mul<3>(acc, q);
}

}  // namespace

int main() {
    char g[8];
    int n = 0;
    if (std::scanf("%7s %d", g, &n) != 2 || std::strcmp(g, "g1") != 0 || n < 2) return 1;
    std::vector<affine_t<fp_t>> pts(n);
    for (int i = 0; i < n; i++) {
        char xs[128], ys[128];
        if (std::scanf("%127s %127s", xs, ys) != 2 || !from_hex(xs, pts[i].x) || !from_hex(ys, pts[i].y)) return 1;
    }
    // acc[i]: a running sum of the points, so every ZZ differs from 1.
    std::vector<point> acc(n);
    point run = point::inf();
    for (int i = 0; i < n; i++) {
        run.add_affine(pts[i].x, pts[i].y);
        acc[i] = run;
    }
    for (int i = 0; i < n; i++) {
        const int j = (i + 1) % n;
        const affine_t<fp_t> negj = {pts[j].x, pts[j].y.neg()};
        check_add(acc[i], acc[j]);
        check_add(acc[i], point::from_affine(pts[j]));
        check_add(acc[i], acc[i]);        // doubling
        check_add(acc[i], acc[i].neg());  // cancelling
        check_add(acc[i], point::inf());
        check_add(point::inf(), acc[i]);
        check_add_affine(acc[i], pts[j]);
        check_add_affine(point::inf(), pts[j]);
        // acc[i] + P_j - P_j is acc[i] with another ZZ: the same point in
        // another representation, for the doubling and cancelling branches.
        point other = acc[i];
        other.add_affine(pts[j].x, pts[j].y);
        other.add_affine(negj.x, negj.y);
        check_add(other, acc[i]);
        check_add(other, acc[i].neg());
        if (i > 0) {
            check_add_affine(point::from_affine(pts[i]), pts[i]);  // doubling
            point pj = acc[i - 1];
            pj.add_affine(pts[j].x, pts[j].y);
            check_add_affine(pj, negj);  // back to acc[i - 1]
        }
    }
    std::printf("additions %ld\n", checked);
    return 0;
}
