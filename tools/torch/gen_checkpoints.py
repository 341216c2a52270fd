#!/usr/bin/env python3
"""tools/torch/gen_checkpoints.py — checkpoints written and read by the real tools.

Why it exists: `localtensor checkpoint` must read what PyTorch DCP and the
`safetensors` package write, and what it writes must load back in them. This
script (needs torch and safetensors from PyPI; `make test` never runs it) has
two modes:

  gen_checkpoints.py gen OUT      writes the fixtures of test/checkpoints/ into OUT:
      dcp_2x2_even/, dcp_2x4_uneven/, dcp_2x2_strided/ (when DCP can save a
      _StridedShard DTensor), from DTensors saved by torch.distributed.checkpoint
      with its Hugging Face safetensors writer (save_distributed=True: one file
      per rank, every piece's global offsets in __metadata__), on gloo process
      groups; hf_sharded/ from safetensors.torch.save_file with
      model.safetensors.index.json; broken/<name>/ the broken checkpoints
      (hand-written headers, see BROKEN below).
  gen_checkpoints.py check DIR... loads checkpoints written by `localtensor
      checkpoint reshard --out` back: per-rank DCP files through
      torch.distributed.checkpoint (HuggingFaceStorageReader, no process
      group) into full tensors, HF files through safetensors.safe_open, and
      compares every value with the value the generator gave it. Prints one
      line per tensor and exits 1 on any difference.

Every tensor's values are a function of its name, shape and dtype
(`values`), so `check` needs nothing but the tensor names.
"""
import json
import os
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16,
          "F16": torch.float16, "I32": torch.int32, "I64": torch.int64, "BOOL": torch.bool}
SHORT = {v: k for k, v in DTYPES.items()}


def values(name, shape, dtype):
    """The generator's value of tensor `name`: a row-major count, shifted by a
    per-name amount and kept below 256 so that every dtype holds it exactly."""
    n = 1
    for s in shape:
        n *= s
    shift = sum(name.encode()) % 7
    base = (torch.arange(n, dtype=torch.int64) * 3 + shift) % 251
    if dtype == torch.bool:
        return (base % 3 == 0).reshape(shape)
    return base.to(dtype).reshape(shape)


# (name, global shape, dtype, placements) per DCP case; placements are strings
# evaluated against torch.distributed.tensor's names.
DCP_CASES = {
    "dcp_2x2_even": ((2, 2), [
        ("w", (4, 6), "F32", "[Shard(0), Shard(1)]"),
        ("b", (8,), "BF16", "[Replicate(), Shard(0)]"),
        ("i", (4, 4), "I64", "[Shard(1), Replicate()]"),
    ]),
    "dcp_2x4_uneven": ((2, 4), [
        ("w", (5, 6), "F32", "[Shard(0), Shard(1)]"),
        ("e", (3, 4), "F64", "[Shard(0), Shard(0)]"),
        ("h", (7,), "F16", "[Shard(0), Replicate()]"),
        ("m", (6,), "BOOL", "[Replicate(), Shard(0)]"),
        ("n", (2, 3), "I32", "[Replicate(), Replicate()]"),
    ]),
    "dcp_2x2_strided": ((2, 2), [
        ("s", (8, 2), "F32", "[_StridedShard(0, split_factor=2), Shard(0)]"),
    ]),
}


HF_FILES = {
    "model-00001-of-00002.safetensors": [("embed", (6, 4), "F32"), ("norm", (4,), "BF16"),
                                         ("mask", (5,), "BOOL")],
    "model-00002-of-00002.safetensors": [("head", (3, 4), "F16"), ("pos", (4,), "I64"),
                                         ("count", (2, 2), "I32"), ("bias", (3,), "F64"),
                                         ("empty", (0, 4), "F32")],
}
# every fixture tensor's dtype, by name: `check` holds a loaded tensor to it
EXPECTED_DTYPE = {n: d for _, ts in DCP_CASES.values() for n, _, d, _ in ts}
EXPECTED_DTYPE.update({n: d for ts in HF_FILES.values() for n, _, d in ts})


def _dcp_rank(rank, world, out, mesh_shape, tensors, port):
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import HuggingFaceStorageWriter
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor  # noqa: F401
    from torch.distributed.tensor.placement_types import _StridedShard  # noqa: F401
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        mesh = init_device_mesh("cpu", mesh_shape)
        sd = {}
        for name, shape, dt, pl in tensors:
            full = values(name, shape, DTYPES[dt])
            sd[name] = distribute_tensor(full, mesh, eval(pl))
        dcp.save(sd, storage_writer=HuggingFaceStorageWriter(out, save_distributed=True))
    finally:
        dist.destroy_process_group()


def gen_dcp(out, case, port):
    import torch.multiprocessing as mp
    mesh_shape, tensors = DCP_CASES[case]
    world = 1
    for m in mesh_shape:
        world *= m
    path = os.path.join(out, case)
    os.makedirs(path, exist_ok=True)
    try:
        mp.spawn(_dcp_rank, args=(world, path, mesh_shape, tensors, port), nprocs=world)
    except Exception as e:  # the strided case may not be savable
        print(f"{case}: DCP could not save it: {str(e).splitlines()[-1] if str(e) else e}")
        for f in os.listdir(path):
            os.remove(os.path.join(path, f))
        os.rmdir(path)
        return
    print(f"{case}: {len(os.listdir(path))} files")


def gen_hf(out):
    from safetensors.torch import save_file
    path = os.path.join(out, "hf_sharded")
    os.makedirs(path, exist_ok=True)
    files = HF_FILES
    weight_map, total = {}, 0
    for fname, ts in files.items():
        sd = {n: values(n, s, DTYPES[d]) for n, s, d in ts}
        save_file(sd, os.path.join(path, fname), metadata={"format": "pt"})
        for n, t in sd.items():
            weight_map[n] = fname
            total += t.numel() * t.element_size()
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    print(f"hf_sharded: {len(files)} files, total_size {total}")


# ---- broken checkpoints: headers written by hand (the format's own rules) ----

def st_bytes(entries, metadata=None, header_len=None, cut=None):
    """A safetensors file: entries are (name, dtype, shape, raw bytes) laid out
    in order; header_len overrides the 8-byte length; cut truncates."""
    head, data = {}, b""
    if metadata is not None:
        head["__metadata__"] = metadata
    for name, dt, shape, raw, *off in entries:
        b, e = (off[0] if off else (len(data), len(data) + len(raw)))
        head[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [b, e]}
        data += raw
    h = json.dumps(head, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    n = len(h) if header_len is None else header_len
    blob = struct.pack("<Q", n) + h + data
    return blob[:cut] if cut is not None else blob


def raw(name, shape, dt, off=None):
    """Bytes of the piece at global offset `off` with local `shape` of the
    global tensor `values(name, gshape)` — the caller slices; here whole."""
    return values(name, shape, DTYPES[dt]).contiguous().view(torch.uint8).numpy().tobytes()


def piece(name, gshape, dt, offs, shape):
    full = values(name, gshape, DTYPES[dt])
    sl = tuple(slice(o, o + s) for o, s in zip(offs, shape))
    return full[sl].contiguous().view(torch.uint8).numpy().tobytes() if full[sl].numel() else b""


def dcp_file(path, pieces):
    """pieces: (name, dtype, gshape, offsets, local shape[, data_offsets])."""
    info = {p[0]: {"saved_offsets": list(p[3])} for p in pieces}
    ents = []
    for p in pieces:
        e = (p[0], p[1], p[4], piece(p[0], p[2], p[1], p[3], p[4]))
        ents.append(e + ((p[5],) if len(p) > 5 else ()))
    meta = {"DCP_SHARDING_INFO": json.dumps(info), "DCP_VERSION": "1.0", "format": "pt"}
    with open(path, "wb") as f:
        f.write(st_bytes(ents, meta))


def shard_name(r):
    return f"shard-{r:05d}-model-00001-of-00001.safetensors"


def gen_broken(out):
    base = os.path.join(out, "broken")
    g = (6, 4)

    def mk(name):
        p = os.path.join(base, name)
        os.makedirs(p, exist_ok=True)
        return p

    # rows of a (6, 4) F32 tensor 'w' on 3 ranks, [S(0)]: rows 0-1, 2-3, 4-5
    p = mk("missing_piece")                      # rank 2's rows 2-3 are gone
    dcp_file(os.path.join(p, shard_name(1)), [("w", "F32", g, (0, 0), (2, 4))])
    dcp_file(os.path.join(p, shard_name(3)), [("w", "F32", g, (4, 0), (2, 4))])
    p = mk("overlap")                            # rank 2 starts at row 1, not 2
    dcp_file(os.path.join(p, shard_name(1)), [("w", "F32", g, (0, 0), (2, 4))])
    dcp_file(os.path.join(p, shard_name(2)), [("w", "F32", g, (1, 0), (3, 4))])
    dcp_file(os.path.join(p, shard_name(3)), [("w", "F32", g, (4, 0), (2, 4))])
    p = mk("padding_not_last")                   # 5 rows; rank 1 keeps a padded 3rd row
    dcp_file(os.path.join(p, shard_name(1)), [("w", "F32", (5, 4), (0, 0), (3, 4))])
    dcp_file(os.path.join(p, shard_name(2)), [("w", "F32", (5, 4), (2, 0), (2, 4))])
    dcp_file(os.path.join(p, shard_name(3)), [("w", "F32", (5, 4), (4, 0), (1, 4))])
    p = mk("dtype_mismatch")                     # rank 2 wrote BF16
    dcp_file(os.path.join(p, shard_name(1)), [("w", "F32", g, (0, 0), (3, 4))])
    dcp_file(os.path.join(p, shard_name(2)), [("w", "BF16", g, (3, 0), (3, 4))])
    # [S(0), S(0)] on 2x2 of 5 rows: torch gives rows [0:2] [2:3] [3:4] [4:5];
    # rank 2 (coordinate 1,0) written at row 2 instead of 3 (issue 161368)
    p = mk("uneven_2d_offset")
    for r, (o, s) in enumerate([(0, 2), (2, 1), (2, 1), (4, 1)], start=1):
        dcp_file(os.path.join(p, shard_name(r)), [("v", "F32", (5, 3), (o, 0), (s, 3))])
    # [S(0)] of 2 rows on 4 ranks: ranks 2-3 empty; rank 3's empty piece says
    # row 0, the offset of rank 0's real rows (PR 150862: taken for a duplicate)
    p = mk("zero_size_offset")
    for r, (o, s) in enumerate([(0, 1), (1, 1), (0, 0), (2, 0)], start=1):
        dcp_file(os.path.join(p, shard_name(r)), [("z", "F32", (2, 3), (o, 0), (s, 3))])
    # HF: an unindexed tensor, an index entry whose file is missing
    from safetensors.torch import save_file
    for case in ("unindexed", "missing_file"):
        p = mk(case)
        f1 = "model-00001-of-00002.safetensors"
        tens = {"a": values("a", (2, 2), torch.float32)}
        if case == "unindexed":
            tens["stale"] = values("stale", (3,), torch.float32)
        save_file(tens, os.path.join(p, f1))
        wm = {"a": f1}
        total = 16
        if case == "missing_file":
            wm["b"] = "model-00002-of-00002.safetensors"
            total += 12
        with open(os.path.join(p, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)
    # hostile headers, each alone in a one-file HF checkpoint
    t = values("t", (2, 2), torch.float32).view(torch.uint8).numpy().tobytes()
    p = mk("past_eof")                           # data_offsets end at 64, the data is 16 bytes
    with open(os.path.join(p, "model.safetensors"), "wb") as f:
        f.write(st_bytes([("t", "F32", (2, 2), t, (0, 64))]))
    p = mk("truncated")                          # the last 6 bytes cut off
    blob = st_bytes([("t", "F32", (2, 2), t)])
    with open(os.path.join(p, "model.safetensors"), "wb") as f:
        f.write(blob[:-6])
    p = mk("header_2p63")                        # header length 2^63
    with open(os.path.join(p, "model.safetensors"), "wb") as f:
        f.write(st_bytes([("t", "F32", (2, 2), t)], header_len=1 << 63))
    print(f"broken: {len(os.listdir(base))} checkpoints")


# ---- check: our output loaded back by the real tools ----

def check_dir(d):
    bad = 0
    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    from safetensors import safe_open
    dcp_style = False
    with safe_open(os.path.join(d, files[0]), "pt") as f:
        dcp_style = "DCP_SHARDING_INFO" in (f.metadata() or {})
    if dcp_style:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint import HuggingFaceStorageReader
        reader = HuggingFaceStorageReader(d)
        md = reader.read_metadata()
        sd = {k: torch.empty(tuple(m.size), dtype=m.properties.dtype)
              for k, m in md.state_dict_metadata.items()}
        dcp.load(sd, storage_reader=HuggingFaceStorageReader(d), no_dist=True)
        how = "torch.distributed.checkpoint"
    else:
        sd = {}
        for fn in files:
            with safe_open(os.path.join(d, fn), "pt") as f:
                for k in f.keys():
                    sd[k] = f.get_tensor(k)
        how = "safetensors.safe_open"
    for k, t in sorted(sd.items()):
        want = values(k, tuple(t.shape), DTYPES[EXPECTED_DTYPE.get(k, SHORT.get(t.dtype))])
        ok = t.dtype == want.dtype and torch.equal(t, want)
        bad += not ok
        print(f"{d}: {k} {SHORT.get(t.dtype, t.dtype)} {list(t.shape)} via {how}: "
              f"{'equal' if ok else 'DIFFERENT'}")
    return bad


def main(argv):
    if len(argv) >= 3 and argv[1] == "gen":
        out = argv[2]
        port = 29600
        for i, case in enumerate(DCP_CASES):
            gen_dcp(out, case, port + i)
        gen_hf(out)
        gen_broken(out)
        return 0
    if len(argv) >= 3 and argv[1] == "check":
        bad = sum(check_dir(d) for d in argv[2:])
        print("all equal" if not bad else f"{bad} tensors differ")
        return 1 if bad else 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    print("usage: gen_checkpoints.py gen OUT | check DIR...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
