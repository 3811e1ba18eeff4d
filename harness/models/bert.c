/* harness/models/bert.c: BertForMaskedLM over the device interface: the parameter table with Hugging
 * Face names, sizes and allocation, weight initialisation, forward, backward and AdamW. */
#include "bert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util/util.h"

#define IGNORE_INDEX (-100)
#define N_EMBED_PARAMS 5 /* word, position, token type embeddings, LayerNorm weight and bias */
#define N_HEAD_PARAMS 5  /* cls.predictions.bias, transform.dense w/b, transform.LayerNorm w/b */
#define PARAMS_PER_LAYER 16

/* one layer's activations kept for backward (x is the layer's input, h its output ln2) */
typedef struct {
    dten qkv, att, atty, attproj, res1, ln1, ln1_mean, ln1_rstd;
    dten inter, inter_gelu, outproj, res2, ln2, ln2_mean, ln2_rstd;
} layer_acts;

struct bert {
    device *d;
    bert_config c;
    int B, T;
    int n_params;
    param_info *params;
    dten param_mem, grad_mem, m_mem, v_mem;
    dten act_mem; /* activations kept for backward */
    dten emb, emb_ln, emb_mean, emb_rstd;
    layer_acts *layers;
    dten tr, tr_gelu, tr_ln, tr_mean, tr_rstd, logits, probs, losses;
    dten scratch_mem; /* backward scratch, reused by every layer */
    dten dres, dtmp, dtmp2, dqkv, dinter, dinter_gelu, datt, dlogits, dpadrow;
    dten ids_mem;                     /* DT_I32: the four [B*T] inputs below */
    dten tokens, types, keymask, labels;
    int has_mask; /* the last forward had an attention mask */
    int n_valid;  /* labels not ignored in the last forward */
    uint64_t drop_seed; /* dropout counters for the next forward and its backward */
    uint32_t drop_step;
};

/* ---- parameter table ------------------------------------------------------------------------ */

static void add_param(bert *m, size_t *off, const char *name, int d0, int d1, param_role role)
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

/* a layer's parameters; rows/cols: 'C' hidden_size, 'I' intermediate_size, 0 none (vector) */
static const struct {
    const char *suffix;
    char rows, cols;
    param_role role;
} LAYER[PARAMS_PER_LAYER] = {
    {"attention.self.query.weight", 'C', 'C', PARAM_MATRIX},
    {"attention.self.key.weight", 'C', 'C', PARAM_MATRIX},
    {"attention.self.value.weight", 'C', 'C', PARAM_MATRIX},
    {"attention.self.query.bias", 'C', 0, PARAM_BIAS},
    {"attention.self.key.bias", 'C', 0, PARAM_BIAS},
    {"attention.self.value.bias", 'C', 0, PARAM_BIAS},
    {"attention.output.dense.weight", 'C', 'C', PARAM_MATRIX},
    {"attention.output.dense.bias", 'C', 0, PARAM_BIAS},
    {"attention.output.LayerNorm.weight", 'C', 0, PARAM_NORM},
    {"attention.output.LayerNorm.bias", 'C', 0, PARAM_BIAS},
    {"intermediate.dense.weight", 'I', 'C', PARAM_MATRIX},
    {"intermediate.dense.bias", 'I', 0, PARAM_BIAS},
    {"output.dense.weight", 'C', 'I', PARAM_MATRIX},
    {"output.dense.bias", 'C', 0, PARAM_BIAS},
    {"output.LayerNorm.weight", 'C', 0, PARAM_NORM},
    {"output.LayerNorm.bias", 'C', 0, PARAM_BIAS},
};
enum { Q_W, K_W, V_W, Q_B, K_B, V_B, AO_W, AO_B, LN1_W, LN1_B, IN_W, IN_B, OUT_W, OUT_B, LN2_W,
       LN2_B };
enum { WORD, POS, TYPE, EMB_LN_W, EMB_LN_B };
enum { DEC_B, TR_W, TR_B, TR_LN_W, TR_LN_B }; /* after the layers */

static int dim(const bert_config *c, char which)
{
    return which == 'C' ? c->hidden_size : which == 'I' ? c->intermediate_size : 0;
}

static size_t build_param_table(bert *m)
{
    const bert_config *c = &m->c;
    int C = c->hidden_size, V = c->vocab_size;
    size_t off = 0;
    char name[64];
    m->params = calloc((size_t)c->num_hidden_layers * PARAMS_PER_LAYER + N_EMBED_PARAMS +
                           N_HEAD_PARAMS, sizeof *m->params);
    if (!m->params)
        return 0;
    add_param(m, &off, "embeddings.word_embeddings.weight", V, C, PARAM_EMBEDDING);
    add_param(m, &off, "embeddings.position_embeddings.weight", c->max_position_embeddings,
              C, PARAM_EMBEDDING);
    add_param(m, &off, "embeddings.token_type_embeddings.weight", c->type_vocab_size, C,
              PARAM_EMBEDDING);
    add_param(m, &off, "embeddings.LayerNorm.weight", C, 0, PARAM_NORM);
    add_param(m, &off, "embeddings.LayerNorm.bias", C, 0, PARAM_BIAS);
    for (int l = 0; l < c->num_hidden_layers; l++)
        for (int k = 0; k < PARAMS_PER_LAYER; k++) {
            snprintf(name, sizeof name, "encoder.layer.%d.%s", l, LAYER[k].suffix);
            add_param(m, &off, name, dim(c, LAYER[k].rows), dim(c, LAYER[k].cols), LAYER[k].role);
        }
    add_param(m, &off, "cls.predictions.bias", V, 0, PARAM_BIAS);
    add_param(m, &off, "cls.predictions.transform.dense.weight", C, C, PARAM_MATRIX);
    add_param(m, &off, "cls.predictions.transform.dense.bias", C, 0, PARAM_BIAS);
    add_param(m, &off, "cls.predictions.transform.LayerNorm.weight", C, 0, PARAM_NORM);
    add_param(m, &off, "cls.predictions.transform.LayerNorm.bias", C, 0, PARAM_BIAS);
    return off;
}

int bert_n_params(const bert *m) { return m->n_params; }
const param_info *bert_param(const bert *m, int i) { return &m->params[i]; }
size_t bert_param_count(const bert *m) { return m->param_mem.n; }
dten bert_all_params(const bert *m) { return m->param_mem; }
dten bert_all_grads(const bert *m) { return m->grad_mem; }

void bert_state(const bert *m, model_state *st)
{
    *st = (model_state){m->n_params, m->params, m->param_mem, m->grad_mem, m->m_mem, m->v_mem};
}

dten bert_param_view(const bert *m, int i)
{
    return dten_view(m->param_mem, m->params[i].offset, m->params[i].n);
}

dten bert_grad_view(const bert *m, int i)
{
    return dten_view(m->grad_mem, m->params[i].offset, m->params[i].n);
}

/* layer l's k-th parameter; E: the embeddings'; H: the head's */
static int layer_index(int l, int k) { return N_EMBED_PARAMS + l * PARAMS_PER_LAYER + k; }
static dten P(const bert *m, int l, int k) { return bert_param_view(m, layer_index(l, k)); }
static dten G(const bert *m, int l, int k) { return bert_grad_view(m, layer_index(l, k)); }
static dten PE(const bert *m, int k) { return bert_param_view(m, k); }
static dten GE(const bert *m, int k) { return bert_grad_view(m, k); }
static int head_index(const bert *m, int k) { return layer_index(m->c.num_hidden_layers, k); }
static dten PH(const bert *m, int k) { return bert_param_view(m, head_index(m, k)); }
static dten GH(const bert *m, int k) { return bert_grad_view(m, head_index(m, k)); }
/* the [3C, C] query|key|value weight and its [3C] bias, as one tensor */
static dten qkv_view(dten all, const bert *m, int l, int first)
{
    const param_info *p = &m->params[layer_index(l, first)];
    return dten_view(all, p->offset, 3 * p->n);
}

/* ---- checkpoint names ----------------------------------------------------------------------- */

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int exact_index(const bert *m, const char *name)
{
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(m->params[i].name, name) == 0)
            return i;
    return -1;
}

int bert_param_index(const bert *m, const char *name, int *alias)
{
    char spelled[128];
    if (strncmp(name, "bert.", 5) == 0) /* BertForMaskedLM's spelling; BertModel's has none */
        name += 5;
    int i = exact_index(m, name), is_alias = 0;
    if (i < 0 && strcmp(name, "cls.predictions.decoder.weight") == 0)
        i = WORD, is_alias = 1;
    else if (i < 0 && strcmp(name, "cls.predictions.decoder.bias") == 0)
        i = layer_index(m->c.num_hidden_layers, DEC_B), is_alias = 1;
    else if (i < 0 && strlen(name) < sizeof spelled &&
             (has_suffix(name, ".LayerNorm.gamma") || has_suffix(name, ".LayerNorm.beta"))) {
        size_t stem = strlen(name) - (has_suffix(name, ".gamma") ? 6 : 5);
        snprintf(spelled, sizeof spelled, "%.*s.%s", (int)stem, name,
                 has_suffix(name, ".gamma") ? "weight" : "bias");
        i = exact_index(m, spelled), is_alias = 1;
    }
    if (alias)
        *alias = i >= 0 && is_alias;
    return i;
}

int bert_name_unused(const char *name)
{
    if (strncmp(name, "bert.", 5) == 0)
        name += 5;
    return strncmp(name, "pooler.", 7) == 0 || strncmp(name, "cls.seq_relationship.", 21) == 0 ||
           strcmp(name, "embeddings.position_ids") == 0 ||
           strcmp(name, "embeddings.token_type_ids") == 0;
}

/* ---- sizes, in 64 bits, before anything is allocated ----------------------------------------- */

typedef struct {
    uint64_t BT, att, logits, inter; /* the largest activation tensors */
    uint64_t params, acts, scratch;  /* elements of each allocation */
} plan;

static void plan_sizes(const bert_config *c, int B, int T, plan *p)
{
    uint64_t C = (uint64_t)c->hidden_size, L = (uint64_t)c->num_hidden_layers;
    uint64_t BT = size_mul((uint64_t)B, (uint64_t)T), BTC = size_mul(BT, C);
    p->BT = BT;
    p->att = size_mul(size_mul((uint64_t)B, (uint64_t)c->num_attention_heads),
                      size_mul((uint64_t)T, (uint64_t)T));
    p->logits = size_mul(BT, (uint64_t)c->vocab_size);
    p->inter = size_mul(BT, (uint64_t)c->intermediate_size);
    p->params = bert_config_param_count(c);
    /* as layout_activations and layout_scratch carve them */
    uint64_t layer = size_add(size_add(size_mul(10, BTC), size_mul(2, p->inter)),
                              size_add(size_mul(4, BT), p->att));
    p->acts = size_add(size_add(size_mul(L, layer), size_mul(5, BTC)),
                       size_add(size_mul(5, BT), size_mul(2, p->logits)));
    p->scratch = size_add(size_add(size_add(size_mul(6, BTC), size_mul(2, p->inter)),
                                   size_add(p->att, p->logits)), C);
}

static double gib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* the tensors of batch B x sequence T within BERT_MAX_ELEMENTS; 0, or 1 with why */
static int check_tensors(const bert_config *c, int B, int T, const plan *p, char *why,
                         size_t len)
{
    const struct {
        uint64_t n;
        const char *what;
    } t[] = {{p->params, "parameters in all"},
             {p->BT, "tokens per step"},
             {p->inter, "elements in one intermediate activation (intermediate_size per token)"},
             {p->att, "elements in one attention matrix (heads x seq_len per token)"},
             {p->logits, "elements in the logits (vocab_size per token)"},
             {p->acts, "activation elements"},
             {p->scratch, "scratch elements"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].n > BERT_MAX_ELEMENTS) {
            snprintf(why, len,
                     "train.batch_size %d x data.seq_len %d with hidden_size %d, "
                     "intermediate_size %d, num_attention_heads %d, vocab_size %d, "
                     "num_hidden_layers %d: %llu %s, over the limit of %llu",
                     B, T, c->hidden_size, c->intermediate_size, c->num_attention_heads,
                     c->vocab_size, c->num_hidden_layers, (unsigned long long)t[i].n, t[i].what,
                     (unsigned long long)BERT_MAX_ELEMENTS);
            return 1;
        }
    return 0;
}

int bert_check_fit(const bert_config *c, int B, int T, const device *d, char *why, size_t len)
{
    if (B < 1 || T < 1 || T > c->max_position_embeddings) {
        snprintf(why, len, "train.batch_size %d x data.seq_len %d does not fit "
                 "max_position_embeddings %d (batch >= 1, 1 <= seq_len <= "
                 "max_position_embeddings)", B, T, c->max_position_embeddings);
        return 1;
    }
    plan p;
    plan_sizes(c, B, T, &p);
    if (check_tensors(c, B, T, &p, why, len))
        return 1;
    uint64_t state = size_mul(size_mul(4, p.params), d->real_size);
    uint64_t acts = size_mul(size_add(p.acts, p.scratch), d->real_size);
    uint64_t total = size_add(size_add(state, acts), size_mul(16, p.BT));
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

static void layout_layer(layer_acts *a, dten region, size_t *off, size_t BT, size_t C, size_t I,
                         size_t att)
{
    a->qkv = carve(region, off, BT * 3 * C);
    a->att = carve(region, off, att);
    a->atty = carve(region, off, BT * C);
    a->attproj = carve(region, off, BT * C);
    a->res1 = carve(region, off, BT * C);
    a->ln1 = carve(region, off, BT * C);
    a->ln1_mean = carve(region, off, BT);
    a->ln1_rstd = carve(region, off, BT);
    a->inter = carve(region, off, BT * I);
    a->inter_gelu = carve(region, off, BT * I);
    a->outproj = carve(region, off, BT * C);
    a->res2 = carve(region, off, BT * C);
    a->ln2 = carve(region, off, BT * C);
    a->ln2_mean = carve(region, off, BT);
    a->ln2_rstd = carve(region, off, BT);
}

/* lays out (or, with region.buf NULL, only counts) the activations kept for backward */
static size_t layout_activations(bert *m, dten region)
{
    size_t BT = (size_t)m->B * m->T, C = m->c.hidden_size, V = m->c.vocab_size;
    size_t att = (size_t)m->B * m->c.num_attention_heads * m->T * m->T, off = 0;
    region.n = (size_t)-1 / 2;
    m->emb = carve(region, &off, BT * C);
    m->emb_ln = carve(region, &off, BT * C);
    m->emb_mean = carve(region, &off, BT);
    m->emb_rstd = carve(region, &off, BT);
    for (int l = 0; l < m->c.num_hidden_layers; l++)
        layout_layer(&m->layers[l], region, &off, BT, C, (size_t)m->c.intermediate_size, att);
    m->tr = carve(region, &off, BT * C);
    m->tr_gelu = carve(region, &off, BT * C);
    m->tr_ln = carve(region, &off, BT * C);
    m->tr_mean = carve(region, &off, BT);
    m->tr_rstd = carve(region, &off, BT);
    m->logits = carve(region, &off, BT * V);
    m->probs = carve(region, &off, BT * V);
    m->losses = carve(region, &off, BT);
    return off;
}

/* backward scratch: one set reused by every layer */
static size_t layout_scratch(bert *m, dten region)
{
    size_t BT = (size_t)m->B * m->T, C = m->c.hidden_size, I = m->c.intermediate_size, off = 0;
    region.n = (size_t)-1 / 2;
    m->dres = carve(region, &off, BT * C);
    m->dtmp = carve(region, &off, BT * C);
    m->dtmp2 = carve(region, &off, BT * C);
    m->dqkv = carve(region, &off, BT * 3 * C);
    m->dinter = carve(region, &off, BT * I);
    m->dinter_gelu = carve(region, &off, BT * I);
    m->datt = carve(region, &off, (size_t)m->B * m->c.num_attention_heads * m->T * m->T);
    m->dlogits = carve(region, &off, BT * (size_t)m->c.vocab_size);
    m->dpadrow = carve(region, &off, C);
    return off;
}

static int alloc_all(bert *m)
{
    device *d = m->d;
    size_t np = m->param_mem.n, BT = (size_t)m->B * m->T;
    dten none = {0};
    plan p;
    plan_sizes(&m->c, m->B, m->T, &p);
    size_t n_act = layout_activations(m, none), n_scratch = layout_scratch(m, none);
    if (n_act != p.acts || n_scratch != p.scratch || np != p.params) {
        log_error("bert: internal error: the size plan (%llu, %llu, %llu) differs from the "
                  "layout (%zu, %zu, %zu)", (unsigned long long)p.acts,
                  (unsigned long long)p.scratch, (unsigned long long)p.params, n_act, n_scratch,
                  np);
        return 1;
    }
    m->param_mem = device_alloc(d, np, DT_REAL);
    m->grad_mem = device_alloc(d, np, DT_REAL);
    m->m_mem = device_alloc(d, np, DT_REAL);
    m->v_mem = device_alloc(d, np, DT_REAL);
    m->act_mem = device_alloc(d, n_act, DT_REAL);
    m->scratch_mem = device_alloc(d, n_scratch, DT_REAL);
    m->ids_mem = device_alloc(d, 4 * BT, DT_I32);
    if (device_error(d)) {
        log_error("%s: allocating the model: %s", d->backend, device_error(d));
        return 1;
    }
    layout_activations(m, m->act_mem);
    layout_scratch(m, m->scratch_mem);
    m->tokens = dten_view(m->ids_mem, 0, BT);
    m->types = dten_view(m->ids_mem, BT, BT);
    m->keymask = dten_view(m->ids_mem, 2 * BT, BT);
    m->labels = dten_view(m->ids_mem, 3 * BT, BT);
    return 0;
}

bert *bert_create(device *d, const bert_config *c, int B, int T)
{
    char why[512];
    if (bert_check_fit(c, B, T, d, why, sizeof why)) {
        log_error("bert: %s", why);
        return NULL;
    }
    bert *m = calloc(1, sizeof *m);
    if (!m || !(m->layers = calloc((size_t)c->num_hidden_layers, sizeof *m->layers))) {
        free(m);
        log_error("bert: out of host memory");
        return NULL;
    }
    m->d = d;
    m->c = *c;
    m->B = B;
    m->T = T;
    m->param_mem.n = build_param_table(m);
    if (!m->params || alloc_all(m) != 0) {
        if (!m->params)
            log_error("bert: out of host memory");
        bert_free(m);
        return NULL;
    }
    return m;
}

void bert_free(bert *m)
{
    if (!m)
        return;
    dten all[] = {m->param_mem, m->grad_mem, m->m_mem,      m->v_mem,
                  m->act_mem,   m->scratch_mem, m->ids_mem};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i].buf)
            device_free(m->d, all[i]);
    free(m->params);
    free(m->layers);
    free(m);
}

size_t bert_activation_bytes(const bert *m) { return m->act_mem.n * m->d->real_size; }
size_t bert_state_bytes(const bert *m) { return 4 * m->param_mem.n * m->d->real_size; }

static int check_device(bert *m, const char *phase)
{
    if (!device_error(m->d))
        return 0;
    log_error("%s: bert: %s: %s", m->d->backend, phase, device_error(m->d));
    return 1;
}

/* ---- initialisation and weights from/to the host --------------------------------------------- */

static void init_param(const param_info *p, float *w, rng_state *r, double std)
{
    for (size_t j = 0; j < p->n; j++) {
        if (p->role == PARAM_MATRIX || p->role == PARAM_EMBEDDING)
            w[j] = (float)rng_normal(r, 0.0, std);
        else
            w[j] = p->role == PARAM_NORM ? 1.0f : 0.0f;
    }
}

void bert_init_host(const bert *m, uint64_t seed, float *host)
{
    rng_state r;
    rng_seed(&r, seed);
    double std = m->c.initializer_range ? m->c.initializer_range : 0.02;
    for (int i = 0; i < m->n_params; i++)
        init_param(&m->params[i], host + m->params[i].offset, &r, std);
    if (m->c.pad_token_id >= 0)
        memset(host + m->params[WORD].offset + (size_t)m->c.pad_token_id * m->c.hidden_size, 0,
               (size_t)m->c.hidden_size * sizeof *host);
}

int bert_init_weights(bert *m, uint64_t seed)
{
    size_t np = m->param_mem.n;
    float *host = malloc(np * sizeof *host);
    if (!host) {
        log_error("bert: out of host memory for %zu initial weights", np);
        return 1;
    }
    bert_init_host(m, seed, host);
    int rc = bert_set_weights(m, host);
    free(host);
    return rc;
}

int bert_set_weights(bert *m, const float *host)
{
    m->d->ops->upload(m->d, m->param_mem, host);
    m->d->ops->zero(m->d, m->m_mem);
    m->d->ops->zero(m->d, m->v_mem);
    return check_device(m, "uploading weights");
}

int bert_get_weights(bert *m, float *host, int grads)
{
    m->d->ops->download(m->d, host, grads ? m->grad_mem : m->param_mem);
    return check_device(m, grads ? "downloading gradients" : "downloading weights");
}

/* ---- forward --------------------------------------------------------------------------------- */

/* out[N,OC] = inp[N,IC] . W[OC,IC]^T + b (nn.Linear layout) */
static void linear_forward(device *d, dten out, dten inp, dten w, dten b, int N, int IC, int OC)
{
    d->ops->gemm(d, 0, 1, N, OC, IC, 1.0, inp, IC, 0, w, IC, 0, 0.0, out, OC, 0, 1);
    d->ops->bias_add(d, out, b, N, OC);
}

void bert_set_dropout_counters(bert *m, uint64_t seed, uint32_t step)
{
    m->drop_seed = seed;
    m->drop_step = step;
}

/* hidden_dropout_prob on x in place at (layer, site); nothing when it is 0 */
static void hidden_dropout(bert *m, dten x, uint32_t layer, uint32_t site)
{
    double p = m->c.hidden_dropout_prob;
    if (p > 0)
        m->d->ops->dropout_forward(m->d, x, (dten){0}, x, (int)x.n, p, m->drop_seed,
                                   m->drop_step, layer, site);
}

/* attention_probs_dropout_prob of layer l, or NULL when it is 0 (no dropout code) */
static const attn_dropout *attn_drop(const bert *m, int l, attn_dropout *buf)
{
    if (m->c.attention_probs_dropout_prob == 0)
        return NULL;
    *buf = (attn_dropout){m->c.attention_probs_dropout_prob, m->drop_seed, m->drop_step,
                          (uint32_t)l};
    return buf;
}

/* x: the layer's input [B*T, C]; its output is layers[l].ln2. Dropout as HF BertLayer: on the
 * attention probabilities, and on each dense output before its residual and LayerNorm */
static void layer_forward(bert *m, int l, dten x)
{
    device *d = m->d;
    const device_i *o = d->ops;
    layer_acts *a = &m->layers[l];
    int BT = m->B * m->T, C = m->c.hidden_size, I = m->c.intermediate_size;
    double eps = m->c.layer_norm_eps;
    dten mask = m->has_mask ? m->keymask : (dten){0};
    linear_forward(d, a->qkv, x, qkv_view(m->param_mem, m, l, Q_W),
                   qkv_view(m->param_mem, m, l, Q_B), BT, C, 3 * C);
    attn_dropout drop;
    o->attention_masked_forward(d, a->atty, a->att, a->qkv, mask, m->B, m->T, C,
                                m->c.num_attention_heads, 0, attn_drop(m, l, &drop));
    linear_forward(d, a->attproj, a->atty, P(m, l, AO_W), P(m, l, AO_B), BT, C, C);
    hidden_dropout(m, a->attproj, (uint32_t)l, DROPOUT_SITE_ATTN_OUT);
    o->add(d, a->res1, x, a->attproj, BT * C);
    o->layernorm_forward(d, a->ln1, a->ln1_mean, a->ln1_rstd, a->res1, P(m, l, LN1_W),
                         P(m, l, LN1_B), BT, C, eps);
    linear_forward(d, a->inter, a->ln1, P(m, l, IN_W), P(m, l, IN_B), BT, C, I);
    o->gelu_erf_forward(d, a->inter_gelu, a->inter, BT * I);
    linear_forward(d, a->outproj, a->inter_gelu, P(m, l, OUT_W), P(m, l, OUT_B), BT, I, C);
    hidden_dropout(m, a->outproj, (uint32_t)l, DROPOUT_SITE_MLP_OUT);
    o->add(d, a->res2, a->ln1, a->outproj, BT * C);
    o->layernorm_forward(d, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, P(m, l, LN2_W),
                         P(m, l, LN2_B), BT, C, eps);
}

/* MLM head on the encoder output h: transform (dense, GELU, LayerNorm), tied decoder + bias */
static void head_forward(bert *m, dten h)
{
    device *d = m->d;
    const device_i *o = d->ops;
    int BT = m->B * m->T, C = m->c.hidden_size, V = m->c.vocab_size;
    linear_forward(d, m->tr, h, PH(m, TR_W), PH(m, TR_B), BT, C, C);
    o->gelu_erf_forward(d, m->tr_gelu, m->tr, BT * C);
    o->layernorm_forward(d, m->tr_ln, m->tr_mean, m->tr_rstd, m->tr_gelu, PH(m, TR_LN_W),
                         PH(m, TR_LN_B), BT, C, m->c.layer_norm_eps);
    linear_forward(d, m->logits, m->tr_ln, PE(m, WORD), PH(m, DEC_B), BT, C, V);
    o->softmax_xent_forward(d, m->losses, m->probs, m->logits, m->labels, BT, V, IGNORE_INDEX);
}

/* the ids of one input within [0, limit) (labels may also be -100); 0, or 1 with a message */
static int check_ids(const int32_t *ids, int n, int limit, int labels, const char *what)
{
    for (int i = 0; i < n; i++)
        if ((ids[i] < 0 || ids[i] >= limit) && !(labels && ids[i] == IGNORE_INDEX)) {
            log_error("bert: %s %d at position %d is outside [0, %d)%s", what, ids[i], i, limit,
                      labels ? " and not -100" : "");
            return 1;
        }
    return 0;
}

/* uploads the four inputs (absent ones as transformers' defaults) and counts the labels */
static int upload_inputs(bert *m, const int32_t *ids, const int32_t *types, const int32_t *mask,
                         const int32_t *labels)
{
    int BT = m->B * m->T, V = m->c.vocab_size;
    if (check_ids(ids, BT, V, 0, "input id") || check_ids(labels, BT, V, 1, "label") ||
        (types && check_ids(types, BT, m->c.type_vocab_size, 0, "token type id")))
        return 1;
    m->n_valid = 0;
    for (int i = 0; i < BT; i++)
        m->n_valid += labels[i] != IGNORE_INDEX;
    const device_i *o = m->d->ops;
    o->upload_i32(m->d, m->tokens, ids);
    o->upload_i32(m->d, m->labels, labels);
    if (types)
        o->upload_i32(m->d, m->types, types);
    else
        o->zero(m->d, m->types);
    m->has_mask = mask != NULL;
    if (mask)
        o->upload_i32(m->d, m->keymask, mask);
    return 0;
}

int bert_forward(bert *m, const int32_t *input_ids, const int32_t *token_type_ids,
                 const int32_t *attention_mask, const int32_t *labels, double *loss)
{
    device *d = m->d;
    const device_i *o = d->ops;
    int BT = m->B * m->T, C = m->c.hidden_size;
    if (upload_inputs(m, input_ids, token_type_ids, attention_mask, labels))
        return 1;
    o->embedding_tt_forward(d, m->emb, m->tokens, m->types, PE(m, WORD), PE(m, POS), PE(m, TYPE),
                            m->B, m->T, C);
    o->layernorm_forward(d, m->emb_ln, m->emb_mean, m->emb_rstd, m->emb, PE(m, EMB_LN_W),
                         PE(m, EMB_LN_B), BT, C, m->c.layer_norm_eps);
    hidden_dropout(m, m->emb_ln, 0, DROPOUT_SITE_EMBED); /* BertEmbeddings' dropout */
    dten h = m->emb_ln;
    for (int l = 0; l < m->c.num_hidden_layers; l++) {
        layer_forward(m, l, h);
        h = m->layers[l].ln2;
    }
    head_forward(m, h);
    double total = o->sum(d, m->losses, BT);
    /* no masked position: 0 (PyTorch's mean gives 0/0 = NaN). Unlike an SFT batch without
     * labels (a data error, docs/scenario.md), this is a chance of the 15 % masking in a small
     * batch: the step trains nothing (zero gradient, as in PyTorch) and the run goes on */
    *loss = m->n_valid ? total / m->n_valid : 0.0;
    return check_device(m, "forward");
}

/* ---- backward -------------------------------------------------------------------------------- */

/* dinp[N,IC] = dout . W (overwrites); dW[OC,IC] += dout^T . inp; db += sum_n dout */
static void linear_backward(device *d, dten dinp, dten dw, dten db, dten dout, dten inp, dten w,
                            int N, int IC, int OC)
{
    d->ops->gemm(d, 0, 0, N, IC, OC, 1.0, dout, OC, 0, w, IC, 0, 0.0, dinp, IC, 0, 1);
    d->ops->gemm(d, 1, 0, OC, IC, N, 1.0, dout, OC, 0, inp, IC, 0, 1.0, dw, IC, 0, 1);
    d->ops->bias_backward(d, db, dout, N, OC);
}

/* dL/d(a hidden dropout's input) from dout = dL/d(its output), into the first n of `into` (a
 * scratch free at the call), or dout itself when hidden_dropout_prob is 0 */
static dten dropout_grad(bert *m, dten into, dten dout, uint32_t layer, uint32_t site)
{
    double p = m->c.hidden_dropout_prob;
    if (p == 0)
        return dout;
    dten g = dten_view(into, 0, dout.n);
    m->d->ops->zero(m->d, g);
    m->d->ops->dropout_backward(m->d, g, dout, (int)dout.n, p, m->drop_seed, m->drop_step, layer,
                                site);
    return g;
}

/* dres holds dL/d(layer output ln2) on entry and dL/d(layer input x) on return */
static void layer_backward(bert *m, int l, dten x)
{
    device *d = m->d;
    const device_i *o = d->ops;
    layer_acts *a = &m->layers[l];
    int BT = m->B * m->T, C = m->c.hidden_size, I = m->c.intermediate_size;
    dten mask = m->has_mask ? m->keymask : (dten){0};
    /* ln2 = LayerNorm(res2), res2 = ln1 + output.dense(gelu(intermediate.dense(ln1))) */
    o->zero(d, m->dtmp);
    o->layernorm_backward(d, m->dtmp, G(m, l, LN2_W), G(m, l, LN2_B), m->dres, a->res2,
                          P(m, l, LN2_W), a->ln2_mean, a->ln2_rstd, BT, C);
    dten dproj = dropout_grad(m, m->dqkv, m->dtmp, (uint32_t)l, DROPOUT_SITE_MLP_OUT);
    linear_backward(d, m->dinter_gelu, G(m, l, OUT_W), G(m, l, OUT_B), dproj, a->inter_gelu,
                    P(m, l, OUT_W), BT, I, C);
    o->zero(d, m->dinter);
    o->gelu_erf_backward(d, m->dinter, a->inter, m->dinter_gelu, BT * I);
    linear_backward(d, m->dres, G(m, l, IN_W), G(m, l, IN_B), m->dinter, a->ln1, P(m, l, IN_W),
                    BT, C, I);
    o->accumulate(d, m->dres, m->dtmp, BT * C);
    /* ln1 = LayerNorm(res1), res1 = x + attention.output.dense(attention(qkv(x))) */
    o->zero(d, m->dtmp);
    o->layernorm_backward(d, m->dtmp, G(m, l, LN1_W), G(m, l, LN1_B), m->dres, a->res1,
                          P(m, l, LN1_W), a->ln1_mean, a->ln1_rstd, BT, C);
    dproj = dropout_grad(m, m->dqkv, m->dtmp, (uint32_t)l, DROPOUT_SITE_ATTN_OUT);
    linear_backward(d, m->dtmp2, G(m, l, AO_W), G(m, l, AO_B), dproj, a->atty, P(m, l, AO_W),
                    BT, C, C);
    o->zero(d, m->dqkv);
    attn_dropout drop;
    o->attention_masked_backward(d, m->dqkv, m->datt, m->dtmp2, a->qkv, a->att, mask, m->B,
                                 m->T, C, m->c.num_attention_heads, 0, attn_drop(m, l, &drop));
    linear_backward(d, m->dres, qkv_view(m->grad_mem, m, l, Q_W),
                    qkv_view(m->grad_mem, m, l, Q_B), m->dqkv, x,
                    qkv_view(m->param_mem, m, l, Q_W), BT, C, 3 * C);
    o->accumulate(d, m->dres, m->dtmp, BT * C);
}

/* from the loss to dres = dL/d(encoder output h) */
static void head_backward(bert *m, dten h)
{
    device *d = m->d;
    const device_i *o = d->ops;
    int BT = m->B * m->T, C = m->c.hidden_size, V = m->c.vocab_size;
    o->zero(d, m->dlogits);
    o->softmax_xent_backward(d, m->dlogits, m->probs, m->labels, BT, V, IGNORE_INDEX,
                             m->n_valid ? 1.0 / m->n_valid : 0.0);
    linear_backward(d, m->dtmp, GE(m, WORD), GH(m, DEC_B), m->dlogits, m->tr_ln, PE(m, WORD), BT,
                    C, V);
    o->zero(d, m->dtmp2);
    o->layernorm_backward(d, m->dtmp2, GH(m, TR_LN_W), GH(m, TR_LN_B), m->dtmp, m->tr_gelu,
                          PH(m, TR_LN_W), m->tr_mean, m->tr_rstd, BT, C);
    o->zero(d, m->dtmp);
    o->gelu_erf_backward(d, m->dtmp, m->tr, m->dtmp2, BT * C);
    linear_backward(d, m->dres, GH(m, TR_W), GH(m, TR_B), m->dtmp, h, PH(m, TR_W), BT, C, C);
}

/* from dres = dL/d(emb_ln) into the embedding tables; the pad row keeps only the decoder's
 * gradient (nn.Embedding's padding_idx) */
static void embeddings_backward(bert *m)
{
    device *d = m->d;
    const device_i *o = d->ops;
    int BT = m->B * m->T, C = m->c.hidden_size;
    dten padrow = {0};
    if (m->c.pad_token_id >= 0) {
        padrow = dten_view(bert_grad_view(m, WORD), (size_t)m->c.pad_token_id * C, (size_t)C);
        o->copy(d, m->dpadrow, padrow);
    }
    dten dln = dropout_grad(m, m->dtmp2, m->dres, 0, DROPOUT_SITE_EMBED);
    o->zero(d, m->dtmp);
    o->layernorm_backward(d, m->dtmp, GE(m, EMB_LN_W), GE(m, EMB_LN_B), dln, m->emb,
                          PE(m, EMB_LN_W), m->emb_mean, m->emb_rstd, BT, C);
    o->embedding_tt_backward(d, GE(m, WORD), GE(m, POS), GE(m, TYPE), m->dtmp, m->tokens,
                             m->types, m->B, m->T, C);
    if (padrow.buf)
        o->copy(d, padrow, m->dpadrow);
}

int bert_backward(bert *m)
{
    int L = m->c.num_hidden_layers;
    m->d->ops->zero(m->d, m->grad_mem);
    head_backward(m, L ? m->layers[L - 1].ln2 : m->emb_ln);
    for (int l = L - 1; l >= 0; l--)
        layer_backward(m, l, l ? m->layers[l - 1].ln2 : m->emb_ln);
    embeddings_backward(m);
    return check_device(m, "backward");
}

double bert_grad_norm(bert *m)
{
    return sqrt(m->d->ops->sumsq(m->d, m->grad_mem, (int)m->grad_mem.n));
}

void bert_scale_grads(bert *m, double s)
{
    m->d->ops->scale(m->d, m->grad_mem, s, (int)m->grad_mem.n);
}

/* ---- optimizer ------------------------------------------------------------------------------- */

int bert_adamw_step(bert *m, const adamw_params *p, int t)
{
    device *d = m->d;
    if (p->decay_all || p->weight_decay == 0.0) {
        d->ops->adamw(d, m->param_mem, m->grad_mem, m->m_mem, m->v_mem, (int)m->param_mem.n,
                      p->lr, p->beta1, p->beta2, p->eps, p->weight_decay, t);
        return check_device(m, "adamw");
    }
    for (int i = 0; i < m->n_params; i++) {
        const param_info *pi = &m->params[i];
        int decays = pi->role == PARAM_MATRIX || pi->role == PARAM_EMBEDDING;
        d->ops->adamw(d, bert_param_view(m, i), bert_grad_view(m, i),
                      dten_view(m->m_mem, pi->offset, pi->n),
                      dten_view(m->v_mem, pi->offset, pi->n), (int)pi->n, p->lr, p->beta1,
                      p->beta2, p->eps, decays ? p->weight_decay : 0.0, t);
    }
    return check_device(m, "adamw");
}
