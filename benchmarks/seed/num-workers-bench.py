#!/usr/bin/env python
"""
这个基准测试用于观察 DataLoader 中 num_workers 参数对数据加载性能的影响。
通常情况下，num_workers > 0 时，DataLoader 会启用多个子进程并行加载数据，
从而减少主训练进程等待数据的时间，提升整体吞吐量。
用法：
./num-workers-bench.py
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
        # 模拟较慢的数据预处理过程
        time.sleep(0.005)
        return self.tensor


num_runs = 3
num_workers = 5
batch_size = 100
compute_emulation_time = 0.2
ds = MyDataset()
start_event = torch.cuda.Event(enable_timing=True)
end_event = torch.cuda.Event(enable_timing=True)
device = "cuda:0"
for num_workers in range(5):
    dl = torch.utils.data.DataLoader(
        ds,
        batch_size=batch_size,
        pin_memory=True,
        num_workers=num_workers,
    )
    duration = 0
    for i in range(num_runs):
        slept_time = 0
        start_event.record()
        for batch in dl:
            batch = batch.to(device=device, non_blocking=True)
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
    print(f"num_workers={num_workers}: average time: {duration:0.3f}")
