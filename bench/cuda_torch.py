"""PyTorch with a CUDA device, for the bench scripts that time a GPU."""
import sys


def cuda_torch(script):
    """The torch module, or None after saying on stderr why it cannot time a GPU."""
    try:
        import torch
    except ImportError:
        print(f"{script}: PyTorch is not installed (pip install torch); --dry-run needs none", file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print(f"{script}: no CUDA device visible to PyTorch", file=sys.stderr)
        return None
    return torch
