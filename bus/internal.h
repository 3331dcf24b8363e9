/* internal.h - what bus/'s files share and nobody else needs. */
#ifndef SLOTSCOPE_BUS_INTERNAL_H
#define SLOTSCOPE_BUS_INTERNAL_H

#include "bus/bus.h"

#endif /* SLOTSCOPE_BUS_INTERNAL_H */
