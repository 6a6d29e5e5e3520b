# mate-python: peers
"""test_flashinfer_decorator.py: FlashInfer's real decorator records at level 10 (.pt and safetensors); mate-list-dumps lists every dump and mate-replay replays it as passed, as the reproduced failure, or (stateful wrappers, no handler yet) as unsupported, never a false verdict."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))


def record():
    """The child: FLASHINFER_* are set; calls the decorated torch references."""
    import torch

    from flashinfer_peer import decorate, load_api_logging

    fi = decorate(load_api_logging())
    torch.manual_seed(7)
    x = torch.randn(4, 64)
    w = torch.randn(64)
    fi["rmsnorm"](x, w, eps=1e-5)
    xb = torch.randn(3, 128, dtype=torch.bfloat16)
    wb = torch.randn(128, dtype=torch.bfloat16)
    out = torch.empty_like(xb)
    fi["rmsnorm"](xb, wb, 1e-6, out=out)                     # out= buffer, also returned
    fi["gemma_rmsnorm"](x, w)
    res = torch.randn(4, 64)
    fi["fused_add_rmsnorm"](x.clone(), res, w, eps=1e-6)     # in place, returns None
    fi["silu_and_mul"](torch.randn(5, 96))
    fi["softmax"](torch.randn(2, 50), temperature=0.7)
    try:                                                      # raises after its inputs are saved
        fi["rmsnorm"](x, torch.randn(32))
    except RuntimeError:
        pass
    wrapper = fi["BatchDecodeWithPagedKVCacheWrapper"](torch.empty(1024, dtype=torch.uint8), "NHD")
    wrapper.plan(torch.tensor([0, 1], dtype=torch.int32), torch.tensor([0], dtype=torch.int32),
                 torch.tensor([1], dtype=torch.int32), 4, 4, 8, 16)
    wrapper.run(torch.randn(1, 4, 8), torch.randn(1, 2, 16, 4, 8))


if len(sys.argv) > 1 and sys.argv[1] == "--record":
    record()
    sys.exit(0)

from mate_test import build_path, check, done, run, tmpdir  # noqa: E402

LIST = build_path("src", "replay", "mate-list-dumps")
REPLAY = build_path("src", "replay", "mate-replay")
TMP = tmpdir()
WRAPPER = "BatchDecodeWithPagedKVCacheWrapper."

for fmt, st in (("pt", "0"), ("safetensors", "1")):
    root = os.path.join(TMP, fmt)
    env = dict(os.environ, FLASHINFER_LOGLEVEL="10", FLASHINFER_DUMP_DIR=root,
               FLASHINFER_DUMP_SAFETENSORS=st, FLASHINFER_LOGDEST=os.path.join(TMP, fmt + ".log"))
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--record"], env=env,
                       capture_output=True, text=True)
    check(p.returncode == 0, "%s: recording under FlashInfer's decorator: %s" % (fmt, p.stderr[-2000:]))
    dirs = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    check(len(dirs) == 10, "%s: FlashInfer wrote %d dumps, expected 10" % (fmt, len(dirs)))

    listed = {d["dir"]: d for d in map(json.loads, run([LIST, "--jsonl", root]).stdout.splitlines())}
    check(sorted(listed) == dirs, "%s: mate-list-dumps lists %s, on disk %s" % (fmt, sorted(listed), dirs))
    for d, rec in listed.items():
        check(rec["problem"] is None, "%s: %s: listed with a problem: %s" % (fmt, d, rec["problem"]))
        want = "inputs_saved" if d.endswith("rmsnorm_call0003") and "gemma" not in d else "completed"
        check(rec["status"] == want, "%s: %s: status %s, expected %s" % (fmt, d, rec["status"], want))

    p = run([REPLAY, "--jsonl", root], check=False)
    verdicts = {v["dir"]: v for v in map(json.loads, p.stdout.splitlines())}
    check(sorted(verdicts) == dirs, "%s: mate-replay replayed %d of %d dumps" % (fmt, len(verdicts), len(dirs)))
    for d, v in verdicts.items():
        func = v["function"]
        if func.startswith(WRAPPER):
            # No built-in handler for the paged-KV wrappers yet: reported, never judged.
            check(v["verdict"] == "unsupported" and v["message"],
                  "%s: %s: %s is %s: %s" % (fmt, d, func, v["verdict"], v["message"]))
        elif listed[d]["status"] == "inputs_saved":
            check(v["verdict"] == "reproduced_failure",
                  "%s: %s: the call that raised replays as %s: %s" % (fmt, d, v["verdict"], v["message"]))
        else:
            check(v["verdict"] == "passed", "%s: %s: %s replays as %s: %s" % (fmt, d, func, v["verdict"], v["message"]))

done()
