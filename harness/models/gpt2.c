/* harness/models/gpt2.c: the GPT-2 model over the device interface: the parameter table with Hugging
 * Face names, weight initialisation, forward and backward (the rest is models/model.c). */
#include "gpt2_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util/util.h"

#define IGNORE_INDEX MODEL_IGNORE_INDEX
#define MAX_PARAMS_FIXED 4                   /* wte, wpe, ln_f.weight, ln_f.bias */
#define PARAMS_PER_LAYER 12

/* views of one layer's activations kept for backward */
typedef struct {
    dten ln1, ln1_mean, ln1_rstd, qkv, att, atty, attproj, residual2;
    dten ln2, ln2_mean, ln2_rstd, fch, fch_gelu, fcproj, residual3;
} layer_acts;

struct gpt2 {
    device *d;
    gpt2_config c;
    int B, T;
    int n_params;
    param_info *params;
    dten param_mem, grad_mem, m_mem, v_mem;
    /* activations kept for backward */
    dten act_mem;
    dten encoded, lnf, lnf_mean, lnf_rstd, logits, probs, losses;
    layer_acts *layers;
    /* backward scratch, reused by every layer */
    dten scratch_mem;
    dten dres, dtmp, dqkv, dfch, dfch_gelu, datt, dlogits;
    dten tokens, targets; /* DT_I32 [B*T] */
    int n_valid;          /* targets not ignored in the last forward */
    uint64_t drop_seed;   /* the last forward's dropout counters, redrawn by backward */
    uint32_t drop_step;
};

/* ---- parameter table ------------------------------------------------------------------------ */

static void add_param(gpt2 *m, size_t *off, const char *name, int d0, int d1, param_role role)
{
    param_info *p = &m->params[m->n_params++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = d1 ? 2 : 1;
    p->shape[0] = d0;
    p->shape[1] = d1;
    p->n = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    p->offset = *off;
    p->role = role;
    *off += p->n;
}

static size_t build_param_table(gpt2 *m)
{
    const gpt2_config *c = &m->c;
    int C = c->n_embd;
    size_t off = 0;
    char name[64];
    m->params = calloc((size_t)c->n_layer * PARAMS_PER_LAYER + MAX_PARAMS_FIXED, sizeof *m->params);
    if (!m->params)
        return 0;
    add_param(m, &off, "wte.weight", c->vocab_size, C, PARAM_EMBEDDING);
    add_param(m, &off, "wpe.weight", c->n_positions, C, PARAM_EMBEDDING);
    static const struct {
        const char *suffix;
        int rows, cols; /* in units of C; cols 0 = vector */
        param_role role;
    } layer[PARAMS_PER_LAYER] = {
        {"ln_1.weight", 1, 0, PARAM_NORM},        {"ln_1.bias", 1, 0, PARAM_BIAS},
        {"attn.c_attn.weight", 1, 3, PARAM_MATRIX}, {"attn.c_attn.bias", 3, 0, PARAM_BIAS},
        {"attn.c_proj.weight", 1, 1, PARAM_MATRIX}, {"attn.c_proj.bias", 1, 0, PARAM_BIAS},
        {"ln_2.weight", 1, 0, PARAM_NORM},        {"ln_2.bias", 1, 0, PARAM_BIAS},
        {"mlp.c_fc.weight", 1, 4, PARAM_MATRIX},  {"mlp.c_fc.bias", 4, 0, PARAM_BIAS},
        {"mlp.c_proj.weight", 4, 1, PARAM_MATRIX}, {"mlp.c_proj.bias", 1, 0, PARAM_BIAS},
    };
    for (int l = 0; l < c->n_layer; l++)
        for (int k = 0; k < PARAMS_PER_LAYER; k++) {
            snprintf(name, sizeof name, "h.%d.%s", l, layer[k].suffix);
            add_param(m, &off, name, layer[k].rows * C, layer[k].cols * C, layer[k].role);
        }
    add_param(m, &off, "ln_f.weight", C, 0, PARAM_NORM);
    add_param(m, &off, "ln_f.bias", C, 0, PARAM_BIAS);
    return off;
}

void gpt2_state(const gpt2 *m, model_state *st)
{
    *st = (model_state){m->n_params, m->params, m->param_mem, m->grad_mem, m->m_mem, m->v_mem};
}

static dten gpt2_param_view(const gpt2 *m, int i)
{
    return dten_view(m->param_mem, m->params[i].offset, m->params[i].n);
}

static dten gpt2_grad_view(const gpt2 *m, int i)
{
    return dten_view(m->grad_mem, m->params[i].offset, m->params[i].n);
}

/* index of layer l's k-th parameter (k in the order of build_param_table's layer list) */
static dten P(const gpt2 *m, int l, int k) { return gpt2_param_view(m, 2 + l * PARAMS_PER_LAYER + k); }
static dten G(const gpt2 *m, int l, int k) { return gpt2_grad_view(m, 2 + l * PARAMS_PER_LAYER + k); }
enum { LN1_W, LN1_B, ATTN_W, ATTN_B, APROJ_W, APROJ_B, LN2_W, LN2_B, FC_W, FC_B, FCPROJ_W, FCPROJ_B };
#define WTE 0
#define WPE 1
#define LNF_W(m) (2 + (m)->c.n_layer * PARAMS_PER_LAYER)
#define LNF_B(m) (LNF_W(m) + 1)

/* ---- sizes, in 64 bits, before anything is allocated ----------------------------------------- */

typedef struct {
    uint64_t BT, att, logits, mlp;  /* the largest activation tensors */
    uint64_t params, acts, scratch; /* elements of each allocation */
} plan;

static void plan_sizes(const gpt2_config *c, int B, int T, plan *p)
{
    uint64_t C = (uint64_t)c->n_embd, L = (uint64_t)c->n_layer, BT = size_mul((uint64_t)B, T);
    uint64_t BTC = size_mul(BT, C);
    p->BT = BT;
    p->att = size_mul(size_mul((uint64_t)B, (uint64_t)c->n_head), size_mul(T, T));
    p->logits = size_mul(BT, (uint64_t)c->vocab_size);
    p->mlp = size_mul(4, BTC);
    p->params = gpt2_config_param_count(c);
    /* as layout_activations and layout_scratch carve them */
    uint64_t layer = size_add(size_add(size_mul(18, BTC), size_mul(4, BT)), p->att);
    p->acts = size_add(size_add(size_mul(L, layer), size_mul(2, BTC)),
                       size_add(size_mul(3, BT), size_mul(2, p->logits)));
    p->scratch = size_add(size_add(size_mul(13, BTC), p->att), p->logits);
}

static double gib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

/* the tensors of batch B x sequence T within GPT2_MAX_ELEMENTS; 0, or 1 with why */
static int check_tensors(const gpt2_config *c, int B, int T, const plan *p, char *why,
                         size_t len)
{
    const struct {
        uint64_t n;
        const char *what;
    } t[] = {{p->params, "parameters in all"},
             {p->BT, "tokens per step"},
             {p->mlp, "elements in one MLP activation (4 x n_embd per token)"},
             {p->att, "elements in one attention matrix (n_head x seq_len per token)"},
             {p->logits, "elements in the logits (vocab_size per token)"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].n > GPT2_MAX_ELEMENTS) {
            snprintf(why, len,
                     "train.batch_size %d x data.seq_len %d with n_embd %d, n_head %d, "
                     "vocab_size %d, n_layer %d: %llu %s, over the limit of %llu",
                     B, T, c->n_embd, c->n_head, c->vocab_size, c->n_layer,
                     (unsigned long long)t[i].n, t[i].what,
                     (unsigned long long)GPT2_MAX_ELEMENTS);
            return 1;
        }
    return 0;
}

int gpt2_check_fit(const gpt2_config *c, int B, int T, const device *d, char *why, size_t len)
{
    if (B < 1 || T < 2 || T > c->n_positions) {
        snprintf(why, len, "train.batch_size %d x data.seq_len %d does not fit n_positions %d "
                 "(batch >= 1, 2 <= seq_len <= n_positions)", B, T, c->n_positions);
        return 1;
    }
    plan p;
    plan_sizes(c, B, T, &p);
    if (check_tensors(c, B, T, &p, why, len))
        return 1;
    uint64_t state = size_mul(size_mul(4, p.params), d->real_size);
    uint64_t acts = size_mul(size_add(p.acts, p.scratch), d->real_size);
    uint64_t total = size_add(size_add(state, acts), size_mul(8, p.BT));
    if (total >= SIZE_MAX / 2 || (d->mem_total && total > d->mem_total)) {
        snprintf(why, len,
                 "the model needs %.2f GiB on %s (%llu parameters: %.2f GiB with gradients and "
                 "AdamW state; activations for train.batch_size %d x data.seq_len %d: %.2f GiB) "
                 "but the device has %.2f GiB",
                 gib(total), d->backend, (unsigned long long)p.params, gib(state), B, T,
                 gib(acts), gib(d->mem_total));
        return 1;
    }
    return 0;
}

/* ---- allocation ------------------------------------------------------------------------------ */

/* carves n elements off the front of a bump region */
static dten carve(dten region, size_t *off, size_t n)
{
    dten v = dten_view(region, *off, n);
    *off += n;
    return v;
}

/* lays out (or, with region.buf NULL, only counts) the activations kept for backward */
static size_t layout_activations(gpt2 *m, dten region)
{
    size_t BT = (size_t)m->B * m->T, C = m->c.n_embd, V = m->c.vocab_size;
    size_t att = (size_t)m->B * m->c.n_head * m->T * m->T, off = 0;
    region.n = (size_t)-1 / 2;
    m->encoded = carve(region, &off, BT * C);
    for (int l = 0; l < m->c.n_layer; l++) {
        layer_acts *a = &m->layers[l];
        a->ln1 = carve(region, &off, BT * C);
        a->ln1_mean = carve(region, &off, BT);
        a->ln1_rstd = carve(region, &off, BT);
        a->qkv = carve(region, &off, BT * 3 * C);
        a->att = carve(region, &off, att);
        a->atty = carve(region, &off, BT * C);
        a->attproj = carve(region, &off, BT * C);
        a->residual2 = carve(region, &off, BT * C);
        a->ln2 = carve(region, &off, BT * C);
        a->ln2_mean = carve(region, &off, BT);
        a->ln2_rstd = carve(region, &off, BT);
        a->fch = carve(region, &off, BT * 4 * C);
        a->fch_gelu = carve(region, &off, BT * 4 * C);
        a->fcproj = carve(region, &off, BT * C);
        a->residual3 = carve(region, &off, BT * C);
    }
    m->lnf = carve(region, &off, BT * C);
    m->lnf_mean = carve(region, &off, BT);
    m->lnf_rstd = carve(region, &off, BT);
    m->logits = carve(region, &off, BT * V);
    m->probs = carve(region, &off, BT * V);
    m->losses = carve(region, &off, BT);
    return off;
}

/* backward scratch: one set reused by every layer */
static size_t layout_scratch(gpt2 *m, dten region)
{
    size_t BT = (size_t)m->B * m->T, C = m->c.n_embd, V = m->c.vocab_size, off = 0;
    region.n = (size_t)-1 / 2;
    m->dres = carve(region, &off, BT * C);
    m->dtmp = carve(region, &off, BT * C);
    m->dqkv = carve(region, &off, BT * 3 * C);
    m->dfch = carve(region, &off, BT * 4 * C);
    m->dfch_gelu = carve(region, &off, BT * 4 * C);
    m->datt = carve(region, &off, (size_t)m->B * m->c.n_head * m->T * m->T);
    m->dlogits = carve(region, &off, BT * V);
    return off;
}

static int alloc_all(gpt2 *m)
{
    device *d = m->d;
    size_t np = m->param_mem.n, BT = (size_t)m->B * m->T;
    m->param_mem = device_alloc(d, np, DT_REAL);
    m->grad_mem = device_alloc(d, np, DT_REAL);
    m->m_mem = device_alloc(d, np, DT_REAL);
    m->v_mem = device_alloc(d, np, DT_REAL);
    dten none = {0};
    plan p;
    plan_sizes(&m->c, m->B, m->T, &p);
    size_t n_act = layout_activations(m, none), n_scratch = layout_scratch(m, none);
    if (n_act != p.acts || n_scratch != p.scratch || np != p.params) {
        log_error("gpt2: internal error: the size plan (%llu, %llu) differs from the layout "
                  "(%zu, %zu)", (unsigned long long)p.acts, (unsigned long long)p.scratch, n_act,
                  n_scratch);
        return 1;
    }
    m->act_mem = device_alloc(d, n_act, DT_REAL);
    m->scratch_mem = device_alloc(d, n_scratch, DT_REAL);
    m->tokens = device_alloc(d, BT, DT_I32);
    m->targets = device_alloc(d, BT, DT_I32);
    if (device_error(d)) {
        log_error("%s: allocating the model: %s", d->backend, device_error(d));
        return 1;
    }
    layout_activations(m, m->act_mem);
    layout_scratch(m, m->scratch_mem);
    return 0;
}

gpt2 *gpt2_create(device *d, const gpt2_config *c, int B, int T)
{
    char why[512];
    if (gpt2_check_fit(c, B, T, d, why, sizeof why)) {
        log_error("gpt2: %s", why);
        return NULL;
    }
    gpt2 *m = calloc(1, sizeof *m);
    if (!m || !(m->layers = calloc((size_t)c->n_layer, sizeof *m->layers))) {
        free(m);
        log_error("gpt2: out of host memory");
        return NULL;
    }
    m->d = d;
    m->c = *c;
    m->B = B;
    m->T = T;
    m->param_mem.n = build_param_table(m);
    if (!m->params || alloc_all(m) != 0) {
        if (!m->params)
            log_error("gpt2: out of host memory");
        gpt2_free(m);
        return NULL;
    }
    return m;
}

void gpt2_free(gpt2 *m)
{
    if (!m)
        return;
    dten all[] = {m->param_mem, m->grad_mem, m->m_mem, m->v_mem, m->act_mem, m->scratch_mem,
                  m->tokens, m->targets};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        device_free(m->d, all[i]);
    free(m->params);
    free(m->layers);
    free(m);
}

size_t gpt2_activation_bytes(const gpt2 *m)
{
    return m->act_mem.n * m->d->real_size;
}

static int check_device(gpt2 *m, const char *phase);

/* ---- initialisation -------------------------------------------------------------------------- */

int gpt2_init_weights(const gpt2 *m, uint64_t seed, float *host)
{
    rng_state r;
    rng_seed(&r, seed);
    double std = m->c.initializer_range;
    double proj_std = std / sqrt(2.0 * m->c.n_layer);
    for (int i = 0; i < m->n_params; i++) {
        const param_info *p = &m->params[i];
        float *w = host + p->offset;
        size_t nlen = strlen(p->name);
        int is_proj = nlen > 13 && strcmp(p->name + nlen - 13, "c_proj.weight") == 0;
        for (size_t j = 0; j < p->n; j++) {
            if (p->role == PARAM_MATRIX || p->role == PARAM_EMBEDDING)
                w[j] = (float)rng_normal(&r, 0.0, is_proj ? proj_std : std);
            else
                w[j] = p->role == PARAM_NORM ? 1.0f : 0.0f;
        }
    }
    return 0;
}

/* ---- forward --------------------------------------------------------------------------------- */

/* out[N,OC] = inp[N,IC] . W[IC,OC] + b (Conv1D layout) */
static void linear_forward(device *d, dten out, dten inp, dten w, dten b, int N, int IC, int OC)
{
    d->ops->gemm(d, 0, 0, N, OC, IC, 1.0, inp, IC, 0, w, OC, 0, 0.0, out, OC, 0, 1);
    d->ops->bias_add(d, out, b, N, OC);
}

/* dropout of x in place at (layer, site) with the last forward's counters; nothing when p = 0 */
static void dropout_in_place(gpt2 *m, dten x, double p, uint32_t layer, uint32_t site)
{
    if (p > 0)
        m->d->ops->dropout_forward(m->d, x, (dten){0}, x, (int)x.n, p, m->drop_seed,
                                   m->drop_step, layer, site);
}

/* attention-probability dropout of layer l, or NULL when attn_pdrop is 0 (no dropout code) */
static const attn_dropout *attn_drop(const gpt2 *m, int l, attn_dropout *buf)
{
    if (m->c.attn_pdrop == 0)
        return NULL;
    *buf = (attn_dropout){m->c.attn_pdrop, m->drop_seed, m->drop_step, (uint32_t)l};
    return buf;
}

/* HF GPT2Block: attn_dropout on the probabilities, resid_dropout after each c_proj */
static void layer_forward(gpt2 *m, int l, dten residual)
{
    device *d = m->d;
    const device_i *o = d->ops;
    layer_acts *a = &m->layers[l];
    int BT = m->B * m->T, C = m->c.n_embd;
    double eps = m->c.layer_norm_epsilon;
    o->layernorm_forward(d, a->ln1, a->ln1_mean, a->ln1_rstd, residual, P(m, l, LN1_W),
                         P(m, l, LN1_B), BT, C, eps);
    linear_forward(d, a->qkv, a->ln1, P(m, l, ATTN_W), P(m, l, ATTN_B), BT, C, 3 * C);
    attn_dropout drop;
    o->attention_masked_forward(d, a->atty, a->att, a->qkv, (dten){0}, m->B, m->T, C,
                                m->c.n_head, 1, attn_drop(m, l, &drop));
    linear_forward(d, a->attproj, a->atty, P(m, l, APROJ_W), P(m, l, APROJ_B), BT, C, C);
    dropout_in_place(m, a->attproj, m->c.resid_pdrop, (uint32_t)l, DROPOUT_SITE_ATTN_OUT);
    o->add(d, a->residual2, residual, a->attproj, BT * C);
    o->layernorm_forward(d, a->ln2, a->ln2_mean, a->ln2_rstd, a->residual2, P(m, l, LN2_W),
                         P(m, l, LN2_B), BT, C, eps);
    linear_forward(d, a->fch, a->ln2, P(m, l, FC_W), P(m, l, FC_B), BT, C, 4 * C);
    o->gelu_forward(d, a->fch_gelu, a->fch, BT * 4 * C);
    linear_forward(d, a->fcproj, a->fch_gelu, P(m, l, FCPROJ_W), P(m, l, FCPROJ_B), BT, 4 * C, C);
    dropout_in_place(m, a->fcproj, m->c.resid_pdrop, (uint32_t)l, DROPOUT_SITE_MLP_OUT);
    o->add(d, a->residual3, a->residual2, a->fcproj, BT * C);
}

static int check_device(gpt2 *m, const char *phase)
{
    if (!device_error(m->d))
        return 0;
    log_error("%s: %s: %s", m->d->backend, phase, device_error(m->d));
    return 1;
}

int gpt2_forward(gpt2 *m, const model_batch *b, double *loss)
{
    if (b->B != m->B || b->T != m->T) {
        log_error("gpt2: a batch of %d x %d for a model made for %d x %d", b->B, b->T, m->B, m->T);
        return 1;
    }
    const int32_t *inputs = b->input_ids, *targets = b->labels;
    device *d = m->d;
    const device_i *o = d->ops;
    int B = m->B, T = m->T, BT = B * T, C = m->c.n_embd, V = m->c.vocab_size;
    m->n_valid = 0;
    for (int i = 0; i < BT; i++) {
        if (inputs[i] < 0 || inputs[i] >= V || (targets[i] != IGNORE_INDEX &&
                                                (targets[i] < 0 || targets[i] >= V))) {
            log_error("gpt2: token id %d at position %d is outside the vocabulary (%d)",
                      inputs[i] < 0 || inputs[i] >= V ? inputs[i] : targets[i], i, V);
            return 1;
        }
        m->n_valid += targets[i] != IGNORE_INDEX;
    }
    m->drop_seed = b->seed;
    m->drop_step = b->step;
    o->upload_i32(d, m->tokens, inputs);
    o->upload_i32(d, m->targets, targets);
    o->embedding_forward(d, m->encoded, m->tokens, gpt2_param_view(m, WTE),
                         gpt2_param_view(m, WPE), B, T, C);
    dropout_in_place(m, m->encoded, m->c.embd_pdrop, 0, DROPOUT_SITE_EMBED); /* HF's self.drop */
    dten residual = m->encoded;
    for (int l = 0; l < m->c.n_layer; l++) {
        layer_forward(m, l, residual);
        residual = m->layers[l].residual3;
    }
    o->layernorm_forward(d, m->lnf, m->lnf_mean, m->lnf_rstd, residual,
                         gpt2_param_view(m, LNF_W(m)), gpt2_param_view(m, LNF_B(m)), BT, C,
                         m->c.layer_norm_epsilon);
    /* tied LM head: logits[BT,V] = lnf[BT,C] . wte[V,C]^T */
    o->gemm(d, 0, 1, BT, V, C, 1.0, m->lnf, C, 0, gpt2_param_view(m, WTE), C, 0, 0.0, m->logits,
            V, 0, 1);
    o->softmax_xent_forward(d, m->losses, m->probs, m->logits, m->targets, BT, V, IGNORE_INDEX);
    double total = o->sum(d, m->losses, BT);
    *loss = m->n_valid ? total / m->n_valid : NAN; /* PyTorch's mean over no label: 0/0 */
    return check_device(m, "forward");
}

/* ---- backward -------------------------------------------------------------------------------- */

/* dinp[N,IC] = dout . W^T (overwrites); dW += inp^T . dout; db += sum_n dout */
static void linear_backward(device *d, dten dinp, dten dw, dten db, dten dout, dten inp, dten w,
                            int N, int IC, int OC)
{
    d->ops->gemm(d, 0, 1, N, IC, OC, 1.0, dout, OC, 0, w, OC, 0, 0.0, dinp, IC, 0, 1);
    d->ops->gemm(d, 1, 0, IC, OC, N, 1.0, inp, IC, 0, dout, OC, 0, 1.0, dw, OC, 0, 1);
    d->ops->bias_backward(d, db, dout, N, OC);
}

/* dL/d(a dropout's input) from dout = dL/d(its output), in the first n of dqkv (free whenever
 * this is called), or dout itself when p = 0 */
static dten dropout_grad(gpt2 *m, dten dout, double p, uint32_t layer, uint32_t site)
{
    if (p == 0)
        return dout;
    dten g = dten_view(m->dqkv, 0, dout.n);
    m->d->ops->zero(m->d, g);
    m->d->ops->dropout_backward(m->d, g, dout, (int)dout.n, p, m->drop_seed, m->drop_step,
                                layer, site);
    return g;
}

/* dres holds dL/d(residual3) of layer l on entry and dL/d(layer input) on return */
static void layer_backward(gpt2 *m, int l, dten residual)
{
    device *d = m->d;
    const device_i *o = d->ops;
    layer_acts *a = &m->layers[l];
    int BT = m->B * m->T, C = m->c.n_embd;
    /* MLP branch: residual3 = residual2 + c_proj(gelu(c_fc(ln_2(residual2)))) */
    double pr = m->c.resid_pdrop;
    dten dproj = dropout_grad(m, m->dres, pr, (uint32_t)l, DROPOUT_SITE_MLP_OUT);
    linear_backward(d, m->dfch_gelu, G(m, l, FCPROJ_W), G(m, l, FCPROJ_B), dproj, a->fch_gelu,
                    P(m, l, FCPROJ_W), BT, 4 * C, C);
    o->zero(d, m->dfch);
    o->gelu_backward(d, m->dfch, a->fch, m->dfch_gelu, BT * 4 * C);
    linear_backward(d, m->dtmp, G(m, l, FC_W), G(m, l, FC_B), m->dfch, a->ln2, P(m, l, FC_W), BT,
                    C, 4 * C);
    o->layernorm_backward(d, m->dres, G(m, l, LN2_W), G(m, l, LN2_B), m->dtmp, a->residual2,
                          P(m, l, LN2_W), a->ln2_mean, a->ln2_rstd, BT, C);
    /* attention branch: residual2 = residual + c_proj(attn(c_attn(ln_1(residual)))) */
    dproj = dropout_grad(m, m->dres, pr, (uint32_t)l, DROPOUT_SITE_ATTN_OUT);
    linear_backward(d, m->dtmp, G(m, l, APROJ_W), G(m, l, APROJ_B), dproj, a->atty,
                    P(m, l, APROJ_W), BT, C, C);
    o->zero(d, m->dqkv);
    attn_dropout drop;
    o->attention_masked_backward(d, m->dqkv, m->datt, m->dtmp, a->qkv, a->att, (dten){0}, m->B,
                                 m->T, C, m->c.n_head, 1, attn_drop(m, l, &drop));
    linear_backward(d, m->dtmp, G(m, l, ATTN_W), G(m, l, ATTN_B), m->dqkv, a->ln1,
                    P(m, l, ATTN_W), BT, C, 3 * C);
    o->layernorm_backward(d, m->dres, G(m, l, LN1_W), G(m, l, LN1_B), m->dtmp, residual,
                          P(m, l, LN1_W), a->ln1_mean, a->ln1_rstd, BT, C);
}

int gpt2_backward(gpt2 *m)
{
    device *d = m->d;
    const device_i *o = d->ops;
    int BT = m->B * m->T, C = m->c.n_embd, V = m->c.vocab_size, L = m->c.n_layer;
    o->zero(d, m->grad_mem);
    o->zero(d, m->dlogits);
    o->zero(d, m->dres);
    o->softmax_xent_backward(d, m->dlogits, m->probs, m->targets, BT, V, IGNORE_INDEX,
                             m->n_valid ? 1.0 / m->n_valid : 0.0);
    /* tied head: dlnf = dlogits . wte; dwte += dlogits^T . lnf */
    o->gemm(d, 0, 0, BT, C, V, 1.0, m->dlogits, V, 0, gpt2_param_view(m, WTE), C, 0, 0.0, m->dtmp,
            C, 0, 1);
    o->gemm(d, 1, 0, V, C, BT, 1.0, m->dlogits, V, 0, m->lnf, C, 0, 1.0,
            gpt2_grad_view(m, WTE), C, 0, 1);
    dten last = L ? m->layers[L - 1].residual3 : m->encoded;
    o->layernorm_backward(d, m->dres, gpt2_grad_view(m, LNF_W(m)), gpt2_grad_view(m, LNF_B(m)),
                          m->dtmp, last, gpt2_param_view(m, LNF_W(m)), m->lnf_mean, m->lnf_rstd,
                          BT, C);
    for (int l = L - 1; l >= 0; l--)
        layer_backward(m, l, l ? m->layers[l - 1].residual3 : m->encoded);
    dten demb = dropout_grad(m, m->dres, m->c.embd_pdrop, 0, DROPOUT_SITE_EMBED);
    o->embedding_backward(d, gpt2_grad_view(m, WTE), gpt2_grad_view(m, WPE), demb, m->tokens,
                          m->B, m->T, C);
    return check_device(m, "backward");
}
