"""A real CUDA training loop on the seed's data for `shmdoctor run` on a GPU machine: batch 100 x 1 MiB, 4 workers,
pin_memory, a linear layer trained on the GPU; a step slower than loading (--step) so the prefetch fills up.

    python benchmarks/cuda_loop.py [--batches 30] [--step 0.2]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, n: int):
        self.n, self.sample = n, torch.ones(2**18)  # 1 MiB of float32

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx: int) -> torch.Tensor:
        return self.sample


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--step", type=float, default=0.2)
    args = ap.parse_args()
    model = torch.nn.Linear(2**18, 256).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Samples(100 * args.batches), batch_size=100, num_workers=4, pin_memory=True)
    start, done = time.monotonic(), 0
    for batch in loader:
        x = batch.cuda(non_blocking=True)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch.cuda.synchronize()
        time.sleep(args.step)
        done += 1
    print(f"trained on {done} batches in {time.monotonic() - start:.2f} s on {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
