#include "gemm.hpp"

#include "cuda_check.hpp"

namespace simtrain::cuda {

namespace {

cudaDataType_t input_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::bf16: return CUDA_R_16BF;
    case Dtype::fp16: return CUDA_R_16F;
    case Dtype::fp8: return CUDA_R_8F_E4M3;
    case Dtype::fp4: break;  // refused before a live run starts (live/live_run.cpp)
  }
  return CUDA_R_16BF;
}

cudaDataType_t output_type(Dtype dtype) { return dtype == Dtype::fp16 ? CUDA_R_16F : CUDA_R_16BF; }

// A column-major rows x columns matrix without padding.
cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t columns) {
  cublasLtMatrixLayout_t result = nullptr;
  check(cublasLtMatrixLayoutCreate(&result, type, rows, columns, rows), "cublasLtMatrixLayoutCreate");
  return result;
}

template <typename Value>
void set(cublasLtMatmulDesc_t operation, cublasLtMatmulDescAttributes_t attribute, const Value& value) {
  check(cublasLtMatmulDescSetAttribute(operation, attribute, &value, sizeof(value)), "cublasLtMatmulDescSetAttribute");
}

}  // namespace

size_t gemm_input_bytes(Dtype dtype) { return dtype == Dtype::fp8 ? 1 : 2; }
size_t gemm_output_bytes(Dtype) { return 2; }

CublasLt::CublasLt() {
  cublasLtHandle_t handle = nullptr;
  check(cublasLtCreate(&handle), "cublasLtCreate");
  handle_.reset(handle);
}

// cuBLASLt is column-major: the row-major y[M][N] is y^T[N][M] = w[N][K] * x^T[K][M],
// with w seen as a K x N column-major matrix used transposed, and x as K x M.
GemmPlan::GemmPlan(const CublasLt& cublas, Dtype dtype, int64_t m, int64_t n, int64_t k) : handle_(cublas.get()) {
  cublasLtMatmulDesc_t operation = nullptr;
  check(cublasLtMatmulDescCreate(&operation, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  operation_.reset(operation);
  set(operation, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set(operation, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  w_layout_.reset(layout(input_type(dtype), k, n));
  x_layout_.reset(layout(input_type(dtype), k, m));
  y_layout_.reset(layout(output_type(dtype), n, m));

  cublasLtMatmulPreference_t raw_preference = nullptr;
  check(cublasLtMatmulPreferenceCreate(&raw_preference), "cublasLtMatmulPreferenceCreate");
  const CublasObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> preference(raw_preference);
  const size_t workspace = kWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(raw_preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                             sizeof(workspace)),
        "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, operation, w_layout_.get(), x_layout_.get(), y_layout_.get(),
                                     y_layout_.get(), raw_preference, 1, &result, &found);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    throw std::runtime_error("cuBLASLt has no " + to_string(dtype) + " GEMM algorithm for " + std::to_string(m) + "x" +
                             std::to_string(n) + "x" + std::to_string(k) + " on this GPU (" +
                             cublasLtGetStatusString(status) + ")");
  algorithm_ = result.algo;
}

void GemmPlan::run(const void* x, const void* w, void* y, void* workspace, cudaStream_t stream) const {
  const float alpha = 1, beta = 0;
  check(cublasLtMatmul(handle_, operation_.get(), &alpha, w, w_layout_.get(), x, x_layout_.get(), &beta, y,
                       y_layout_.get(), y, y_layout_.get(), &algorithm_, workspace, kWorkspaceBytes, stream),
        "cublasLtMatmul");
}

}  // namespace simtrain::cuda
