/* devices/cpu/cpu_softmax_row.c: one row of attention scores to its softmax over the keys a
 * query sees (causal end, key mask), lane-ordered sums; shared by cpu_ops_attention and _gqa. */
#include "cpu_real.h"
#include "cpu_simd.h"

#include <math.h>

/* key s is seen by a query when the key mask row km (NULL: no mask) does not mark it padding */
#define VISIBLE(km, s) (!(km) || (km)[s] != 0)

/* the largest visible score of row[0..send), lane by lane (the same value in any order);
 * -inf when no key is visible; vend = cpu_padded_end(send, T) */
static inline real visible_max(const real *row, int send, int vend, const int32_t *km)
{
    real lane[CPU_LANES];
    for (int j = 0; j < CPU_LANES; j++)
        lane[j] = -INFINITY;
    int whole = vend - vend % CPU_LANES;
    for (int base = 0; base < whole; base += CPU_LANES)
        for (int j = 0; j < CPU_LANES; j++) {
            int s = base + j;
            lane[j] = s < send && VISIBLE(km, s) && row[s] > lane[j] ? row[s] : lane[j];
        }
    real mx = -INFINITY;
    for (int s = whole; s < send; s++)
        mx = VISIBLE(km, s) && row[s] > mx ? row[s] : mx;
    for (int j = 0; j < CPU_LANES; j++)
        mx = lane[j] > mx ? lane[j] : mx;
    return mx;
}

/* row t of S (scores, already scaled) becomes softmax over the visible s < send, zero at the
 * others; a row with no visible key becomes all zero */
CPU_CLONES void cpu_softmax_row(real *restrict row, int T, int send, const int32_t *km)
{
    int vend = cpu_padded_end(send, T);
    real mx = visible_max(row, send, vend, km);
    double sum;
    /* the exps in a loop of their own and a select without a branch: GCC vectorizes neither a
     * store inside the lane sum nor a load the mask guards (5 ns an element scalar) */
    if (km)
        for (int s = 0; s < vend; s++) {
            real e = cpu_vexp(row[s] - mx);
            row[s] = (s < send) & (km[s] != 0) ? e : 0;
        }
    else
        for (int s = 0; s < vend; s++)
            row[s] = s < send ? cpu_vexp(row[s] - mx) : 0;
    CPU_LANE_SUM(sum, vend, (double)row[i]);
    real inv = sum > 0 ? (real)(1.0 / sum) : 0;
    for (int s = 0; s < vend; s++)
        row[s] = s < send ? row[s] * inv : 0;
    for (int s = vend; s < T; s++)
        row[s] = 0;
}
