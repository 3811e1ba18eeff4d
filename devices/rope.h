/* devices/rope.h: the cos/sin tables of rotary position embeddings (HF LlamaRotaryEmbedding,
 * default rope type) that rope_forward/backward take; header-only, for the host side. */
#ifndef ROPE_H
#define ROPE_H

#include <math.h>

/* cos[t*(hs/2) + i] and sin[...] for positions t = pos0 .. pos0+T-1 and i < hs/2 (hs even), with
 * the float32 steps HF takes: inv_freq[i] = 1 / theta^(float(2i) / hs) in float, the angle
 * float(t) * inv_freq[i] rounded to float, then cos and sin of that angle rounded to float
 * (computed in double, so within half an ulp where HF's fp32 kernels are within about one). */
static inline void rope_cos_sin(double *cos_t, double *sin_t, int pos0, int T, int hs,
                                double theta)
{
    int half = hs / 2;
    for (int i = 0; i < half; i++) {
        float e = (float)(2 * i) / (float)hs;
        float p = (float)pow((double)(float)theta, (double)e);
        float inv = 1.0f / p;
        for (int t = 0; t < T; t++) {
            float angle = (float)(pos0 + t) * inv;
            cos_t[(size_t)t * half + i] = (float)cos((double)angle);
            sin_t[(size_t)t * half + i] = (float)sin((double)angle);
        }
    }
}

#endif
