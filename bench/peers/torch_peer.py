#!/usr/bin/env python3
"""The jx benchmark workloads in PyTorch (Debian's python3-torch), as the peer.

Prints one JSON object: workload name -> seconds per iteration (median of repeats).
Exits 0 with {"skipped": reason} when torch is not installed, so callers skip cleanly.
Run it at its best: side_by_side.py sets OPENBLAS_CORETYPE and ATEN_CPU_CAPABILITY.
"""
import json
import statistics
import sys
import time


def timeit(fn, min_time=0.3, repeats=5):
    fn()  # warm up
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / repeats:
            break
        n *= 4
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)


def main():
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"skipped": f"python3-torch not installed ({e})"}))
        return 0
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    out = {"torch_version": torch.__version__, "threads": threads}
    with torch.no_grad():
        a4 = torch.rand(4)
        b4 = torch.rand(4)
        out["add_f32[4]"] = timeit(lambda: torch.add(a4, b4))
        n = 1 << 24
        x = torch.rand(n)
        y = torch.rand(n)
        out["add_16M"] = timeit(lambda: torch.add(x, y))
        out["tanh_16M"] = timeit(lambda: torch.tanh(x))
        out["exp_16M"] = timeit(lambda: torch.exp(x))
        for size in (1024, 2048):
            a = torch.rand(size, size)
            b = torch.rand(size, size)
            out[f"matmul_{size}"] = timeit(lambda: torch.mm(a, b), repeats=3)
    # grad of the MLP loss (784-512-512-10, tanh, softmax cross-entropy, batch 128).
    dims = [784, 512, 512, 10]
    params = []
    for i in range(3):
        params.append((torch.randn(dims[i], dims[i + 1]) / dims[i] ** 0.5).requires_grad_())
        params.append(torch.zeros(dims[i + 1], requires_grad=True))
    xb = torch.randn(128, 784)
    labels = torch.randint(0, 10, (128,))

    def loss_and_grad():
        h = xb
        for i in range(3):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < 2:
                h = torch.tanh(h)
        loss = torch.nn.functional.cross_entropy(h, labels)
        for p in params:
            p.grad = None
        loss.backward()
        return loss

    out["mlp_grad"] = timeit(loss_and_grad)

    def sgd_step():
        loss_and_grad()
        with torch.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=0.0)  # a zero rate, as the jx step, keeps the parameters

    out["mlp_sgd_step"] = timeit(sgd_step)

    # Per-example gradients with functorch: vmap(grad(loss)) over the 128 examples.
    try:
        from functorch import grad, vmap

        def loss_one(ps, x, y):
            h = x.unsqueeze(0)
            for i in range(3):
                h = h @ ps[2 * i] + ps[2 * i + 1]
                if i < 2:
                    h = torch.tanh(h)
            return torch.nn.functional.cross_entropy(h, y.unsqueeze(0))

        detached = tuple(p.detach() for p in params)
        per_example = vmap(grad(loss_one), in_dims=(None, 0, 0))
        out["per_example_grads"] = timeit(lambda: per_example(detached, xb, labels), repeats=3)
    except ImportError:
        pass

    # The 8-op chain tanh(x*1.5 + 0.5) * x - exp(-x*x) on 16M f32, eager ATen ops.
    with torch.no_grad():
        xc = torch.rand(1 << 24) * 2 - 1
        out["chain_16M"] = timeit(lambda: torch.tanh(xc * 1.5 + 0.5) * xc - torch.exp(-xc * xc), repeats=3)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
