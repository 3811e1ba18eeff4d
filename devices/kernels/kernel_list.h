/* devices/kernels/kernel_list.h: what the host side of every backend that launches the kernels of
 * devices/kernels/ shares: the kernel ids and names (one list), the error codes kernels raise. */
#ifndef KERNEL_LIST_H
#define KERNEL_LIST_H

/* every kernel entry point of devices/kernels/<file>.cl: X(id, function name) */
#define KERNEL_LIST(X)                                                                          \
    X(K_GELU_FORWARD, gelu_forward)                                                             \
    X(K_GELU_BACKWARD, gelu_backward)                                                           \
    X(K_ADD, add)                                                                               \
    X(K_ACCUMULATE, accumulate)                                                                 \
    X(K_SCALE, scale)                                                                           \
    X(K_FAULT_ADD, fault_add)                                                                   \
    X(K_BIAS_ADD, bias_add)                                                                     \
    X(K_BIAS_BACKWARD, bias_backward)                                                           \
    X(K_GEMM_SCALE, gemm_scale)                                                                 \
    X(K_EMBEDDING_FORWARD, embedding_forward)                                                   \
    X(K_EMBEDDING_BACKWARD_WTE, embedding_backward_wte)                                         \
    X(K_EMBEDDING_BACKWARD_WPE, embedding_backward_wpe)                                         \
    X(K_LAYERNORM_FORWARD, layernorm_forward)                                                   \
    X(K_LAYERNORM_BACKWARD_INP, layernorm_backward_inp)                                         \
    X(K_LAYERNORM_BACKWARD_WB, layernorm_backward_wb)                                           \
    X(K_ATTENTION_SOFTMAX, attention_softmax)                                                   \
    X(K_ATTENTION_VALUE, attention_value)                                                       \
    X(K_ATTENTION_BACKWARD_DPRE, attention_backward_dpre)                                       \
    X(K_ATTENTION_BACKWARD_DQ, attention_backward_dq)                                           \
    X(K_ATTENTION_BACKWARD_DKV, attention_backward_dkv)                                         \
    X(K_ATTENTION_SOFTMAX_ROWS, attention_softmax_rows)                                         \
    X(K_ATTENTION_DPRE_ROWS, attention_dpre_rows)                                               \
    X(K_ATTENTION_PROBS_ROWS, attention_probs_rows)                                             \
    X(K_SOFTMAX_XENT_FORWARD, softmax_xent_forward)                                             \
    X(K_SOFTMAX_XENT_BACKWARD, softmax_xent_backward)                                           \
    X(K_ADAMW, adamw)                                                                           \
    X(K_REDUCE, reduce_partial)                                                                 \
    X(K_GELU_ERF_FORWARD, gelu_erf_forward)                                                     \
    X(K_GELU_ERF_BACKWARD, gelu_erf_backward)                                                   \
    X(K_EMBEDDING_TT_FORWARD, embedding_tt_forward)                                             \
    X(K_DROPOUT_APPLY, dropout_apply)                                                           \
    X(K_RMSNORM_FORWARD, rmsnorm_forward)                                                       \
    X(K_RMSNORM_BACKWARD_INP, rmsnorm_backward_inp)                                             \
    X(K_RMSNORM_BACKWARD_W, rmsnorm_backward_w)                                                 \
    X(K_SILU_MUL_FORWARD, silu_mul_forward)                                                     \
    X(K_SILU_MUL_BACKWARD, silu_mul_backward)                                                   \
    X(K_ROPE_FORWARD, rope_forward)                                                             \
    X(K_ROPE_BACKWARD, rope_backward)                                                           \
    X(K_GQA_FORWARD, gqa_forward)                                                               \
    X(K_GQA_BACKWARD_DQ, gqa_backward_dq)                                                       \
    X(K_GQA_BACKWARD_DKV, gqa_backward_dkv)                                                     \
    X(K_GATHER_ROWS_FORWARD, gather_rows_forward)                                               \
    X(K_TOPK_ROUTER_FORWARD, topk_router_forward)                                               \
    X(K_TOPK_ROUTER_BACKWARD, topk_router_backward)                                             \
    X(K_LOWP_ROUND, lowp_round)

#define KERNEL_ID_ENUM(id, name) id,
typedef enum { KERNEL_LIST(KERNEL_ID_ENUM) K_COUNT } kernel_id;
#undef KERNEL_ID_ENUM

/* work-groups of the sum/sumsq kernel: fixed, so the summation order never changes */
#define KERNEL_REDUCE_GROUPS 64

/* error codes kernels raise in the flag buffer (ERR_* in common.cl) */
enum { KERR_TOKEN_FWD = 1, KERR_TOKEN_BWD = 2, KERR_TARGET_FWD = 3, KERR_TARGET_BWD = 4,
       KERR_TT_TOKEN_FWD = 5, KERR_TT_TYPE_FWD = 6, KERR_TT_TOKEN_BWD = 7, KERR_TT_TYPE_BWD = 8,
       KERR_GATHER_FWD = 9, KERR_GATHER_BWD = 10, KERR_TOPK_BWD = 11 };

/* what a raised code means, naming the op */
static inline const char *kernel_error_message(int code)
{
    switch (code) {
    case KERR_TOKEN_FWD:
        return "embedding_forward: a token id is outside the rows of wte";
    case KERR_TOKEN_BWD:
        return "embedding_backward: a token id is outside the rows of dwte";
    case KERR_TARGET_FWD:
        return "softmax_xent_forward: a target is outside [0, V) and not the ignore index";
    case KERR_TARGET_BWD:
        return "softmax_xent_backward: a target is outside [0, V) and not the ignore index";
    case KERR_TT_TOKEN_FWD:
        return "embedding_tt_forward: a token id is outside the rows of wte";
    case KERR_TT_TYPE_FWD:
        return "embedding_tt_forward: a token type id is outside the rows of wtt";
    case KERR_TT_TOKEN_BWD:
        return "embedding_tt_backward: a token id is outside the rows of dwte";
    case KERR_TT_TYPE_BWD:
        return "embedding_tt_backward: a token type id is outside the rows of dwtt";
    case KERR_GATHER_FWD:
        return "gather_rows_forward: an id is outside the rows of inp";
    case KERR_GATHER_BWD:
        return "gather_rows_backward: an id is outside the rows of dinp";
    case KERR_TOPK_BWD:
        return "topk_router_backward: an expert id is outside [0, E)";
    default:
        return "a kernel raised an unknown error code";
    }
}

#endif
