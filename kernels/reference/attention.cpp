#include "attention.hpp"

#include <cmath>
#include <limits>

namespace simtrain::reference {

namespace {

double dot(const float* a, const float* b, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(a[i]) * b[i];
  return sum;
}

double scale_of(const AttentionShape& s) { return 1.0 / std::sqrt(double(s.head_dim)); }

}  // namespace

AttentionForward attention_forward(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, const AttentionShape& s) {
  const int64_t d = s.head_dim;
  AttentionForward result{std::vector<float>(s.elements()), std::vector<float>(s.rows())};
  std::vector<double> scores(s.seq);
  for (int64_t head = 0; head < s.batch * s.heads; ++head) {
    const int64_t base = head * s.seq;
    for (int64_t i = 0; i < s.seq; ++i) {
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j <= i; ++j) {
        scores[j] = scale_of(s) * dot(&q[(base + i) * d], &k[(base + j) * d], d);
        max = std::max(max, scores[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j <= i; ++j) sum += std::exp(scores[j] - max);
      for (int64_t c = 0; c < d; ++c) {
        double o = 0;
        for (int64_t j = 0; j <= i; ++j) o += std::exp(scores[j] - max) / sum * v[(base + j) * d + c];
        result.out[(base + i) * d + c] = static_cast<float>(o);
      }
      result.lse[base + i] = static_cast<float>(max + std::log(sum));
    }
  }
  return result;
}

AttentionGradients attention_backward(const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v, const std::vector<float>& out,
                                      const std::vector<float>& dout, const std::vector<float>& lse,
                                      const AttentionShape& s) {
  const int64_t d = s.head_dim;
  std::vector<double> dq(s.elements()), dk(s.elements()), dv(s.elements());
  for (int64_t head = 0; head < s.batch * s.heads; ++head) {
    const int64_t base = head * s.seq;
    for (int64_t i = 0; i < s.seq; ++i) {
      const double delta = dot(&dout[(base + i) * d], &out[(base + i) * d], d);  // sum_c dO * O
      for (int64_t j = 0; j <= i; ++j) {
        const double p = std::exp(scale_of(s) * dot(&q[(base + i) * d], &k[(base + j) * d], d) - lse[base + i]);
        const double dp = dot(&dout[(base + i) * d], &v[(base + j) * d], d);
        const double ds = p * (dp - delta);
        for (int64_t c = 0; c < d; ++c) {
          dv[(base + j) * d + c] += p * dout[(base + i) * d + c];
          dq[(base + i) * d + c] += scale_of(s) * ds * k[(base + j) * d + c];
          dk[(base + j) * d + c] += scale_of(s) * ds * q[(base + i) * d + c];
        }
      }
    }
  }
  return {std::vector<float>(dq.begin(), dq.end()), std::vector<float>(dk.begin(), dk.end()),
          std::vector<float>(dv.begin(), dv.end())};
}

}  // namespace simtrain::reference
