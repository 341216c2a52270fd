#!/usr/bin/env python3
"""tools/torch/gen_golden.py - golden cases from real PyTorch DTensor.

Why it exists: localtensor predicts what a PyTorch DTensor program does.
This script runs random and hand-picked cases through PyTorch's own DTensor
(every rank simulated by LocalTensorMode over the fake process group) and
writes what PyTorch did - layouts, redistributes, op output placements,
which inputs it redistributed, every rank's values, and its errors - as
JSON under test/golden/. test/test_golden.c replays the files without
PyTorch. Each file records the torch version that made it.

Regenerate (needs `pip install torch numpy`):
    python tools/torch/gen_golden.py            # writes test/golden/*.json
Same seed, same torch version: the same files.
"""
import argparse
import json
import logging
import os
import random
import signal
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)   # PyTorch's hints about merging collectives

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed._local_tensor import LocalTensorMode  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import Partial, Replicate, Shard, distribute_tensor  # noqa: E402
from torch.distributed.tensor import _dispatch  # noqa: E402
from torch.distributed.tensor.placement_types import _StridedShard  # noqa: E402
from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: E402

MESHES = [(2,), (3,), (4,), (2, 2), (2, 3), (3, 2), (2, 2, 2)]
REDOPS = ["sum", "avg", "max", "min"]


# ---- placements: PyTorch objects <-> localtensor spellings -------------------------

def pl_str(p):
    if isinstance(p, _StridedShard):
        return "SS(%d,%d)" % (p.dim, p.split_factor)
    if isinstance(p, Shard):
        return "S(%d)" % p.dim
    if isinstance(p, Replicate):
        return "R"
    if isinstance(p, Partial):
        return "P(%s)" % p.reduce_op
    raise ValueError("unknown placement %r" % (p,))


def pl_obj(s):
    if s == "R":
        return Replicate()
    if s.startswith("SS("):
        d, sf = s[3:-1].split(",")
        return _StridedShard(int(d), split_factor=int(sf))
    if s.startswith("S("):
        return Shard(int(s[2:-1]))
    if s.startswith("P("):
        return Partial(s[2:-1])
    raise ValueError(s)


def norm_pl(s, ndim):
    """A placement spelling with a negative Shard dim made non-negative, as
    PyTorch's DTensorSpec records it."""
    if s.startswith("S(") and s[2] == "-":
        return "S(%d)" % (int(s[2:-1]) + ndim)
    return s


def timed_out(e):
    """Is e our case timeout, or an error PyTorch made of it (its sharding
    propagation wraps whatever it catches)? Such a case is recorded as a
    timeout, never as the error PyTorch wrapped it in."""
    while e is not None:
        if isinstance(e, CaseTimeout):
            return True
        e = e.__cause__ or e.__context__
    return False


def err_str(e):
    msg = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, (msg[0] if msg else "")[:160])


def num(v):
    """A value as JSON keeps it short: ints as ints, else 9 significant
    digits (a float32 exactly)."""
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if float(v).is_integer() and abs(v) < 2 ** 53:
        return int(v)
    return float("%.9g" % v)


def ranks_of(dt):
    """Every rank's local shape and row-major values."""
    lt = dt.to_local()
    out = []
    for r in sorted(lt._local_tensors):
        t = lt._local_tensors[r].detach().to(torch.float64)
        out.append([list(t.shape), [num(x) for x in t.reshape(-1).tolist()]])
    return out


# ---- random placements ---------------------------------------------------------------

def rand_pl(rng, ndim, kinds):
    """One placement for a tensor of ndim dims from kinds (a string of R S X P)."""
    k = rng.choice(kinds)
    if k == "S" and ndim:
        return "S(%d)" % rng.randrange(-ndim if rng.random() < 0.1 else 0, ndim)
    if k == "X" and ndim:
        return "SS(%d,%d)" % (rng.randrange(ndim), rng.choice([2, 3]))
    if k == "P":
        return "P(%s)" % rng.choice(REDOPS)
    return "R"


def rand_pls(rng, mesh, ndim, kinds):
    pls = [rand_pl(rng, ndim, kinds) for _ in mesh]
    return pls


def rand_shape(rng, ndim, lo=0, hi=7):
    return [rng.randint(lo, hi) for _ in range(ndim)]


# ---- runners ---------------------------------------------------------------------------

class Runner:
    def __init__(self):
        self.modes = {}

    def mesh(self, shape):
        world = 1
        for m in shape:
            world *= m
        return world, init_device_mesh("cpu", tuple(shape))


def input_tensor(shape, k, dtype=torch.float32):
    n = 1
    for s in shape:
        n *= s
    base = torch.arange(n, dtype=torch.float64)
    v = (base % 11) * 0.25 + 0.5 + 0.125 * k
    return v.to(dtype).reshape(shape)


def run_layout(case, mesh):
    t = torch.arange(max(1, _numel(case["shape"])), dtype=torch.float32)[: _numel(case["shape"])]
    t = t.reshape(case["shape"])
    try:
        d = distribute_tensor(t, mesh, [pl_obj(p) for p in case["pl"]])
        case["ranks"] = ranks_of(d)
    except Exception as e:  # PyTorch's refusal is data
        if timed_out(e):
            raise CaseTimeout() from None
        case["error"] = err_str(e)


def run_redistribute(case, mesh):
    t = torch.arange(_numel(case["shape"]), dtype=torch.float32).reshape(case["shape"])
    try:
        d = distribute_tensor(t, mesh, [pl_obj(p) for p in case["src"]])
    except Exception as e:
        if timed_out(e):
            raise CaseTimeout() from None
        case["src_error"] = err_str(e)
        return
    try:
        e2 = d.redistribute(mesh, [pl_obj(p) for p in case["dst"]])
        case["pl"] = [pl_str(p) for p in e2.placements]
        case["ranks"] = ranks_of(e2)
    except Exception as e:
        if timed_out(e):
            raise CaseTimeout() from None
        case["error"] = err_str(e)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ---- ops ---------------------------------------------------------------------------------

def call_op(op, x, a):
    """PyTorch's spelling of localtensor op `op` on DTensors x with args a."""
    unary = {"neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log,
             "sqrt": torch.sqrt, "tanh": torch.tanh, "relu": torch.relu, "gelu": F.gelu,
             "sigmoid": torch.sigmoid}
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
              "maximum": torch.maximum, "minimum": torch.minimum, "matmul": torch.matmul,
              "mm": torch.mm, "bmm": torch.bmm}
    s = a.get("scalar", 0.0)
    if op in unary:
        return unary[op](x[0])
    if op in binary:
        return binary[op](x[0], x[1])
    scal = {"add_scalar": lambda t: t + s, "sub_scalar": lambda t: t - s,
            "rsub_scalar": lambda t: s - t, "mul_scalar": lambda t: t * s,
            "div_scalar": lambda t: t / s, "maximum_scalar": lambda t: torch.clamp(t, min=s),
            "minimum_scalar": lambda t: torch.clamp(t, max=s)}
    if op in scal:
        return scal[op](x[0])
    if op == "dropout":
        return F.dropout(x[0], p=s, training=True)
    if op == "addmm":
        return torch.addmm(x[0], x[1], x[2])
    if op in ("sum", "mean", "max", "min"):
        dims = a.get("dims") or list(range(x[0].ndim))
        f = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin}[op]
        return f(x[0], dim=dims, keepdim=bool(a.get("keepdim", 0)))
    if op == "softmax":
        return torch.softmax(x[0], a["dim"])
    if op == "log_softmax":
        return torch.log_softmax(x[0], a["dim"])
    if op == "reshape":
        return x[0].reshape(a["shape"])
    if op == "view":
        return x[0].view(a["shape"])
    if op == "flatten":
        return torch.flatten(x[0], a.get("dim", 0), a.get("dim2", -1))
    if op == "transpose":
        return x[0].transpose(a["dim"], a["dim2"])
    if op == "permute":
        return x[0].permute(a["dims"])
    if op == "unsqueeze":
        return x[0].unsqueeze(a["dim"])
    if op == "squeeze":
        if "dim" in a:
            return x[0].squeeze(a["dim"])
        if "dims" in a:
            return x[0].squeeze(tuple(a["dims"]))
        return x[0].squeeze()
    if op == "cat":
        return torch.cat(x, a.get("dim", 0))
    if op == "split":
        return torch.split(x[0], a["sizes"] if "sizes" in a else a["split_size"], a.get("dim", 0))
    if op == "chunk":
        return torch.chunk(x[0], a["chunks"], a.get("dim", 0))
    if op == "embedding":
        return F.embedding(x[1], x[0])
    raise ValueError(op)


class Recorder:
    """Wraps OpDispatcher.redistribute_local_args to see which inputs PyTorch
    redistributed, and to which placements."""

    def __init__(self):
        self.calls = []
        self.orig = _dispatch.OpDispatcher.redistribute_local_args

    def __enter__(self):
        rec = self

        def wrapped(op_info, suggested, use_val):
            flat = suggested.args_schema
            if op_info.args_tree_spec is not None:
                import torch.utils._pytree as pytree
                flat = tuple(pytree.tree_leaves(suggested.args_schema))
            for i, spec in enumerate(op_info.flat_args_schema):
                tgt = flat[i]
                if hasattr(spec, "placements") and spec != tgt:
                    rec.calls.append((i, tuple(spec.shape),
                                      tuple(pl_str(p) for p in spec.placements),
                                      tuple(pl_str(p) for p in tgt.placements)))
            return rec.orig(op_info, suggested, use_val)

        _dispatch.OpDispatcher.redistribute_local_args = staticmethod(wrapped)
        return self

    def __exit__(self, *a):
        _dispatch.OpDispatcher.redistribute_local_args = staticmethod(self.orig)


def run_op(case, mesh):
    ins = []
    try:
        for k, inp in enumerate(case["inputs"]):
            if inp.get("dtype") == "i64":
                t = (torch.arange(_numel(inp["shape"])) * 7 % inp["vocab"]).reshape(inp["shape"])
            else:
                t = input_tensor(inp["shape"], k)
            ins.append(distribute_tensor(t, mesh, [pl_obj(p) for p in inp["pl"]]))
    except Exception as e:
        if timed_out(e):
            raise CaseTimeout() from None
        case["src_error"] = err_str(e)
        return
    rec = Recorder()
    try:
        with rec:
            y = call_op(case["op"], ins, case.get("args", {}))
    except Exception as e:
        if timed_out(e):
            raise CaseTimeout() from None
        case["error"] = err_str(e)
        return
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    redist = []
    # PyTorch's specs hold a Shard's dim normalised (S(-1) of a 2-d tensor is S(1))
    keys = [(inp["shape"], [norm_pl(p, len(inp["shape"])) for p in inp["pl"]])
            for inp in case["inputs"]]
    for k, key in enumerate(keys):
        hit = [c for c in rec.calls if (list(c[1]), list(c[2])) == key]
        # of two inputs alike, a call at the other's argument position is the other's
        hit = [c for c in hit if c[0] == k or c[0] >= len(keys) or keys[c[0]] != key]
        hit.sort(key=lambda c: c[0] != k)
        redist.append([1, list(hit[0][3])] if hit else [0, None])
    case["redist"] = redist
    case["outs"] = []
    for o in ys:
        rec_o = {"pl": [pl_str(p) for p in o.placements], "shape": list(o.shape)}
        if case["op"] != "dropout":
            rec_o["ranks"] = ranks_of(o)
            # a Partial's per-rank terms are one split among many (and an
            # embedding's masked partial is reduced with its mask): the
            # global value is what must agree
            try:
                full = o.full_tensor().detach().to(torch.float64)
            except Exception as e:   # LocalTensorMode cannot reduce some partials
                rec_o["full_error"] = err_str(e)
                case["outs"].append(rec_o)
                continue
            if hasattr(full, "_local_tensors"):   # the ranks' full tensors differ
                per = [[num(x) for x in full._local_tensors[r].reshape(-1).tolist()]
                       for r in sorted(full._local_tensors)]
                if any(p != per[0] for p in per):   # num: NaN-aware
                    rec_o["full_differs_by_rank"] = 1
                    case["outs"].append(rec_o)
                    continue
                rec_o["full"] = per[0]
            else:
                rec_o["full"] = [num(x) for x in full.reshape(-1).tolist()]
        case["outs"].append(rec_o)


# ---- case makers -------------------------------------------------------------------------

def op_cases(rng, n):
    """n random op cases over every op of localtensor's op table."""
    uni = ["neg", "abs", "exp", "log", "sqrt", "tanh", "relu", "gelu", "sigmoid"]
    scal = ["add_scalar", "sub_scalar", "rsub_scalar", "mul_scalar", "div_scalar",
            "maximum_scalar", "minimum_scalar"]
    bins = ["add", "sub", "mul", "div", "maximum", "minimum"]
    mats = ["matmul", "mm", "bmm", "addmm"]
    reds = ["sum", "mean", "max", "min"]
    rest = ["softmax", "log_softmax", "reshape", "view", "flatten", "transpose", "permute",
            "unsqueeze", "squeeze", "cat", "split", "chunk", "embedding", "dropout"]
    ops = uni + scal + bins + mats + reds + rest
    cases = []
    i = 0
    while len(cases) < n:
        op = ops[i % len(ops)]
        i += 1
        mesh = rng.choice(MESHES)
        c = make_op(rng, op, mesh)
        if c:
            c["mesh"] = list(mesh)
            cases.append(c)
    return cases


def make_op(rng, op, mesh):
    kinds = "RRSSSP" if rng.random() < 0.9 else "RSXP"

    def inp(shape):
        return {"shape": shape, "pl": rand_pls(rng, mesh, len(shape), kinds)}

    nd = rng.randint(1, 3)
    shp = rand_shape(rng, nd, 1, 6)
    if rng.random() < 0.1:
        shp[rng.randrange(nd)] = 0
    a = {}
    if op in ("neg", "abs", "exp", "log", "sqrt", "tanh", "relu", "gelu", "sigmoid"):
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op.endswith("_scalar") or op == "dropout":
        a["scalar"] = 0.5 if op == "dropout" else rng.choice([0.5, 1.5, 2.0, -1.0])
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op in ("add", "sub", "mul", "div", "maximum", "minimum"):
        s2 = list(shp)
        if rng.random() < 0.3:
            s2 = s2[rng.randrange(len(s2)):]
            if s2 and rng.random() < 0.5:
                s2[0] = 1
        return {"op": op, "inputs": [inp(shp), inp(s2 or [shp[-1]])], "args": a}
    if op in ("mm", "matmul", "addmm"):
        m, k, n2 = rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6)
        if op == "addmm":
            return {"op": op, "inputs": [inp([n2] if rng.random() < 0.5 else [m, n2]), inp([m, k]),
                                         inp([k, n2])], "args": a}
        if op == "matmul" and rng.random() < 0.4:
            b = rng.randint(1, 4)
            return {"op": op, "inputs": [inp([b, m, k]), inp([k, n2])], "args": a}
        return {"op": op, "inputs": [inp([m, k]), inp([k, n2])], "args": a}
    if op == "bmm":
        b, m, k, n2 = (rng.randint(1, 4) for _ in range(4))
        return {"op": op, "inputs": [inp([b, m, k]), inp([b, k, n2])], "args": a}
    if op in ("sum", "mean", "max", "min"):
        if rng.random() < 0.7:
            a["dims"] = sorted(rng.sample(range(nd), rng.randint(1, nd)))
        a["keepdim"] = rng.randint(0, 1)
        if op in ("max", "min") and 0 in shp:
            shp = [max(1, s) for s in shp]
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op in ("softmax", "log_softmax"):
        a["dim"] = rng.randrange(-nd, nd)
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op in ("reshape", "view"):
        shp = [max(1, s) for s in shp]
        n = _numel(shp)
        tgt = [n] if rng.random() < 0.4 else _factor(rng, n)
        if rng.random() < 0.3:
            tgt[rng.randrange(len(tgt))] = -1
        a["shape"] = tgt
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op == "flatten":
        if nd < 2:
            return None
        a["dim"] = rng.randrange(nd - 1)
        a["dim2"] = rng.randrange(a["dim"] + 1, nd)
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op == "transpose":
        if nd < 2:
            return None
        a["dim"], a["dim2"] = rng.sample(range(nd), 2)
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op == "permute":
        p = list(range(nd))
        rng.shuffle(p)
        a["dims"] = p
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op == "unsqueeze":
        a["dim"] = rng.randrange(-nd - 1, nd + 1)
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op == "squeeze":
        shp[rng.randrange(nd)] = 1
        r = rng.random()
        if r < 0.4:
            a["dim"] = rng.randrange(nd)
        elif r < 0.7:
            a["dims"] = sorted(rng.sample(range(nd), rng.randint(1, nd)))
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op == "cat":
        d = rng.randrange(nd)
        s2 = list(shp)
        s2[d] = rng.randint(0, 5)
        a["dim"] = d
        return {"op": op, "inputs": [inp(shp), inp(s2)], "args": a}
    if op == "split":
        d = rng.randrange(nd)
        a["dim"] = d
        if rng.random() < 0.5 and shp[d] > 0:
            cut = sorted(rng.randint(0, shp[d]) for _ in range(2))
            a["sizes"] = [cut[0], cut[1] - cut[0], shp[d] - cut[1]]
        else:
            a["split_size"] = rng.randint(1, 4)
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op == "chunk":
        a["dim"] = rng.randrange(nd)
        a["chunks"] = rng.randint(1, 4)
        return {"op": op, "inputs": [inp(shp)], "args": a}
    if op == "embedding":
        v, h = rng.randint(2, 8), rng.randint(1, 5)
        ids = inp(rand_shape(rng, rng.randint(1, 2), 1, 5))
        ids["dtype"] = "i64"
        ids["vocab"] = v
        ids["pl"] = [p if not p.startswith("P") else "R" for p in ids["pl"]]
        return {"op": op, "inputs": [inp([v, h]), ids], "args": a}
    return None


def _factor(rng, n):
    for f in (2, 3, 5):
        if n % f == 0 and n > f and rng.random() < 0.7:
            return [f, n // f]
    return [1, n]


def layout_cases(rng, n):
    cases = []
    while len(cases) < n:
        mesh = rng.choice(MESHES)
        nd = rng.randint(0, 3)
        c = {"mesh": list(mesh), "shape": rand_shape(rng, nd),
             "pl": rand_pls(rng, mesh, nd, "RSSSXP")}
        cases.append(c)
    return cases


def redistribute_cases(rng, n):
    cases = [
        {"mesh": [2], "shape": [4], "src": ["S(0)"], "dst": ["P(sum)"]},
        {"mesh": [2, 2], "shape": [8], "src": ["S(0)", "S(0)"], "dst": ["P(sum)", "S(0)"]},
    ]
    while len(cases) < n:
        mesh = rng.choice(MESHES)
        nd = rng.randint(1, 3)
        kinds = "RSSSP" if rng.random() < 0.85 else "RSXP"
        cases.append({"mesh": list(mesh), "shape": rand_shape(rng, nd),
                      "src": rand_pls(rng, mesh, nd, kinds), "dst": rand_pls(rng, mesh, nd, kinds)})
    return cases


# ---- main ----------------------------------------------------------------------------------

class CaseTimeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise CaseTimeout()


def run_all(cases, fn, name, limit_s=40):
    """Runs every case; one PyTorch does not finish in limit_s is recorded as
    its error "Timeout: ..." (a view of an empty tensor loops forever in its
    view_groups). The limit is far above any finishing case's time on a busy
    machine (the slowest, a matmul on a 2x2x2 mesh, takes seconds), so the
    files do not depend on the machine's load."""
    by_mesh = {}
    for c in cases:
        by_mesh.setdefault(tuple(c["mesh"]), []).append(c)
    signal.signal(signal.SIGALRM, _on_alarm)
    kept, done = [], 0
    for shape, cs in by_mesh.items():
        world = _numel(shape)
        with LocalTensorMode(frozenset(range(world))):
            mesh = init_device_mesh("cpu", shape)
            for c in cs:
                torch.manual_seed(0)
                signal.alarm(limit_s)
                try:
                    fn(c, mesh)
                    kept.append(c)
                except CaseTimeout:
                    for k in ("pl", "ranks", "redist", "outs"):
                        c.pop(k, None)
                    c["error"] = "Timeout: PyTorch did not finish in %d s" % limit_s
                    kept.append(c)
                    print("%s: a case over %d s: %s" % (name, limit_s, json.dumps(c)[:200]),
                          file=sys.stderr)
                finally:
                    signal.alarm(0)
                done += 1
                if done % 500 == 0:
                    print("%s: %d of %d" % (name, done, len(cases)), file=sys.stderr)
    return kept


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":   # PyTorch's messages print sets: fix their order
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "test", "golden"))
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--ops", type=int, default=3200)
    ap.add_argument("--layouts", type=int, default=600)
    ap.add_argument("--redistributes", type=int, default=800)
    args = ap.parse_args()
    dist.init_process_group("fake", rank=0, world_size=8, store=FakeStore())
    os.makedirs(args.out, exist_ok=True)
    jobs = [("layouts", layout_cases, args.layouts, run_layout),
            ("redistributes", redistribute_cases, args.redistributes, run_redistribute),
            ("ops", op_cases, args.ops, run_op)]
    for name, make, n, fn in jobs:
        rng = random.Random(args.seed * 1000 + len(name))
        cases = run_all(make(rng, n), fn, name)
        doc = {"torch": torch.__version__, "generator": "tools/torch/gen_golden.py",
               "seed": args.seed, "kind": name, "cases": cases}
        path = os.path.join(args.out, name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        nerr = sum(1 for c in cases if "error" in c or "src_error" in c)
        print("%s: %d cases (%d PyTorch errors) -> %s" % (name, len(cases), nerr, path),
              file=sys.stderr)


if __name__ == "__main__":
    main()
