# mate-python: peers
"""test_flashinfer_decorator.py: FlashInfer's real decorator records at level 10 (.pt and safetensors); mate-list-dumps lists every dump and mate-replay replays it as passed or as the reproduced failure, a stateful SegmentGEMMWrapper (__init__ and two runs on one object) included; a changed element of a run's recorded output is a mismatch."""
import json
import os
import shutil

from mate_test import (build_path, check, fi_verdict, flashinfer_main, flashinfer_record, replay_jsonl, run,
                       run_cases, tmpdir)


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
    gemm = fi["SegmentGEMMWrapper"](torch.empty(1 << 16, dtype=torch.int8))
    xs = torch.randn(10, 32)
    gemm.run(xs, torch.randn(3, 24, 32), 3, True,                      # W (d_out, d_in)
             seg_lens=torch.tensor([4, 0, 6], dtype=torch.int64))
    xh = torch.randn(9, 16, dtype=torch.bfloat16)
    gemm.run(xh, torch.randn(2, 16, 40, dtype=torch.bfloat16), 3, False,
             seg_indptr=torch.tensor([0, 2, 7, 9], dtype=torch.int64),
             weight_indices=torch.tensor([1, 0, 1], dtype=torch.int64))

flashinfer_main(record)

LIST = build_path("src", "replay", "mate-list-dumps")
REPLAY = build_path("src", "replay", "mate-replay")
TMP = tmpdir()
WRAPPER = "SegmentGEMMWrapper."

def recorded_as(fmt, st):
    """FlashInfer's decorator records in format fmt (FLASHINFER_DUMP_SAFETENSORS=st): the
    dumps list, replay, and a changed result is a mismatch."""
    root, dirs = flashinfer_record(__file__, TMP, 10, fmt)

    listed = {d["dir"]: d for d in map(json.loads, run([LIST, "--jsonl", root]).stdout.splitlines())}
    check(sorted(listed) == dirs, "%s: mate-list-dumps lists %s, on disk %s" % (fmt, sorted(listed), dirs))
    for d, rec in listed.items():
        check(rec["problem"] is None, "%s: %s: listed with a problem: %s" % (fmt, d, rec["problem"]))
        want = "inputs_saved" if d.endswith("rmsnorm_call0003") and "gemma" not in d else "completed"
        check(rec["status"] == want, "%s: %s: status %s, expected %s" % (fmt, d, rec["status"], want))

    verdicts = replay_jsonl(root)
    check(sorted(verdicts) == dirs, "%s: mate-replay replayed %d of %d dumps" % (fmt, len(verdicts), len(dirs)))
    for d, v in verdicts.items():
        func = v["function"]
        if listed[d]["status"] == "inputs_saved":
            check(v["verdict"] == "reproduced_failure",
                  "%s: %s: the call that raised replays as %s: %s" % (fmt, d, v["verdict"], v["message"]))
        else:
            check(v["verdict"] == fi_verdict(func), "%s: %s: %s replays as %s: %s" % (fmt, d, func, v["verdict"],
                                                                                  v["message"]))
    wrapped = sorted(v["function"] for v in verdicts.values() if v["function"].startswith(WRAPPER))
    check(wrapped == [WRAPPER + "__init__", WRAPPER + "run", WRAPPER + "run"],
          "%s: the wrapper's dumps: %s" % (fmt, wrapped))

    # A run replayed without its object's __init__: an error naming the object.
    run1 = [d for d in dirs if d.endswith(WRAPPER + "run_call0001")]
    p = run([REPLAY, "--jsonl", os.path.join(root, run1[0])], check=False)
    v = json.loads(p.stdout.splitlines()[0]) if p.stdout else {}
    pid_self = "%s:%s" % (listed[run1[0]]["process_id"], listed[run1[0]]["self_id"])
    check(v.get("verdict") == "error" and pid_self in v.get("message", "") and "__init__" in v["message"],
          "%s: a run without __init__ replays as %s: %s" % (fmt, v.get("verdict"), v.get("message")))

    # One element of the second run's recorded result changed: a mismatch there.
    run2 = [d for d in dirs if d.endswith(WRAPPER + "run_call0002")]
    check(len(run2) == 1, "%s: the second run's dump: %s" % (fmt, run2))
    mroot = os.path.join(TMP, fmt + "-mutated")
    shutil.copytree(root, mroot)
    outputs = os.path.join(mroot, run2[0], "outputs." + ("safetensors" if st == "1" else "pt"))
    if st == "1":
        from safetensors.torch import load_file, save_file
        t = load_file(outputs)
        t["result"][5, 7] += 1.0
        save_file(t, outputs)
    else:
        import torch
        t = torch.load(outputs, weights_only=True)
        t["result"][5, 7] += 1.0
        torch.save(t, outputs)
    verdicts = replay_jsonl(mroot)
    v = verdicts.get(run2[0], {})
    check(v.get("verdict") == "mismatch" and v.get("first_bad_index") == "[5, 7]",
          "%s: the changed result replays as %s (%s): %s" % (fmt, v.get("verdict"), v.get("first_bad_index"),
                                                            v.get("message")))
    others = [d for d, v in verdicts.items() if d != run2[0] and v["verdict"] == "mismatch"]
    check(not others, "%s: mismatches besides the changed dump: %s" % (fmt, others))


def test_pt():
    recorded_as("pt", "0")


def test_safetensors():
    recorded_as("safetensors", "1")


run_cases(test_pt, test_safetensors)
