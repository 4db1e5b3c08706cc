#include "attention.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace simtrain::host {

namespace {

// Query rows per block: the scores of a block (rows x keys seen) stay in
// cache-sized scratch, and the causal triangle's diagonal blocks, computed
// whole and masked, waste at most half a block per row.
constexpr int64_t kBlockRows = 128;

float scale_of(const AttentionShape& s) { return float(1.0 / std::sqrt(double(s.head_dim))); }

// scores[r][j] = scale * q[first + r] . k[j] for the block's rows and keys 0 .. keys-1.
void block_scores(const float* q, const float* k, int64_t first, int64_t rows, int64_t keys,
                  const AttentionShape& s, float* scores) {
  const int64_t d = s.head_dim;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(rows), blasint(keys), blasint(d), scale_of(s),
              q + first * d, blasint(d), k, blasint(d), 0.0f, scores, blasint(keys));
}

// Calls body(head offset in elements, head offset in rows, first row, rows, keys) per block.
template <typename Body>
void for_each_block(const AttentionShape& s, Body body) {
  for (int64_t head = 0; head < s.batch * s.heads; ++head)
    for (int64_t first = 0; first < s.seq; first += kBlockRows) {
      const int64_t rows = std::min(kBlockRows, s.seq - first);
      body(head * s.seq * s.head_dim, head * s.seq, first, rows, first + rows);
    }
}

}  // namespace

void attention_forward(const float* q, const float* k, const float* v, float* out, float* lse,
                       const AttentionShape& s) {
  const int64_t d = s.head_dim;
  std::vector<float> p(size_t(std::min(kBlockRows, s.seq) * s.seq));
  for_each_block(s, [&](int64_t base, int64_t row_base, int64_t first, int64_t rows, int64_t keys) {
    block_scores(q + base, k + base, first, rows, keys, s, p.data());
    for (int64_t r = 0; r < rows; ++r) {
      float* row = &p[size_t(r * keys)];
      const int64_t seen = first + r + 1;  // keys 0 .. first + r
      const float max = *std::max_element(row, row + seen);
      double sum = 0;
      for (int64_t j = 0; j < seen; ++j) sum += row[j] = std::exp(row[j] - max);
      const float inverse = float(1.0 / sum);
      for (int64_t j = 0; j < seen; ++j) row[j] *= inverse;
      std::fill(row + seen, row + keys, 0.0f);
      lse[row_base + first + r] = float(max + std::log(sum));
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(rows), blasint(d), blasint(keys), 1.0f, p.data(),
                blasint(keys), v + base, blasint(d), 0.0f, out + base + first * d, blasint(d));
  });
}

void attention_backward(const float* q, const float* k, const float* v, const float* out, const float* dout,
                        const float* lse, float* dq, float* dk, float* dv, const AttentionShape& s) {
  const int64_t d = s.head_dim;
  std::fill(dk, dk + s.elements(), 0.0f);  // accumulated over the query blocks
  std::fill(dv, dv + s.elements(), 0.0f);
  const size_t scratch = size_t(std::min(kBlockRows, s.seq) * s.seq);
  std::vector<float> p(scratch), ds(scratch);
  for_each_block(s, [&](int64_t base, int64_t row_base, int64_t first, int64_t rows, int64_t keys) {
    const float* q_block = q + base + first * d;
    const float* dout_block = dout + base + first * d;
    block_scores(q + base, k + base, first, rows, keys, s, p.data());
    // dP = dO V^T, in ds until it becomes dS.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(rows), blasint(keys), blasint(d), 1.0f, dout_block,
                blasint(d), v + base, blasint(d), 0.0f, ds.data(), blasint(keys));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = first + r, seen = i + 1;
      double delta = 0;  // sum_c dO * O
      for (int64_t c = 0; c < d; ++c) delta += double(dout_block[r * d + c]) * out[base + i * d + c];
      float* p_row = &p[size_t(r * keys)];
      float* ds_row = &ds[size_t(r * keys)];
      for (int64_t j = 0; j < seen; ++j) {
        p_row[j] = std::exp(p_row[j] - lse[row_base + i]);
        ds_row[j] = float(p_row[j] * (ds_row[j] - delta));
      }
      std::fill(p_row + seen, p_row + keys, 0.0f);
      std::fill(ds_row + seen, ds_row + keys, 0.0f);
    }
    const blasint ld_keys = blasint(keys), ld_d = blasint(d);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(rows), ld_d, ld_keys, scale_of(s), ds.data(),
                ld_keys, k + base, ld_d, 0.0f, dq + base + first * d, ld_d);  // dQ = scale dS K
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ld_keys, ld_d, blasint(rows), scale_of(s), ds.data(),
                ld_keys, q_block, ld_d, 1.0f, dk + base, ld_d);  // dK += scale dS^T Q
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ld_keys, ld_d, blasint(rows), 1.0f, p.data(), ld_keys,
                dout_block, ld_d, 1.0f, dv + base, ld_d);  // dV += P^T dO
  });
}

}  // namespace simtrain::host
