#!/usr/bin/env python3
"""tools/bench/torch_localtensor.py - the bench's two workloads under PyTorch's LocalTensorMode.

Why it exists: the bench rows "workload redist ..." and "workload tp mlp ..."
(tools/bench/bench_workload.c) time two workloads in localtensor; this script
times the same two in PyTorch DTensor, every rank simulated by LocalTensorMode
over the fake process group, on the same machine, and prints the ratio
(PyTorch time / localtensor time) when given the localtensor bench JSON.

    python tools/bench/torch_localtensor.py [BENCH_JSON]

Without torch it prints one line saying so and exits 0 (benchmarks never fail
the build). Times are medians of REPS runs after one warm-up run, on the
threads torch chooses (torch.get_num_threads()).
"""
import json
import logging
import os
import statistics
import sys
import time
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

REPS = 5
ROWS = {  # our row names (tools/bench/bench_workload.c) -> workload
    "workload redist 2x4 2048^2 S0S1->RS0->S1R->full": "redist",
    "workload tp mlp 2x4 512x1024x4096, P->RR": "mlp",
}


def workloads(torch, mesh, dt):
    """Builds the inputs once; returns {name: fn} running one repetition."""
    R, S, distribute = dt.Replicate(), dt.Shard, dt.distribute_tensor
    g = torch.Generator().manual_seed(7)
    big = distribute(torch.rand(2048, 2048, generator=g), mesh, [S(0), S(1)])
    x = distribute(torch.rand(512, 1024, generator=g), mesh, [R, R])
    w1 = distribute(torch.rand(1024, 4096, generator=g), mesh, [R, S(1)])
    w2 = distribute(torch.rand(4096, 1024, generator=g), mesh, [R, S(0)])

    def redist():
        a = big.redistribute(mesh, [R, S(0)])
        b = a.redistribute(mesh, [S(1), R])
        return b.full_tensor()

    def mlp():
        h = torch.relu(x @ w1)
        p = h @ w2                      # [R, P(sum)]
        return p.redistribute(mesh, [R, R])

    return {"redist": redist, "mlp": mlp}


def time_all(torch, dist, dt):
    from torch.distributed._local_tensor import LocalTensorMode
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", rank=0, world_size=8, store=FakeStore())
    out = {}
    with LocalTensorMode(frozenset(range(8))):
        mesh = init_device_mesh("cpu", (2, 4))
        for name, fn in workloads(torch, mesh, dt).items():
            fn()                        # warm-up: dispatch caches, allocator
            ts = []
            for _ in range(REPS):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            out[name] = statistics.median(ts)
    dist.destroy_process_group()
    return out


def ours(path):
    """{workload: seconds} from a localtensor bench JSON (missing: {})."""
    try:
        with open(path) as f:
            rows = json.load(f)
    except (OSError, ValueError):
        return {}
    return {ROWS[r["name"]]: r["seconds"] for r in rows if r.get("name") in ROWS}


def main():
    try:
        import torch
        import torch.distributed as dist
        import torch.distributed.tensor as dt
    except ImportError:
        print("torch_localtensor: skipped: torch is not installed for %s" % sys.executable)
        return 0
    os.environ.setdefault("MASTER_ADDR", "localhost")
    theirs = time_all(torch, dist, dt)
    mine = ours(sys.argv[1]) if len(sys.argv) > 1 else {}
    print("torch %s, %d threads, LocalTensorMode 2x4" % (torch.__version__, torch.get_num_threads()))
    for name, row in ((v, k) for k, v in ROWS.items()):
        t = theirs[name]
        if name in mine and mine[name] > 0:
            print("%-52s torch %9.2f ms  localtensor %9.2f ms  ratio %.2fx"
                  % (row, t * 1e3, mine[name] * 1e3, t / mine[name]))
        else:
            print("%-52s torch %9.2f ms  (no localtensor row in the JSON)" % (row, t * 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
