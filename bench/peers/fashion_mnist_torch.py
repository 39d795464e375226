#!/usr/bin/env python3
"""The PyTorch peer of bench/fashion_mnist_bench.cc: the demo's MLP and CNN
(examples/fashion_mnist/models.h) trained with Adam on batches of 128 random 28x28 images.

  fashion_mnist_torch.py [threads] [steps] [mlp_batch] [cnn_batch]

Prints one JSON object: {"mlp_step_s": ..., "mlp_step_cpu_s": ..., "cnn_step_s": ...,
"cnn_step_cpu_s": ...} (wall-clock and process CPU seconds per training step, the median of 3
runs of `steps` steps after a warm-up), or {"skipped": reason} with exit status 0 when torch
cannot be imported, so the caller skips cleanly.
"""
import json
import statistics
import sys
import time


def main():
    try:
        import torch
        from torch import nn
    except ImportError as e:
        print(json.dumps({"skipped": f"python3-torch not installed ({e})"}))
        return 0
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    mlp_batch = int(sys.argv[3]) if len(sys.argv) > 3 else 128
    cnn_batch = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    torch.set_num_threads(threads)
    torch.manual_seed(0)

    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    cnn = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 32, 128), nn.ReLU(), nn.Linear(128, 10))
    def step_time(model, batch):
        x = torch.randn(batch, 1, 28, 28)
        y = torch.randint(0, 10, (batch,))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step():
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        for _ in range(3):
            step()
        wall, cpu = [], []
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(steps):
                step()
            wall.append((time.perf_counter() - t0) / steps)
            cpu.append((time.process_time() - c0) / steps)
        return statistics.median(wall), statistics.median(cpu)

    out = {"torch_version": torch.__version__, "threads": threads}
    for name, model, batch in (("mlp", mlp, mlp_batch), ("cnn", cnn, cnn_batch)):
        out[f"{name}_step_s"], out[f"{name}_step_cpu_s"] = step_time(model, batch)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
