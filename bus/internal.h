/* internal.h - what bus/'s files share and nobody else needs. */
#ifndef SLOTSCOPE_BUS_INTERNAL_H
#define SLOTSCOPE_BUS_INTERNAL_H

#include "bus/bus.h"

/* The header of a message longer than what a stream keeps: data holds at
 * least BUS_HEADER_LEN bytes of it. 0, or -1 when the header is not valid. */
int bus_decode_header_only(const uint8_t *data, size_t len, bus_msg *out);

#endif /* SLOTSCOPE_BUS_INTERNAL_H */
