/* fuzz/fuzz_mmidx.c: libFuzzer target for the Megatron .idx parser: mmidx_parse on arbitrary bytes
 * against a .bin of a size the input's last 2 bytes choose; what it accepts must stay inside. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "formats/data_mmidx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* every accepted sequence lies inside the .bin and the prefix sums add up */
static void check(const mmidx *m, uint64_t bin_len)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < m->n_seqs; i++) {
        uint64_t bytes = (uint64_t)m->sizes[i] * (uint64_t)m->item_size;
        if (m->sizes[i] < 0 || m->pointers[i] < 0 || (uint64_t)m->pointers[i] + bytes > bin_len)
            abort(); /* the parser let through a sequence outside the .bin */
        if ((uint64_t)m->starts[i] != total)
            abort();
        total += (uint64_t)m->sizes[i];
    }
    if (total != m->n_tokens || m->doc_idx[0] != 0 || (uint64_t)m->doc_idx[m->n_doc_idx - 1] != m->n_seqs)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t bin_len = size >= 2 ? (uint64_t)data[size - 1] << 8 | data[size - 2] : 0;
    mmidx m;
    char why[256];
    if (mmidx_parse(data, size >= 2 ? size - 2 : size, bin_len, &m, why, sizeof why) == 0) {
        check(&m, bin_len);
        mmidx_close(&m);
    }
    return 0;
}
