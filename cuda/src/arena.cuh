// Scratch from the caller: the algorithms take their temporaries from one
// device buffer the caller allocated (and counted in its ledger), carved in
// a fixed order, instead of from cudaMalloc or the stream-ordered pool. The
// sizing calls of the C ABI run the same carving on an arena without a
// buffer, which only counts, so the size a caller is told is the size the
// call takes.
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>

namespace cuzk {

constexpr uint64_t ARENA_ALIGN = 256;  // what cudaMalloc guarantees, and what 16-byte loads want

struct arena {
    char* base = nullptr;  // nullptr: count only
    uint64_t cap = 0;
    uint64_t used = 0;

    arena() = default;
    arena(void* b, uint64_t c) : base(static_cast<char*>(b)), cap(c) {}

    bool counting() const { return base == nullptr; }

    // Takes count elements of T. A counting arena hands out nullptr; a real
    // one that is too small fails with cudaErrorMemoryAllocation, which the
    // callers report as an out-of-memory error like any other.
    template <class T>
    cudaError_t take(T** p, uint64_t count) {
        const uint64_t at = (used + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
        used = at + count * sizeof(T);
        if (counting()) {
            *p = nullptr;
            return cudaSuccess;
        }
        if (used > cap) {
            *p = nullptr;
            return cudaErrorMemoryAllocation;
        }
        *p = reinterpret_cast<T*>(base + at);
        return cudaSuccess;
    }

    cudaError_t take_bytes(void** p, uint64_t bytes) {
        char* c = nullptr;
        const cudaError_t e = take(&c, bytes);
        *p = c;
        return e;
    }
};

}  // namespace cuzk
