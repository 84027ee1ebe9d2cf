// Short Weierstrass points with a = 0 (y^2 = x^3 + b), written once against
// a field type F. Affine points use gnark-crypto's layout (x, y) with the point
// at infinity encoded as (0, 0). Accumulation uses XYZZ coordinates
// (x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2), whose mixed addition needs no
// inversion and fewer multiplications than Jacobian; infinity is ZZ = 0, so a
// zeroed buffer is a buffer of points at infinity.
#pragma once
#include "../ff/mont.cuh"

namespace cuzk {

template <class F>
struct affine_t {
    F x, y;
    CUZK_HD bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

// Jacobian coordinates in gnark-crypto's G1Jac layout (x = X/Z^2, y = Y/Z^3);
// infinity is (1, 1, 0).
template <class F>
struct jacobian_t {
    F X, Y, Z;
};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;

    CUZK_HD static xyzz_t inf() {
        xyzz_t r;
        r.X = F::zero();
        r.Y = F::zero();
        r.ZZ = F::zero();
        r.ZZZ = F::zero();
        return r;
    }
    CUZK_HD bool is_inf() const { return ZZ.is_zero(); }

    CUZK_HD static xyzz_t from_affine(const affine_t<F>& a) {
        if (a.is_inf()) return inf();
        xyzz_t r;
        r.X = a.x;
        r.Y = a.y;
        r.ZZ = F::one();
        r.ZZZ = F::one();
        return r;
    }

    CUZK_HD xyzz_t neg() const {
        xyzz_t r = *this;
        r.Y = Y.neg();
        return r;
    }

    // dbl-2008-s-1
    CUZK_HD xyzz_t dbl() const {
        if (is_inf()) return *this;
        F U = Y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = X * V;
        F M = X.sqr();
        M = M + M.dbl();
        xyzz_t r;
        r.X = M.sqr() - S.dbl();
        r.Y = M * (S - r.X) - W * Y;
        r.ZZ = V * ZZ;
        r.ZZZ = W * ZZZ;
        return r;
    }

    // mdbl-2008-s-1: doubling of an affine point.
    CUZK_HD static xyzz_t dbl_affine(const F& x, const F& y) {
        F U = y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = x * V;
        F M = x.sqr();
        M = M + M.dbl();
        xyzz_t r;
        r.X = M.sqr() - S.dbl();
        r.Y = M * (S - r.X) - W * y;
        r.ZZ = V;
        r.ZZZ = W;
        return r;
    }

    // The field operations the additions may use, as bits of their MUL
    // (CUZK_MSM_MUL): each gives the same fully reduced values as the plain
    // products, so every choice gives the same bits.
    enum : int {
        MUL_FUSED = 1,    // a b + c d in one fused sum of two products (F::mul2)
        MUL_SQUARED = 2,  // squares by F::sqr_rows
        MUL_LAZY = 4,     // products by F::mul_lazy, and with MUL_FUSED fused sums by
                          // F::mul2_lazy (Fp2: lazy reduction; G2's CUZK_MSM_G2_MUL)
    };
    template <int MUL>
    CUZK_HD static F prod(const F& a, const F& b) {
        if constexpr ((MUL & MUL_LAZY) != 0)
            return F::mul_lazy(a, b);
        else
            return a * b;
    }
    template <int MUL>
    CUZK_HD static F prod2(const F& a, const F& b, const F& c, const F& d) {
        if constexpr ((MUL & MUL_LAZY) != 0)
            return F::mul2_lazy(a, b, c, d);
        else
            return F::mul2(a, b, c, d);
    }
    template <int MUL>
    CUZK_HD static F square(const F& a) {
        if constexpr ((MUL & MUL_SQUARED) != 0)
            return a.sqr_rows();
        else
            return a.sqr();
    }

    // madd-2008-s: this += (x2, y2), with (x2, y2) a finite affine point.
    // With MUL_FUSED, Y3 = R (Q - X3) + Y (-PPP) is one fused sum of two
    // products: 10 products, 9 reductions.
    template <int MUL = 0>
    CUZK_HD void add_affine(const F& x2, const F& y2) {
        if (is_inf()) {
            X = x2;
            Y = y2;
            ZZ = F::one();
            ZZZ = F::one();
            return;
        }
        F P = prod<MUL>(x2, ZZ) - X;
        F R = prod<MUL>(y2, ZZZ) - Y;
        if (P.is_zero()) {
            if (R.is_zero())
                *this = dbl_affine(x2, y2);
            else
                *this = inf();
            return;
        }
        F PP = square<MUL>(P);
        F PPP = prod<MUL>(P, PP);
        F Q = prod<MUL>(X, PP);
        F X3 = square<MUL>(R) - PPP - Q.dbl();
        if constexpr ((MUL & MUL_FUSED) != 0)
            Y = prod2<MUL>(R, Q - X3, Y, PPP.neg());
        else
            Y = prod<MUL>(R, Q - X3) - prod<MUL>(Y, PPP);
        X = X3;
        ZZ = prod<MUL>(ZZ, PP);
        ZZZ = prod<MUL>(ZZZ, PPP);
    }

    // add-2008-s: this += q. MUL_FUSED regroups it around three fused sums
    // of two products: P = U2 - U1 and R = S2 - S1 each in one, and with
    // T2 = q.ZZ PP, T3 = q.ZZZ PPP (ZZ3 = ZZ T2, ZZZ3 = ZZZ T3, Q = X T2),
    // Y3 = R (Q - X3) + Y (-T3): 14 products, 11 reductions.
    template <int MUL = 0>
    CUZK_HD void add(const xyzz_t& q) {
        if (q.is_inf()) return;
        if (is_inf()) {
            *this = q;
            return;
        }
        if constexpr ((MUL & MUL_FUSED) != 0) {
            F P = prod2<MUL>(q.X, ZZ, X, q.ZZ.neg());
            F R = prod2<MUL>(q.Y, ZZZ, Y, q.ZZZ.neg());
            if (P.is_zero()) {
                if (R.is_zero())
                    *this = dbl();
                else
                    *this = inf();
                return;
            }
            F PP = square<MUL>(P);
            F PPP = prod<MUL>(P, PP);
            F T2 = prod<MUL>(q.ZZ, PP);
            F T3 = prod<MUL>(q.ZZZ, PPP);
            F Q = prod<MUL>(X, T2);
            F X3 = square<MUL>(R) - PPP - Q.dbl();
            Y = prod2<MUL>(R, Q - X3, Y, T3.neg());
            X = X3;
            ZZ = prod<MUL>(ZZ, T2);
            ZZZ = prod<MUL>(ZZZ, T3);
            return;
        }
        F U1 = prod<MUL>(X, q.ZZ);
        F U2 = prod<MUL>(q.X, ZZ);
        F S1 = prod<MUL>(Y, q.ZZZ);
        F S2 = prod<MUL>(q.Y, ZZZ);
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) {
            if (R.is_zero())
                *this = dbl();
            else
                *this = inf();
            return;
        }
        F PP = square<MUL>(P);
        F PPP = prod<MUL>(P, PP);
        F Q = prod<MUL>(U1, PP);
        F X3 = square<MUL>(R) - PPP - Q.dbl();
        Y = prod<MUL>(R, Q - X3) - prod<MUL>(S1, PPP);
        X = X3;
        ZZ = prod<MUL>(prod<MUL>(ZZ, q.ZZ), PP);
        ZZZ = prod<MUL>(prod<MUL>(ZZZ, q.ZZZ), PPP);
    }

    // Jacobian with Z = ZZZ: X_J = X*ZZ^2, Y_J = Y*ZZZ^2 (no inversion).
    CUZK_HD jacobian_t<F> to_jacobian() const {
        jacobian_t<F> j;
        if (is_inf()) {
            j.X = F::one();
            j.Y = F::one();
            j.Z = F::zero();
            return j;
        }
        j.X = X * ZZ.sqr();
        j.Y = Y * ZZZ.sqr();
        j.Z = ZZZ;
        return j;
    }
};

}  // namespace cuzk
