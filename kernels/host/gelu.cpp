#include "gelu.hpp"

#include <algorithm>

#include "kernel_math.hpp"

namespace simtrain::host {

namespace {

// tanh(x) = x P(x^2) / Q(x^2) on [-7.9, 7.9], +-1 beyond (in float).
inline float fast_tanh(float x) {
  constexpr float clamp = 7.90531110763549805f;
  x = std::clamp(x, -clamp, clamp);
  const float x2 = x * x;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 - 8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return x * p / q;
}

inline float inner(float x) { return math::kGeluC * (x + math::kGeluA * x * x * x); }

}  // namespace

void gelu_forward(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + fast_tanh(inner(x[i])));
}

void gelu_backward(const float* dy, const float* x, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i], t = fast_tanh(inner(v));
    dx[i] = dy[i] * (0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * math::kGeluC * (1.f + 3.f * math::kGeluA * v * v));
  }
}

}  // namespace simtrain::host
