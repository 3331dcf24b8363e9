/*
 * fuzz_resp.c - fuzz target: the RESP decoder in both directions, with pairing.
 *
 * The input is a conversation on one connection: the bytes a client sent and
 * the bytes the server answered. They are fed to resp_on_capture_event as DATA
 * events cut at split points the input itself chooses, the two directions
 * interleaved, with optional gaps (bytes skipped, as a lost segment would),
 * a reconnection half-way and timestamps that step back. Paired commands go
 * through the checking sinks of fuzz_common.c into analysis/.
 *
 * Input layout (little-endian):
 *   byte 0      flags
 *                 bit 0  clients by connection (analysis variant)
 *                 bit 1  redact keys (analysis variant)
 *                 bit 2  gaps: now and then skip bytes of a direction and send
 *                        a GAP event (of their length, or 0 = unknown)
 *                 bit 3  reconnect once: CLOSE, then OPEN a new connection that
 *                        gets the rest of both streams (picked up mid-stream)
 *                 bit 4  timestamps sometimes step backwards
 *                 bit 5  end with a RST instead of a FIN
 *                 bit 6-7 chunk size: 1..4, 1..64, 1..1024 bytes, or whole
 *   byte 1-2    length of the request stream (cut to what follows)
 *   byte 3-6    seed of the split points
 *   then        the request stream, then the reply stream
 *
 * Seeds are conversations taken from the fixture captures (fuzz/mkseeds).
 * The conversation itself is played by ss_fuzz_conversation (fuzz_common.c),
 * which fuzz_resp_decode shares without analysis/.
 */

#include "fuzz/fuzz.h"

int ss_fuzz_resp(const uint8_t *data, size_t size)
{
    return ss_fuzz_conversation(data, size, 0);
}

#ifndef SS_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return ss_fuzz_resp(data, size);
}
#endif
