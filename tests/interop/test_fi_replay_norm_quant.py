# mate-python: peers
"""test_fi_replay_norm_quant.py: FlashInfer's rmsnorm_quant (bf16 into float8_e4m3fn, fp16 into float8_e5m2) and fused_add_rmsnorm_quant, called on torch references of its kernels under FlashInfer's real decorator at level 10, replay as unchecked (the decorator records no tensors after a call that returns None); with the post-call out and residual in an in-place file, as libmate's recorder writes them, they pass, and a changed element of either is a mismatch at its index; a short weight and a zero scale are an error and unsupported, naming them."""
import functools
import json
import os
import shutil

from mate_test import FlashinferReplay, expect_verdict, flashinfer_main, replay_jsonl, run_cases

NAMES = ["rmsnorm_quant", "fused_add_rmsnorm_quant"]


def record():
    import torch

    from flashinfer_peer import load_api_logging
    api = load_api_logging()
    from flashinfer_quant import decorate

    fi = decorate(api, NAMES)
    torch.manual_seed(41)
    x = (torch.randn(6, 256) * 2).bfloat16()
    w = (torch.rand(256) + 0.5).bfloat16()
    fi["rmsnorm_quant"](torch.empty(6, 256, dtype=torch.float8_e4m3fn), x, w,
                        torch.tensor([0.05]))                                       # 1
    fi["rmsnorm_quant"](torch.empty(6, 256, dtype=torch.float8_e5m2), x.half(), w.half(),
                        torch.tensor([0.5]), 1e-5)
    fi["fused_add_rmsnorm_quant"](torch.empty(6, 256, dtype=torch.float8_e4m3fn), x,
                                  torch.randn(6, 256).bfloat16(), w, torch.tensor([0.02]))


flashinfer_main(record)


@functools.cache
def replayed():
    """The three calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 3)


def find(name, n):
    return replayed().find("%s_call%04d" % (name, n))


def with_inplace(dump, change=None):
    """The verdict of a copy of dump given the in-place file libmate's recorder writes (out
    and residual after the call, from the reference), its tensors through change()."""
    import torch

    from flashinfer_peer import load_api_logging
    load_api_logging()   # flashinfer_quant's defaults are FlashInfer's SfLayout
    import flashinfer_quant as ref
    fr = replayed()
    d = os.path.join(fr.tmp, "i%d" % len(os.listdir(fr.tmp)), dump)
    shutil.copytree(os.path.join(fr.root, dump), d)
    t = torch.load(os.path.join(d, "inputs.pt"), weights_only=True)
    with open(os.path.join(d, "metadata.jsonl")) as f:
        recs = [json.loads(line) for line in f]
    meta = recs[-1]["input_metadata"]
    eps = meta.get("arg_5" if "fused" in dump else "arg_4", 1e-6)
    if "fused" in dump:
        ref.fused_add_rmsnorm_quant(t["arg_0"], t["arg_1"], t["arg_2"], t["arg_3"], t["arg_4"], eps)
        post = {"arg_0": t["arg_0"], "arg_2": t["arg_2"]}
    else:
        ref.rmsnorm_quant(t["arg_0"], t["arg_1"], t["arg_2"], t["arg_3"], eps)
        post = {"arg_0": t["arg_0"]}
    if change is not None:
        change(post)
    torch.save(post, os.path.join(d, "inplace.pt"))
    for r in recs:
        r["tensor_info"].update(inplace_tensor_keys=sorted(post), inplace_file="inplace.pt")
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in recs)
    return replay_jsonl(os.path.dirname(d)).get(dump, {})


def test_unchecked():
    replayed().check_passed(NAMES)


def test_inplace_file():
    for name, n in (("rmsnorm_quant", 1), ("rmsnorm_quant", 2), ("fused_add_rmsnorm_quant", 1)):
        expect_verdict("%s %d with its in-place file" % (name, n), with_inplace(find(name, n)), "",
                       verdict="passed")


def test_changed_element():
    import torch

    def bump(key, idx):
        def change(t):
            v = t[key][idx].float()
            t[key][idx] = (v * 4 + 8).to(t[key].dtype)
        return change
    expect_verdict("out e4m3", with_inplace(find("rmsnorm_quant", 1), bump("arg_0", (3, 17))),
                   "arg_0[3, 17]")
    expect_verdict("out e5m2", with_inplace(find("rmsnorm_quant", 2), bump("arg_0", (5, 255))),
                   "arg_0[5, 255]")
    expect_verdict("the residual", with_inplace(find("fused_add_rmsnorm_quant", 1),
                   bump("arg_2", (0, 9))), "arg_2[0, 9]")
    del torch


def test_hostile():
    import torch
    fr = replayed()
    v = fr.lying(find("rmsnorm_quant", 1), lambda t: t.update(arg_2=t["arg_2"][:255].clone()))
    expect_verdict("a short weight", v, "weight: dimension 0 is 255, expected 256", verdict="error")
    v = fr.lying(find("fused_add_rmsnorm_quant", 1), lambda t: t.update(arg_4=torch.zeros(1)))
    expect_verdict("a zero scale", v, "scale 0", verdict="unsupported")


run_cases(test_unchecked, test_inplace_file, test_changed_element, test_hostile)
