#include "cpu_kernel.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "host/attention.hpp"
#include "host/gelu.hpp"
#include "host/gemm.hpp"
#include "reference/activations.hpp"
#include "reference/adamw.hpp"
#include "reference/cross_entropy.hpp"
#include "reference/embedding.hpp"
#include "reference/norms.hpp"

namespace simtrain {

namespace {

// Each buffer's pseudo-random contents: floats uniform in [low, high) (both 0:
// an output, left zero), ints uniform in [0, range).
struct FloatFill {
  float low = 0, high = 0;
};

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill(std::vector<float>& data, FloatFill range, uint64_t seed) {
  if (range.low == 0 && range.high == 0) return;
  uint64_t state = seed;
  const double width = double(range.high) - range.low;
  for (float& x : data) x = float(range.low + width * double(splitmix64(state) >> 11) * 0x1.0p-53);
}

void fill(std::vector<int>& data, int64_t range, uint64_t seed) {
  uint64_t state = seed;
  for (int& x : data) x = int(splitmix64(state) % uint64_t(range));
}

[[noreturn]] void refuse(const KernelCall& call, const std::string& why) {
  throw std::invalid_argument("cannot run " + call.description() + " on the CPU: " + why);
}

// a * b, refusing products that no buffer could hold.
int64_t product(const KernelCall& call, int64_t a, int64_t b) {
  int64_t result = 0;
  constexpr int64_t limit = int64_t(1) << 60;  // elements; 4 EiB of floats, far beyond any host
  if (__builtin_mul_overflow(a, b, &result) || result > limit) refuse(call, "a buffer of more than 2^60 elements");
  return result;
}

const std::vector<float> kNoFloats;
const std::vector<int> kNoInts;

// Float buffers with their contents, int buffers with their ranges, of each kernel, in run()'s order.
struct Plan {
  std::vector<std::pair<int64_t, FloatFill>> floats;
  std::vector<std::pair<int64_t, int64_t>> ints;
};

constexpr FloatFill kInput{-1, 1};
constexpr FloatFill kOutput{0, 0};

Plan plan(const KernelCall& call) {
  const std::vector<int64_t>& size = call.sizes;
  auto expect = [&](size_t count, const char* meaning) {
    if (size.size() != count)
      refuse(call, std::to_string(count) + " sizes expected (" + meaning + "), got " + std::to_string(size.size()));
    for (int64_t s : size)
      if (s < 1) refuse(call, "sizes must be at least 1");
  };
  auto fits_int = [&](int64_t range, const char* what) {
    if (range > INT_MAX) refuse(call, std::string(what) + " beyond the range of an int index");
  };
  Plan p;
  switch (call.kernel) {
    case Kernel::gemm: {
      expect(3, "M, N, K");
      const int64_t m = size[0], n = size[1], k = size[2];
      for (int64_t extent : size) fits_int(extent, "a GEMM size");  // BLAS takes int sizes
      p.floats = {{product(call, m, k), kInput}, {product(call, n, k), kInput}, {product(call, m, n), kOutput}};
      return p;
    }
    case Kernel::attention_forward:
    case Kernel::attention_backward: {
      expect(4, "batch, heads, seq, head_dim");
      fits_int(size[2], "a sequence");  // the sizes of its GEMMs
      fits_int(size[3], "a head dimension");
      const int64_t rows = product(call, product(call, size[0], size[1]), size[2]);
      const int64_t n = product(call, rows, size[3]);
      if (call.kernel == Kernel::attention_forward)  // q, k, v; out, lse
        p.floats = {{n, kInput}, {n, kInput}, {n, kInput}, {n, kOutput}, {rows, kOutput}};
      else  // q, k, v, out, dout, lse; dq, dk, dv
        p.floats = {{n, kInput},     {n, kInput},  {n, kInput},  {n, kInput}, {n, kInput},
                    {rows, {1, 2}}, {n, kOutput}, {n, kOutput}, {n, kOutput}};
      return p;
    }
    case Kernel::layernorm_forward:
    case Kernel::rmsnorm_forward: {
      expect(2, "rows, row width");
      const int64_t rows = size[0], cols = size[1], n = product(call, rows, cols);
      if (call.kernel == Kernel::layernorm_forward)  // x, gamma, beta; y, mean, rstd
        p.floats = {{n, kInput}, {cols, kInput}, {cols, kInput}, {n, kOutput}, {rows, kOutput}, {rows, kOutput}};
      else  // x, gamma; y, rstd
        p.floats = {{n, kInput}, {cols, kInput}, {n, kOutput}, {rows, kOutput}};
      return p;
    }
    case Kernel::layernorm_backward:
    case Kernel::rmsnorm_backward: {
      expect(2, "rows, row width");
      const int64_t rows = size[0], cols = size[1], n = product(call, rows, cols);
      // dy, x, gamma, mean (zero for RMSNorm, as its forward saves), rstd; dx, dgamma[, dbeta]
      const FloatFill mean = call.kernel == Kernel::layernorm_backward ? FloatFill{-0.1f, 0.1f} : kOutput;
      p.floats = {{n, kInput}, {n, kInput}, {cols, kInput}, {rows, mean}, {rows, {0.5f, 1.5f}},
                  {n, kOutput}, {cols, kOutput}};
      if (call.kernel == Kernel::layernorm_backward) p.floats.push_back({cols, kOutput});
      return p;
    }
    case Kernel::gelu_forward:
    case Kernel::gelu_backward:
    case Kernel::swiglu_forward:
    case Kernel::swiglu_backward: {
      expect(1, "elements");
      const int64_t n = size[0];
      const std::pair<int64_t, FloatFill> in{n, kInput}, out{n, kOutput};
      switch (call.kernel) {
        case Kernel::gelu_forward: p.floats = {in, out}; break;            // x; y
        case Kernel::gelu_backward: p.floats = {in, in, out}; break;       // dy, x; dx
        case Kernel::swiglu_forward: p.floats = {in, in, out}; break;      // gate, up; y
        default: p.floats = {in, in, in, out, out}; break;                 // dy, gate, up; dgate, dup
      }
      return p;
    }
    case Kernel::cross_entropy_forward:
    case Kernel::cross_entropy_backward: {
      expect(2, "rows, vocabulary share");
      const int64_t rows = size[0], vocab = size[1];
      fits_int(vocab, "a vocabulary");
      const FloatFill logits{-4, 4};
      p.ints = {{rows, vocab}};  // targets
      if (call.kernel == Kernel::cross_entropy_forward) {  // logits; loss, lse
        p.floats = {{product(call, rows, vocab), logits}, {rows, kOutput}, {rows, kOutput}};
      } else {  // logits, lse, dloss; dlogits
        const float ln_vocab = std::log(float(vocab));
        p.floats = {{product(call, rows, vocab), logits},
                    {rows, {ln_vocab, ln_vocab + 1}},
                    {rows, kInput},
                    {product(call, rows, vocab), kOutput}};
      }
      return p;
    }
    case Kernel::adamw: {
      expect(1, "parameters");
      const int64_t n = size[0];
      // param, m, v, grad; weight (the param rounded to the compute type, here a copy)
      p.floats = {{n, kInput}, {n, {-1e-3f, 1e-3f}}, {n, {0, 1e-6f}}, {n, {-1e-3f, 1e-3f}}, {n, kOutput}};
      return p;
    }
    case Kernel::embedding_forward:
    case Kernel::embedding_backward: {
      expect(4, "tokens, hidden, table rows, tables");
      const int64_t tokens = size[0], hidden = size[1], table_rows = size[2];
      if (size[3] > 2) refuse(call, "1 or 2 embedding tables expected");
      const bool positions = size[3] > 1;
      fits_int(table_rows, "an embedding table's rows");
      fits_int(tokens, "a position table's rows");
      const int64_t table = product(call, table_rows, hidden), rows = product(call, tokens, hidden);
      p.ints = {{tokens, table_rows}};  // ids[, position ids]
      if (positions) p.ints.push_back({tokens, tokens});
      if (call.kernel == Kernel::embedding_forward) {  // table[, position table]; out
        p.floats = {{table, kInput}};
        if (positions) p.floats.push_back({rows, kInput});
        p.floats.push_back({rows, kOutput});
      } else {  // dout; dtable[, dpositions]
        p.floats = {{rows, kInput}, {table, kOutput}};
        if (positions) p.floats.push_back({rows, kOutput});
      }
      return p;
    }
    case Kernel::elementwise: {
      expect(1, "bytes");
      // Halves of whole floats: reading one and writing the other moves at least the call's bytes.
      const int64_t half = (size[0] / 2 + int64_t(sizeof(float)) - 1) / int64_t(sizeof(float));
      p.floats = {{product(call, std::max<int64_t>(half, 1), 2), kInput}};
      return p;
    }
  }
  refuse(call, "unknown kernel");
}

// How many times the reference's loops run for the call's sizes (kernel_sample).
double loop_count(const KernelCall& call) {
  const std::vector<int64_t>& size = call.sizes;
  switch (call.kernel) {
    case Kernel::attention_forward:
    case Kernel::attention_backward:
      return double(size[0]) * double(size[1]) * (double(size[2]) * double(size[2] + 1) / 2) * double(size[3]);
    case Kernel::embedding_forward:
    case Kernel::embedding_backward:
      return double(size[0]) * double(size[1]);
    default: {  // gemm M*N*K; norms, cross-entropy rows*width; the element-wise kernels their elements
      double count = 1;
      for (int64_t s : size) count *= double(s);
      return count;
    }
  }
}

// The sizes kernel_sample halves, in order (a GEMM's M and N: the larger first).
std::vector<size_t> cut_sizes(Kernel kernel) {
  switch (kernel) {
    case Kernel::attention_forward:
    case Kernel::attention_backward: return {0, 1, 2};
    case Kernel::embedding_forward:
    case Kernel::embedding_backward: return {0, 2};
    default: return {0};
  }
}

}  // namespace

KernelSample kernel_sample(const KernelCall& call) {
  // BLAS needs blocks of some size to run at its speed: 2^26 loops take it
  // about a millisecond, as 2^20 take the references.
  const bool blas = call.kernel == Kernel::gemm || call.kernel == Kernel::attention_forward ||
                    call.kernel == Kernel::attention_backward;
  const double max_loops = blas ? 0x1p26 : 0x1p20, max_bytes = 16 << 20;
  CpuKernel::bytes_needed(call);  // refuses what CpuKernel refuses, before the sizes are read
  KernelSample sample{call, 1};
  auto too_large = [&] {
    return loop_count(sample.call) > max_loops || CpuKernel::bytes_needed(sample.call) > max_bytes;
  };
  if (call.kernel == Kernel::gemm) {  // a block of the output, not a row: a GEMV runs far slower a loop
    int64_t &m = sample.call.sizes.at(0), &n = sample.call.sizes.at(1);
    while ((m > 1 || n > 1) && too_large()) {
      int64_t& larger = m >= n ? m : n;
      larger = (larger + 1) / 2;
    }
  }
  for (size_t index : cut_sizes(call.kernel)) {
    int64_t& size = sample.call.sizes.at(index);
    while (size > 1 && too_large()) size = (size + 1) / 2;
  }
  sample.scale = loop_count(call) / loop_count(sample.call);
  return sample;
}

double CpuKernel::estimated_seconds(const KernelCall& call) {
  const KernelSample sample = kernel_sample(call);
  CpuKernel kernel(sample.call);
  using Clock = std::chrono::steady_clock;
  constexpr std::chrono::milliseconds at_least(20);
  const Clock::time_point begin = Clock::now();
  int runs = 0;
  do {
    kernel.run();
    ++runs;
  } while (Clock::now() - begin < at_least);
  return std::chrono::duration<double>(Clock::now() - begin).count() / runs * sample.scale;
}

double CpuKernel::bytes_needed(const KernelCall& call) {
  const Plan p = plan(call);
  double bytes = 0;
  for (const auto& buffer : p.floats) bytes += double(buffer.first) * sizeof(float);
  for (const auto& buffer : p.ints) bytes += double(buffer.first) * sizeof(int);
  return bytes;
}

CpuKernel::CpuKernel(const KernelCall& call) : call_(call) {
  const Plan p = plan(call);
  uint64_t seed = 1;
  for (const auto& [count, range] : p.floats) {
    floats_.emplace_back(size_t(count));
    fill(floats_.back(), range, seed++);
  }
  for (const auto& [count, range] : p.ints) {
    ints_.emplace_back(size_t(count));
    fill(ints_.back(), range, seed++);
  }
}

double CpuKernel::bytes() const {
  double bytes = 0;
  for (const std::vector<float>& buffer : floats_) bytes += double(buffer.size()) * sizeof(float);
  for (const std::vector<int>& buffer : ints_) bytes += double(buffer.size()) * sizeof(int);
  return bytes;
}

void CpuKernel::run() {
  std::vector<std::vector<float>>& f = floats_;
  std::vector<std::vector<int>>& i = ints_;
  const std::vector<int64_t>& size = call_.sizes;
  switch (call_.kernel) {
    case Kernel::gemm:
      host::gemm(f[0].data(), f[1].data(), f[2].data(), size[0], size[1], size[2]);
      return;
    case Kernel::attention_forward:
      host::attention_forward(f[0].data(), f[1].data(), f[2].data(), f[3].data(), f[4].data(),
                              AttentionShape{size[0], size[1], size[2], size[3]});
      return;
    case Kernel::attention_backward:
      host::attention_backward(f[0].data(), f[1].data(), f[2].data(), f[3].data(), f[4].data(), f[5].data(),
                               f[6].data(), f[7].data(), f[8].data(), AttentionShape{size[0], size[1], size[2], size[3]});
      return;
    case Kernel::layernorm_forward: {
      reference::NormForward result = reference::layernorm_forward(f[0], f[1], f[2], size[0], size[1]);
      f[3] = std::move(result.y);
      f[4] = std::move(result.mean);
      f[5] = std::move(result.rstd);
      return;
    }
    case Kernel::rmsnorm_forward: {
      reference::NormForward result = reference::rmsnorm_forward(f[0], f[1], size[0], size[1]);
      f[2] = std::move(result.y);
      f[3] = std::move(result.rstd);
      return;
    }
    case Kernel::layernorm_backward:
    case Kernel::rmsnorm_backward: {
      // The saved statistics lend their buffers to the reference's struct and take them back.
      reference::NormForward saved{{}, std::move(f[3]), std::move(f[4])};
      reference::NormGradients result =
          call_.kernel == Kernel::layernorm_backward
              ? reference::layernorm_backward(f[0], f[1], f[2], saved, size[0], size[1])
              : reference::rmsnorm_backward(f[0], f[1], f[2], saved, size[0], size[1]);
      f[3] = std::move(saved.mean);
      f[4] = std::move(saved.rstd);
      f[5] = std::move(result.dx);
      f[6] = std::move(result.dgamma);
      if (call_.kernel == Kernel::layernorm_backward) f[7] = std::move(result.dbeta);
      return;
    }
    case Kernel::gelu_forward:
      host::gelu_forward(f[0].data(), f[1].data(), size[0]);
      return;
    case Kernel::gelu_backward:
      host::gelu_backward(f[0].data(), f[1].data(), f[2].data(), size[0]);
      return;
    case Kernel::swiglu_forward:
      f[2] = reference::swiglu_forward(f[0], f[1]);
      return;
    case Kernel::swiglu_backward: {
      reference::SwigluGradients result = reference::swiglu_backward(f[0], f[1], f[2]);
      f[3] = std::move(result.dgate);
      f[4] = std::move(result.dup);
      return;
    }
    case Kernel::cross_entropy_forward: {
      reference::CrossEntropyForward result = reference::cross_entropy_forward(f[0], i[0], size[0], size[1]);
      f[1] = std::move(result.loss);
      f[2] = std::move(result.lse);
      return;
    }
    case Kernel::cross_entropy_backward:
      f[3] = reference::cross_entropy_backward(f[0], i[0], f[1], f[2], size[0], size[1]);
      return;
    case Kernel::adamw:
      reference::adamw(f[0], f[1], f[2], f[3], math::AdamWConfig{});
      f[4].assign(f[0].begin(), f[0].end());
      return;
    case Kernel::embedding_forward: {
      const bool positions = size[3] > 1;
      const int64_t out = positions ? 2 : 1;
      f[out] = reference::embedding_forward(f[0], i[0], positions ? f[1] : kNoFloats, positions ? i[1] : kNoInts,
                                            size[1]);
      return;
    }
    case Kernel::embedding_backward: {
      std::vector<float> no_positions;
      const bool positions = size[3] > 1;
      reference::embedding_backward(f[0], i[0], positions ? i[1] : kNoInts, f[1], positions ? f[2] : no_positions,
                                    size[1]);
      return;
    }
    case Kernel::elementwise: {
      std::vector<float>& buffer = f[0];
      const size_t half = buffer.size() / 2;
      for (size_t j = 0; j < half; ++j) buffer[half + j] = buffer[j] * 0.5f;
      return;
    }
  }
}

}  // namespace simtrain
