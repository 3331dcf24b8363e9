/*
 * fuzz_resp_decode.c - fuzz target: fuzz_resp without analysis/.
 *
 * The same input layout and conversation as fuzz_resp (see fuzz_resp.c), but
 * the paired commands stop at the checking sink: no analyzer is built or torn
 * down per input, so the RESP decoders and the pairing get several times the
 * executions per second. The two targets share their corpora's format, so
 * seeds and regressions of one are inputs of the other.
 */
#include "fuzz/fuzz.h"

int ss_fuzz_resp_decode(const uint8_t *data, size_t size)
{
    return ss_fuzz_conversation(data, size, SS_FUZZ_NO_ANALYSIS);
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_resp_decode(data, size);
}
#endif
