#pragma once
// The path a gradient bucket takes through the hosts under PyTorch's Gloo
// backend (cluster.communication_backend gloo), and the time of each part.
// ProcessGroupGloo's all-reduce of CUDA tensors (AsyncAllreduceCUDAWork in
// torch/csrc/distributed/c10d/ProcessGroupGloo.cpp) copies the bucket to
// pinned host memory, all-reduces it on the CPU with Gloo's ring
// (reduce-scatter, then all-gather, over TCP; the sum in the receiving
// thread) and copies the result back: no GPUDirect RDMA, no GPU kernel.
// docs/communication-backends.md says each figure again, with its source.
namespace simtrain {

struct GlooHostPath {
  // The GPU's host link, one direction: PCIe Gen5 x16, 32 GT/s on 16 lanes
  // with 128b/130b encoding = 63.0 GB/s (PCI-SIG's PCIe 5.0 rate; the
  // "PCIe Gen5: 128 GB/s" of the H100 and H200 SXM data sheets counts both
  // directions). The copies go to pinned memory (pinnedLike), so at the
  // link's rate.
  double pcie_bytes_per_second = 32e9 * 16 / 8 * 128 / 130;
  // One TCP stream driven by one core: 15 to 35 Gbit/s on a 100G host
  // (ESnet, "Performance Expectations for a 100G Host", fasterdata.es.net,
  // 17 January 2024: "Single stream testing will range from 15-35 Gbps");
  // the middle of that range.
  double tcp_bytes_per_second_per_core = 25e9 / 8;
  // Cores driving one collective's connections: Gloo's TCP device runs all
  // its pairs' sends and receives on one epoll thread (gloo/transport/tcp/
  // loop.cc: one Loop, one std::thread), and ProcessGroupGloo runs a
  // collective on one device (one context per GLOO_SOCKET_IFNAME interface,
  // chosen round-robin per collective).
  int cores = 1;
  // Host memory the CPU sums in: DGX H100's Xeon Platinum 8480C, 8 channels
  // of DDR5-4800 per socket, 8 x 4800 MT/s x 8 bytes = 307.2 GB/s (Intel's
  // product specification). A bound: one thread sums, and may reach less.
  double host_memory_bytes_per_second = 8 * 4800e6 * 8;
  // Bytes of memory traffic per byte summed: Gloo's sum reads both operands
  // and writes the result (gloo/math.h, sum(c, a, b, n)).
  double memory_bytes_per_summed_byte = 3;

  // What one connection carries at most: min(NIC, this) bounds a ring step.
  double tcp_bytes_per_second() const { return tcp_bytes_per_second_per_core * cores; }
  // The copy to pinned host memory and back, of a bucket of `bytes`.
  double staging_seconds(double bytes) const { return 2 * bytes / pcie_bytes_per_second; }
  // The CPU's sums of one rank in a ring all-reduce over `ranks`: its
  // (ranks - 1) / ranks of the bucket, received during the reduce-scatter.
  double reduction_seconds(double bytes, int ranks) const {
    return memory_bytes_per_summed_byte * bytes * (ranks - 1) / ranks / host_memory_bytes_per_second;
  }
};

}  // namespace simtrain
