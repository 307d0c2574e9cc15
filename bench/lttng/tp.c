/* tp.c - instantiates the LTTng-UST probes declared in tp.h. */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "tp.h"
