/* devices/kernels/common.cl: what every kernel file shares (built first): the accumulator
 * type (double where the device has fp64), work-group sum and max, and the error flag codes. */

/* Every kernel file is written in the dialect of dialect.h (built ahead of this one), so it
 * compiles as OpenCL C and as CUDA C. Build options (OpenCL) or dialect.h's defaults (CUDA) set
 * WG (the work-group size of every launch, a power of two), HAVE_FP64 and REDUCE_GROUPS. Views
 * arrive as a buffer plus an element offset (ulong). */
#if HAVE_FP64
#ifdef __OPENCL_VERSION__
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
typedef double acc_t;
#else
typedef float acc_t;
#endif

/* the __local array size wg_sum, wg_sum_tree and wg_max need */
#define WG_BUF (WG + 1)

/* codes a kernel leaves in the error flag (KERR_* in kernel_list.h) */
#define ERR_TOKEN_FWD 1
#define ERR_TOKEN_BWD 2
#define ERR_TARGET_FWD 3
#define ERR_TARGET_BWD 4
#define ERR_TT_TOKEN_FWD 5
#define ERR_TT_TYPE_FWD 6
#define ERR_TT_TOKEN_BWD 7
#define ERR_TT_TYPE_BWD 8
#define ERR_GATHER_FWD 9
#define ERR_GATHER_BWD 10
#define ERR_TOPK_BWD 11

/* keeps the first code raised since the flag was last cleared */
DEVICE_FN void raise_error(GLOBAL int *flag, int code)
{
    ATOMIC_CMPXCHG(flag, 0, code);
}

/* The sum of v over the work-group; every item gets it. buf: WG_BUF slots. Item 0 adds the
 * WG values in order: two barriers instead of a tree's log2(WG) + 1, which is what a CPU device
 * (PoCL runs every barrier phase as a loop over the items) pays for; a fixed order either way. */
DEVICE_FN acc_t wg_sum(LOCAL_PTR acc_t *buf, acc_t v)
{
    int lid = LOCAL_ID;
    buf[lid] = v;
    BARRIER();
    if (lid == 0) {
        acc_t s = 0;
        for (int i = 0; i < WG; i++)
            s += buf[i];
        buf[WG] = s;
    }
    BARRIER();
    /* no third barrier: a following call writes buf[WG] only after its own first barrier,
     * which every item reaches after reading it here */
    return buf[WG];
}

/* the same sum as a tree of log2(WG) barrier phases; every item gets it. buf: WG_BUF slots */
DEVICE_FN acc_t wg_sum_tree(LOCAL_PTR acc_t *buf, acc_t v)
{
    int lid = LOCAL_ID;
    buf[lid] = v;
    BARRIER();
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s)
            buf[lid] += buf[lid + s];
        BARRIER();
    }
    acc_t r = buf[0];
    BARRIER();
    return r;
}

/* the max of v over the work-group; every item gets it. buf: WG_BUF slots */
DEVICE_FN float wg_max(LOCAL_PTR float *buf, float v)
{
    int lid = LOCAL_ID;
    buf[lid] = v;
    BARRIER();
    if (lid == 0) {
        float m = buf[0];
        for (int i = 1; i < WG; i++)
            m = fmax(m, buf[i]);
        buf[WG] = m;
    }
    BARRIER();
    return buf[WG];
}
