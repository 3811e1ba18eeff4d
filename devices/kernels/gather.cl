/* devices/kernels/gather.cl: the expert gather of rows by index, one item per output
 * element; a bad id raises ERR_GATHER_FWD and writes NaN. The backward (scatter-add) is
 * embedding_backward_wte's kernel with ERR_GATHER_BWD. */

KERNEL void gather_rows_forward(GLOBAL float *out, ulong out_off, GLOBAL const float *inp,
                                  ulong inp_off, GLOBAL const int *idx, ulong idx_off, int R,
                                  int C, ulong total, GLOBAL int *flag)
{
    size_t i = GLOBAL_ID;
    if (i >= total)
        return;
    size_t m = i / C, c = i % C;
    int id = idx[idx_off + m];
    if (id < 0 || id >= R) {
        raise_error(flag, ERR_GATHER_FWD);
        out[out_off + i] = NAN;
        return;
    }
    out[out_off + i] = inp[inp_off + (size_t)id * C + c];
}
