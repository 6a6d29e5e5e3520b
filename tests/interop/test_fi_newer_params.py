# mate-python: peers
"""test_fi_newer_params.py: FlashInfer 0.7.4 added a keyword-only `batch_invariant: bool = False`
to mm_bf16 and bmm_fp8. Calls recorded by FlashInfer's real decorator with that newer
signature replay as passed while the parameter is at its recorded default (left out or given),
and the verdict names it ("batch_invariant=False, its default, ignored"); batch_invariant=True
stays unsupported with the reason, never a verdict on a computation mate did not do."""
import functools

from mate_test import FlashinferReplay, check, flashinfer_main, run_cases


def record():
    import torch

    import flashinfer_ops21 as ops
    from flashinfer_peer import load_api_logging

    # 0.7.4's signatures, on the references of the older ones
    def mm_bf16(a, b, bias=None, pdl=False, out=None, out_dtype=torch.bfloat16, backend="cudnn", *,
                batch_invariant=False):
        return ops.mm_bf16(a, b, bias, pdl, out, out_dtype, backend)

    def bmm_fp8(A, B, A_scale, B_scale, dtype, out=None, backend="cublas", *, batch_invariant=False):
        return ops.bmm_fp8(A, B, A_scale, B_scale, dtype, out, backend)

    api = load_api_logging()
    mm, bmm = api.flashinfer_api(mm_bf16), api.flashinfer_api(bmm_fp8)
    torch.manual_seed(5)
    bf = torch.bfloat16
    a, w = torch.randn(6, 32, dtype=bf), torch.randn(40, 32, dtype=bf)
    mm(a, w.t())                                     # 1: left at its default
    mm(a, w.t(), batch_invariant=False)              # 2: given, the default
    mm(a, w.t(), batch_invariant=True)               # 3: another value
    e4 = torch.float8_e4m3fn
    bmm(torch.randn(2, 4, 64).to(e4), torch.randn(2, 16, 64).to(e4).transpose(1, 2),
        torch.tensor(0.5), torch.tensor(2.0), bf)    # 4


flashinfer_main(record)


@functools.cache
def replayed():
    """The four calls recorded under FlashInfer's decorator, replayed once."""
    return FlashinferReplay(__file__, 4)


def test_default_ignored():
    fr = replayed()
    named = "batch_invariant=False, its default, ignored"
    for suffix in ("mm_bf16_call0001", "mm_bf16_call0002", "bmm_fp8_call0001"):
        v = fr.verdicts.get(fr.find(suffix), {})
        check(v.get("verdict") == "passed" and named in (v.get("message") or ""),
              "%s with batch_invariant at its default: %s %s" % (suffix, v.get("verdict"), v.get("message")))


def test_other_value_unsupported():
    fr = replayed()
    v = fr.verdicts.get(fr.find("mm_bf16_call0003"), {})
    check(v.get("verdict") == "unsupported" and
          "takes no argument 'batch_invariant' (True); only its default, False, is replayed" in (v.get("message") or ""),
          "mm_bf16 with batch_invariant=True: %s %s" % (v.get("verdict"), v.get("message")))


run_cases(test_default_ignored, test_other_value_unsupported)
