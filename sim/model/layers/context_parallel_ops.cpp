#include "sim/model/layers/context_parallel_ops.hpp"

namespace simtrain::layers {

// Over the ring group (the CP group but in a2a+p2p: its outer group of B
// ranks), the K/V exchange. p2p: the ring attention's hops of each rank's K/V
// chunk forward, and of K/V and dK/dV backward, each hop beside an attention
// block (the traffic of a ring all-gather, and of a ring reduce-scatter for
// dK/dV, run beside the pass). After a2a+p2p's all-to-alls a chunk holds B
// times the tokens of 1/A of the K/V heads: the same bytes. all_gather: the
// K/V of the whole sequence gathered before attention (and again for the
// backward), dK/dV reduce-scattered after it, blocking. Over the all-to-all
// group (the CP group for a2a, the inner group of A ranks for a2a+p2p;
// Transformer Engine's AttnFuncWithCPAndQKVOA2A and AttnFuncWithCPAndKVP2P
// with two groups): blocking all-to-alls of the rank's tensors, each rank
// sending what the others' heads need: Q, K, V before attention and its
// output after it; backward, the output with its gradient before, then dQ,
// dK, dV after (as Transformer Engine did: a2a until 25252e9, a2a+p2p until
// ee5dcec; it now keeps the output unexchanged and sends dO alone).
void add_cp_exchange(const Shard& x, Pass& pass, bool gradients) {
  if (x.cp_a2a > 1) {
    const double before = gradients ? 2 * x.attention_output_bytes() : x.qkv_bytes();
    pass.tp.push_back({TaskKind::ALLTOALL, 1, before, false, LayerGroup::context_a2a});
  }
  if (x.cp_ring > 1) {
    const double gathered = double(x.cp_ring) * x.kv_chunk_bytes();
    const bool overlapped = x.cp_comm_type != CpCommType::all_gather;
    pass.tp.push_back({TaskKind::ALLGATHER, 1, gathered, overlapped, LayerGroup::context_ring});
    if (gradients) pass.tp.push_back({TaskKind::REDUCESCATTER, 1, gathered, overlapped, LayerGroup::context_ring});
  }
  if (x.cp_a2a > 1) {
    const double after = gradients ? x.qkv_bytes() : x.attention_output_bytes();
    pass.tp.push_back({TaskKind::ALLTOALL, 1, after, false, LayerGroup::context_a2a});
  }
}

// Each part's together (a2a+p2p holds both): the all-to-alls' backward, the
// output and its gradient received and dQ, dK, dV to send; p2p's double
// buffers (the chunk being sent and the one arriving), of K/V forward and of
// K/V with dK/dV backward; all_gather's gathered K/V and dK/dV.
double cp_exchange_buffer_bytes(const Shard& x) {
  const double all_to_all = x.cp_a2a > 1 ? 2 * x.attention_output_bytes() + x.qkv_bytes() : 0;
  if (x.cp_ring == 1) return all_to_all;
  const double chunks = x.cp_comm_type == CpCommType::all_gather ? 2 * double(x.cp) : 2 * 2;
  return all_to_all + chunks * x.kv_chunk_bytes();
}

}  // namespace simtrain::layers
