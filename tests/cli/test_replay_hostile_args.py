"""test_replay_hostile_args.py: recorded numbers that lie to the handlers (issue 32): a cache
whose pages have no slots (a page size of 0) in append_paged_kv_cache is an error naming it,
not a division by zero that ends the replay of the whole root (SIGFPE); a fractional top_k
(0.5) keeps every token instead of reading before the kernel's buffer (ASan's report in the
sanitizer build); the replay of the root goes on to the next dump and says what it found."""
import os

import torch

from mate_test import done, tmpdir
from replay_dumps import expect_verdicts, write_dump

SIG_APPEND = ("(append_key, append_value, batch_indices, positions, paged_kv_cache, kv_indices, "
              "kv_indptr, kv_last_page_len, kv_layout='NHD')")
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

expect_verdicts(root, want)
done()
