#!/usr/bin/env python3
"""VGG19 in PyTorch: the CPU peer of examples/vgg19 and bench/vgg19_bench.cc.

The same network as vgg19_model.h (16 3x3 convolutions in blocks of 2, 2, 4, 4, 4 with 2x2
max pooling, classifier 4096-4096-1000 with ReLU, no dropout), random weights, NCHW (PyTorch's
default layout, as the paper's peer ran it). Times the forward pass (eval, no_grad) and the
forward+backward step (mean cross-entropy, .backward()) per batch size: one warm-up call, then
the median of --reps calls.

  vgg19_torch.py --batches 1,10 --image-size 224 --reps 3 --threads 2 [--no-backward]

Prints one JSON line: {"torch_version", "threads", "forward": {"1": s, ...},
"forward_backward": {...}}; {"skipped": reason} (exit 0) when torch is not installed.
"""
import argparse
import json
import statistics
import sys
import time


def vgg19(torch, image_size):
    nn = torch.nn
    layers, in_ch = [], 3
    for n_layers, ch in zip((2, 2, 4, 4, 4), (64, 128, 256, 512, 512)):
        for _ in range(n_layers):
            layers += [nn.Conv2d(in_ch, ch, 3, padding=1), nn.ReLU(inplace=True)]
            in_ch = ch
        layers.append(nn.MaxPool2d(2, 2))
    side = image_size // 32
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512 * side * side, 4096), nn.ReLU(inplace=True),
                         nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Linear(4096, 1000))


def median_time(fn, reps):
    fn()  # warm-up
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,10")
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-backward", action="store_true")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"skipped": f"python3-torch not installed ({e})"}))
        return 0
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = vgg19(torch, args.image_size)
    out = {"torch_version": torch.__version__, "threads": args.threads, "forward": {}, "forward_backward": {}}
    for n in (int(b) for b in args.batches.split(",") if b):
        x = torch.randn(n, 3, args.image_size, args.image_size)
        labels = torch.randint(0, 1000, (n,))

        def forward():
            model.eval()
            with torch.no_grad():
                return model(x)

        def forward_backward():
            model.train()
            model.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), labels)
            loss.backward()
            return loss

        out["forward"][str(n)] = median_time(forward, args.reps)
        if not args.no_backward:
            out["forward_backward"][str(n)] = median_time(forward_backward, args.reps)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
