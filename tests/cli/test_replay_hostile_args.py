"""test_replay_hostile_args.py: recorded numbers that lie to the handlers (issue 32): a cache
whose pages have no slots (a page size of 0) in append_paged_kv_cache is an error naming it,
not a division by zero that ends the replay of the whole root (SIGFPE); a fractional top_k
(0.5) keeps every token instead of reading before the kernel's buffer (ASan's report in the
sanitizer build); the replay of the root goes on to the next dump and says what it found.

Also: an out= smaller than the result of a decode, paged prefill or MLA wrapper's run (the
kernel wrote past it with values the dump controls), an int8 batch_indices buffer (it took
8-byte stores), a plan's page size near 2^62, seq_lens of INT64_MIN and RoPE offsets near
INT64_MAX (signed overflows) are errors naming the argument; an int32 position of -5 is -5
(it was read as 4,294,967,291 through a conditional that mixed int32 and uint32)."""
import functools
import os
import subprocess
import sys
import zipfile

import torch

from mate_test import build_path, case, check, run_cases, src_path, tmpdir
from replay_dumps import expect_verdicts, write_dump

sys.path.insert(0, src_path("tests", "interop", "peers"))
import flashinfer_ops21 as ops  # noqa: E402

SIG_APPEND = ("(append_key, append_value, batch_indices, positions, paged_kv_cache, kv_indices, "
              "kv_indptr, kv_last_page_len, kv_layout='NHD')")
def test_hostile_arguments():
    """Each hostile call's dump, replayed at once: an error naming the argument, or passed."""
    root = os.path.join(tmpdir(), "dumps")
    os.mkdir(root)
    i32 = torch.int32
    want = {}

    # a page size of 0: NHD (pages, 2, 0 slots, heads, dim)
    cache = torch.zeros(2, 2, 0, 2, 4)
    name = write_dump(root, 1, "append_paged_kv_cache",
                      {"arg_0": torch.randn(1, 2, 4), "arg_1": torch.randn(1, 2, 4),
                       "arg_2": torch.tensor([0], dtype=i32), "arg_3": torch.tensor([0], dtype=i32),
                       "arg_4": cache, "arg_5": torch.tensor([0, 1], dtype=i32),
                       "arg_6": torch.tensor([0, 2], dtype=i32), "arg_7": torch.tensor([1], dtype=i32)},
                      {"result": None, "arg_4": cache}, fmt="torch", signature=SIG_APPEND)
    want[name] = (name, "error", "the cache's pages have no slots (a page size of 0)")

    # top_k of 0.5: every token kept, the row renormalised (as top_k <= 0 does)
    probs = torch.softmax(torch.randn(3, 16), -1)
    name = write_dump(root, 2, "top_k_renorm_probs", {"arg_0": probs, "arg_1": 0.5},
                      {"result": probs / probs.sum(-1, keepdim=True)}, fmt="torch",
                      signature="(probs, top_k, is_deterministic=False)")
    want[name] = (name, "passed", "")
    # and the root's next dump still replays
    x = torch.randn(2, 8)
    name = write_dump(root, 3, "silu_and_mul", {"arg_0": x}, {"result": torch.nn.functional.silu(x[:, :4]) * x[:, 4:]},
                      fmt="torch", signature="(input, out=None, enable_pdl=None)")
    want[name] = (name, "passed", "")

    f32, i64 = torch.float32, torch.int64
    seq = [3]

    def add(fn, inputs, outputs, verdict, words, self_id=None, signature="<unavailable>"):
        seq[0] += 1
        name = write_dump(root, seq[0], fn, inputs, outputs, fmt="torch", signature=signature,
                          extra=None if self_id is None else {"self_id": self_id})
        want[name] = (name, verdict, words)

    def i32t(*v):
        return torch.tensor(v, dtype=i32)

    ws = torch.zeros(16, dtype=torch.uint8)
    none = {"result": None}
    # 1. out= smaller than the result: decode (2 requests of 2 heads of 8), paged prefill, MLA
    cache = torch.randn(2, 2, 4, 2, 8)
    add("BatchDecodeWithPagedKVCacheWrapper.__init__", {"arg_0": "w", "arg_1": ws}, none, "passed", "", 11)
    add("BatchDecodeWithPagedKVCacheWrapper.plan", {"arg_0": "w", "arg_1": i32t(0, 1, 2), "arg_2": i32t(0, 1),
        "arg_3": i32t(2, 3), "arg_4": 2, "arg_5": 2, "arg_6": 8, "arg_7": 4, "kwarg_q_data_type": "float32"},
        none, "passed", "", 11)
    add("BatchDecodeWithPagedKVCacheWrapper.run", {"arg_0": "w", "arg_1": torch.randn(2, 2, 8), "arg_2": cache,
        "kwarg_out": torch.zeros(1, 2, 8)}, {"result": torch.zeros(2, 2, 8)}, "error",
        "out is float32[1, 2, 8]; the result is float32[2, 2, 8]", 11)
    add("BatchPrefillWithPagedKVCacheWrapper.__init__", {"arg_0": "w", "arg_1": ws}, none, "passed", "", 12)
    add("BatchPrefillWithPagedKVCacheWrapper.plan", {"arg_0": "w", "arg_1": i32t(0, 3, 5), "arg_2": i32t(0, 1, 2),
        "arg_3": i32t(0, 1), "arg_4": i32t(4, 3), "arg_5": 2, "arg_6": 2, "arg_7": 8, "arg_8": 4,
        "kwarg_q_data_type": "float32"}, none, "passed", "", 12)
    add("BatchPrefillWithPagedKVCacheWrapper.run", {"arg_0": "w", "arg_1": torch.randn(5, 2, 8), "arg_2": cache,
        "kwarg_out": torch.zeros(1, 2, 8)}, {"result": torch.zeros(5, 2, 8)}, "error",
        "out is float32[1, 2, 8]; the result is float32[5, 2, 8]", 12)
    add("BatchMLAPagedAttentionWrapper.__init__", {"arg_0": "w", "arg_1": ws}, none, "passed", "", 13)
    add("BatchMLAPagedAttentionWrapper.plan", {"arg_0": "w", "arg_1": i32t(0, 1, 2), "arg_2": i32t(0, 1, 2),
        "arg_3": i32t(0, 1), "arg_4": i32t(3, 2), "arg_5": 2, "arg_6": 16, "arg_7": 8, "arg_8": 4,
        "arg_9": False, "arg_10": 0.2, "arg_11": f32, "arg_12": f32}, none, "passed", "", 13)
    add("BatchMLAPagedAttentionWrapper.run", {"arg_0": "w", "arg_1": torch.randn(2, 2, 16),
        "arg_2": torch.randn(2, 2, 8), "arg_3": torch.randn(2, 4, 16), "arg_4": torch.randn(2, 4, 8),
        "arg_5": torch.zeros(1, 2, 16)}, {"result": torch.zeros(2, 2, 16)}, "error",
        "out is float32[1, 2, 16]; the result is float32[2, 2, 16]", 13)
    # 4. an int8 batch_indices buffer
    SIG_BIP = "(append_indptr, seq_lens, nnz, batch_indices=None, positions=None)"
    add("get_batch_indices_positions", {"arg_0": i32t(0, 2, 4), "arg_1": i32t(5, 3), "arg_2": 4,
        "arg_3": torch.zeros(4, dtype=torch.int8), "arg_4": torch.zeros(4, dtype=i32)},
        {"result_0": torch.zeros(4, dtype=torch.int8), "result_1": torch.zeros(4, dtype=i32)}, "error",
        "batch_indices is int8[4]; the result is int32[4]", signature=SIG_BIP)
    # 5. signed overflows: a page size near 2^62, seq_lens of INT64_MIN, offsets near INT64_MAX
    add("BatchDecodeWithPagedKVCacheWrapper.__init__", {"arg_0": "w", "arg_1": ws}, none, "passed", "", 14)
    add("BatchDecodeWithPagedKVCacheWrapper.plan", {"arg_0": "w", "arg_1": i32t(0, 1, 2), "arg_2": i32t(0, 1),
        "arg_3": i32t(2, 3), "arg_4": 2, "arg_5": 2, "arg_6": 8, "arg_7": 2 ** 62}, {"result": None},
        "error", "page_size=4611686018427387904", 14)
    add("get_batch_indices_positions", {"arg_0": i32t(0, 2, 4), "arg_1": torch.tensor([-2 ** 63, 3], dtype=i64),
        "arg_2": 4}, {"result_0": torch.zeros(4, dtype=i32), "result_1": torch.zeros(4, dtype=i32)}, "error",
        "seq_lens[0] = -9223372036854775808 is not a length in int32's range", signature=SIG_BIP)
    q, k = torch.randn(3, 2, 16), torch.randn(3, 1, 16)
    SIG_ROPE = ("(q, k, indptr, offsets, rotary_dim=None, interleave=False, rope_scale=1, rope_theta=10000.0)")
    add("apply_rope", {"arg_0": q, "arg_1": k, "arg_2": i32t(0, 3), "arg_3": torch.tensor([2 ** 63 - 2], dtype=i64)},
        {"result_0": q, "result_1": k}, "error", "offsets[0] = 9223372036854775806 is beyond int32's range",
        signature=SIG_ROPE)
    # an int32 position of -5 is -5
    pos = i32t(-5, 3, 7)
    qr, kr = ops.apply_rope_pos_ids(q, k, pos)
    add("apply_rope_pos_ids", {"arg_0": q, "arg_1": k, "arg_2": pos}, {"result_0": qr, "result_1": kr}, "passed", "",
        signature="(q, k, pos_ids, rotary_dim=None, interleave=False, rope_scale=1, rope_theta=10000.0)")

    expect_verdicts(root, want)


def peak_kib(root):
    """mate-replay's own peak RSS under GNU time (a child forked from this Python would count
    the interpreter's pages too)."""
    out = os.path.join(tmpdir(), "time")
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out, build_path("src", "replay", "mate-replay"),
                    "--device", "cpu", root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return int(f.read().split()[-1])


@functools.cache
def small_peak():
    """The peak RSS of the replay of a root of a small product (what mate-replay and
    OpenBLAS take anyway), against which a refused replay's is measured (GNU time)."""
    small = os.path.join(tmpdir(), "small")
    os.mkdir(small)
    a, b = torch.randn(100, 1), torch.randn(1, 100)
    write_dump(small, 1, "mm", {"arg_0": a, "arg_1": b}, {"result": a @ b},
               fmt="torch", signature="(a, b, out_dtype=None, out=None)")
    return peak_kib(small)


def test_memory_budget():
    # one memory budget: what a handler makes counts against MATE_MAX_MEMORY, checked before it is
    # allocated. mm([N, 1], [1, N]) from a dump of 160 KB asks for a 1.6 GB result: under a 64 MiB
    # limit it is an Error naming the limit (the old replay made it, 1.6 GB resident), and when the
    # call recorded no outputs it is still an Error, never "Reproduced the failure"
    big = os.path.join(tmpdir(), "big")
    os.mkdir(big)
    N = 20000
    a, b = torch.randn(N, 1), torch.randn(1, N)
    bwant = {}
    for st in ("completed", "inputs_saved"):
        name = write_dump(big, len(bwant) + 1, "mm", {"arg_0": a, "arg_1": b}, {"result": torch.zeros(1)},
                          status=st, fmt="torch", signature="(a, b, out_dtype=None, out=None)")
        bwant[name] = ("mm [%d, 1] by [1, %d], %s" % (N, N, st), "error",
                       "its outputs and scratch would take more than the memory limit of 64 MiB")
    os.environ["MATE_MAX_MEMORY"] = "64M"
    expect_verdicts(big, bwant)
    with case("peak RSS of the replay under a 64 MiB limit"):
        base, peak = small_peak(), peak_kib(big)
        print("peak RSS: %d KiB for the refused product, %d KiB for a small one" % (peak, base))
        check(peak < base + 96 * 1024, "mate-replay's peak RSS %d KiB, %d KiB for a small product" % (peak, base))


def test_deflated_record():
    # a deflated .pt record inflates: 128 MiB of zeros in a file of 128 KiB, under a 32 MiB limit, is
    # an Error naming the limit (the old reader inflated it whole), and the replay's peak stays low
    os.environ["MATE_MAX_MEMORY"] = "32M"
    zroot = os.path.join(tmpdir(), "deflated")
    os.mkdir(zroot)
    zeros = torch.zeros(32 << 20)
    zname = write_dump(zroot, 1, "silu_and_mul", {"arg_0": zeros}, {"result": zeros[: 16 << 20]}, fmt="torch",
                       signature="(input, out=None, enable_pdl=None)")
    for stem in ("inputs", "outputs"):
        path = os.path.join(zroot, zname, stem + ".pt")
        with zipfile.ZipFile(path) as zin:
            entries = [(i, zin.read(i.filename)) for i in zin.infolist()]
        with zipfile.ZipFile(path + ".new", "w", zipfile.ZIP_DEFLATED) as zout:
            for i, data in entries:
                zout.writestr(i.filename, data)
        os.replace(path + ".new", path)
    zsize = os.path.getsize(os.path.join(zroot, zname, "inputs.pt"))
    expect_verdicts(zroot, {zname: ("a deflated record of 128 MiB in %d bytes" % zsize, "error",
                                    "the memory limit of 32 MiB once inflated")})
    with case("peak RSS of the replay of the deflated record"):
        base = small_peak()
        peak = peak_kib(zroot)
        print("peak RSS: %d KiB for the deflated record (%d bytes on disk)" % (peak, zsize))
        check(peak < base + 96 * 1024, "mate-replay's peak RSS %d KiB, %d KiB for a small product" % (peak, base))


def test_packed_mask():
    # a packed mask's bits become a byte each in the kernel: counted against the limit too
    os.environ["MATE_MAX_MEMORY"] = "1M"
    mroot = os.path.join(tmpdir(), "mask")
    os.mkdir(mroot)
    mq, mk = torch.randn(1100, 1, 8), torch.randn(1000, 1, 8)
    mname = write_dump(mroot, 1, "single_prefill_with_kv_cache",
                       {"arg_0": mq, "arg_1": mk, "arg_2": mk, "kwarg_packed_custom_mask":
                        torch.full((1100 * 1000 // 8,), 255, dtype=torch.uint8)},
                       {"result": torch.zeros(1100, 1, 8)}, fmt="torch")
    expect_verdicts(mroot, {mname: ("a packed mask of 1100 x 1000 under a 1 MiB limit", "error",
                                    "the mask of 1100 x 1000 would take more than the memory limit of 1 MiB")})
    del os.environ["MATE_MAX_MEMORY"]


run_cases(test_hostile_arguments, test_memory_budget, test_deflated_record, test_packed_mask)
