#!/usr/bin/env python
"""
这个基准测试用于观察以下两个设置组合对 CPU 到 GPU 数据传输性能的影响：
(1) DataLoader(pin_memory=True, ...)
(2) batch.to(device="cuda", non_blocking=True)
当使用页锁定内存，也就是 pinned memory，并配合 non_blocking=True 时，
CPU 到 GPU 的数据拷贝通常会更快，并且有机会与 GPU 计算过程发生重叠，
从而降低数据传输对整体训练流程的影响。
参考资料：
- https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers
- https://developer.nvidia.com/blog/how-optimize-data-transfers-cuda-cc/
用法：
./pin-memory-non-block-bench.py
"""

# The seed article's script (../../../shared/seed/000_*.txt), verbatim but for its indentation, which the article
# lost, and num_runs: 3 instead of 10 (as in FACTS.md), to save device time.
import time

import torch


class MyDataset(torch.utils.data.Dataset):
    def __init__(self):
        # 创建一个大小约为 1 MB 的张量
        self.tensor = torch.ones(1 * 2**18)  # pytorch 中默认 torch.ones() 创建的是 float32（4字节）张量

    def __len__(self):
        return 1000

    def __getitem__(self, idx):
        return self.tensor


num_runs = 3
num_workers = 5
batch_size = 100
compute_emulation_time = 0.2
ds = MyDataset()
start_event = torch.cuda.Event(enable_timing=True)
end_event = torch.cuda.Event(enable_timing=True)
device = "cuda:0"
for pm in [True, False]:
    for nb in [True, False]:
        dl = torch.utils.data.DataLoader(
            ds,
            batch_size=batch_size,
            pin_memory=pm,
            num_workers=num_workers,
        )
        duration = 0
        for i in range(num_runs):
            slept_time = 0
            start_event.record()
            for batch in dl:
                # 在使用 pinned memory 的基础上，non_blocking=True 可以进一步提升数据拷贝效率
                batch = batch.to(device=device, non_blocking=nb)
                # 模拟计算耗时，让 DataLoader worker 有时间提前准备下一批数据；
                # 否则测试结果可能主要反映的是主进程等待 worker 加载数据的时间
                time.sleep(compute_emulation_time)
                # 后续会从总耗时中减去这段人为加入的计算延迟，
                # 尽量单独衡量 DataLoader 迭代过程本身带来的开销
                slept_time += compute_emulation_time
            end_event.record()
            torch.cuda.synchronize()
            duration += start_event.elapsed_time(end_event) / 1000 - slept_time
        duration /= num_runs
        print(f"pin_memory={pm!s:>5}, non_blocking={nb!s:>5}: average time: {duration:0.3f}")
