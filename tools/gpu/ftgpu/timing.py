"""Timing of GPU work, the same way for every benchmark: CUDA events around
`reps` calls after `warmup` calls, the median of `rounds` such runs, in
milliseconds per call."""

import statistics

import torch


def time_ms(fn, warmup=5, reps=20, rounds=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / reps)
    return statistics.median(samples)
