/* tests/test_philox.c: devices/philox.h against the Random123 known-answer vectors, and the
 * dropout decision it defines (threshold, counter layout, uniform floats). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "philox.h"

typedef struct {
    int rounds;
    uint32_t ctr[4], key[2], want[4];
} kat;

/* Random123's kat_vectors (tests/kat_vectors of the Random123 distribution), the philox4x32
 * lines: counter, key, expected output; the last is the digits-of-pi vector */
static const kat KATS[] = {
    {7, {0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {7, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {7, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
    {10, {0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {10, {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {10, {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

static void test_known_answers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof KATS / sizeof KATS[0]; i++) {
        const kat *k = &KATS[i];
        philox_ctr c = {{k->ctr[0], k->ctr[1], k->ctr[2], k->ctr[3]}};
        philox_ctr r = philox4x32_rounds(c, k->key[0], k->key[1], k->rounds);
        for (int j = 0; j < 4; j++)
            if (r.v[j] != k->want[j])
                fail_msg("vector %zu (%d rounds) word %d: %08x, want %08x", i, k->rounds, j,
                         r.v[j], k->want[j]);
        if (k->rounds == 10) {
            philox_ctr t = philox4x32_10(c, k->key[0], k->key[1]);
            assert_memory_equal(&t, &r, sizeof t);
        }
    }
}

/* the dropout block is Philox4x32-10 of {block, site, layer, step} under {seed lo, seed hi} */
static void test_dropout_layout(void **state)
{
    (void)state;
    uint64_t seed = 0x299f31d0a4093822ULL; /* key words a4093822, 299f31d0 */
    philox_ctr r = philox_dropout_block(seed, 0x03707344, 0x13198a2e, 0x85a308d3, 0x243f6a88);
    const uint32_t want[4] = {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1};
    for (int j = 0; j < 4; j++)
        assert_int_equal(r.v[j], want[j]);
    /* element i = 4 * block + j takes word j: here block 0x243f6a88 */
    uint64_t i0 = (uint64_t)0x243f6a88 * 4;
    for (int j = 0; j < 4; j++) {
        uint64_t thr = (uint64_t)want[j] + 1; /* drops exactly that word */
        assert_int_equal(philox_dropout_keep(seed, 0x03707344, 0x13198a2e, 0x85a308d3, i0 + j,
                                             thr), 0);
        assert_int_equal(philox_dropout_keep(seed, 0x03707344, 0x13198a2e, 0x85a308d3, i0 + j,
                                             thr - 1), 1);
    }
}

/* ceil(p 2^32): drop iff x < thr is the same as x 2^-32 < p */
static void test_threshold(void **state)
{
    (void)state;
    assert_true(philox_dropout_threshold(0) == 0);
    assert_true(philox_dropout_threshold(1) == 4294967296ULL);
    assert_true(philox_dropout_threshold(0.5) == 2147483648ULL);
    assert_true(philox_dropout_threshold(0.1) == 429496730ULL); /* 0.1 * 2^32 = 429496729.6 */
    assert_true(philox_dropout_threshold(ldexp(1, -32)) == 1);
    assert_true(philox_keep(0, 0) == 1 && philox_keep(0xffffffffu, 0) == 1);
    assert_true(philox_keep(0xffffffffu, 4294967296ULL) == 0);
    const double ps[] = {0.1, 0.25, 1.0 / 3, 0.9};
    const uint32_t xs[] = {0, 1, 429496729, 429496730, 1073741823, 1073741824, 0x80000000u,
                           0xfffffffeu, 0xffffffffu, 1431655765, 1431655766};
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < sizeof xs / sizeof xs[0]; b++) {
            int keep = philox_keep(xs[b], philox_dropout_threshold(ps[a]));
            assert_int_equal(keep, !(philox_u01_f64(xs[b]) < ps[a]));
        }
}

static void test_uniform_floats(void **state)
{
    (void)state;
    assert_true(philox_u01_f32(0) == 0.0f);
    assert_true(philox_u01_f32(0xffffffffu) == 1.0f - 0x1p-24f);
    assert_true(philox_u01_f32(0xffffffffu) < 1.0f);
    assert_true(philox_u01_f32(0x80000000u) == 0.5f);
    assert_true(philox_u01_f64(0xffffffffu) < 1.0);
    assert_true(philox_u01_f64(0x40000000u) == 0.25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_dropout_layout),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_uniform_floats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
