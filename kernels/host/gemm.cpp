#include "gemm.hpp"

#include <cblas.h>

namespace simtrain::host {

void gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(m), blasint(n), blasint(k), 1.0f, x, blasint(k), w,
              blasint(k), 0.0f, y, blasint(n));
}

}  // namespace simtrain::host
