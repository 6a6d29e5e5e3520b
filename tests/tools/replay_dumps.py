"""replay_dumps.py: writes dump directories as MATE's recorder lays them out, for the replay tests (tensor files by torch.save or libmate's safetensors writer)."""
import json
import os

import torch

from mate_test import build_path, case, check, run

TOOL = build_path("tests", "tensorfile-tool")


def tensor_spec(t, sid):
    t = t.contiguous()
    raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
    return {"type": "tensor", "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
            "stride": list(t.stride()), "offset": 0, "storage": sid, "storage_nbytes": len(raw),
            "hex": raw.hex()}


def write_safetensors(path, tensors):
    """Writes {name: tensor} with libmate's writer (through tests/tensorfile-tool)."""
    items = [[{"type": "str", "value": k}, tensor_spec(v, i)] for i, (k, v) in enumerate(tensors.items())]
    spec = path + ".json"
    with open(spec, "w") as f:
        json.dump({"root": {"type": "dict", "ordered": False, "items": items}, "metadata": None}, f)
    run([TOOL, "write", spec, path])
    os.remove(spec)


def encode(v):
    """A non-tensor value in the record's structured form."""
    if isinstance(v, torch.dtype):
        return {"type": "torch.dtype", "value": str(v)}
    if isinstance(v, (list, tuple)):
        return {"type": type(v).__name__, "length": len(v), "items": [encode(x) for x in v],
                "truncated": False}
    if isinstance(v, dict):
        return {"type": "dict", "length": len(v), "items": [{"key": k, "value": encode(x)} for k, x in v.items()],
                "truncated": False}
    return v


def details(tensors):
    return {k: {"shape": list(t.shape), "dtype": str(t.dtype), "stride": list(t.stride()), "device": "cpu"}
            for k, t in tensors.items()}


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors.values())


def write_dump(root, seq, fn, inputs, outputs=None, status="completed", fmt="safetensors",
               module="flashinfer", extra=None, signature="<unavailable>"):
    """A dump of fn(inputs) -> outputs; inputs and outputs map keys (arg_0,
    kwarg_eps, result, result_0, ...) to tensors or plain values. The
    signature is str(inspect.signature(fn)); "<unavailable>" (what MATE
    writes when it has none) binds the arguments as they are recorded."""
    name = "20260301_120000_%03d_pid555_%s_call%04d" % (seq, fn, seq)
    d = os.path.join(root, name)
    os.makedirs(d)
    tin = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    tout = {k: v for k, v in (outputs or {}).items() if isinstance(v, torch.Tensor)}
    ext = ".pt" if fmt == "torch" else ".safetensors"
    for stem, ts in (("inputs", tin), ("outputs", tout if status == "completed" else {})):
        if ts:
            if fmt == "torch":
                torch.save(ts, os.path.join(d, stem + ext))
            else:
                write_safetensors(os.path.join(d, stem + ext), ts)
    rec = {"function_name": fn, "module": module, "call_sequence": seq, "timestamp": name[:19],
           "process_id": 555,
           "input_metadata": {k: encode(v) for k, v in inputs.items() if k not in tin},
           "output_metadata": {},
           "tensor_info": {"input_tensor_keys": list(tin), "output_tensor_keys": [],
                           "input_size_bytes": nbytes(tin), "input_size_mb": nbytes(tin) / 2**20},
           "tensor_details": details(tin), "tensor_format": fmt, "function_signature": signature,
           "versions": {"mate": "test"}, "execution_status": "inputs_saved", "dump_dir": "elsewhere/" + name}
    lines = [json.dumps(rec)]
    if status != "inputs_saved":
        rec = json.loads(lines[0])
        rec["execution_status"] = status
        if status == "completed":
            rec["output_metadata"] = {k: encode(v) for k, v in outputs.items() if k not in tout}
            ti = rec["tensor_info"]
            ti["output_tensor_keys"] = list(tout)
            ti["output_size_bytes"] = nbytes(tout)
            ti["total_size_bytes"] = nbytes(tin) + nbytes(tout)
            rec["tensor_details"].update(details(tout))
        rec.update(extra or {})
        lines.append(json.dumps(rec))
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return name


def expect_verdicts(root, want):
    """Replays root on the CPU (mate-replay --jsonl) and checks each dump's verdict: want maps a
    dump's name to (case name, verdict, words its message holds). @return the verdicts."""
    p = run([build_path("src", "replay", "mate-replay"), "--device", "cpu", "--jsonl", root], check=False)
    check(p.returncode in (0, 1), "mate-replay ends by itself (exit %d): %s" % (p.returncode, p.stderr[-500:]))
    got = {v["dir"]: v for v in map(json.loads, p.stdout.splitlines())}
    for name, (what, verdict, words) in sorted(want.items()):
        with case(what):
            v = got.get(name, {})
            check(v.get("verdict") == verdict and words in (v.get("message") or ""),
                  "%s: want %s (%r), got %s: %s" % (name, verdict, words, v.get("verdict"), v.get("message")))
    return got
