#!/usr/bin/env python3
"""Measures what the host pays to put work on the GPU, the constants of
sim/model/host_launches.cpp (docs/host.md), on the machine it runs on:

  python_forward   an eager PyTorch op from Python recording an autograd node
  python_no_grad   the same op without autograd
  graph_replay     torch.cuda.CUDAGraph.replay() of a graph of 1 and of 64 kernels
  triton           a Triton kernel through its Python launcher (if Triton is installed)
  sync_round_trip  a device-to-host copy of a few integers and the wait for it,
                   the GPU otherwise idle (what the alltoall dispatcher's wait costs at least)

Each is host seconds per launch: N launches of a one-element kernel timed by
the host clock, the GPU idle before them; median of 7 repetitions. Beside
them, kernel_gpu: the GPU seconds of one such kernel run back to back inside
a graph of 1024, to show the loops were host-bound (host figure above it).

    python3 bench/launch_rate_probe.py                 # needs PyTorch and a GPU
    python3 bench/launch_rate_probe.py --json out.json   # a scenario reads it: cluster.host_launch_profile
    python3 bench/launch_rate_probe.py --dry-run       # what it would measure; no PyTorch
"""
import argparse
import json
import statistics
import sys
import time

from cuda_torch import cuda_torch

REPETITIONS = 7


def plan(launches):
    return [
        ("python_forward", f"{launches} x (x * 1.0) with x.requires_grad, autograd recording"),
        ("python_no_grad", f"{launches} x (x * 1.0) under torch.no_grad()"),
        ("graph_replay_1", f"{launches} x replay of a graph holding 1 kernel"),
        ("graph_replay_64", f"{launches // 8} x replay of a graph holding 64 kernels"),
        ("triton", f"{launches} x a one-element Triton kernel (skipped without Triton)"),
        ("sync_round_trip", f"{launches // 8} x counts.to('cpu', non_blocking=True) + event.synchronize()"),
        ("kernel_gpu", "GPU seconds of one of those kernels, 1024 back to back in a graph (CUDA events)"),
    ]


def median_host(torch, run, launches):
    """Host seconds per launch of `run` (which launches `launches` kernels), the GPU idle before it."""
    host = []
    run()  # warm-up
    for _ in range(REPETITIONS):
        torch.cuda.synchronize()
        begin = time.perf_counter()
        run()
        host.append((time.perf_counter() - begin) / launches)
    torch.cuda.synchronize()
    return statistics.median(host)


def captured(torch, tensor, kernels):
    """A CUDA graph of `kernels` one-element multiplications of `tensor`."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        tensor.mul_(1.0)  # warm-up on a side stream, as torch.cuda.graphs asks
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            tensor.mul_(1.0)
    return graph


def kernel_gpu_seconds(torch, tensor):
    graph = captured(torch, tensor, 1024)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    seconds = []
    for _ in range(REPETITIONS):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        seconds.append(start.elapsed_time(end) / 1e3 / 1024)
    return statistics.median(seconds)


def measure(torch, launches):
    results = {}
    x = torch.ones(1, device="cuda", requires_grad=True)

    def eager():
        y = x
        for _ in range(launches):
            y = y * 1.0
        return y

    results["python_forward"] = median_host(torch, eager, launches)
    with torch.no_grad():
        results["python_no_grad"] = median_host(torch, eager, launches)

    static = torch.ones(1, device="cuda")
    for kernels, replays in ((1, launches), (64, launches // 8)):
        graph = captured(torch, static, kernels)

        def replay(graph=graph, replays=replays):
            for _ in range(replays):
                graph.replay()

        results[f"graph_replay_{kernels}"] = median_host(torch, replay, replays)

    try:
        import triton
        import triton.language as tl

        @triton.jit
        def one(pointer):
            tl.store(pointer, tl.load(pointer) * 1.0)

        def triton_loop():
            for _ in range(launches):
                one[(1,)](static)

        results["triton"] = median_host(torch, triton_loop, launches)
    except ImportError:
        results["triton"] = None

    counts = torch.ones(8, dtype=torch.long, device="cuda")
    side = torch.cuda.Stream()
    waits = launches // 8

    def round_trips():
        for _ in range(waits):
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                counts.to("cpu", non_blocking=True)
            side.record_event().synchronize()

    results["sync_round_trip"] = median_host(torch, round_trips, waits)
    results["kernel_gpu"] = kernel_gpu_seconds(torch, static)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=4096, help="launches timed per repetition (default 4096)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--dry-run", action="store_true", help="print what would be measured; needs no PyTorch")
    args = parser.parse_args()
    if args.launches < 64:
        parser.error("--launches must be at least 64")
    if args.dry_run:
        for name, what in plan(args.launches):
            print(f"{name:16s} {what}")
        return 0
    torch = cuda_torch("launch_rate_probe.py")
    if torch is None:
        return 2
    results = measure(torch, args.launches)
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "seconds_per_launch": {}}
    print(f"{report['device']}, PyTorch {report['torch']}: seconds per launch (median of {REPETITIONS})")
    for name, seconds in results.items():
        if seconds is None:
            print(f"{name:16s} skipped")
            continue
        report["seconds_per_launch"][name] = seconds
        print(f"{name:16s} {seconds * 1e6:8.2f} us")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
