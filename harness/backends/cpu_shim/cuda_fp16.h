// cuda_fp16.h: CUDA header name; everything lives in cuda_cpu.h.
#include "cuda_cpu.h"
