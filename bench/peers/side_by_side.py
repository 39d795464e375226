#!/usr/bin/env python3
"""Runs the jx benchmarks and the PyTorch peer on the same workloads and prints them side by
side, with the ratio jx/peer (below 1 means jx is faster).

  bench/peers/side_by_side.py [build_dir]

The peer runs at its best: Debian's OpenBLAS does not recognise this CPU and falls back to
SSE3 kernels unless OPENBLAS_CORETYPE=SkylakeX is set, and ATen needs
ATEN_CPU_CAPABILITY=avx512; both are set when the CPU has AVX-512. Both sides use 2 threads.
Skips the peer cleanly when python3-torch is not installed.
"""
import json
import os
import subprocess
import sys
import tempfile

# workload -> (jx benchmark binary, exact Google Benchmark name, jx metric -> seconds).
WORKLOADS = {
    "add_f32[4]": ("dispatch_bench", "BM_EagerAddF32x4"),
    "add_16M": ("elementwise_bench", "BM_JxAdd"),
    "tanh_16M": ("elementwise_bench", "BM_JxTanh"),
    "exp_16M": ("elementwise_bench", "BM_JxExp"),
    "matmul_1024": ("dot_bench", "BM_JxDotGeneral/1024"),
    "matmul_2048": ("dot_bench", "BM_JxDotGeneral/2048"),
    "mlp_grad": ("transform_bench", "BM_MlpLossGrad"),
    "mlp_sgd_step": ("jit_mlp_bench", "BM_TrainStepJitDonated"),
    "per_example_grads": ("jit_mlp_bench", "BM_PerExampleGradsJit"),
    "chain_16M": ("cpu_backend_bench", "BM_JitChain/16777216"),
}

UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512f" in f.read()
    except OSError:
        return False


def run_jx(build_dir):
    results = {}
    by_binary = {}
    for workload, (binary, name) in WORKLOADS.items():
        by_binary.setdefault(binary, []).append((workload, name))
    for binary, items in by_binary.items():
        path = os.path.join(build_dir, "bench", binary)
        if not os.path.exists(path):
            print(f"(jx benchmark {path} not built)", file=sys.stderr)
            continue
        # Benchmarks timed in real time carry a "/real_time" suffix.
        names = "|".join("^" + n.replace("[", r"\[").replace("]", r"\]") + "(/real_time)?$" for _, n in items)
        # The benchmarks print a ratio summary after the table, so read JSON from a file.
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run([path, f"--benchmark_out={out.name}", "--benchmark_out_format=json",
                            f"--benchmark_filter={names}", "--benchmark_min_time=0.3"],
                           capture_output=True, text=True, check=True)
            data = json.load(open(out.name))
        for workload, name in items:
            for b in data["benchmarks"]:
                if b["name"] in (name, name + "/real_time"):
                    results[workload] = b["real_time"] * UNIT[b["time_unit"]]
    return results


def run_peer():
    env = dict(os.environ)
    if has_avx512():
        env.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
        env.setdefault("ATEN_CPU_CAPABILITY", "avx512")
    env.setdefault("OMP_NUM_THREADS", "2")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_peer.py")
    out = subprocess.run([sys.executable if os.path.exists("/usr/bin/python3") is False else "/usr/bin/python3",
                          script, "2"], capture_output=True, text=True, env=env)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"skipped": out.stderr.strip()[-300:]}


def fmt(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def main():
    build_dir = sys.argv[1] if len(sys.argv) > 1 else "build"
    jx = run_jx(build_dir)
    peer = run_peer()
    peer_name = f"torch {peer.get('torch_version', '')}".strip()
    if "skipped" in peer:
        print(f"peer skipped: {peer['skipped']}")
    print(f"{'workload':<18} {'jx':>12} {peer_name:>14} {'jx/peer':>9}")
    for workload in WORKLOADS:
        j, p = jx.get(workload), peer.get(workload)
        ratio = f"{j / p:.2f}" if j and isinstance(p, float) and p > 0 else "-"
        print(f"{workload:<18} {fmt(j):>12} {fmt(p if isinstance(p, float) else None):>14} {ratio:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
