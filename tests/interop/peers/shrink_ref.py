"""shrink_ref.py: torch references of mate's mm and bmm (its demo's GEMMs), for recording them under FlashInfer's real decorator and replaying them in FlashInfer's replay_sequence."""
import torch


def mm(a, b, out_dtype=None, out=None):
    r = torch.mm(a.float(), b.float()).to(out_dtype or a.dtype)
    if out is None:
        return r
    out.copy_(r)
    return out


def bmm(a, b, out_dtype=None, out=None):
    r = torch.bmm(a.float(), b.float()).to(out_dtype or a.dtype)
    if out is None:
        return r
    out.copy_(r)
    return out


def decorate(api):
    """The references above, each wrapped by FlashInfer's real decorator."""
    return {n: api.flashinfer_api(globals()[n]) for n in ("mm", "bmm")}
