// math_constants.h: CUDA header name; everything lives in cuda_cpu.h.
#include "cuda_cpu.h"
