/* tests/test_safetensors.c: the safetensors parser (every header rule, malformed files), fp16 and
 * bf16 conversion, the writer, sharded sets, and GPT-2 checkpoints saved and loaded by name. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "models/checkpoint.h"
#include "device.h"
#include "models/models.h"
#include "formats/safetensors.h"
#include "testutil.h"
#include "util/util.h"

/* ---- crafted images ------------------------------------------------------------------------ */

typedef struct {
    unsigned char *buf;
    size_t len;
} image;

/* [u64 header length][header][data] */
static image craft(const char *header, const void *data, size_t dlen)
{
    size_t h = strlen(header);
    image im = {malloc(8 + h + dlen + 1), 8 + h + dlen};
    assert_non_null(im.buf);
    for (int i = 0; i < 8; i++)
        im.buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(im.buf + 8, header, h);
    if (dlen)
        memcpy(im.buf + 8 + h, data, dlen);
    return im;
}

/* parses an image; returns the code, the message in err */
static int parse(image im, char *err, size_t errlen)
{
    st_file f;
    err[0] = 0;
    int rc = st_parse(im.buf, im.len, "t.safetensors", &f, err, errlen);
    st_close(&f);
    free(im.buf);
    return rc;
}

static void expect_bad(const char *header, size_t dlen, const char *says)
{
    static const unsigned char zeros[64];
    char err[1024];
    assert_true(dlen <= sizeof zeros);
    int rc = parse(craft(header, zeros, dlen), err, sizeof err);
    if (rc != 2 || !strstr(err, says))
        fail_msg("header %s: rc %d, message \"%s\" lacks \"%s\"", header, rc, err, says);
}

static void test_parse_good(void **state)
{
    (void)state;
    float v[3] = {1.0f, -2.0f, 0.5f};
    image im = craft("{\"__metadata__\": {\"format\": \"pt\"}, \"b\": {\"dtype\": \"F32\", \"shape\": "
                     "[1], \"data_offsets\": [8, 12]}, \"a\": {\"dtype\": \"F32\", \"shape\": [2], "
                     "\"data_offsets\": [0, 8]}, \"e\": {\"dtype\": \"F32\", \"shape\": [0, 3], "
                     "\"data_offsets\": [12, 12]}}   ",
                     v, sizeof v);
    st_file f;
    char err[512];
    assert_int_equal(st_parse(im.buf, im.len, "t", &f, err, sizeof err), 0);
    assert_int_equal(f.n, 3);
    const st_tensor *a = st_find(&f, "a");
    assert_non_null(a);
    float out[2];
    assert_int_equal(st_read_f32(&f, a, out), 0);
    assert_true(out[0] == 1.0f && out[1] == -2.0f);
    assert_string_equal(json_string_value(json_object_get(f.metadata, "format")), "pt");
    assert_int_equal(st_find(&f, "e")->n, 0);
    st_close(&f);
    free(im.buf);
}

/* "__metadata__": null, which the safetensors library reads as no metadata */
static void test_parse_null_metadata(void **state)
{
    (void)state;
    float v[1] = {3.0f};
    image im = craft("{\"__metadata__\": null, \"a\": {\"dtype\": \"F32\", \"shape\": [1], "
                     "\"data_offsets\": [0, 4]}}",
                     v, sizeof v);
    st_file f;
    char err[512];
    assert_int_equal(st_parse(im.buf, im.len, "t", &f, err, sizeof err), 0);
    assert_int_equal(f.n, 1);
    assert_null(f.metadata);
    st_close(&f);
    free(im.buf);
}

static void test_parse_bad(void **state)
{
    (void)state;
    char err[512];
    unsigned char tiny[4] = {1, 2, 3, 4};
    assert_int_equal(parse((image){memcpy(malloc(4), tiny, 4), 4}, err, sizeof err), 2);
    assert_non_null(strstr(err, "too short"));
    image im = craft("{}", NULL, 0);
    im.buf[0] = 200; /* header length past the end */
    assert_int_equal(parse(im, err, sizeof err), 2);
    assert_non_null(strstr(err, "exceeds"));
#define T(name, rest) "{\"" name "\": {" rest "}}"
    expect_bad("", 0, "does not start with '{'");
    expect_bad("[1]", 0, "does not start with '{'");
    expect_bad("{\"a\": ", 0, "not valid JSON");
    expect_bad("{\"a\": 1, \"a\": 2}", 0, "not valid JSON");
    expect_bad("{\"w\": 5}", 0, "tensor \"w\": must be an object");
    expect_bad(T("w", "\"dtype\": \"F33\", \"shape\": [1], \"data_offsets\": [0, 4]"), 4, "unknown dtype");
    expect_bad(T("w", "\"dtype\": 3, \"shape\": [1], \"data_offsets\": [0, 4]"), 4, "dtype must be");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]"), 4, "shape[0]");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]"), 4, "shape[0]");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": 4, \"data_offsets\": [0, 4]"), 4, "shape must");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]"),
               4, "dimensions");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 4294967296], "
                      "\"data_offsets\": [0, 4]"), 4, "overflows");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 8]"), 4, "run past");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 0]"), 4, "end before");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4]"), 4, "takes 8");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0]"), 4, "[begin, end]");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, -4]"), 4, "integers >= 0");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]"), 8, "belong to no tensor");
    expect_bad(T("w", "\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]"), 8, "at the end");
    expect_bad("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, \"b\": {\"dtype\": "
               "\"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", 8, "overlaps");
    expect_bad("{\"__metadata__\": {\"k\": 1}}", 0, "must be a string");
    expect_bad("{\"__metadata__\": [1]}", 0, "__metadata__ must be");
#undef T
}

static uint16_t to_f16(float x)
{
    /* exact for the values used here: normal halves */
    uint32_t b;
    memcpy(&b, &x, 4);
    uint32_t sign = b >> 31, exp = (b >> 23) & 0xff, mant = b & 0x7fffff;
    return (uint16_t)((sign << 15) | ((exp - 127 + 15) << 10) | (mant >> 13));
}

static void test_f16_bf16(void **state)
{
    (void)state;
    assert_true(st_f16_to_f32(0x3c00) == 1.0f);
    assert_true(st_f16_to_f32(0xc000) == -2.0f);
    assert_true(st_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(st_f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    assert_true(isinf(st_f16_to_f32(0x7c00)) && isnan(st_f16_to_f32(0x7e00)));
    assert_true(st_bf16_to_f32(0x3f80) == 1.0f);
    assert_true(st_bf16_to_f32(0xc0a0) == -5.0f);
    uint16_t h[2] = {to_f16(0.25f), to_f16(-3.5f)}, bf[2] = {0x4049, 0xbf80}; /* 3.140625, -1 */
    unsigned char data[8];
    memcpy(data, h, 4);
    memcpy(data + 4, bf, 4);
    image im = craft("{\"h\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4]}, \"b\": "
                     "{\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [4, 8]}}", data, 8);
    st_file f;
    char err[256];
    assert_int_equal(st_parse(im.buf, im.len, "t", &f, err, sizeof err), 0);
    float o[2];
    assert_int_equal(st_read_f32(&f, st_find(&f, "h"), o), 0);
    assert_true(o[0] == 0.25f && o[1] == -3.5f);
    assert_int_equal(st_read_f32(&f, st_find(&f, "b"), o), 0);
    assert_true(o[0] == 3.140625f && o[1] == -1.0f);
    st_close(&f);
    free(im.buf);
}

static void test_write_read(void **state)
{
    (void)state;
    float a[6] = {1, 2, 3, 4, 5, 6};
    double b[2] = {0.1, -1e300};
    st_entry e[2] = {{"x.weight", a, NULL, 2, {2, 3}}, {"y", NULL, b, 1, {2}}};
    const char *path = tu_temp_path(".safetensors");
    json_t *meta = json_pack("{s:s}", "format", "pt");
    assert_int_equal(st_write(path, e, 2, meta), 0);
    json_decref(meta);
    st_file f;
    assert_int_equal(st_open(path, &f), 0);
    const st_tensor *x = st_find(&f, "x.weight");
    assert_true(x && x->ndim == 2 && x->shape[0] == 2 && x->shape[1] == 3 && x->dtype == ST_F32);
    assert_int_equal((8 + (f.data - (const unsigned char *)f.map - 8)) % 8, 0); /* padded */
    double y[2];
    assert_int_equal(st_read_f64(&f, st_find(&f, "y"), y), 0);
    assert_true(y[0] == 0.1 && y[1] == -1e300);
    st_close(&f);
    remove(path);
    assert_int_equal(st_open("/nonexistent.safetensors", &f), 2);
    assert_int_equal(st_open("/tmp", &f), 2);
}

/* ---- sharded sets -------------------------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *shard_dir(void)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "%s", tu_temp_path(".d"));
    mkdir(dir, 0777);
    float a[2] = {1, 2}, b[1] = {3};
    st_entry e1[1] = {{"a", a, NULL, 1, {2}}}, e2[1] = {{"b", b, NULL, 1, {1}}};
    char p[512];
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", dir);
    assert_int_equal(st_write(p, e1, 1, NULL), 0);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", dir);
    assert_int_equal(st_write(p, e2, 1, NULL), 0);
    return dir;
}

/* 0 with the tensor count in *n, or the error code */
static int open_with_index(const char *dir, const char *index, int *n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    write_text(p, index);
    st_set s;
    int rc = st_set_open_dir(dir, &s);
    if (rc == 0) {
        *n = s.n;
        st_set_close(&s);
    }
    return rc;
}

static void test_sharded(void **state)
{
    (void)state;
    const char *dir = shard_dir();
    const char *s1 = "model-00001-of-00002.safetensors", *s2 = "model-00002-of-00002.safetensors";
    char idx[1024];
    snprintf(idx, sizeof idx, "{\"metadata\": {\"total_size\": 12}, \"weight_map\": {\"a\": \"%s\", "
             "\"b\": \"%s\"}}", s1, s2);
    int n = 0;
    assert_int_equal(open_with_index(dir, idx, &n), 0);
    assert_int_equal(n, 2);
    snprintf(idx, sizeof idx, "{\"weight_map\": {\"a\": \"%s\", \"b\": \"%s\"}}", s1, s1);
    assert_int_equal(open_with_index(dir, idx, &n), 2); /* b is in the other shard */
    snprintf(idx, sizeof idx, "{\"weight_map\": {\"a\": \"%s\"}}", s1);
    assert_int_equal(open_with_index(dir, idx, &n), 0); /* a shard the map does not name is */
    assert_int_equal(n, 1);                              /* not read, as from_pretrained does */
    snprintf(idx, sizeof idx, "{\"weight_map\": {\"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\"}}", s1,
             s2, s2);
    assert_int_equal(open_with_index(dir, idx, &n), 2); /* c is in no shard */
    assert_int_equal(open_with_index(dir, "{\"weight_map\": {\"a\": \"../etc/passwd\"}}", &n), 2);
    assert_int_equal(open_with_index(dir, "{\"weight_map\": {\"a\": \"missing.safetensors\"}}", &n), 2);
    assert_int_equal(open_with_index(dir, "{\"weight_map\": [1]}", &n), 2);
    assert_int_equal(open_with_index(dir, "{\"weight_map\": ", &n), 2);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    st_set s;
    assert_int_equal(st_set_open_dir("/nonexistent-dir", &s), -1);
}

/* ---- GPT-2 checkpoints ----------------------------------------------------------------------- */

static gpt2_config tiny_config(void)
{
    gpt2_config c;
    gpt2_config_defaults(&c);
    c.vocab_size = 40;
    c.n_positions = 8;
    c.n_embd = 8;
    c.n_layer = 2;
    c.n_head = 2;
    c.resid_pdrop = c.embd_pdrop = c.attn_pdrop = 0;
    return c;
}

typedef struct {
    device *d;
    model_config_u c;
    model *m;
    char dir[256];
} ckpt;

static void ckpt_open(ckpt *k)
{
    char err[256];
    k->d = device_open("cpu", err, sizeof err);
    assert_non_null(k->d);
    k->c.gpt2 = tiny_config();
    k->m = model_create(model_family_find("gpt2"), k->d, &k->c, 1, 4);
    assert_non_null(k->m);
    assert_int_equal(model_init_weights(k->m, 5), 0);
    snprintf(k->dir, sizeof k->dir, "%s", tu_temp_path(".ckpt"));
}

static void ckpt_close(ckpt *k)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", k->dir);
    assert_int_equal(system(cmd), 0);
    model_free(k->m);
    device_close(k->d);
}

static float *weights(model *m)
{
    float *w = malloc(model_param_count(m) * sizeof *w);
    assert_non_null(w);
    assert_int_equal(model_get_weights(m, w, 0), 0);
    return w;
}

static void test_checkpoint_round_trip(void **state)
{
    (void)state;
    ckpt k;
    ckpt_open(&k);
    assert_int_equal(checkpoint_save(k.m, &k.c, NULL, k.dir), 0);
    float *before = weights(k.m);
    model *m2 = model_create(model_family_find("gpt2"), k.d, &k.c, 1, 4);
    assert_int_equal(model_init_weights(m2, 99), 0);
    assert_int_equal(checkpoint_load(m2, k.dir), 0);
    float *after = weights(m2);
    assert_memory_equal(before, after, model_param_count(k.m) * sizeof *before);
    /* names as save_pretrained writes them; lm_head left out; format pt */
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", k.dir);
    st_file f;
    assert_int_equal(st_open(p, &f), 0);
    assert_non_null(st_find(&f, "transformer.h.1.mlp.c_proj.weight"));
    assert_null(st_find(&f, "lm_head.weight"));
    assert_string_equal(json_string_value(json_object_get(f.metadata, "format")), "pt");
    st_close(&f);
    snprintf(p, sizeof p, "%s/config.json", k.dir);
    json_t *cfg = json_load_file(p, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(cfg, "n_layer")), 2);
    assert_string_equal(json_string_value(json_object_get(cfg, "model_type")), "gpt2");
    json_decref(cfg);
    free(before);
    free(after);
    model_free(m2);
    ckpt_close(&k);
}

/* writes the model's tensors under other names or shapes, or with more or fewer of them */
/* EXTRA: a tensor of a later layer that is no parameter even in layer 0 (an error);
 * DROPPED_LAYER: a tensor of layer 2 of a 2-layer config, skipped as from_pretrained skips it */
typedef enum { NO_PREFIX, DROP_ONE, EXTRA, BAD_SHAPE, WITH_BUFFERS, LM_HEAD, DROPPED_LAYER } variant;

static int save_variant(ckpt *k, variant v)
{
    float *w = weights(k->m);
    int n = model_n_params(k->m), j = 0;
    st_entry *e = calloc((size_t)n + 4, sizeof *e);
    char (*names)[80] = calloc((size_t)n + 4, sizeof *names);
    for (int i = 0; i < n; i++) {
        const param_info *p = model_param(k->m, i);
        if (v == DROP_ONE && i == 3)
            continue;
        snprintf(names[j], sizeof names[j], "%s%s", v == NO_PREFIX ? "" : "transformer.", p->name);
        e[j] = (st_entry){names[j], w + p->offset, NULL, p->ndim, {p->shape[0], p->shape[1]}};
        if (v == BAD_SHAPE && i == 4)
            e[j].shape[1] = p->shape[0], e[j].shape[0] = p->shape[1]; /* transposed */
        j++;
    }
    if (v == EXTRA || v == WITH_BUFFERS || v == LM_HEAD || v == DROPPED_LAYER) {
        const param_info *wte = model_param(k->m, 0);
        snprintf(names[j], sizeof names[j], "%s",
                 v == EXTRA           ? "transformer.h.2.ln_3.weight"
                 : v == DROPPED_LAYER ? "transformer.h.2.ln_1.weight"
                 : v == LM_HEAD       ? "lm_head.weight"
                                      : "transformer.h.0.attn.bias");
        e[j] = (st_entry){names[j], w, NULL, v == LM_HEAD ? 2 : 1,
                          {v == LM_HEAD ? wte->shape[0] : 8, v == LM_HEAD ? wte->shape[1] : 0}};
        j++;
    }
    mkdir(k->dir, 0777);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", k->dir);
    int rc = st_write(p, e, j, NULL);
    free(e);
    free(names);
    free(w);
    return rc;
}

static void test_checkpoint_variants(void **state)
{
    (void)state;
    const struct {
        variant v;
        int rc;
    } cases[] = {{NO_PREFIX, 0}, {DROP_ONE, 2}, {EXTRA, 2}, {BAD_SHAPE, 2}, {WITH_BUFFERS, 0},
                 {LM_HEAD, 0}, {DROPPED_LAYER, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ckpt k;
        ckpt_open(&k);
        assert_int_equal(save_variant(&k, cases[i].v), 0);
        int rc = checkpoint_load(k.m, k.dir);
        if (rc != cases[i].rc)
            fail_msg("variant %d: checkpoint_load returned %d, want %d", (int)cases[i].v, rc,
                     cases[i].rc);
        ckpt_close(&k);
    }
    ckpt k;
    ckpt_open(&k);
    assert_int_equal(checkpoint_load(k.m, k.dir), 2); /* no weights at all */
    ckpt_close(&k);
}

/* a tensor of an integer dtype is refused by name */
static void test_checkpoint_dtypes(void **state)
{
    (void)state;
    ckpt k;
    ckpt_open(&k);
    assert_int_equal(checkpoint_save(k.m, &k.c, NULL, k.dir), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/model.safetensors", k.dir);
    st_file f;
    assert_int_equal(st_open(p, &f), 0);
    /* ln_f.bias turned into I32 (same size) by editing the header in place */
    size_t hlen = (size_t)(f.data - (const unsigned char *)f.map) - 8;
    char *header = strndup((const char *)f.map + 8, hlen);
    const st_tensor *t = st_find(&f, "transformer.ln_f.bias");
    assert_non_null(t);
    st_close(&f);
    char *at = strstr(header, "\"transformer.ln_f.bias\":{\"dtype\":\"F32\"");
    assert_non_null(at);
    memcpy(strstr(at, "F32"), "I32", 3);
    size_t len;
    char *file = read_file(p, &len);
    memcpy(file + 8, header, hlen);
    FILE *o = fopen(p, "wb");
    fwrite(file, 1, len, o);
    fclose(o);
    assert_int_equal(checkpoint_load(k.m, k.dir), 2);
    free(file);
    free(header);
    ckpt_close(&k);
}

/* the checkpoint split into two shards with an index, as save_pretrained shards big models */
static void test_checkpoint_sharded(void **state)
{
    (void)state;
    ckpt k;
    ckpt_open(&k);
    float *w = weights(k.m);
    int n = model_n_params(k.m);
    st_entry *e = calloc((size_t)n, sizeof *e);
    char (*names)[80] = calloc((size_t)n, sizeof *names);
    json_t *map = json_object();
    for (int i = 0; i < n; i++) {
        const param_info *p = model_param(k.m, i);
        snprintf(names[i], sizeof names[i], "transformer.%s", p->name);
        e[i] = (st_entry){names[i], w + p->offset, NULL, p->ndim, {p->shape[0], p->shape[1]}};
        json_object_set_new(map, names[i], json_string(i < n / 2 ? "model-00001-of-00002.safetensors"
                                                                  : "model-00002-of-00002.safetensors"));
    }
    mkdir(k.dir, 0777);
    char p[512];
    snprintf(p, sizeof p, "%s/model-00001-of-00002.safetensors", k.dir);
    assert_int_equal(st_write(p, e, n / 2, NULL), 0);
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", k.dir);
    assert_int_equal(st_write(p, e + n / 2, n - n / 2, NULL), 0);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", k.dir);
    json_t *idx = json_pack("{s:{s:i}, s:o}", "metadata", "total_size", 0, "weight_map", map);
    assert_int_equal(json_dump_file(idx, p, 0), 0);
    json_decref(idx);
    model *m2 = model_create(model_family_find("gpt2"), k.d, &k.c, 1, 4);
    assert_int_equal(model_init_weights(m2, 77), 0);
    assert_int_equal(checkpoint_load(m2, k.dir), 0);
    float *w2 = weights(m2);
    assert_memory_equal(w, w2, model_param_count(k.m) * sizeof *w);
    free(w2);
    model_free(m2);
    free(e);
    free(names);
    free(w);
    ckpt_close(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_null_metadata),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_f16_bf16),
        cmocka_unit_test(test_write_read),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_checkpoint_variants),
        cmocka_unit_test(test_checkpoint_dtypes),
        cmocka_unit_test(test_checkpoint_sharded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
