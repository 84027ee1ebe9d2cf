// Host model of the device's even/odd Montgomery multiplication
// (src/ff/mont_eo.cuh), for checking it without a GPU: the schedule is the
// device's own code (eo_mul), run with an executor that interprets the very
// PTX strings the device compiles (src/ff/mont_eo_asm.cuh), bound to the same
// operands. The interpreter follows PTX's carry flag: .cc writes it, the c
// forms (addc, madc, subc) read it. It also fails on what would be a silent
// error on the device: a carry flag read that no instruction of the same
// block wrote, a carry overwritten or left at the end of a block before
// anything read it, and an instruction without .cc whose result overflows 32
// bits (each is a carry the schedule claims cannot happen).
//
// Input, one product a line: "fr A B", "frr A B" (Fr with the REDCR
// reduction, mont_eo.cuh's LOWR) or "fp A B", A and B in hex, or "fpm A B C
// D", the fused sum of two Fp products (eo_mul2), or "fps A A", the Fp
// squaring (eo_sqr), or "fp2m A0 A1 B0 B1", the Fp2 product with lazy
// reduction (eo_fp2_mul), or "fp2m2 A0 A1 B0 B1 C0 C1 D0 D1", the fused
// sum A B + C D over Fp2 (eo_fp2_mul2). Output: the product A B R^-1 mod p
// (A B + C D times R^-1 for fpm) in hex, one line each, and for the Fp2
// forms one line per component. The Go test
// (montmodel_test.go) builds this with the host's C++ compiler and compares
// with math/big.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../src/ff/bls12_381.cuh"

namespace {

[[noreturn]] void fail(const char* what, const std::string& ins) {
    std::fprintf(stderr, "montmodel: %s: %s\n", what, ins.c_str());
    std::exit(2);
}

struct insn {
    std::string text, op;
    int arg[4];  // operand number, or -1 - immediate index
    int nargs;
};

struct program {
    std::vector<insn> ins;
    std::vector<uint32_t> imm;
};

program parse(const char* src) {
    program p;
    std::string s(src);
    size_t pos = 0;
    while (true) {
        const size_t end = s.find(';', pos);
        if (end == std::string::npos) break;
        std::string line = s.substr(pos, end - pos);
        pos = end + 1;
        const size_t b = line.find_first_not_of(" \n\t");
        if (b == std::string::npos) continue;
        line = line.substr(b);
        insn in;
        in.text = line;
        const size_t sp = line.find(' ');
        in.op = line.substr(0, sp);
        in.nargs = 0;
        std::string rest = line.substr(sp + 1);
        size_t q = 0;
        while (q < rest.size()) {
            size_t c = rest.find(',', q);
            if (c == std::string::npos) c = rest.size();
            std::string a = rest.substr(q, c - q);
            a = a.substr(a.find_first_not_of(' '));
            if (in.nargs == 4) fail("too many operands", line);
            if (a[0] == '%') {
                in.arg[in.nargs++] = std::atoi(a.c_str() + 1);
            } else {
                p.imm.push_back((uint32_t)std::strtoll(a.c_str(), nullptr, 0));
                in.arg[in.nargs++] = -1 - (int)(p.imm.size() - 1);
            }
            q = c + 1;
        }
        p.ins.push_back(in);
    }
    return p;
}

// Runs one block over its operands (pointers in %-number order).
void run(const program& p, uint32_t* const* ops, int nops) {
    bool cf = false, written = false, pending = false;
    for (const insn& in : p.ins) {
        uint64_t v[4];
        for (int i = 1; i < in.nargs; i++) {
            const int a = in.arg[i];
            if (a >= nops) fail("operand out of range", in.text);
            v[i] = a >= 0 ? *ops[a] : p.imm[-1 - a];
        }
        const std::string& op = in.op;
        const bool reads = op.compare(0, 4, "addc") == 0 || op.compare(0, 4, "subc") == 0 ||
                           op.compare(0, 4, "madc") == 0;
        const bool writes = op.find(".cc") != std::string::npos;
        if (reads && !written) fail("carry read before this block wrote one", in.text);
        if (!reads && writes && pending) fail("carry overwritten before it was read", in.text);
        const uint64_t c = reads ? cf : 0;
        uint64_t full;  // the exact result, before truncation to 32 bits
        bool borrow = false;
        if (op.compare(0, 3, "add") == 0) {
            full = v[1] + v[2] + c;
        } else if (op.compare(0, 3, "sub") == 0) {
            const uint64_t sub = v[2] + c;
            borrow = v[1] < sub;
            full = (v[1] - sub) & 0xffffffffu;
        } else if (op.compare(0, 3, "mad") == 0) {
            const uint64_t prod = v[1] * v[2];
            const uint64_t half = op.find(".hi") != std::string::npos ? prod >> 32 : prod & 0xffffffffu;
            full = half + v[3] + c;
        } else {
            fail("unknown instruction", in.text);
        }
        const int d = in.arg[0];
        if (d < 0 || d >= nops) fail("bad destination", in.text);
        *ops[d] = (uint32_t)full;
        const bool out = op.compare(0, 3, "sub") == 0 ? borrow : (full >> 32) != 0;
        if (writes) {
            cf = out;
            written = true;
            pending = out;
        } else {
            if (op.compare(0, 3, "sub") != 0 && out) fail("result without .cc overflows", in.text);
            if (reads) pending = false;
        }
    }
    if (pending) fail("carry left unread at the end of the block", p.ins.back().text);
}

struct eo_model {
    template <class P>
    static void ab(uint32_t (&ev)[P::N], uint32_t (&od)[P::N], const uint32_t (&a0)[P::N], uint32_t b) {
        uint32_t a[P::N];
        std::memcpy(a, a0, sizeof a);
        if constexpr (P::N == 8) {
            static const program p = parse(CUZK_EO8_AB);
            uint32_t* ops[] = {CUZK_EO8_AB_POINTERS};
            run(p, ops, sizeof ops / sizeof ops[0]);
        } else {
            static const program p = parse(CUZK_EO12_AB);
            uint32_t* ops[] = {CUZK_EO12_AB_POINTERS};
            run(p, ops, sizeof ops / sizeof ops[0]);
        }
    }
    template <class P>
    static void ma(uint32_t (&ev)[P::N], uint32_t (&od)[P::N], const uint32_t (&c0)[P::N], uint32_t d) {
        uint32_t c[P::N];
        std::memcpy(c, c0, sizeof c);
        static const program p = parse(CUZK_EO12_MA);
        uint32_t* ops[] = {CUZK_EO12_MA_POINTERS};
        run(p, ops, sizeof ops / sizeof ops[0]);
    }
    template <class P>
    static void sq(int i, uint32_t (&ev)[P::N], uint32_t (&od)[P::N], const uint32_t (&D0)[P::N], uint32_t b,
                   uint32_t e) {
        uint32_t D[P::N];
        std::memcpy(D, D0, sizeof D);
#define CUZK_EO12_SQ_CASE(k)                                   \
    case k: {                                                  \
        static const program pr = parse(CUZK_EO12_SQ##k);      \
        uint32_t* ops[] = {CUZK_EO12_SQ##k##_POINTERS};        \
        run(pr, ops, sizeof ops / sizeof ops[0]);              \
        break;                                                 \
    }
        switch (i) {
            CUZK_EO12_SQ_ROWS(CUZK_EO12_SQ_CASE)
            default:
                fail("no squaring row", std::to_string(i));
        }
#undef CUZK_EO12_SQ_CASE
    }
    template <class P>
    static void redc(uint32_t (&ev)[P::N], uint32_t (&od)[P::N], uint32_t m) {
        uint32_t p[P::N];
        for (int i = 0; i < P::N; i++) p[i] = P::mod(i);
        if constexpr (P::N == 8) {
            static const program pr = parse(CUZK_EO8_REDC);
            uint32_t* ops[] = {CUZK_EO8_REDC_POINTERS};
            run(pr, ops, sizeof ops / sizeof ops[0]);
        } else {
            static const program pr = parse(CUZK_EO12_REDC);
            uint32_t* ops[] = {CUZK_EO12_REDC_POINTERS};
            run(pr, ops, sizeof ops / sizeof ops[0]);
        }
    }
    template <class P>
    static void redcr(uint32_t (&ev)[P::N], uint32_t (&od)[P::N]) {
        uint32_t p[P::N], m, h;
        for (int i = 0; i < P::N; i++) p[i] = P::mod(i);
        static const program pr = parse(CUZK_EO8_REDCR);
        uint32_t* ops[] = {CUZK_EO8_REDCR_POINTERS};
        run(pr, ops, sizeof ops / sizeof ops[0]);
    }
    // The lazy Fp2 product's chains (eo_fp2_mul); inputs copied so that the
    // pointers may be non-const.
    template <class P>
    static void hi(uint32_t (&h)[P::N], const uint32_t (&ev0)[P::N], const uint32_t (&od0)[P::N]) {
        uint32_t ev[P::N], od[P::N];
        std::memcpy(ev, ev0, sizeof ev);
        std::memcpy(od, od0, sizeof od);
        static const program pr = parse(CUZK_EO12_HI);
        uint32_t* ops[] = {CUZK_EO12_HI_POINTERS};
        run(pr, ops, sizeof ops / sizeof ops[0]);
    }
    template <class P>
    static void add(uint32_t (&s)[P::N], const uint32_t (&x0)[P::N], const uint32_t (&y0)[P::N]) {
        uint32_t x[P::N], y[P::N];
        std::memcpy(x, x0, sizeof x);
        std::memcpy(y, y0, sizeof y);
        static const program pr = parse(CUZK_EO12_ADD);
        uint32_t* ops[] = {CUZK_EO12_ADD_POINTERS};
        run(pr, ops, sizeof ops / sizeof ops[0]);
    }
#define CUZK_MODEL_WIDE(name, NAME, out)                                                           \
    template <class P>                                                                             \
    static void name(uint32_t (&out)[2 * P::N], const uint32_t (&x0)[2 * P::N],                    \
                     const uint32_t (&y0)[2 * P::N]) {                                             \
        uint32_t x[2 * P::N], y[2 * P::N];                                                         \
        std::memcpy(x, x0, sizeof x);                                                              \
        std::memcpy(y, y0, sizeof y);                                                              \
        static const program pr = parse(CUZK_EO12_##NAME);                                         \
        uint32_t* ops[] = {CUZK_EO12_##NAME##_POINTERS};                                           \
        run(pr, ops, sizeof ops / sizeof ops[0]);                                                  \
    }
    CUZK_MODEL_WIDE(kd, KD, d)
    CUZK_MODEL_WIDE(addw, ADDW, s)
    CUZK_MODEL_WIDE(subw, SUBW, d)
#undef CUZK_MODEL_WIDE
    template <class P>
    static void rp(uint32_t (&ev)[P::N], uint32_t (&od)[P::N], uint32_t m) {
        uint32_t p[P::N];
        for (int i = 0; i < P::N; i++) p[i] = P::mod(i);
        static const program pr = parse(CUZK_EO12_RP);
        uint32_t* ops[] = {CUZK_EO12_RP_POINTERS};
        run(pr, ops, sizeof ops / sizeof ops[0]);
    }
    template <class P>
    static void rfin(uint32_t (&t)[P::N], uint32_t (&u)[P::N], uint32_t& mask, const uint32_t (&ev0)[P::N],
                     const uint32_t (&od0)[P::N], const uint32_t (&h0)[P::N]) {
        uint32_t ev[P::N], od[P::N], h[P::N], p[P::N];
        std::memcpy(ev, ev0, sizeof ev);
        std::memcpy(od, od0, sizeof od);
        std::memcpy(h, h0, sizeof h);
        for (int i = 0; i < P::N; i++) p[i] = P::mod(i);
        static const program pr = parse(CUZK_EO12_RFIN);
        uint32_t* ops[] = {CUZK_EO12_RFIN_POINTERS};
        run(pr, ops, sizeof ops / sizeof ops[0]);
    }
    template <class P>
    static void fin(uint32_t (&t)[P::N], uint32_t (&u)[P::N], uint32_t& mask, const uint32_t (&ev0)[P::N],
                    const uint32_t (&od0)[P::N]) {
        uint32_t ev[P::N], od[P::N], p[P::N];
        std::memcpy(ev, ev0, sizeof ev);
        std::memcpy(od, od0, sizeof od);
        for (int i = 0; i < P::N; i++) p[i] = P::mod(i);
        if constexpr (P::N == 8) {
            static const program pr = parse(CUZK_EO8_FINAL);
            uint32_t* ops[] = {CUZK_EO8_FINAL_POINTERS};
            run(pr, ops, sizeof ops / sizeof ops[0]);
        } else {
            static const program pr = parse(CUZK_EO12_FINAL);
            uint32_t* ops[] = {CUZK_EO12_FINAL_POINTERS};
            run(pr, ops, sizeof ops / sizeof ops[0]);
        }
    }
};

// Little-endian 32-bit limbs from a hex string of at most 8N digits.
template <int N>
bool from_hex(const char* s, uint32_t (&x)[N]) {
    std::memset(x, 0, sizeof x);
    const size_t n = std::strlen(s);
    if (n == 0 || n > 8 * N) return false;
    for (size_t i = 0; i < n; i++) {
        const char ch = s[n - 1 - i];
        uint32_t d;
        if (ch >= '0' && ch <= '9') d = ch - '0';
        else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
        else return false;
        x[i / 8] |= d << (4 * (i % 8));
    }
    return true;
}

template <class P, bool LOWR = false>
bool product(const char* as, const char* bs) {
    constexpr int N = P::N;
    uint32_t a[N], b[N], r[N];
    if (!from_hex<N>(as, a) || !from_hex<N>(bs, b)) return false;
    cuzk::eo_mul<P, eo_model, LOWR>(r, a, b);
    for (int i = N - 1; i >= 0; i--) std::printf("%08x", r[i]);
    std::printf("\n");
    return true;
}

// The fused sum of two products (eo_mul2): A B + C D, times R^-1.
bool fused(const char* as, const char* bs, const char* cs, const char* ds) {
    constexpr int N = cuzk::fp_params::N;
    uint32_t a[N], b[N], c[N], d[N], r[N];
    if (!from_hex<N>(as, a) || !from_hex<N>(bs, b) || !from_hex<N>(cs, c) || !from_hex<N>(ds, d)) return false;
    cuzk::eo_mul2<cuzk::fp_params, eo_model>(r, a, b, c, d);
    for (int i = N - 1; i >= 0; i--) std::printf("%08x", r[i]);
    std::printf("\n");
    return true;
}

// The squaring (eo_sqr): A A R^-1.
bool square(const char* as) {
    constexpr int N = cuzk::fp_params::N;
    uint32_t a[N], r[N];
    if (!from_hex<N>(as, a)) return false;
    cuzk::eo_sqr<cuzk::fp_params, eo_model>(r, a);
    for (int i = N - 1; i >= 0; i--) std::printf("%08x", r[i]);
    std::printf("\n");
    return true;
}

// The Fp2 product with lazy reduction (eo_fp2_mul): (A0 + A1 u)(B0 + B1 u)
// R^-1, the two components on two lines.
bool fp2_product(const char* a0s, const char* a1s, const char* b0s, const char* b1s) {
    constexpr int N = cuzk::fp_params::N;
    uint32_t a0[N], a1[N], b0[N], b1[N], r0[N], r1[N];
    if (!from_hex<N>(a0s, a0) || !from_hex<N>(a1s, a1) || !from_hex<N>(b0s, b0) || !from_hex<N>(b1s, b1))
        return false;
    cuzk::eo_fp2_mul<cuzk::fp_params, eo_model>(r0, r1, a0, a1, b0, b1);
    for (int i = N - 1; i >= 0; i--) std::printf("%08x", r0[i]);
    std::printf("\n");
    for (int i = N - 1; i >= 0; i--) std::printf("%08x", r1[i]);
    std::printf("\n");
    return true;
}

// The fused sum over Fp2 (eo_fp2_mul2): A B + C D, times R^-1, with A = (A0,
// A1) and so on, the two components on two lines.
bool fp2_fused(const char* const (&hex)[8]) {
    constexpr int N = cuzk::fp_params::N;
    uint32_t v[8][N], r0[N], r1[N];
    for (int i = 0; i < 8; i++)
        if (!from_hex<N>(hex[i], v[i])) return false;
    cuzk::eo_fp2_mul2<cuzk::fp_params, eo_model>(r0, r1, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    for (int i = N - 1; i >= 0; i--) std::printf("%08x", r0[i]);
    std::printf("\n");
    for (int i = N - 1; i >= 0; i--) std::printf("%08x", r1[i]);
    std::printf("\n");
    return true;
}

}  // namespace

int main() {
    char field[8], as[128], bs[128], cs[128], ds[128];
    while (std::scanf("%7s %127s %127s", field, as, bs) == 3) {
        bool ok;
        if (std::strcmp(field, "fps") == 0)
            ok = std::strcmp(as, bs) == 0 && square(as);
        else if (std::strcmp(field, "fpm") == 0)
            ok = std::scanf("%127s %127s", cs, ds) == 2 && fused(as, bs, cs, ds);
        else if (std::strcmp(field, "fp2m") == 0)
            ok = std::scanf("%127s %127s", cs, ds) == 2 && fp2_product(as, bs, cs, ds);
        else if (std::strcmp(field, "fp2m2") == 0) {
            char es[4][128];
            ok = std::scanf("%127s %127s %127s %127s %127s %127s", cs, ds, es[0], es[1], es[2], es[3]) == 6;
            const char* const hex[8] = {as, bs, cs, ds, es[0], es[1], es[2], es[3]};
            ok = ok && fp2_fused(hex);
        }
        else if (std::strcmp(field, "fr") == 0) ok = product<cuzk::fr_params>(as, bs);
        else if (std::strcmp(field, "frr") == 0) ok = product<cuzk::fr_params, true>(as, bs);
        else if (std::strcmp(field, "fp") == 0) ok = product<cuzk::fp_params>(as, bs);
        else ok = false;
        if (!ok) {
            std::fprintf(stderr, "montmodel: bad input line: %s %s %s\n", field, as, bs);
            return 1;
        }
    }
    return 0;
}
