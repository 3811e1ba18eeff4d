/* fuzz/fuzz_safetensors.c: libFuzzer target for the safetensors parser: st_parse on arbitrary
 * bytes, then fp32 reads of every tensor it accepts; and the sharded index parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "formats/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a parsed file's tensors must lie inside the data area: read each one */
static void read_all(const st_file *f)
{
    for (int i = 0; i < f->n; i++) {
        const st_tensor *t = &f->t[i];
        if (t->end > f->data_len || t->begin > t->end)
            abort(); /* the parser let through an offset outside the data */
        if (t->n > (1u << 20) || (t->dtype != ST_F32 && t->dtype != ST_F16 &&
                                  t->dtype != ST_BF16 && t->dtype != ST_F64))
            continue;
        float *out = malloc((size_t)t->n * sizeof *out + 1);
        if (out && st_read_f32(f, t, out) != 0)
            abort(); /* a float tensor the parser accepted must read */
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    st_file f;
    if (st_parse(data, size, "fuzz", &f, err, sizeof err) == 0)
        read_all(&f);
    st_close(&f);
    json_t *map = NULL;
    if (st_index_parse((const char *)data, size, "fuzz", &map, err, sizeof err) == 0)
        json_decref(map);
    return 0;
}
