#!/usr/bin/env python3
"""Times the host and the GPU of one mixture-of-experts MLP as Megatron-Core
runs it (Megatron-LM 92c8482e, the one NeMo 25.11 pins; alltoall token
dispatcher, dropless), on one GPU: the pre-MLP norm, the router GEMM, top-k
routing and the aux loss (megatron/core/transformer/moe/moe_utils.py:
topk_routing_with_score_function, compute_routing_scores_for_aux_loss,
switch_load_balancing_loss_func), the dispatcher's preprocess with its copies
of the token counts to the host and the host's wait for them
(token_dispatcher.py: preprocess, _maybe_dtoh_and_synchronize), the
permutation (moe_utils.permute: masked_select, or with --fused Transformer
Engine's Triton permutation), one GEMM an expert (as TE 2.9's GroupedLinear
runs them), the probability-weighted SwiGLU, the unpermutation. Alone on one
GPU there is no all-to-all: the layer's experts are the rank's local experts
and the exchanges are left out; their metadata copy and wait are kept.

It reports, per layer, forward and backward: host seconds to issue the work
(the host clock from the call to its return; the wait for the token counts
included), GPU seconds (CUDA events), and with --count-kernels the kernels
and copies PyTorch's profiler sees, to set beside sim/model/host_launches.cpp.
--graphs router captures the norm, router and top-k in one CUDA graph
(torch.cuda.make_graphed_callables), as Megatron's moe_router scope does.

    python3 bench/moe_layer_host.py                          # Qwen3-30B-A3B's MLP at EP 8: 16 local experts
    python3 bench/moe_layer_host.py --fused --graphs router  # needs Transformer Engine for --fused
    python3 bench/moe_layer_host.py --dry-run                # the plan; no PyTorch
"""
import argparse
import json
import statistics
import sys
import time

from cuda_torch import cuda_torch

REPETITIONS = 10


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Defaults: Qwen3-30B-A3B (hidden 2048, 128 experts of 768, top-8) at micro-batch 2 x 4096
    # tokens and EP 8, as the qwen3-30b-a3b-16xh100 scenario: 16 local experts, each receiving
    # on average tokens x top-k / experts x EP rows.
    parser.add_argument("--tokens", type=int, default=8192, help="tokens of the micro-batch on this rank")
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--experts", type=int, default=16, help="local experts (the layer's experts / EP)")
    parser.add_argument("--ffn", type=int, default=768, help="an expert's intermediate size")
    parser.add_argument("--topk", type=int, default=8)
    parser.add_argument("--fused", action="store_true", help="TE's fused router and permutation (moe_router_fusion, moe_permute_fusion)")
    parser.add_argument("--no-aux-loss", action="store_true", help="leave the load-balancing loss out")
    parser.add_argument("--graphs", choices=["none", "router"], default="none")
    parser.add_argument("--count-kernels", action="store_true", help="count kernels with torch.profiler (one extra run)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit; needs no PyTorch")
    args = parser.parse_args()
    for name in ("tokens", "hidden", "experts", "ffn", "topk"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be positive")
    if args.topk > args.experts:
        parser.error("--topk cannot exceed --experts")
    return args


def plan(args):
    router = "TE fused_topk_with_score_function" if args.fused else "topk, softmax, scatters (moe_utils.py:528)"
    permute = "TE Triton moe_permute_with_probs" if args.fused else "masked_select x 2, index_select (moe_utils.py:225)"
    steps = [
        "pre-MLP RMSNorm",
        f"router GEMM [{args.tokens} x {args.hidden}] x [{args.hidden} x {args.experts}]",
        f"top-{args.topk} routing: {router}",
        "aux loss" if not args.no_aux_loss else "no aux loss",
        "preprocess: routing_map.sum; counts copied to the host on a side stream; host waits (token_dispatcher.py:900)",
        f"permutation: {permute}",
        f"{args.experts} expert GEMMs [rows x {args.hidden}] x [{args.hidden} x {2 * args.ffn}], SwiGLU x probs, "
        f"{args.experts} GEMMs [rows x {args.ffn}] x [{args.ffn} x {args.hidden}]",
        "unpermutation: zeros + scatter_add" if not args.fused else "unpermutation: TE Triton moe_unpermute",
        "backward of all of it (loss = output.sum())",
    ]
    if args.graphs == "router":
        steps.insert(0, "CUDA graph over norm, router and top-k (make_graphed_callables)")
    return steps


def router_module(torch, args, topk_fused):
    """The pre-MLP norm, the router GEMM, top-k routing and the aux loss: Megatron's moe_router scope."""

    class Router(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm_weight = torch.nn.Parameter(torch.ones(args.hidden, device="cuda", dtype=torch.bfloat16))
            self.weight = torch.nn.Parameter(
                (torch.randn(args.experts, args.hidden, device="cuda") * 0.02).bfloat16())

        def forward(self, hidden):
            x = torch.nn.functional.rms_norm(hidden, (args.hidden,), self.norm_weight)
            logits = torch.mm(x, self.weight.t())
            if topk_fused:
                probs, routing_map = topk_fused(logits, args.topk, False, None, None, None, "softmax", None)
            else:
                scores, top = torch.topk(logits, k=args.topk, dim=1)
                top_probs = torch.softmax(scores, dim=-1, dtype=torch.float32).type_as(logits)
                probs = torch.zeros_like(logits).scatter(1, top, top_probs)
                routing_map = torch.zeros_like(logits).int().scatter(1, top, 1).bool()
            if not args.no_aux_loss:
                scores = torch.softmax(logits, dim=-1, dtype=torch.float32)
                tokens_per_expert = routing_map.sum(dim=0)
                aux = torch.sum(scores.sum(dim=0) * tokens_per_expert) * (1e-3 / (args.topk * args.tokens ** 2))
                probs = probs + 0 * aux  # ties the loss into the graph, as MoEAuxLossAutoScaler does
            return probs, routing_map

    return Router()


class Layer:
    """One MoE MLP's parameters and forward, in Megatron's order of operations."""

    def __init__(self, torch, args):
        self.torch, self.args = torch, args
        self.fc1 = [(torch.randn(args.hidden, 2 * args.ffn, device="cuda") * 0.02).bfloat16().requires_grad_()
                    for _ in range(args.experts)]
        self.fc2 = [(torch.randn(args.ffn, args.hidden, device="cuda") * 0.02).bfloat16().requires_grad_()
                    for _ in range(args.experts)]
        self.side_stream = torch.cuda.Stream()
        topk_fused = None
        if args.fused:
            from transformer_engine.pytorch.permutation import moe_permute_with_probs, moe_unpermute
            from transformer_engine.pytorch.router import fused_topk_with_score_function
            self.te_permute, self.te_unpermute, topk_fused = moe_permute_with_probs, moe_unpermute, fused_topk_with_score_function
        self.route = router_module(torch, args, topk_fused)

    def forward(self, hidden):
        torch, args = self.torch, self.args
        probs, routing_map = self.route(hidden)
        # Preprocess and the wait: the counts go to the host on a side stream, the host waits
        # before the (here absent) all-to-all, as the alltoall dispatcher does.
        tokens_per_expert = routing_map.sum(dim=0).long()
        self.side_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side_stream):
            on_host = tokens_per_expert.to("cpu", non_blocking=True)
        self.side_stream.record_event().synchronize()
        splits = on_host.tolist()
        if args.fused:
            permuted, permuted_probs, row_map = self.te_permute(hidden, probs, routing_map, args.tokens * args.topk)
        else:
            mask = routing_map.T.contiguous()
            token_indices = torch.arange(args.tokens, device="cuda").unsqueeze(0).expand(args.experts, -1)
            sorted_indices = token_indices.masked_select(mask)
            permuted_probs = probs.T.contiguous().masked_select(mask)
            permuted = hidden.index_select(0, sorted_indices)
        outputs = []
        for expert, rows in enumerate(torch.split(permuted, splits)):
            gate, up = torch.mm(rows, self.fc1[expert]).chunk(2, dim=-1)
            outputs.append(torch.nn.functional.silu(gate) * up)
        weighted = torch.cat(outputs) * permuted_probs.unsqueeze(-1).to(torch.bfloat16)
        expert_out = torch.cat([torch.mm(part, self.fc2[e]) for e, part in enumerate(torch.split(weighted, splits))])
        if args.fused:
            return self.te_unpermute(expert_out, row_map, restore_shape=hidden.shape)
        out = torch.zeros_like(hidden)
        return out.scatter_add(0, sorted_indices.unsqueeze(1).expand(-1, args.hidden), expert_out)


def time_pass(torch, run):
    """Host seconds to issue `run` and GPU seconds to finish it, the GPU idle before."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    begin = time.perf_counter()
    result = run()
    host = time.perf_counter() - begin
    end.record()
    end.synchronize()
    return result, host, start.elapsed_time(end) / 1e3


def count_kernels(torch, run):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return sum(1 for event in prof.events() if event.device_type.name == "CUDA")


def measure(torch, args):
    layer = Layer(torch, args)
    hidden = torch.randn(args.tokens, args.hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    if args.graphs == "router":
        layer.route = torch.cuda.make_graphed_callables(layer.route, (hidden,))
    samples = {"forward_host": [], "forward_gpu": [], "backward_host": [], "backward_gpu": []}
    for repetition in range(REPETITIONS + 2):  # two warm-ups
        out, host, gpu = time_pass(torch, lambda: layer.forward(hidden))
        _, back_host, back_gpu = time_pass(torch, lambda: out.sum().backward())
        if repetition >= 2:
            for key, value in zip(samples, (host, gpu, back_host, back_gpu)):
                samples[key].append(value)
    results = {key: statistics.median(values) for key, values in samples.items()}
    if args.count_kernels:
        results["forward_kernels"] = count_kernels(torch, lambda: layer.forward(hidden))
        out = layer.forward(hidden)
        results["backward_kernels"] = count_kernels(torch, lambda: out.sum().backward())
    return results


def main():
    args = parse_args()
    if args.dry_run:
        for number, step in enumerate(plan(args), 1):
            print(f"{number}. {step}")
        return 0
    torch = cuda_torch("moe_layer_host.py")
    if torch is None:
        return 2
    if args.fused:
        try:
            import transformer_engine.pytorch  # noqa: F401
        except ImportError:
            print("moe_layer_host.py: --fused needs Transformer Engine (transformer_engine.pytorch)", file=sys.stderr)
            return 2
    results = measure(torch, args)
    print(f"{torch.cuda.get_device_name(0)}, PyTorch {torch.__version__}; median of {REPETITIONS} layers")
    for key, value in results.items():
        print(f"{key:18s} {value * 1e3:9.3f} ms" if isinstance(value, float) else f"{key:18s} {value:9d}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"device": torch.cuda.get_device_name(0), "args": vars(args), "results": results}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
