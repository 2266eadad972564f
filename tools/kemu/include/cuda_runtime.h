/* kemu's stand-in for the CUDA runtime header: everything is in tools/kemu/kemu.h. */
#include "../kemu.h"
