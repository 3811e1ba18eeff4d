/* harness/ops/opcheck.h: the op conformance table behind `harness ops`: every device op with the
 * tensors it takes, the shapes it is tried at, its NMSE threshold, and the three checks. */
#ifndef OPCHECK_H
#define OPCHECK_H

#include <stddef.h>

#include "device.h"

#define OC_MAX_TENSORS 10

/* what an op does with a tensor: reads it, overwrites it (checked that every element is
 * written), accumulates into it (read and written), or uses it as working space */
typedef enum { OC_IN, OC_OUT, OC_ACC, OC_SCRATCH } oc_role;
/* how its test values are drawn: uniform reals in [lo, hi), ids in [0, hi), targets (ids in
 * [0, hi) with every fourth one the ignore index), or an attention key mask of rows of hi keys
 * (1 attend, 0 padding: about 30 % padding, and the second row all padding) */
typedef enum { OC_UNIFORM, OC_IDS, OC_TARGETS, OC_KEYMASK } oc_gen;

#define OC_IGNORE_INDEX (-100)

typedef struct {
    const char *name;
    oc_role role;
    dkind kind;
    size_t n;
    oc_gen gen;
    double lo, hi;
} oc_tensor;

/* one shape of one op; each op reads the fields it needs */
typedef struct {
    int B, T, C, NH, V, N, n, causal;
    int M, K, ta, tb, batch, lda, ldb, ldc; /* gemm: M x N x K */
    long sA, sB, sC;
    double alpha, beta; /* gemm; beta is also the weight decay of adamw */
    double scale;       /* scale's factor, softmax_xent_backward's scale */
    int t;              /* adamw's step */
    int alias;          /* in place: softmax_xent_forward's probs over the logits, rope_forward
                         * and dropout_forward (no mask) over their input, as models call them */
    int NTT;            /* embedding_tt: rows of the token-type table */
    int masked;         /* attention_masked: a key mask (else the view has no buffer) */
    double p;           /* dropout: drop probability */
    int step, layer, site; /* dropout: the Philox counter's fields (seed: OC_DROPOUT_SEED) */
    int NKV;            /* attention_gqa: key/value heads (query heads NH, hs = C/NH) */
    int norm;           /* topk_router: renormalize the selected weights */
    int lowp;           /* round_lowp: 1 bf16, 2 fp16 */
} oc_shape;

#define OC_DROPOUT_SEED 0x243f6a8885a308d3ULL

typedef struct {
    const char *name;
    double nmse_max; /* test-mode threshold on NMSE against the cpu reference (docs/ops.md) */
    /* fills t[] with the op's tensors at shape s; returns how many */
    int (*tensors)(const oc_shape *s, oc_tensor *t);
    /* runs the op on views of those tensors; returns the op's scalar (sum, sumsq) or 0 */
    double (*run)(device *d, const oc_shape *s, const dten *t);
    int scalar; /* the op returns a value to compare */
    void (*describe)(const oc_shape *s, char *out, size_t len);
    double (*flops)(const oc_shape *s); /* NULL: a memory-bound op, GB/s only */
} oc_op;

typedef struct {
    const oc_op *op;
    oc_shape s;
} oc_case;

/* ---- the table (opcheck_ops.c) ---- */
int oc_op_count(void);
const oc_op *oc_op_at(int i);
const oc_op *oc_find(const char *name);
/* test-mode cases (several shapes per op, odd sizes, gpt2-tiny's) and perf-mode cases */
int oc_test_cases(const oc_case **out);
int oc_perf_cases(const oc_case **out);

/* a backward op checked against central differences of its forward (grad mode) */
typedef enum { SRC_FWD, SRC_DOUT, SRC_ZERO, SRC_SCRATCH } oc_src_kind;
typedef struct {
    oc_src_kind kind;
    int idx; /* SRC_FWD: the forward's tensor; SRC_DOUT: the forward output it is the grad of */
} oc_src;
typedef enum { W_NONE, W_RANDOM, W_SCALE } oc_weight;
typedef struct {
    const char *fwd, *bwd;
    oc_shape s;
    oc_weight weight[OC_MAX_TENSORS]; /* forward outputs in the loss: sum(out * dout) or scale */
    oc_src src[OC_MAX_TENSORS];       /* where each backward tensor comes from */
    int pairs[3][2];                  /* {backward gradient tensor, forward input it is of} */
    int npairs;
} oc_grad_case;
int oc_grad_cases(const oc_grad_case **out);

/* ---- the checks (opcheck_run.c) ---- */
typedef struct {
    int pass;
    double metric;    /* test: NMSE (worst tensor); grad: relative L2 error */
    double threshold;
    double max_abs;   /* test: max |device - reference|; grad: max |fd - analytic| */
    double us;        /* perf: median microseconds per call */
    double gflops, gbps;
    char worst[24];   /* the tensor the metric comes from */
    char message[256];
} oc_result;

/* test mode: runs case c on d and on the reference ref with the same inputs; guards, poison,
 * NaN and NMSE checks. Returns 0, or -1 when the reference itself failed (message in r). */
int oc_test(device *d, device *ref, const oc_case *c, oc_result *r);
/* grad mode: the backward op against central differences of its forward on d */
int oc_grad(device *d, const oc_grad_case *g, oc_result *r);
/* perf mode: microseconds per call, GFLOP/s and GB/s */
int oc_perf(device *d, const oc_case *c, oc_result *r);

/* the threshold grad mode holds a device of element size real_size to (opcheck_run.c) */
double oc_grad_threshold(size_t real_size);

#endif
