#!/usr/bin/env python3
"""Re-times the attention entries of a kernel-profile database with cuDNN's
fused scaled-dot-product attention, as PyTorch calls it
(torch.nn.functional.scaled_dot_product_attention under
SDPBackend.CUDNN_ATTENTION; FlashAttention-2, SDPBackend.FLASH_ATTENTION,
where cuDNN refuses a shape).

The project's own attention kernel (kernels/cuda/attention.cu) runs on CUDA
cores: it stays the correctness reference of the GPU tests, but its timings
overstate attention many times over, so bench/gpu_measure.sh replaces them
with these. Every other entry is left as simtrain-profile wrote it.

    python3 bench/attention_sdpa.py DATABASE.json     # rewrites it in place (atomically)
    python3 bench/attention_sdpa.py --list DATABASE.json   # what it would time; no GPU, no PyTorch

The attention entries are those of op_class "attention": the fused attention
op ("attn", shape [batch, heads, sequence, head dimension]; causal, as the
simulator's ops are) and its backward ("attn_grad"). Keys and values get as
many heads as queries, as in the project's kernel. The method is
simtrain-profile's (kernels/profiler/timing.hpp): 3 warm-up runs, then
repetitions for about 0.2 s (10 to 200), each after an L2 flush and timed by a
pair of CUDA events; median, 10th and 90th percentiles.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

WARMUP_RUNS, MIN_REPETITIONS, MAX_REPETITIONS, TARGET_SECONDS = 3, 10, 200, 0.2


def attention_entries(database):
    """(index, direction, [batch, heads, seq, head_dim], dtype) of each attention entry."""
    found = []
    for index, entry in enumerate(database["entries"]):
        if entry["op_class"] == "attention":
            direction = "backward" if entry["op"].endswith("_grad") else "forward"
            found.append((index, direction, [int(size) for size in entry["shape"]], entry["dtype"]))
    return found


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


class Timer:
    def __init__(self, torch):
        self.torch = torch
        l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
        self.flush_buffer = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")

    def time(self, run):
        torch = self.torch
        for _ in range(WARMUP_RUNS):
            run()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        once = max(start.elapsed_time(end) / 1e3, 1e-7)
        repetitions = max(MIN_REPETITIONS, min(MAX_REPETITIONS, int(TARGET_SECONDS / once)))
        samples = []
        for _ in range(repetitions):
            self.flush_buffer.zero_()
            start.record()
            run()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        samples.sort()
        return statistics.median(samples), percentile(samples, 0.1), percentile(samples, 0.9), repetitions


def time_attention(torch, timer, backend, direction, shape, dtype):
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as functional

    batch, heads, seq, head_dim = shape
    element = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    q, k, v = (torch.randn(batch, heads, seq, head_dim, dtype=element, device="cuda", requires_grad=True)
               for _ in range(3))
    with sdpa_kernel([backend]):
        if direction == "forward":
            with torch.no_grad():
                return timer.time(lambda: functional.scaled_dot_product_attention(q, k, v, is_causal=True))
        out = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        grad = torch.randn_like(out)
        return timer.time(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True))


def retime(path, database):
    try:
        import torch
        from torch.nn.attention import SDPBackend
    except ImportError as error:
        sys.exit(f"attention_sdpa.py: needs PyTorch 2.3 or later with CUDA: {error}")

    if not torch.cuda.is_available():
        sys.exit(f"attention_sdpa.py: no CUDA device for PyTorch {torch.__version__}")
    timer = Timer(torch)
    versions = f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}"
    backends = [("cudnn fused sdpa", SDPBackend.CUDNN_ATTENTION), ("flash-attention-2 sdpa", SDPBackend.FLASH_ATTENTION)]
    kept = 0
    for index, direction, shape, dtype in attention_entries(database):
        entry = database["entries"][index]
        reasons = []
        for label, backend in backends:
            try:
                median, p10, p90, repetitions = time_attention(torch, timer, backend, direction, shape, dtype)
            except (RuntimeError, KeyError) as error:  # a backend refusing a shape says so by RuntimeError
                reasons.append(f"{label}: {str(error).splitlines()[0] if str(error) else type(error).__name__}")
                torch.cuda.synchronize()
                continue
            entry.update(kernel=f"{label} {direction} {'x'.join(map(str, shape))} {dtype} ({versions})",
                         median_seconds=median, p10_seconds=p10, p90_seconds=p90, repetitions=repetitions)
            print(f"{entry['op']} {shape}: {label}, {median * 1e3:.4f} ms", flush=True)
            break
        else:
            kept += 1
            print(f"{entry['op']} {shape}: kept the own kernel's time ({'; '.join(reasons)})", flush=True)
    database.setdefault("method", {})["attention"] = (
        f"attention entries timed by bench/attention_sdpa.py: PyTorch's scaled_dot_product_attention ({versions}), "
        "cuDNN's fused kernel, else FlashAttention-2; causal; the rest as above")
    directory = os.path.dirname(os.path.abspath(path))
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp") as out:
        json.dump(database, out, indent=1)
        out.write("\n")
    os.replace(out.name, path)
    print(f"rewrote {path}: {len(attention_entries(database)) - kept} attention entries re-timed, {kept} kept")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", help="kernel-profile database written by simtrain-profile")
    parser.add_argument("--list", action="store_true", help="print the attention entries it would time, and stop")
    arguments = parser.parse_args()
    try:
        with open(arguments.database) as file:
            database = json.load(file)
        entries = attention_entries(database)
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"attention_sdpa.py: {arguments.database}: {error}")
    if arguments.list:
        for index, direction, shape, dtype in entries:
            print(f"entries[{index}] {database['entries'][index]['op']}: attention {direction} {'x'.join(map(str, shape))} {dtype}")
        print(f"{len(entries)} attention entries")
        return
    retime(arguments.database, database)


if __name__ == "__main__":
    main()
