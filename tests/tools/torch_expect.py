"""torch_expect.py: what tensorfile-tool describe must print for a value torch.load returned, and the comparison (shared by the .pt read interop tests)."""
import collections
import json
import math
import struct

import torch

from mate_test import build_path, check, run, storage_bytes, untyped_storage

TOOL = build_path("tests", "tensorfile-tool")


class Expect:
    """Builds the JSON tensorfile-tool should print for a torch value."""

    def __init__(self, data=True):
        self.storages = []
        self.data = data

    def storage_id(self, t):
        key = untyped_storage(t).data_ptr(), untyped_storage(t).nbytes(), t.dtype
        for i, k in enumerate(self.storages):
            if k == key:
                return i
        self.storages.append(key)
        return len(self.storages) - 1

    def __call__(self, v):
        if isinstance(v, torch.Tensor):
            d = {"type": "tensor", "dtype": str(v.dtype)[len("torch."):],
                 "shape": list(v.shape), "stride": list(v.stride()),
                 "offset": v.storage_offset(), "storage": self.storage_id(v),
                 "storage_nbytes": untyped_storage(v).nbytes()}
            if self.data:
                d["hex"] = storage_bytes(v).hex()
            return d
        if v is None:
            return {"type": "none"}
        if isinstance(v, bool):
            return {"type": "bool", "value": v}
        if isinstance(v, int):
            return {"type": "int", "value": v}
        if isinstance(v, float):
            return {"type": "float", "value": v}
        if isinstance(v, str):
            return {"type": "str", "value": v}
        if isinstance(v, bytes):
            return {"type": "bytes", "hex": v.hex()}
        if isinstance(v, torch.dtype):
            return {"type": "dtype", "value": str(v)[len("torch."):]}
        if isinstance(v, torch.device):
            return {"type": "object", "name": "torch.device", "repr": str(v)}
        if isinstance(v, (tuple, torch.Size)):
            return {"type": "tuple", "items": [self(x) for x in v]}
        if isinstance(v, (list, set)):     # a set comes back as a list
            return {"type": "list", "items": [self(x) for x in v]}
        if isinstance(v, dict):
            return {"type": "dict", "ordered": isinstance(v, collections.OrderedDict),
                    "items": [[self(k), self(x)] for k, x in v.items()]}
        raise TypeError(type(v))


def same(got, want, path="root"):
    """Compares a described value with the expectation; returns a difference or None."""
    if isinstance(want, dict) and isinstance(got, dict) and want.get("type") == "float" \
            and got.get("type") == "float":
        g = float(got["value"])
        w = want["value"]
        if struct.pack("<d", g) == struct.pack("<d", w) or (math.isnan(g) and math.isnan(w)):
            return None
        return "%s: float %r != %r" % (path, got["value"], w)
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return "%s: %r is not an object" % (path, got)
        for k in want:
            if k not in got:
                return "%s: missing %s" % (path, k)
            d = same(got[k], want[k], path + "." + k)
            if d:
                return d
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return "%s: %d items, expected %d" % (path, len(got) if isinstance(got, list) else -1, len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            d = same(g, w, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if got != want:
        return "%s: %.200r != %.200r" % (path, got, want)
    return None


def describe(path, data=True):
    args = [TOOL, "describe", path] + ([] if data else ["--no-data"])
    p = run(args, check=False)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return json.loads(p.stdout)["root"], None


def check_read(name, path, weights_only=True):
    """Checks libmate's reading of path, with and without data, against torch.load's."""
    ref = torch.load(path, weights_only=weights_only)
    for data in (True, False):
        got, err = describe(path, data)
        check(got is not None, "%s: libmate failed: %s" % (name, err))
        if got is None:
            return
        diff = same(got, Expect(data)(ref))
        check(diff is None, "%s (data=%s): %s" % (name, data, diff))


def random_bytes(dt, shape, seed):
    """A tensor of dtype dt whose bytes are random (every bit pattern: NaNs, subnormals)."""
    g = torch.Generator().manual_seed(seed)
    size = torch.empty(0, dtype=dt).element_size()
    n = 1
    for s in shape:
        n *= s
    raw = torch.randint(0, 256, (n * size,), dtype=torch.uint8, generator=g)
    if dt == torch.bool:
        return (raw & 1).view(torch.bool).reshape(shape)
    return raw.view(dt).reshape(shape)
