#pragma once
// Scalar formulas shared by the CUDA kernels and their CPU references, so
// both compute the same thing; the references' tests check them against
// hand-computed values.
#include <math.h>

#if defined(__CUDACC__)
#define SIMTRAIN_HOST_DEVICE __host__ __device__
#else
#define SIMTRAIN_HOST_DEVICE
#endif

namespace simtrain::math {

// GELU with the tanh approximation (GPT-2, Megatron's bias_gelu).
inline constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float kGeluA = 0.044715f;

SIMTRAIN_HOST_DEVICE inline float gelu(float x) {
  return 0.5f * x * (1.f + tanhf(kGeluC * (x + kGeluA * x * x * x)));
}

SIMTRAIN_HOST_DEVICE inline float gelu_grad(float x) {
  const float t = tanhf(kGeluC * (x + kGeluA * x * x * x));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * kGeluC * (1.f + 3.f * kGeluA * x * x);
}

SIMTRAIN_HOST_DEVICE inline float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

SIMTRAIN_HOST_DEVICE inline float silu(float x) { return x * sigmoid(x); }

SIMTRAIN_HOST_DEVICE inline float silu_grad(float x) {
  const float s = sigmoid(x);
  return s * (1.f + x * (1.f - s));
}

// AdamW (Loshchilov & Hutter; PyTorch's torch.optim.AdamW): decoupled weight
// decay, bias-corrected moments.
struct AdamWConfig {
  float lr = 1e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  int step = 1;  // 1 for the first update
};

// One step's constants, bias corrections included.
struct AdamWStep {
  float lr, beta1, beta2, eps, decay, m_correction, v_correction;
};

inline AdamWStep adamw_step(const AdamWConfig& c) {
  return {c.lr,
          c.beta1,
          c.beta2,
          c.eps,
          c.lr * c.weight_decay,
          static_cast<float>(1.0 / (1.0 - pow(c.beta1, c.step))),
          static_cast<float>(1.0 / (1.0 - pow(c.beta2, c.step)))};
}

SIMTRAIN_HOST_DEVICE inline void adamw_update(float& param, float& m, float& v, float grad, const AdamWStep& s) {
  param -= s.decay * param;
  m = s.beta1 * m + (1.f - s.beta1) * grad;
  v = s.beta2 * v + (1.f - s.beta2) * grad * grad;
  param -= s.lr * (m * s.m_correction) / (sqrtf(v * s.v_correction) + s.eps);
}

}  // namespace simtrain::math
