"""golden_twin.py TENSORS.bin: the calls of tests/tools/recorder-golden.c (MATE's reference program) made through FlashInfer's real decorator, on the same tensors. FLASHINFER_* configure it."""
import enum
import struct
import sys

import torch

from flashinfer_peer import load_api_logging

api = load_api_logging()


class Mode(enum.Enum):
    FAST = 0


def blobs(path):
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos + 8 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        out.append(data[pos + 8:pos + 8 + n])
        pos += 8 + n
    return out


BLOBS = blobs(sys.argv[1])
NEXT = [0]


def nxt(dtype, shape, stride=None):
    """The next reference tensor, as recorder-golden's next() reads it."""
    b = BLOBS[NEXT[0]]
    NEXT[0] += 1
    flat = torch.frombuffer(bytearray(b), dtype=dtype) if b else torch.empty(0, dtype=dtype)
    if stride is None:
        return flat.view(shape)
    return flat.as_strided(shape, stride)


# The API functions: each returns the reference output (the next tensor), as the C program does.
@api.flashinfer_api
def gemm(a, b, out_dtype=torch.float32):
    return RESULT[0]


@api.flashinfer_api
def rmsnorm(input, weight, eps=1e-6, out=None):
    return RESULT[0]


@api.flashinfer_api
def silu_and_mul(input):
    return RESULT[0]


@api.flashinfer_api
def configure(n, scale, flag, name, nothing, sizes, shape, opts, mode=Mode.FAST, tail=3):
    return (n * 2, [scale, flag])


@api.flashinfer_api
def no_args():
    return None


@api.flashinfer_api
def int_ops(idx, counts):
    return RESULT[0]


@api.flashinfer_api
def crashes(x, code):
    raise RuntimeError("crash requested with code %d" % code)


RESULT = [None]
for dt, explicit in ((torch.float32, False), (torch.float16, True)):
    a, b = nxt(dt, (16, 32)), nxt(dt, (32, 8), (1, 32))
    RESULT[0] = nxt(dt, (16, 8))
    gemm(a, b, out_dtype=dt) if explicit else gemm(a, b)
for dt, rows, explicit in ((torch.bfloat16, 4, True), (torch.float32, 3, False)):
    x, w = nxt(dt, (rows, 64)), nxt(dt, (64,))
    RESULT[0] = nxt(dt, (rows, 64))
    rmsnorm(x, w, eps=1e-5) if explicit else rmsnorm(x, w)
x = nxt(torch.float32, (2, 5, 128))
RESULT[0] = nxt(torch.float32, (2, 5, 64))
silu_and_mul(x)
configure(7, 0.5, True, "bf16", None, [1, 2, 3], (4, 5), {"k": 1, "v": [2]}, tail=9)
no_args()
idx, counts = nxt(torch.int32, (10,)), nxt(torch.int64, (10,))
RESULT[0] = nxt(torch.int64, (10,))
int_ops(idx, counts)
try:
    crashes(nxt(torch.float32, (3, 3)), 11)
except RuntimeError:
    pass
sys.exit(0 if NEXT[0] == len(BLOBS) else 1)
