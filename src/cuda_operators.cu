// The CUDA operators, compiled once for dwsr's programs (tool, tests,
// benchmarks): the definitions of operators/cuda/device_operators.hpp.
#include "dwsr/operators/cuda/device_operators.cuh"
