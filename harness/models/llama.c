/* harness/models/llama.c: LlamaForCausalLM (and Qwen2, Mistral, Mixtral's attention and dense
 * parts) over the device interface: parameter table, sizes, allocation, init, forward, backward. */
#include "llama_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "rope.h"
#include "util/util.h"

/* ---- dimensions ----------------------------------------------------------------------------- */

static llama_dims dims_of(const llama_config *c, int B, int T)
{
    llama_dims z;
    memset(&z, 0, sizeof z);
    z.B = (size_t)B;
    z.T = (size_t)T;
    z.BT = z.B * z.T;
    z.C = (size_t)c->hidden_size;
    z.hd = (size_t)llama_config_head_dim(c);
    z.NH = c->num_attention_heads;
    z.NKV = c->num_key_value_heads >= 0 ? c->num_key_value_heads : c->num_attention_heads;
    z.Q = (size_t)z.NH * z.hd;
    z.KV = (size_t)z.NKV * z.hd;
    z.I = (size_t)c->intermediate_size;
    z.moe = c->variant == LLAMA_MIXTRAL;
    z.E = z.moe ? (size_t)c->num_local_experts : 0;
    z.K = z.moe ? (size_t)c->num_experts_per_tok : 0;
    z.NK = z.BT * z.K;
    z.V = (size_t)c->vocab_size;
    z.att = z.B * (size_t)z.NH * z.T * z.T;
    z.L = c->num_hidden_layers;
    return z;
}

/* ---- parameter table ------------------------------------------------------------------------ */

static int add_param(llama *m, size_t *off, const char *name, size_t d0, size_t d1,
                     param_role role)
{
    int i = m->n_params++;
    param_info *p = &m->params[i];
    size_t len = strlen(name); /* < 64: the longest, with two 10-digit ints, has 63 */
    len = len < sizeof p->name ? len : sizeof p->name - 1;
    memcpy(p->name, name, len);
    p->name[len] = '\0';
    p->ndim = d1 ? 2 : 1;
    p->shape[0] = (int)d0;
    p->shape[1] = (int)d1;
    p->n = d0 * (d1 ? d1 : 1);
    p->offset = *off;
    p->role = role;
    *off += p->n;
    return i;
}

/* one projection of layer l, with its bias when `bias` */
static void add_proj(llama *m, size_t *off, int l, const char *which, size_t rows, size_t cols,
                     int bias, int *w, int *b)
{
    char name[64];
    snprintf(name, sizeof name, "layers.%d.self_attn.%s.weight", l, which);
    *w = add_param(m, off, name, rows, cols, PARAM_MATRIX);
    *b = -1;
    if (bias) {
        snprintf(name, sizeof name, "layers.%d.self_attn.%s.bias", l, which);
        *b = add_param(m, off, name, rows, 0, PARAM_BIAS);
    }
}

static void add_mlp(llama *m, size_t *off, int l, llama_layer_idx *x)
{
    const llama_dims *z = &m->z;
    char name[96];
    x->gate_w = x->up_w = x->down_w = x->router = x->expert0 = -1;
    if (!z->moe) {
        snprintf(name, sizeof name, "layers.%d.mlp.gate_proj.weight", l);
        x->gate_w = add_param(m, off, name, z->I, z->C, PARAM_MATRIX);
        snprintf(name, sizeof name, "layers.%d.mlp.up_proj.weight", l);
        x->up_w = add_param(m, off, name, z->I, z->C, PARAM_MATRIX);
        snprintf(name, sizeof name, "layers.%d.mlp.down_proj.weight", l);
        x->down_w = add_param(m, off, name, z->C, z->I, PARAM_MATRIX);
        return;
    }
    snprintf(name, sizeof name, "layers.%d.block_sparse_moe.gate.weight", l);
    x->router = add_param(m, off, name, z->E, z->C, PARAM_MATRIX);
    for (size_t e = 0; e < z->E; e++) {
        static const char *const w[3] = {"w1", "w2", "w3"};
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "layers.%d.block_sparse_moe.experts.%zu.%s.weight", l, e,
                     w[k]);
            int i = add_param(m, off, name, k == 1 ? z->C : z->I, k == 1 ? z->I : z->C,
                              PARAM_MATRIX);
            if (e == 0 && k == 0)
                x->expert0 = i;
        }
    }
}

/* HF named_parameters() order: embed_tokens, per layer self_attn (q, k, v, o with their
 * biases), mlp or block_sparse_moe, input_layernorm, post_attention_layernorm; norm; lm_head */
static size_t build_param_table(llama *m)
{
    const llama_dims *z = &m->z;
    const llama_config *c = &m->c;
    int qkv_bias = c->variant == LLAMA_QWEN2 || c->attention_bias;
    size_t per_layer = 14 + 3 * z->E, off = 0; /* 8 attention, 3 MLP or a router, 2 norms */
    char name[64];
    m->params = calloc((size_t)z->L * per_layer + 3, sizeof *m->params);
    m->li = calloc((size_t)z->L, sizeof *m->li);
    if (!m->params || !m->li)
        return 0;
    m->embed = add_param(m, &off, "embed_tokens.weight", z->V, z->C, PARAM_EMBEDDING);
    for (int l = 0; l < z->L; l++) {
        llama_layer_idx *x = &m->li[l];
        add_proj(m, &off, l, "q_proj", z->Q, z->C, qkv_bias, &x->q_w, &x->q_b);
        add_proj(m, &off, l, "k_proj", z->KV, z->C, qkv_bias, &x->k_w, &x->k_b);
        add_proj(m, &off, l, "v_proj", z->KV, z->C, qkv_bias, &x->v_w, &x->v_b);
        add_proj(m, &off, l, "o_proj", z->C, z->Q, c->attention_bias, &x->o_w, &x->o_b);
        add_mlp(m, &off, l, x);
        snprintf(name, sizeof name, "layers.%d.input_layernorm.weight", l);
        x->ln1 = add_param(m, &off, name, z->C, 0, PARAM_NORM);
        snprintf(name, sizeof name, "layers.%d.post_attention_layernorm.weight", l);
        x->ln2 = add_param(m, &off, name, z->C, 0, PARAM_NORM);
    }
    m->norm = add_param(m, &off, "norm.weight", z->C, 0, PARAM_NORM);
    m->head = c->tie_word_embeddings ? m->embed
                                     : add_param(m, &off, "lm_head.weight", z->V, z->C,
                                                 PARAM_MATRIX);
    return off;
}

dten llama_p(const llama *m, int i)
{
    return i < 0 ? (dten){0} : dten_view(m->param_mem, m->params[i].offset, m->params[i].n);
}

dten llama_g(const llama *m, int i)
{
    return i < 0 ? (dten){0} : dten_view(m->grad_mem, m->params[i].offset, m->params[i].n);
}

int llama_param_index(const llama *m, const char *name, int *alias)
{
    *alias = 0;
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return i;
    if (m->c.tie_word_embeddings && strcmp(name, "lm_head.weight") == 0) {
        *alias = 1; /* a tied head saved anyway: embed_tokens counts (from_pretrained ties) */
        return m->embed;
    }
    return -1;
}

/* ---- activations and scratch, laid out (or, with no buffer, counted) ------------------------- */

static dten carve(dten region, size_t *off, size_t n)
{
    dten v = {region.buf, region.off + *off, n};
    *off += n;
    return v;
}

static void layout_layer(llama_layer_acts *a, dten r, size_t *off, const llama_dims *z)
{
    size_t BT = z->BT, C = z->C;
    a->h1 = carve(r, off, BT * C);
    a->rstd1 = carve(r, off, BT);
    a->q = carve(r, off, BT * z->Q);
    a->k = carve(r, off, BT * z->KV);
    a->v = carve(r, off, BT * z->KV);
    a->att = carve(r, off, z->att);
    a->atty = carve(r, off, BT * z->Q);
    a->res2 = carve(r, off, BT * C);
    a->h2 = carve(r, off, BT * C);
    a->rstd2 = carve(r, off, BT);
    a->out = carve(r, off, BT * C);
    if (!z->moe) {
        a->gate = carve(r, off, BT * z->I);
        a->up = carve(r, off, BT * z->I);
        a->act = carve(r, off, BT * z->I);
        return;
    }
    a->rlogits = carve(r, off, BT * z->E);
    a->rprobs = carve(r, off, BT * z->E);
    a->rweights = carve(r, off, z->NK);
    a->w_e = carve(r, off, z->NK);
    a->xe = carve(r, off, z->NK * C);
    a->g = carve(r, off, z->NK * z->I);
    a->u = carve(r, off, z->NK * z->I);
    a->a = carve(r, off, z->NK * z->I);
    a->y = carve(r, off, z->NK * C);
    a->mlp_out = carve(r, off, BT * C);
}

static size_t layout_acts(llama *m, dten r)
{
    const llama_dims *z = &m->z;
    size_t off = 0;
    m->x0 = carve(r, &off, z->BT * z->C);
    for (int l = 0; l < z->L; l++)
        layout_layer(&m->layers[l], r, &off, z);
    m->hf = carve(r, &off, z->BT * z->C);
    m->rstdf = carve(r, &off, z->BT);
    m->logits = carve(r, &off, z->BT * z->V);
    m->probs = carve(r, &off, z->BT * z->V);
    m->losses = carve(r, &off, z->BT);
    m->cos_t = carve(r, &off, z->T * z->hd / 2);
    m->sin_t = carve(r, &off, z->T * z->hd / 2);
    m->maskw = carve(r, &off, z->BT);
    m->fvec = carve(r, &off, z->E + 1);
    m->psum = carve(r, &off, z->E + 1);
    return off;
}

static size_t layout_scratch(llama *m, dten r)
{
    const llama_dims *z = &m->z;
    size_t off = 0, rows = z->NK > z->BT ? z->NK : z->BT;
    m->dres = carve(r, &off, z->BT * z->C);
    m->dh = carve(r, &off, z->BT * z->C);
    m->dq = carve(r, &off, z->BT * z->Q);
    m->dk = carve(r, &off, z->BT * z->KV);
    m->dv = carve(r, &off, z->BT * z->KV);
    m->dqp = carve(r, &off, z->BT * z->Q);
    m->dkp = carve(r, &off, z->BT * z->KV);
    m->datty = carve(r, &off, z->BT * z->Q);
    m->attscr = carve(r, &off, z->B * (size_t)z->NH * z->T);
    m->dgate = carve(r, &off, rows * z->I);
    m->dup = carve(r, &off, rows * z->I);
    m->dact = carve(r, &off, rows * z->I);
    m->dlogits = carve(r, &off, z->BT * z->V);
    m->dpadrow = carve(r, &off, z->C);
    if (z->moe) {
        m->dys = carve(r, &off, z->NK * z->C);
        m->dy = carve(r, &off, z->NK * z->C);
        m->dxe = carve(r, &off, z->NK * z->C);
        m->ys = carve(r, &off, z->NK * z->C);
        m->dwseg = carve(r, &off, z->NK);
        m->dweights = carve(r, &off, z->NK);
        m->drl = carve(r, &off, z->BT * z->E);
        m->dp = carve(r, &off, z->BT * z->E);
    }
    return off;
}

static size_t layout_i32(llama *m, dten r)
{
    const llama_dims *z = &m->z;
    size_t off = 0;
    m->tokens = carve(r, &off, z->BT);
    m->labels = carve(r, &off, z->BT);
    m->keymask = carve(r, &off, z->BT);
    for (int l = 0; z->moe && l < z->L; l++) {
        m->layers[l].rids = carve(r, &off, z->NK);
        m->layers[l].tok_idx = carve(r, &off, z->NK);
        m->layers[l].slot_idx = carve(r, &off, z->NK);
    }
    if (z->moe)
        m->ids_all = carve(r, &off, z->BT * z->E);
    return off;
}

/* ---- sizes before anything is allocated ------------------------------------------------------ */

static double gib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* the element counts of one instance, computed in 64 bits (formulas of the layouts above) */
static void plan_counts(const llama_dims *z, uint64_t *acts, uint64_t *scratch, uint64_t *biggest)
{
    uint64_t BT = z->BT, C = z->C, NK = z->NK, I = z->I, E = z->E;
    uint64_t rows = NK > BT ? NK : BT;
    uint64_t layer = size_add(size_add(size_mul(5, size_mul(BT, C)), size_mul(2, BT)),
                              size_add(size_mul(2, size_mul(BT, z->Q)),
                                       size_add(size_mul(2, size_mul(BT, z->KV)), z->att)));
    uint64_t mlp = z->moe ? size_add(size_add(size_mul(2, size_mul(BT, E)), size_mul(2, NK)),
                                     size_add(size_mul(2, size_mul(NK, C)),
                                              size_add(size_mul(3, size_mul(NK, I)),
                                                       size_mul(BT, C))))
                          : size_mul(3, size_mul(BT, I));
    uint64_t logits = size_mul(BT, z->V);
    *acts = size_add(size_mul((uint64_t)z->L, size_add(layer, mlp)),
                     size_add(size_add(size_mul(2, size_mul(BT, C)), size_mul(2, logits)),
                              size_add(size_mul(3, BT), size_add(size_mul(z->T, z->hd),
                                                                 2 * E + 2))));
    *scratch = size_add(size_add(size_mul(2, size_mul(BT, C)), size_mul(3, size_mul(BT, z->Q))),
                        size_add(size_add(size_mul(3, size_mul(BT, z->KV)),
                                          size_mul(z->B * (uint64_t)z->NH, z->T)),
                                 size_add(size_mul(3, size_mul(rows, I)), size_add(logits, C))));
    if (z->moe)
        *scratch = size_add(*scratch, size_add(size_mul(4, size_mul(NK, C)),
                                               size_add(size_mul(2, NK), size_mul(2, size_mul(BT, E)))));
    uint64_t b = z->att;
    uint64_t cand[] = {logits, size_mul(rows, I), size_mul(BT, C), size_mul(BT, z->Q)};
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
        b = cand[i] > b ? cand[i] : b;
    *biggest = b;
}

int llama_check_fit(const llama_config *c, int B, int T, const device *d, char *why, size_t len)
{
    if (B < 1 || T < 1 || T > c->max_position_embeddings) {
        snprintf(why, len, "train.batch_size %d x data.seq_len %d does not fit "
                 "max_position_embeddings %d (batch >= 1, 1 <= seq_len <= "
                 "max_position_embeddings)", B, T, c->max_position_embeddings);
        return 1;
    }
    int window = llama_config_window(c);
    if (window >= 0 && window < T) {
        if (window >= 2)
            snprintf(why, len, "sliding_window %d is smaller than data.seq_len %d: sliding-window "
                     "attention is not implemented (use seq_len <= %d, or sliding_window null)",
                     window, T, window);
        else /* no seq_len (at least 2) fits such a window */
            snprintf(why, len, "sliding_window %d is smaller than data.seq_len %d: sliding-window "
                     "attention is not implemented (use sliding_window null, or one >= seq_len)",
                     window, T);
        return 1;
    }
    llama_dims z = dims_of(c, B, T);
    uint64_t acts, scratch, biggest, params = llama_config_param_count(c);
    plan_counts(&z, &acts, &scratch, &biggest);
    if (biggest > LLAMA_MAX_ELEMENTS || acts > LLAMA_MAX_ELEMENTS ||
        scratch > LLAMA_MAX_ELEMENTS || params > LLAMA_MAX_ELEMENTS) {
        snprintf(why, len, "train.batch_size %d x data.seq_len %d: the activations (%llu "
                 "elements, the largest tensor %llu) or scratch (%llu) are over the limit of "
                 "%llu elements", B, T, (unsigned long long)acts, (unsigned long long)biggest,
                 (unsigned long long)scratch, (unsigned long long)LLAMA_MAX_ELEMENTS);
        return 1;
    }
    uint64_t state = size_mul(size_mul(4, params), d->real_size);
    uint64_t act_bytes = size_mul(size_add(acts, scratch), d->real_size);
    uint64_t total = size_add(size_add(state, act_bytes), size_mul(32, size_add(z.BT, z.NK)));
    if (total >= SIZE_MAX / 2 || (d->mem_total && total > d->mem_total)) {
        snprintf(why, len, "the model needs %.2f GiB on %s (%llu parameters: %.2f GiB with "
                 "gradients and AdamW state; activations for train.batch_size %d x "
                 "data.seq_len %d: %.2f GiB) but the device has %.2f GiB", gib(total),
                 d->backend, (unsigned long long)params, gib(state), B, T, gib(act_bytes),
                 gib(d->mem_total));
        return 1;
    }
    return 0;
}

/* ---- creation -------------------------------------------------------------------------------- */

static int alloc_host(llama *m)
{
    const llama_dims *z = &m->z;
    size_t nk = z->NK ? z->NK : 1, le = (size_t)z->L * (z->E + 1) + 1;
    m->ids_host = calloc(nk, sizeof *m->ids_host);
    m->tok_host = calloc(nk, sizeof *m->tok_host);
    m->slot_host = calloc(nk, sizeof *m->slot_host);
    m->mask_host = calloc(z->BT, sizeof *m->mask_host);
    m->counts = calloc(le, sizeof *m->counts);
    m->seg = calloc(le, sizeof *m->seg);
    m->F = calloc(z->E + 1, sizeof *m->F);
    m->Psum = calloc(z->E + 1, sizeof *m->Psum);
    m->hbuf = calloc(z->BT + z->E + 1, sizeof *m->hbuf);
    m->fill = calloc(z->E + 1, sizeof *m->fill);
    return m->hbuf && m->fill && m->ids_host && m->tok_host && m->slot_host &&
           m->mask_host && m->counts && m->seg &&
           m->F && m->Psum;
}

/* the rope tables for positions 0..T-1, and every row's expert ids 0..E-1 (the aux loss's) */
static void upload_constants(llama *m)
{
    const llama_dims *z = &m->z;
    size_t n = z->T * z->hd / 2;
    double *cs = malloc(2 * n * sizeof *cs);
    int32_t *all = z->moe ? malloc(z->BT * z->E * sizeof *all) : NULL;
    if (!cs || (z->moe && !all)) {
        device_fail(m->d, "llama: out of host memory for the rope tables");
        free(cs);
        free(all);
        return;
    }
    rope_cos_sin(cs, cs + n, 0, (int)z->T, (int)z->hd, m->c.rope_theta);
    m->d->ops->upload_f64(m->d, m->cos_t, cs);
    m->d->ops->upload_f64(m->d, m->sin_t, cs + n);
    for (size_t i = 0; all && i < z->BT * z->E; i++)
        all[i] = (int32_t)(i % z->E);
    if (all)
        m->d->ops->upload_i32(m->d, m->ids_all, all);
    free(cs);
    free(all);
}

static int alloc_all(llama *m)
{
    device *d = m->d;
    dten none = {NULL, 0, (size_t)-1 / 2};
    size_t np = m->param_mem.n, na = layout_acts(m, none), ns = layout_scratch(m, none);
    size_t ni = layout_i32(m, none);
    m->param_mem = device_alloc(d, np, DT_REAL);
    m->grad_mem = device_alloc(d, np, DT_REAL);
    m->m_mem = device_alloc(d, np, DT_REAL);
    m->v_mem = device_alloc(d, np, DT_REAL);
    m->act_mem = device_alloc(d, na, DT_REAL);
    m->scratch_mem = device_alloc(d, ns, DT_REAL);
    m->i32_mem = device_alloc(d, ni, DT_I32);
    if (!m->param_mem.buf || !m->grad_mem.buf || !m->m_mem.buf || !m->v_mem.buf ||
        !m->act_mem.buf || !m->scratch_mem.buf || !m->i32_mem.buf) {
        log_error("%s: llama: out of device memory: %s", d->backend,
                  device_error(d) ? device_error(d) : "allocation failed");
        return 1;
    }
    layout_acts(m, m->act_mem);
    layout_scratch(m, m->scratch_mem);
    layout_i32(m, m->i32_mem);
    d->ops->zero(d, m->m_mem);
    d->ops->zero(d, m->v_mem);
    d->ops->zero(d, m->grad_mem);
    upload_constants(m);
    if (device_error(d)) {
        log_error("%s: llama: %s", d->backend, device_error(d));
        return 1;
    }
    return 0;
}

llama *llama_create(device *d, const llama_config *c, int B, int T)
{
    llama *m = calloc(1, sizeof *m);
    if (!m) {
        log_error("llama: out of host memory");
        return NULL;
    }
    m->d = d;
    m->c = *c;
    m->z = dims_of(c, B, T);
    m->layers = calloc((size_t)m->z.L, sizeof *m->layers);
    m->param_mem.n = m->layers ? build_param_table(m) : 0;
    if (!m->layers || !m->params || !m->li || !alloc_host(m)) {
        log_error("llama: out of host memory");
        llama_free(m);
        return NULL;
    }
    if (alloc_all(m)) {
        llama_free(m);
        return NULL;
    }
    return m;
}

void llama_free(llama *m)
{
    if (!m)
        return;
    dten all[] = {m->param_mem, m->grad_mem, m->m_mem, m->v_mem, m->act_mem, m->scratch_mem,
                  m->i32_mem};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i].buf)
            device_free(m->d, all[i]);
    free(m->params);
    free(m->li);
    free(m->layers);
    free(m->ids_host);
    free(m->tok_host);
    free(m->slot_host);
    free(m->mask_host);
    free(m->counts);
    free(m->seg);
    free(m->F);
    free(m->Psum);
    free(m->hbuf);
    free(m->fill);
    free(m);
}

void llama_state(const llama *m, model_state *st)
{
    *st = (model_state){m->n_params, m->params, m->param_mem, m->grad_mem, m->m_mem, m->v_mem};
}

size_t llama_activation_bytes(const llama *m) { return m->act_mem.n * m->d->real_size; }

static int check_device(llama *m, const char *phase)
{
    if (!device_error(m->d))
        return 0;
    log_error("%s: llama: %s: %s", m->d->backend, phase, device_error(m->d));
    return 1;
}

/* ---- initialisation -------------------------------------------------------------------------- */

int llama_init_weights(const llama *m, uint64_t seed, float *host)
{
    rng_state r;
    rng_seed(&r, seed);
    double std = m->c.initializer_range;
    for (int i = 0; i < m->n_params; i++) {
        const param_info *p = &m->params[i];
        float *w = host + p->offset;
        for (size_t j = 0; j < p->n; j++)
            if (p->role == PARAM_MATRIX || p->role == PARAM_EMBEDDING)
                w[j] = (float)rng_normal(&r, 0.0, std);
            else
                w[j] = p->role == PARAM_NORM ? 1.0f : 0.0f;
    }
    if (m->c.pad_token_id >= 0) /* nn.Embedding's padding_idx row */
        memset(host + m->params[m->embed].offset + (size_t)m->c.pad_token_id * m->z.C, 0,
               m->z.C * sizeof *host);
    return 0;
}

/* ---- forward --------------------------------------------------------------------------------- */

void llama_linear(device *d, dten out, dten inp, dten w, dten b, int N, int IC, int OC)
{
    d->ops->gemm(d, 0, 1, N, OC, IC, 1.0, inp, IC, 0, w, IC, 0, 0.0, out, OC, 0, 1);
    if (b.buf)
        d->ops->bias_add(d, out, b, N, OC);
}

void llama_linear_back(device *d, dten dinp, double beta, dten dw, dten db, dten dout, dten inp,
                       dten w, int N, int IC, int OC)
{
    if (dinp.buf)
        d->ops->gemm(d, 0, 0, N, IC, OC, 1.0, dout, OC, 0, w, IC, 0, beta, dinp, IC, 0, 1);
    d->ops->gemm(d, 1, 0, OC, IC, N, 1.0, dout, OC, 0, inp, IC, 0, 1.0, dw, IC, 0, 1);
    if (db.buf)
        d->ops->bias_backward(d, db, dout, N, OC);
}

/* HF LlamaAttention: q, k, v projections, RoPE on q and k, GQA attention, o_proj */
static void attention_forward(llama *m, int l, dten x)
{
    device *d = m->d;
    const device_i *o = d->ops;
    const llama_dims *z = &m->z;
    const llama_layer_idx *p = &m->li[l];
    llama_layer_acts *a = &m->layers[l];
    int BT = (int)z->BT, C = (int)z->C, B = (int)z->B, T = (int)z->T, hd = (int)z->hd;
    o->rmsnorm_forward(d, a->h1, a->rstd1, x, llama_p(m, p->ln1), BT, C, m->c.rms_norm_eps);
    llama_linear(d, a->q, a->h1, llama_p(m, p->q_w), llama_p(m, p->q_b), BT, C, (int)z->Q);
    llama_linear(d, a->k, a->h1, llama_p(m, p->k_w), llama_p(m, p->k_b), BT, C, (int)z->KV);
    llama_linear(d, a->v, a->h1, llama_p(m, p->v_w), llama_p(m, p->v_b), BT, C, (int)z->KV);
    o->rope_forward(d, a->q, a->q, m->cos_t, m->sin_t, B, T, z->NH, hd);
    o->rope_forward(d, a->k, a->k, m->cos_t, m->sin_t, B, T, z->NKV, hd);
    o->attention_gqa_forward(d, a->atty, a->att, a->q, a->k, a->v,
                             m->has_mask ? m->keymask : (dten){0}, B, T, z->NH, z->NKV, hd, 1);
    dten proj = a->res2; /* o_proj's output, then the residual added in place */
    llama_linear(d, proj, a->atty, llama_p(m, p->o_w), llama_p(m, p->o_b), BT, (int)z->Q, C);
    o->accumulate(d, a->res2, x, BT * C);
    o->rmsnorm_forward(d, a->h2, a->rstd2, a->res2, llama_p(m, p->ln2), BT, C,
                       m->c.rms_norm_eps);
}

/* HF LlamaMLP: down_proj(silu(gate_proj(h2)) * up_proj(h2)) into out, then the residual */
static void dense_forward(llama *m, int l)
{
    device *d = m->d;
    const llama_dims *z = &m->z;
    const llama_layer_idx *p = &m->li[l];
    llama_layer_acts *a = &m->layers[l];
    int BT = (int)z->BT, C = (int)z->C, I = (int)z->I;
    llama_linear(d, a->gate, a->h2, llama_p(m, p->gate_w), (dten){0}, BT, C, I);
    llama_linear(d, a->up, a->h2, llama_p(m, p->up_w), (dten){0}, BT, C, I);
    d->ops->silu_mul_forward(d, a->act, a->gate, a->up, BT * I);
    llama_linear(d, a->out, a->act, llama_p(m, p->down_w), (dten){0}, BT, I, C);
}

static int layer_forward(llama *m, int l, dten x)
{
    llama_layer_acts *a = &m->layers[l];
    int n = (int)(m->z.BT * m->z.C);
    attention_forward(m, l, x);
    if (!m->z.moe) {
        dense_forward(m, l);
        m->d->ops->accumulate(m->d, a->out, a->res2, n);
        return 0;
    }
    if (llama_moe_forward(m, l))
        return 1;
    m->d->ops->add(m->d, a->out, a->res2, a->mlp_out, n);
    return 0;
}

/* ids within [0, V), labels too or -100; 0, or 1 with a message */
static int check_inputs(const llama *m, const model_batch *b)
{
    int BT = (int)m->z.BT, V = (int)m->z.V;
    if (b->B != (int)m->z.B || b->T != (int)m->z.T) {
        log_error("llama: a batch of %d x %d for a model made for %zu x %zu", b->B, b->T,
                  m->z.B, m->z.T);
        return 1;
    }
    for (int i = 0; i < BT; i++) {
        int32_t id = b->input_ids[i], lab = b->labels[i];
        if (id < 0 || id >= V || (lab != MODEL_IGNORE_INDEX && (lab < 0 || lab >= V))) {
            log_error("llama: %s %d at position %d is outside the vocabulary (%d)%s",
                      id < 0 || id >= V ? "input id" : "label", id < 0 || id >= V ? id : lab, i,
                      V, id < 0 || id >= V ? "" : " and not -100");
            return 1;
        }
    }
    return 0;
}

static void upload_inputs(llama *m, const model_batch *b)
{
    device *d = m->d;
    size_t BT = m->z.BT;
    m->n_valid = 0;
    for (size_t i = 0; i < BT; i++)
        m->n_valid += b->labels[i] != MODEL_IGNORE_INDEX;
    d->ops->upload_i32(d, m->tokens, b->input_ids);
    d->ops->upload_i32(d, m->labels, b->labels);
    m->has_mask = b->attention_mask != NULL;
    for (size_t i = 0; i < BT; i++)
        m->mask_host[i] = b->attention_mask ? b->attention_mask[i] != 0 : 1;
    if (m->has_mask)
        d->ops->upload_i32(d, m->keymask, b->attention_mask);
}

int llama_forward(llama *m, const model_batch *b, double *loss)
{
    if (check_inputs(m, b))
        return 1;
    device *d = m->d;
    const device_i *o = d->ops;
    const llama_dims *z = &m->z;
    int BT = (int)z->BT, C = (int)z->C, V = (int)z->V;
    upload_inputs(m, b);
    llama_moe_reset(m);
    o->gather_rows_forward(d, m->x0, llama_p(m, m->embed), m->tokens, BT, V, C);
    dten x = m->x0;
    for (int l = 0; l < z->L; l++) {
        if (layer_forward(m, l, x))
            return 1;
        x = m->layers[l].out;
    }
    o->rmsnorm_forward(d, m->hf, m->rstdf, x, llama_p(m, m->norm), BT, C, m->c.rms_norm_eps);
    llama_linear(d, m->logits, m->hf, llama_p(m, m->head), (dten){0}, BT, C, V);
    o->softmax_xent_forward(d, m->losses, m->probs, m->logits, m->labels, BT, V,
                            MODEL_IGNORE_INDEX);
    double total = o->sum(d, m->losses, BT);
    *loss = m->n_valid ? total / m->n_valid : NAN; /* PyTorch's mean over no label: 0/0 */
    if (z->moe && m->c.output_router_logits)
        *loss += m->c.router_aux_loss_coef * llama_moe_aux_loss(m);
    return check_device(m, "forward");
}

/* ---- backward -------------------------------------------------------------------------------- */

/* dh = dL/d h2 from dres = dL/d(layer out) through the dense MLP */
static void dense_backward(llama *m, int l)
{
    device *d = m->d;
    const llama_dims *z = &m->z;
    const llama_layer_idx *p = &m->li[l];
    llama_layer_acts *a = &m->layers[l];
    int BT = (int)z->BT, C = (int)z->C, I = (int)z->I;
    dten dact = dten_view(m->dact, 0, z->BT * z->I), dg = dten_view(m->dgate, 0, z->BT * z->I);
    dten du = dten_view(m->dup, 0, z->BT * z->I);
    llama_linear_back(d, dact, 0.0, llama_g(m, p->down_w), (dten){0}, m->dres, a->act,
                      llama_p(m, p->down_w), BT, I, C);
    d->ops->zero(d, dg);
    d->ops->zero(d, du);
    d->ops->silu_mul_backward(d, dg, du, dact, a->gate, a->up, BT * I);
    llama_linear_back(d, m->dh, 0.0, llama_g(m, p->gate_w), (dten){0}, dg, a->h2,
                      llama_p(m, p->gate_w), BT, C, I);
    llama_linear_back(d, m->dh, 1.0, llama_g(m, p->up_w), (dten){0}, du, a->h2,
                      llama_p(m, p->up_w), BT, C, I);
}

/* from dres = dL/d res2 to dres = dL/d x through the attention block */
static void attention_backward(llama *m, int l, dten x)
{
    device *d = m->d;
    const device_i *o = d->ops;
    const llama_dims *z = &m->z;
    const llama_layer_idx *p = &m->li[l];
    llama_layer_acts *a = &m->layers[l];
    int BT = (int)z->BT, C = (int)z->C, B = (int)z->B, T = (int)z->T, hd = (int)z->hd;
    int Q = (int)z->Q, KV = (int)z->KV;
    llama_linear_back(d, m->datty, 0.0, llama_g(m, p->o_w), llama_g(m, p->o_b), m->dres,
                      a->atty, llama_p(m, p->o_w), BT, Q, C);
    o->zero(d, m->dq);
    o->zero(d, m->dk);
    o->zero(d, m->dv);
    o->attention_gqa_backward(d, m->dq, m->dk, m->dv, m->attscr, m->datty, a->q, a->k, a->v,
                              a->att, m->has_mask ? m->keymask : (dten){0}, B, T, z->NH, z->NKV,
                              hd, 1);
    o->zero(d, m->dqp);
    o->zero(d, m->dkp);
    o->rope_backward(d, m->dqp, m->dq, m->cos_t, m->sin_t, B, T, z->NH, hd);
    o->rope_backward(d, m->dkp, m->dk, m->cos_t, m->sin_t, B, T, z->NKV, hd);
    llama_linear_back(d, m->dh, 0.0, llama_g(m, p->q_w), llama_g(m, p->q_b), m->dqp, a->h1,
                      llama_p(m, p->q_w), BT, C, Q);
    llama_linear_back(d, m->dh, 1.0, llama_g(m, p->k_w), llama_g(m, p->k_b), m->dkp, a->h1,
                      llama_p(m, p->k_w), BT, C, KV);
    llama_linear_back(d, m->dh, 1.0, llama_g(m, p->v_w), llama_g(m, p->v_b), m->dv, a->h1,
                      llama_p(m, p->v_w), BT, C, KV);
    o->rmsnorm_backward(d, m->dres, llama_g(m, p->ln1), m->dh, x, llama_p(m, p->ln1), a->rstd1,
                        BT, C);
}

/* dres holds dL/d(layer out) on entry and dL/d(layer input x) on return */
static void layer_backward(llama *m, int l, dten x)
{
    const llama_layer_idx *p = &m->li[l];
    llama_layer_acts *a = &m->layers[l];
    int BT = (int)m->z.BT, C = (int)m->z.C;
    if (m->z.moe)
        llama_moe_backward(m, l, m->dres, m->dh);
    else
        dense_backward(m, l);
    m->d->ops->rmsnorm_backward(m->d, m->dres, llama_g(m, p->ln2), m->dh, a->res2,
                                llama_p(m, p->ln2), a->rstd2, BT, C);
    attention_backward(m, l, x);
}

/* from the loss to dres = dL/d(last layer's out) */
static void head_backward(llama *m, dten last)
{
    device *d = m->d;
    const device_i *o = d->ops;
    int BT = (int)m->z.BT, C = (int)m->z.C, V = (int)m->z.V;
    o->zero(d, m->dlogits);
    o->softmax_xent_backward(d, m->dlogits, m->probs, m->labels, BT, V, MODEL_IGNORE_INDEX,
                             m->n_valid ? 1.0 / m->n_valid : 0.0);
    llama_linear_back(d, m->dh, 0.0, llama_g(m, m->head), (dten){0}, m->dlogits, m->hf,
                      llama_p(m, m->head), BT, C, V);
    o->zero(d, m->dres);
    o->rmsnorm_backward(d, m->dres, llama_g(m, m->norm), m->dh, last, llama_p(m, m->norm),
                        m->rstdf, BT, C);
}

/* into embed_tokens; the padding row keeps only the tied head's gradient (padding_idx) */
static void embed_backward(llama *m)
{
    device *d = m->d;
    int BT = (int)m->z.BT, C = (int)m->z.C, V = (int)m->z.V;
    dten padrow = {0};
    if (m->c.pad_token_id >= 0) {
        padrow = dten_view(llama_g(m, m->embed), (size_t)m->c.pad_token_id * m->z.C, m->z.C);
        d->ops->copy(d, m->dpadrow, padrow);
    }
    d->ops->gather_rows_backward(d, llama_g(m, m->embed), m->dres, m->tokens, BT, V, C);
    if (padrow.buf)
        d->ops->copy(d, padrow, m->dpadrow);
}

int llama_backward(llama *m)
{
    int L = m->z.L;
    m->d->ops->zero(m->d, m->grad_mem);
    head_backward(m, L ? m->layers[L - 1].out : m->x0);
    for (int l = L - 1; l >= 0; l--)
        layer_backward(m, l, l ? m->layers[l - 1].out : m->x0);
    embed_backward(m);
    return check_device(m, "backward");
}
