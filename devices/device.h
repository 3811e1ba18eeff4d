/* devices/device.h: the one interface every device backend fills (a vtable of memory and ops).
 * Model code calls a device only through these functions; buffers are opaque handles. */
#ifndef DEVICE_H
#define DEVICE_H

#include <stddef.h>
#include <stdint.h>

/* ---- buffers ------------------------------------------------------------------------------
 * A buffer holds n elements of one kind: DT_REAL (the device's own floating type: fp32 on cpu
 * and opencl, fp64 on cpu64) or DT_I32 (token ids, targets). Model code never dereferences it;
 * it moves data with the upload/download calls, which convert from/to host float or double. */
typedef enum { DT_REAL = 0, DT_I32 = 1 } dkind;

typedef struct dbuf dbuf; /* defined by each backend; it must begin with a dbuf_head */
typedef struct {
    size_t n;      /* elements */
    dkind kind;
    size_t bytes;  /* what the allocation accounts for */
} dbuf_head;

/* A view of n elements starting at element off of buf. Ops take views, so parameters and
 * activations can live in one allocation each with named views into it (as llm.c does). */
typedef struct {
    dbuf *buf;
    size_t off;
    size_t n;
} dten;

typedef struct device device;

/* The site word (counter c1) of each dropout a model draws, one per place in a layer, so no two
 * dropouts of one step share Philox bits (docs/ops.md, "Philox layout"). */
enum {
    DROPOUT_SITE_EMBED = 0,      /* after the embeddings */
    DROPOUT_SITE_ATTN_PROBS = 1, /* the attention probabilities (inside the attention ops) */
    DROPOUT_SITE_ATTN_OUT = 2,   /* the attention block's output projection */
    DROPOUT_SITE_MLP_OUT = 3     /* the MLP block's output */
};

/* Dropout of the attention probabilities for attention_masked_forward/backward: drop
 * probability p in [0, 1], and the Philox key and counter words; the site is
 * DROPOUT_SITE_ATTN_PROBS. A NULL pointer or p = 0 means no dropout. */
typedef struct {
    double p;
    uint64_t seed;
    uint32_t step, layer;
} attn_dropout;

/* ---- the backend table ----------------------------------------------------------------------
 * Conventions for every op:
 *  - all tensors are contiguous, row-major; dimension names follow GPT-2 (B batch, T time,
 *    C channels, NH heads, V vocabulary, N = rows);
 *  - "+=" below means the op ACCUMULATES into that output (backward ops accumulate into every
 *    gradient they produce, so residual branches add up; callers zero gradients first);
 *  - scalars come in as double and the backend rounds them to its element type;
 *  - ops return nothing: a backend that hits an error records it with device_fail() and turns
 *    every later op into a no-op, so callers check device_error() at the end of a phase. */
typedef struct device_i {
    void (*close)(device *d);

    /* memory: alloc returns NULL (and calls device_fail) when it cannot. Use the device_*
     * wrappers in device.c instead of these so the harness's own byte accounting stays right. */
    dbuf *(*alloc)(device *d, size_t n, dkind kind);
    void (*free)(device *d, dbuf *b);
    void (*upload)(device *d, dten dst, const float *src);
    void (*upload_f64)(device *d, dten dst, const double *src);
    void (*upload_i32)(device *d, dten dst, const int32_t *src);
    void (*download)(device *d, float *dst, dten src);
    void (*download_f64)(device *d, double *dst, dten src);
    void (*download_i32)(device *d, int32_t *dst, dten src);
    void (*zero)(device *d, dten t);
    void (*copy)(device *d, dten dst, dten src); /* dst = src, same n */
    void (*synchronize)(device *d);
    size_t (*mem_used)(device *d); /* what the device/driver reports as used, 0 if unknown */

    /* embedding: out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]; tokens is DT_I32 [B,T] */
    void (*embedding_forward)(device *d, dten out, dten tokens, dten wte, dten wpe, int B, int T,
                              int C);
    /* dwte[tokens[b,t],:] += dout[b,t,:]; dwpe[t,:] += dout[b,t,:] */
    void (*embedding_backward)(device *d, dten dwte, dten dwpe, dten dout, dten tokens, int B,
                               int T, int C);

    /* layernorm over the last dim C of inp[N,C]: out = (x-mean)*rstd*w + b; saves mean[N],
     * rstd[N] (rstd = 1/sqrt(var + eps), biased variance as PyTorch) */
    void (*layernorm_forward)(device *d, dten out, dten mean, dten rstd, dten inp, dten w, dten b,
                              int N, int C, double eps);
    /* dinp += , dw += , db += */
    void (*layernorm_backward)(device *d, dten dinp, dten dw, dten db, dten dout, dten inp,
                               dten w, dten mean, dten rstd, int N, int C);

    /* strided-batched row-major GEMM: for i in [0,batch):
     *   C_i[M,N] = alpha * op(A_i)[M,K] * op(B_i)[K,N] + beta * C_i
     * op(X) = X or X^T (transA/transB nonzero); lda/ldb/ldc are row-major leading dimensions;
     * A_i starts strideA elements after A_{i-1} (likewise B, C). beta = 1 accumulates. */
    void (*gemm)(device *d, int transA, int transB, int M, int N, int K, double alpha, dten A,
                 int lda, long strideA, dten Bm, int ldb, long strideB, double beta, dten Cm,
                 int ldc, long strideC, int batch);
    /* out[n,c] += bias[c] */
    void (*bias_add)(device *d, dten out, dten bias, int N, int C);
    /* dbias[c] += sum_n dout[n,c] */
    void (*bias_backward)(device *d, dten dbias, dten dout, int N, int C);

    /* multi-head self-attention on qkv[B,T,3C] laid out [q | k | v], head h uses channels
     * [h*hs, (h+1)*hs), hs = C/NH. att[B,NH,T,T] keeps the softmax probabilities (zero above
     * the diagonal when causal); out[B,T,C] = att . v, heads concatenated. Scale 1/sqrt(hs). */
    void (*attention_forward)(device *d, dten out, dten att, dten qkv, int B, int T, int C,
                              int NH, int causal);
    /* dqkv += ; scratch is [B,NH,T,T] of working space the op may overwrite */
    void (*attention_backward)(device *d, dten dqkv, dten scratch, dten dout, dten qkv, dten att,
                               int B, int T, int C, int NH, int causal);

    /* GELU, tanh form (HF "gelu_new"): 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) */
    void (*gelu_forward)(device *d, dten out, dten inp, int n);
    void (*gelu_backward)(device *d, dten dinp, dten inp, dten dout, int n); /* dinp += */

    void (*add)(device *d, dten out, dten a, dten b, int n);  /* out = a + b (residual) */
    void (*accumulate)(device *d, dten dst, dten src, int n); /* dst += src */
    void (*scale)(device *d, dten x, double s, int n);        /* x *= s */

    /* softmax cross-entropy over logits[N,V] with targets[N] (DT_I32): probs[N,V] = softmax,
     * losses[N] = -log probs[n, target]; a row whose target == ignore_index gets loss 0. */
    void (*softmax_xent_forward)(device *d, dten losses, dten probs, dten logits, dten targets,
                                 int N, int V, int ignore_index);
    /* dlogits[n,:] += scale * (probs[n,:] - onehot(target)) for rows not ignored */
    void (*softmax_xent_backward)(device *d, dten dlogits, dten probs, dten targets, int N, int V,
                                  int ignore_index, double scale);

    /* fused AdamW, PyTorch semantics: p -= lr*wd*p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
     * p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps). t counts from 1. */
    void (*adamw)(device *d, dten p, dten g, dten m, dten v, int n, double lr, double beta1,
                  double beta2, double eps, double weight_decay, int t);

    /* reductions, returned to the host in double */
    double (*sumsq)(device *d, dten x, int n);
    double (*sum)(device *d, dten x, int n);

    /* ---- encoder (BERT) ops; the GPT-2 ops above are unchanged by them -------------------- */

    /* embedding with token types (BertEmbeddings, position ids 0..T-1), added in its order:
     * out[b,t,:] = (wte[tokens[b,t],:] + wtt[types[b,t],:]) + wpe[t,:]; types is DT_I32 [B,T],
     * each an index of a row of wtt (wtt.n / C rows) */
    void (*embedding_tt_forward)(device *d, dten out, dten tokens, dten types, dten wte,
                                 dten wpe, dten wtt, int B, int T, int C);
    /* dwte[tokens[b,t],:] += dout[b,t,:]; dwtt[types[b,t],:] += ; dwpe[t,:] += */
    void (*embedding_tt_backward)(device *d, dten dwte, dten dwpe, dten dwtt, dten dout,
                                  dten tokens, dten types, int B, int T, int C);

    /* attention_forward/backward with an optional key (padding) mask keymask[B,T] (DT_I32; 0 =
     * padding, any other value = attend; a view with no buffer = no mask, and then results are
     * bit for bit attention_forward's). Query (b,t) attends to the keys s with keymask[b,s] != 0
     * (and s <= t when causal): their probabilities are HF BERT's (the additive large negative
     * gives the others exactly 0), the others get att = 0. A row with no key to attend to gets
     * att = 0 everywhere, out = 0 and no gradient (docs/ops.md says why that is safe).
     * drop (NULL or p = 0: none, results bit for bit as without it) drops attention
     * probabilities as PyTorch's eager attention does: att keeps the softmax (pre-dropout);
     * out = att_d . v with att_d[i] = keep_i ? att[i] * (1/(1-p)) : 0, keep_i drawn as
     * dropout_forward draws it with site DROPOUT_SITE_ATTN_PROBS and i the flat index in att
     * [B,NH,T,T] (which must be < 2^34). The backward redraws the same keep_i: dv += att_d^T dout,
     * d(att) = keep_i * (1/(1-p)) * (dout v^T), then the softmax backward. */
    void (*attention_masked_forward)(device *d, dten out, dten att, dten qkv, dten keymask,
                                     int B, int T, int C, int NH, int causal,
                                     const attn_dropout *drop);
    void (*attention_masked_backward)(device *d, dten dqkv, dten scratch, dten dout, dten qkv,
                                      dten att, dten keymask, int B, int T, int C, int NH,
                                      int causal, const attn_dropout *drop);

    /* GELU, exact erf form (HF "gelu", BERT's hidden_act): 0.5x(1 + erf(x / sqrt(2))) */
    void (*gelu_erf_forward)(device *d, dten out, dten inp, int n);
    void (*gelu_erf_backward)(device *d, dten dinp, dten inp, dten dout, int n); /* dinp += */

    /* dropout with PyTorch's inverted scaling: out[i] = keep_i ? inp[i] * (1/(1-p)) : 0, the
     * scale computed in double and rounded once to the element type (p = 1: out = 0). keep_i
     * comes from Philox4x32-10 keyed by seed, counter (i/4, site, layer, step), word i%4,
     * compared with ceil(p 2^32) (devices/philox.h, docs/ops.md), so every device draws the
     * same mask. mask (optional, DT_I32 [n]) gets keep_i as 1/0. out may be inp. 0 <= p <= 1. */
    void (*dropout_forward)(device *d, dten out, dten mask, dten inp, int n, double p,
                            uint64_t seed, uint32_t step, uint32_t layer, uint32_t site);
    /* dinp[i] += keep_i ? dout[i] * (1/(1-p)) : 0, keep_i redrawn from the same counters */
    void (*dropout_backward)(device *d, dten dinp, dten dout, int n, double p, uint64_t seed,
                             uint32_t step, uint32_t layer, uint32_t site);

    /* ---- decoder (Llama) ops ---------------------------------------------------------------- */

    /* RMSNorm (HF LlamaRMSNorm) over the last dimension C of inp[N,C]: rstd[n] =
     * 1/sqrt(mean_c inp[n,c]^2 + eps) (sum of squares accumulated in double, or the OpenCL
     * accumulator type, then rounded to the element type); out = (inp * rstd) * w, each product
     * rounded to the element type as HF does in fp32. */
    void (*rmsnorm_forward)(device *d, dten out, dten rstd, dten inp, dten w, int N, int C,
                            double eps);
    /* xhat = inp * rstd: dinp += rstd * (dout w - xhat mean_c(dout w xhat)); dw[c] +=
     * sum_n dout xhat. rstd is the forward's. */
    void (*rmsnorm_backward)(device *d, dten dinp, dten dw, dten dout, dten inp, dten w,
                             dten rstd, int N, int C);

    /* SwiGLU's gating (HF LlamaMLP: act_fn(gate_proj(x)) * up_proj(x), act_fn SiLU) over n
     * elements of two separate views (gate and up are the two projections' outputs, e.g.
     * [N, I] each): out = silu(gate) * up, silu(g) = g / (1 + exp(-g)) in the element type. */
    void (*silu_mul_forward)(device *d, dten out, dten gate, dten up, int n);
    /* s = sigmoid(gate): dgate += dout * up * s * (1 + gate (1 - s)); dup += dout * silu(gate) */
    void (*silu_mul_backward)(device *d, dten dgate, dten dup, dten dout, dten gate, dten up,
                              int n);

    /* rotary position embedding, HF Llama's rotate_half convention, on x[B,T,NH,hs] (q with the
     * query heads or k with the key/value heads; hs even, h = hs/2): with c = cos[t,i],
     * s = sin[t,i] (tables [T,h], devices/rope.h builds HF's), i < h:
     * out[..,i] = x[..,i] c - x[..,i+h] s, out[..,i+h] = x[..,i+h] c + x[..,i] s.
     * out may be inp (in place). */
    void (*rope_forward)(device *d, dten out, dten inp, dten cos_t, dten sin_t, int B, int T,
                         int NH, int hs);
    /* dinp += the transposed rotation of dout (the inverse rotation when c^2 + s^2 = 1):
     * dinp[..,i] += dout[..,i] c + dout[..,i+h] s, dinp[..,i+h] += dout[..,i+h] c - dout[..,i] s */
    void (*rope_backward)(device *d, dten dinp, dten dout, dten cos_t, dten sin_t, int B, int T,
                          int NH, int hs);

    /* grouped-query attention (HF Llama's eager attention with repeat_kv): q[B,T,NH,hs],
     * k and v [B,T,NKV,hs], NH a multiple of NKV; query head h uses key/value head
     * h / (NH/NKV). att[B,NH,T,T] = softmax(q k^T / sqrt(hs)) over the keys a query sees (s <= t
     * when causal; keymask as attention_masked_forward's: no buffer = none, DT_I32 [B,T], 0 =
     * padding); att = 0 elsewhere and in a row with no key to see (whose out is 0).
     * out[B,T,NH,hs] = att . v. Scores, softmax sums and dot products accumulate in double (the
     * OpenCL accumulator type). */
    void (*attention_gqa_forward)(device *d, dten out, dten att, dten q, dten k, dten v,
                                  dten keymask, int B, int T, int NH, int NKV, int hs,
                                  int causal);
    /* dq, dk, dv += (each key/value head summing over its NH/NKV query heads); att is the
     * forward's; scratch is [B,NH,T] of working space the op may overwrite */
    void (*attention_gqa_backward)(device *d, dten dq, dten dk, dten dv, dten scratch, dten dout,
                                   dten q, dten k, dten v, dten att, dten keymask, int B, int T,
                                   int NH, int NKV, int hs, int causal);

    /* expert gather (torch index_select on rows): out[m,:] = inp[idx[m],:] for m < M, inp
     * [R,C], idx DT_I32 [M] with every id in [0, R) (else a device error naming the op) */
    void (*gather_rows_forward)(device *d, dten out, dten inp, dten idx, int M, int R, int C);
    /* its backward, the scatter (index_add_): dinp[idx[m],:] += dout[m,:], rows added in m
     * order (a repeated id sums its rows deterministically) */
    void (*gather_rows_backward)(device *d, dten dinp, dten dout, dten idx, int M, int R, int C);

    /* top-k routing (HF Mixtral's router): probs[N,E] = softmax(logits) over the E experts
     * (sums in double or the OpenCL accumulator type), ids[N,K] (DT_I32) the K largest in
     * descending order, weights[N,K] their probabilities, divided by their sum when norm
     * (norm_topk_prob). 1 <= K <= E <= TOPK_MAX_EXPERTS (512). Ties: ids are exactly
     * torch.topk(logits, K).indices on CPU, ties in the order libstdc++'s partial_sort (K*64 <=
     * E) or nth_element + sort leave them (devices/topk_select.h), the same on every device.
     * Chosen on the logits, not on each device's rounded probabilities (transformers' router
     * takes top-k of its fp32 softmax: where that rounds neighbouring logits to equal
     * probabilities, its ids can differ; docs/ops.md). */
    void (*topk_router_forward)(device *d, dten weights, dten ids, dten probs, dten logits, int N,
                                int E, int K, int norm);
    /* dlogits += the gradient through the (renormalized) selected probabilities and the
     * softmax, from the forward's weights, ids and probs; an id outside [0, E) is an error */
    void (*topk_router_backward)(device *d, dten dlogits, dten dweights, dten weights, dten ids,
                                 dten probs, int N, int E, int K, int norm);
} device_i;

#define DEVICE_STR 128
#define DEVICE_ERR 512

/* A device handle: identity filled by the backend's open function, memory accounting kept by
 * the device_* wrappers, the first error recorded sticky. */
struct device {
    const device_i *ops;
    void *ctx;                          /* backend state */
    char backend[32];                   /* "cpu", "cpu64", "opencl", "cuda" */
    char name[DEVICE_STR];              /* e.g. the CPU model or GPU name */
    char vendor[DEVICE_STR];
    char driver_version[DEVICE_STR];
    char runtime_version[DEVICE_STR];
    char dtype[16];                     /* element type of DT_REAL: "fp32", "fp64" */
    size_t real_size;                   /* bytes of one DT_REAL element */
    size_t mem_total;                   /* device memory in bytes (0 if unknown) */
    size_t mem_current, mem_peak;       /* harness accounting of live device bytes */
    int perturb;                        /* cpu backends: 0 the normal bits; 1..7 another summation
                                           order of the GEMMs, the same math (the ensemble of
                                           `baseline record --ensemble`, docs/compare.md) */
    int failed;
    char err[DEVICE_ERR];
    /* low precision (devices/lowp.h, docs/precision.md). A backend that can round to bf16/fp16
     * fills round_lowp at open: x[0, n) rounded in place to nearest even, mode 1 bf16, 2 fp16
     * (NaN stays NaN, fp16 overflows to +-Inf and keeps IEEE subnormals); NULL: it cannot. The
     * rest is device_set_lowp's alone: lowp the mode (0 none), loss_scale the factor its
     * softmax_xent_backward applies (fp16 loss scaling; 1 otherwise), native_ops the backend's
     * own table while ops points at lowp_ops. */
    void (*round_lowp)(device *d, dten x, int n, int mode);
    int lowp;
    double loss_scale;
    const device_i *native_ops;
    device_i lowp_ops;
};

/* ---- generic wrappers (devices/device.c) ---- */
dten device_alloc(device *d, size_t n, dkind kind); /* .buf NULL on failure */
void device_free(device *d, dten t);
dten dten_view(dten t, size_t off, size_t n);       /* sub-view; asserts bounds */
void device_fail(device *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *device_error(const device *d);           /* NULL when no error */
/* Argument checks every backend's ops share. Each returns 1 when fine; otherwise it records
 * "<d->backend>: <op>: ..." with device_fail and returns 0. */
/* t has a buffer of the given kind, lies inside it and holds at least need elements */
int device_view_ok(device *d, const char *op, const char *name, dten t, size_t need, dkind kind);
/* every one of the ndims sizes is >= min */
int device_dims_ok(device *d, const char *op, const int *dims, int ndims, int min);
void device_reset_peak(device *d);
void device_close(device *d);

/* ---- registry (devices/registry.c) ---- */
/* spec: "cpu", "cpu64", "opencl", "opencl:1", "cuda:0", "plugin:PATH[:N]" (an out-of-tree
 * backend, devices/device_plugin.h) ... On failure returns NULL and writes a message into err.
 * A backend not compiled in or absent at run time is an error, never a
 * silent fallback to another device. */
device *device_open(const char *spec, char *err, size_t errlen);
/* the longest device spec a list of them holds (`harness ops --device`, `run --compare`), NUL
 * included: room for a plugin by its full path */
#define DEVICE_SPEC_MAX 1024
/* names of the backends compiled into this binary and "plugin", NULL-terminated */
const char *const *device_backends(void);

/* One line of `harness devices`: a spec that device_open accepts and what it names. */
typedef struct {
    char spec[64];
    char name[DEVICE_STR];
    char vendor[DEVICE_STR];
    char dtype[16];
    size_t mem_total;
} device_info;
/* fills up to max entries for every device of every compiled-in backend; returns the count */
int device_list(device_info *out, int max);
/* one line per compiled-in backend that has no device here and says why (e.g. "cuda: no CUDA
 * device on this machine (...)"), newline-terminated, into out; returns the number of lines */
int device_notes(char *out, size_t len);

#endif
