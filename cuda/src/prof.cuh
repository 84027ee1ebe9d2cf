// Phase timing for tuning, off unless the environment variable CUZK_PROFILE is
// set: CUDA events between the phases of a call, printed to stderr at its end.
#pragma once
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

namespace cuzk {

// An integer from the environment within [lo, hi], else def: knobs for
// experiments that must not need a rebuild.
inline int env_int(const char* name, int def, int lo, int hi) {
    const char* e = getenv(name);
    if (!e || !*e) return def;
    int v = atoi(e);
    return v < lo || v > hi ? def : v;
}

struct phase_timer {
    bool on = false;
    cudaStream_t st = nullptr;
    int count = 0;
    const char* names[32];
    cudaEvent_t ev[32];
    explicit phase_timer(cudaStream_t s) : st(s) {
        const char* e = getenv("CUZK_PROFILE");
        on = e && *e && *e != '0';
        mark("start");
    }
    void mark(const char* name) {
        if (!on || count >= 32) return;
        names[count] = name;
        cudaEventCreate(&ev[count]);
        cudaEventRecord(ev[count], st);
        count++;
    }
    void report(const char* what, uint64_t n, int c) {
        if (!on) return;
        cudaEventSynchronize(ev[count - 1]);
        fprintf(stderr, "%s n=%llu c=%d:", what, (unsigned long long)n, c);
        for (int i = 1; i < count; i++) {
            float ms = 0;
            cudaEventElapsedTime(&ms, ev[i - 1], ev[i]);
            fprintf(stderr, " %s %.3f", names[i], ms);
        }
        float total = 0;
        cudaEventElapsedTime(&total, ev[0], ev[count - 1]);
        fprintf(stderr, " | total %.3f ms\n", total);
        for (int i = 0; i < count; i++) cudaEventDestroy(ev[i]);
        count = 0;
    }
};

}  // namespace cuzk
