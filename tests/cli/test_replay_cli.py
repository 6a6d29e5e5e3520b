"""replay-cli.py: mate-list-dumps, mate-replay and mate on the MATE reference dumps and on dumps written here (no tensor files needed)."""
import json
import os
import tempfile
import re
import shutil
import struct

from mate_test import build_path, src_path, run, check, tmpdir, run_cases

FIXTURE = src_path("tests", "fixtures", "mate-reference", "mate_dumps")
LIST = build_path("src", "replay", "mate-list-dumps")
REPLAY = build_path("src", "replay", "mate-replay")
MATE = build_path("src", "mate", "mate")
PLUGIN = build_path("tests", ".libs", "plugin-reference.so")
HAVE_PLUGIN = os.path.exists(PLUGIN)
# the reference handlers: as a dlopen()ed plugin, or linked in where plugins cannot load
RP = [REPLAY, "--plugin", PLUGIN] if HAVE_PLUGIN else [build_path("tests", "mate-replay-ref")]

# in call order: by name, but the calls of one millisecond (int_ops and no_args, both at
# 125033_791) as MATE's session.jsonl has them, no_args first
with open(os.path.join(FIXTURE, "session.jsonl")) as f:
    NAMES = list(dict.fromkeys(json.loads(ln)["dump_dir"].rsplit("/", 1)[-1] for ln in f))
check(NAMES[6:8] == ["20261121_125033_791_pid23322_no_args_call0001",
                     "20261121_125033_791_pid23322_int_ops_call0001"]
      and sorted(NAMES) == sorted(d for d in os.listdir(FIXTURE) if d != "session.jsonl"),
      "the fixture's session.jsonl names every dump, no_args before int_ops: %s" % NAMES)
LINE = re.compile(r"^(\S+): (\S+) \[(completed|inputs_saved|failed|incomplete)\] (\d+) in, (\d+) out, (\d+) bytes$")

work = tmpdir()
TOOL = build_path("tests", "tensorfile-tool")
# mate VERB finds its verbs on PATH
env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(LIST), os.environ.get("PATH", "")]))


def write_dump(root, i, fn, status, inputs, outputs=None, extra=None):
    """A dump without tensor files: a metadata.jsonl with an inputs_saved record and the final one."""
    name = "20260101_000000_%03d_pid77_%s_call%04d" % (i, fn, i)
    d = os.path.join(root, name)
    os.makedirs(d)
    rec = {"function_name": fn, "module": "__main__", "call_sequence": i, "timestamp": name[:19],
           "process_id": 77, "input_metadata": inputs, "output_metadata": {},
           "tensor_info": {"input_tensor_keys": [], "output_tensor_keys": [], "input_size_bytes": 0},
           "tensor_details": {}, "tensor_format": "torch", "execution_status": "inputs_saved",
           "dump_dir": "/not/here"}
    lines = [json.dumps(rec)]
    if status != "inputs_saved":
        rec = dict(rec, execution_status=status, output_metadata=outputs or {})
        rec.update(extra or {})
        lines.append(json.dumps(rec))
    with open(os.path.join(d, "metadata.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return name


def test_list_dumps():
    """mate-list-dumps on the fixture"""
    p = run([LIST, FIXTURE], check=False)
    check(p.returncode == 0, "list exit 0, got %d: %s" % (p.returncode, p.stderr))
    lines = p.stdout.splitlines()
    check(len(lines) == 9, "9 dump lines, got %r" % lines)
    parsed = [LINE.match(l) for l in lines]
    check(all(parsed), "every line has the form DIR: FUNC [STATUS] N in, M out, B bytes: %r" % lines)
    check([m.group(1) for m in parsed if m] == NAMES, "lines in time order")
    check("Found" not in p.stdout and "dumps" not in p.stdout, "no summary on stdout")
    check(re.search(r"^9 dumps in .*: 8 completed, 1 inputs_saved$", p.stderr, re.M) is not None,
          "summary on stderr: %r" % p.stderr)
    saved = [l for l in lines if "inputs_saved" in l]
    check(saved == ["20261121_125033_792_pid23322_crashes_call0001: crashes [inputs_saved] 1 in, 0 out, 36 bytes"],
          "grep inputs_saved finds only the crash: %r" % saved)
    gemm = [l for l in lines if l.startswith("20261121_125033_783")]
    check(gemm == ["20261121_125033_783_pid23322_gemm_call0001: gemm [completed] 2 in, 1 out, 3584 bytes"],
          "gemm line: %r" % gemm)

    # a single dump directory, and $MATE_DUMP_DIR as the default root
    one = os.path.join(FIXTURE, NAMES[0])
    p = run([LIST, one], check=False)
    check(p.returncode == 0 and p.stdout.splitlines() == lines[:1], "single dump lists alone: %r" % p.stdout)
    p = run([LIST, one + "/"], check=False)
    check(p.returncode == 0 and p.stdout.splitlines() == lines[:1], "dump/ with a slash: %r" % p.stdout)
    p = run([LIST], check=False, env=dict(os.environ, MATE_DUMP_DIR=FIXTURE))
    check(p.returncode == 0 and p.stdout.splitlines() == lines, "MATE_DUMP_DIR is the default root")
    # under the FlashInfer identity the recorder writes FLASHINFER_DUMP_DIR (else
    # flashinfer_dumps): the listing's default root is the same (it was MATE_DUMP_DIR)
    fienv = {k: v for k, v in os.environ.items() if not k.endswith("_DUMP_DIR")}
    fienv.update(MATE_IDENTITY="FLASHINFER:FlashInfer")
    p = run([LIST], check=False, env=dict(fienv, FLASHINFER_DUMP_DIR=FIXTURE))
    check(p.returncode == 0 and p.stdout.splitlines() == lines,
          "FLASHINFER_DUMP_DIR is the default root under MATE_IDENTITY=FLASHINFER: %r" % p.stderr)
    p = run([LIST], check=False, env=dict(fienv, MATE_DUMP_DIR=FIXTURE), cwd=tempfile.gettempdir())
    check(p.returncode != 0 and "flashinfer_dumps" in p.stderr,
          "without it, flashinfer_dumps (not MATE_DUMP_DIR): %r" % p.stderr)

    # --jsonl
    p = run([LIST, "--jsonl", FIXTURE], check=False)
    objs = [json.loads(l) for l in p.stdout.splitlines()]
    check(len(objs) == 9, "9 JSON objects")
    check([o["dir"] for o in objs] == NAMES, "jsonl in time order")
    by = {o["dir"]: o for o in objs}
    c = by["20261121_125033_792_pid23322_crashes_call0001"]
    check(c["status"] == "inputs_saved" and c["function"] == "crashes" and c["inputs"] == 1
          and c["outputs"] == 0 and c["bytes"] == 36 and c["process_id"] == 23322, "crashes object: %r" % c)
    g = by[NAMES[0]]
    check(g["module"] == "__main__" and g["input_bytes"] == 3072 and g["output_bytes"] == 512
          and g["bytes"] == 3584 and g["problem"] is None, "gemm object: %r" % g)

    # --details: MATE's block plus each tensor
    p = run([LIST, "--details", FIXTURE], check=False)
    out = p.stdout
    for want in ("20261121_125033_783_pid23322_gemm_call0001\n  Function: gemm\n",
                 "  Status: completed\n  Timestamp: 20261121_125033_783\n",
                 "  Inputs: 2\n    arg_0: float32 shape (16, 32) stride (32, 1)\n"
                 "    arg_1: float32 shape (32, 8) stride (1, 32)\n"
                 "  Outputs: 1\n    result: float32 shape (16, 8) stride (8, 1)\n",
                 "    arg_0: int32 shape (10,) stride (1,)\n",
                 "  Function: crashes\n  Module: __main__\n  Status: inputs_saved\n"):
        check(want in out, "--details shows %r" % want)
    p = run([LIST, "--details", "--jsonl", FIXTURE], check=False)
    objs = [json.loads(l) for l in p.stdout.splitlines()]
    t = {x["key"]: x for x in objs[0]["tensors"]}
    check(t["arg_1"] == {"key": "arg_1", "output": False, "dtype": "float32", "shape": [32, 8], "stride": [1, 32]},
          "--details --jsonl tensor: %r" % t.get("arg_1"))
    check(t["result"]["output"] is True, "outputs marked")

    # usage and missing roots
    p = run([LIST, os.path.join(FIXTURE, "no-such-root")], check=False)
    check(p.returncode == 2 and "no-such-root" in p.stderr, "missing root: exit 2 (%d) %r" % (p.returncode, p.stderr))
    p = run([LIST, "--bogus"], check=False)
    check(p.returncode == 2 and "--help" in p.stderr, "unknown option: exit 2")
    p = run([LIST, "--help"], check=False)
    check(p.returncode == 0 and "Usage:" in p.stdout, "--help on stdout, exit 0")


def test_torn_records():
    """torn and corrupt records"""
    root = os.path.join(work, "dumps")
    shutil.copytree(FIXTURE, root)
    with open(os.path.join(root, NAMES[0], "metadata.jsonl"), "a") as f:
        f.write('{"function_name": "gemm", "execution_st')            # torn by a kill
    with open(os.path.join(root, NAMES[2], "metadata.jsonl"), "w") as f:
        f.write("this is not json\n")                                  # corrupt, nothing else
    os.mkdir(os.path.join(root, "20261121_125034_000_pid23322_late_call0001"))  # killed at once
    os.mkdir(os.path.join(root, "unrelated"))
    p = run([LIST, root], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 1, "problems: exit 1, got %d" % p.returncode)
    check(len(lines) == 10, "listing continues past problems: %r" % lines)
    check(lines[0].startswith(NAMES[0] + ": gemm [completed]"), "torn line skipped, earlier record used: %r" % lines[0])
    check(lines[2].startswith(NAMES[2] + ": rmsnorm [incomplete]"), "corrupt only record: incomplete: %r" % lines[2])
    check(lines[-1].startswith("20261121_125034_000_pid23322_late_call0001: late [incomplete]"),
          "empty dump directory: incomplete: %r" % lines[-1])
    check(re.search(NAMES[0] + r": torn last line \(\d+ bytes\) skipped", p.stderr), "torn line reported: %r" % p.stderr)
    check(re.search(NAMES[2] + r": corrupt record", p.stderr), "corrupt record reported")
    check("no metadata.jsonl" in p.stderr, "empty dump reported")
    check("unrelated" not in p.stdout + p.stderr, "a directory that is not a dump is skipped")
    check(re.search(r"^10 dumps in .*: 7 completed, 1 inputs_saved, 2 incomplete; 3 with problems$", p.stderr, re.M),
          "summary counts statuses and problems: %r" % p.stderr)


def test_mate_verb():
    """mate VERB"""
    p = run([MATE, "list-dumps", FIXTURE], check=False, env=env)
    check(p.returncode == 0 and p.stdout == run([LIST, FIXTURE]).stdout, "mate list-dumps runs mate-list-dumps")
    p = run([MATE, "--help"], check=False, env=env)
    check(p.returncode == 0 and "list-dumps" in p.stdout and "replay" in p.stdout, "mate --help lists verbs")
    p = run([MATE, "no-such-verb"], check=False, env=env)
    check(p.returncode == 2 and "no-such-verb" in p.stderr, "unknown verb: exit 2: %r" % p.stderr)
    p = run([MATE], check=False, env=env)
    check(p.returncode == 2, "no verb: exit 2")
    p = run([MATE, "help", "list-dumps"], check=False, env=env)
    check(p.returncode == 0 and "Usage: mate-list-dumps" in p.stdout, "mate help VERB: %r" % p.stdout)


def test_replay():
    """mate-replay"""
    RES = re.compile(r"^\[(\d+)\] (\S+) \((\S+)\): (Passed|Mismatch|Error|Unsupported|Reproduced the failure|Now runs)")

    p = run([REPLAY, "--include", "configure,no_args", FIXTURE], check=False)
    check(p.returncode == 1, "no handler: exit 1")
    check("Unsupported: no replay handler for 'configure' (module __main__)" in p.stdout and "--plugin" in p.stdout,
          "unsupported names the way to add a handler: %r" % p.stdout)
    check("Summary: 0 passed, 2 failed (2 unsupported)" in p.stdout, "summary: %r" % p.stdout)
    p = run([REPLAY, os.path.join(work, "missing")], check=False)
    check(p.returncode == 2, "missing path: exit 2")
    p = run([REPLAY], check=False)
    check(p.returncode == 2, "no path: exit 2")
    p = run([REPLAY, "--device", "tpu", FIXTURE], check=False)
    check(p.returncode == 2 and "--device" in p.stderr, "bad device: exit 2")
    if not os.path.exists("/dev/nvidia0"):
        p = run([REPLAY, "--device", "cuda", FIXTURE], check=False)
        check(p.returncode == 2 and "CUDA" in p.stderr, "--device cuda without a GPU: exit 2: %r" % p.stderr)
    p = run([REPLAY, "--status", "done", FIXTURE], check=False)
    check(p.returncode == 2 and "--status" in p.stderr, "bad --status: exit 2")
    p = run([REPLAY, "--rtol", "-1", FIXTURE], check=False)
    check(p.returncode == 2, "negative rtol: exit 2")
    # -j and --repeat out of range: usage errors, not silently clamped or raised
    for args, what in ((["-j", "257", FIXTURE], "--jobs: '257' (want 1 to 256)"),
                       (["-j", "0", FIXTURE], "--jobs: '0' (want 1 to 256)"),
                       (["--memlog", os.path.join(work, "none.csv"), "--repeat", "0"],
                        "--repeat: '0' (want 1 to 1000000)")):
        p = run([REPLAY] + args, check=False)
        check(p.returncode == 2 and "bad value for " + what in p.stderr,
              "%s: exit 2 naming the range, got %d %r" % (" ".join(args[:2]), p.returncode, p.stderr))
    p = run([REPLAY, "-j", "256", "--include", "configure", FIXTURE], check=False)
    check(p.returncode == 1 and "Summary: 0 passed, 1 failed" in p.stdout, "-j 256 is accepted: %r" % p.stderr)
    p = run([REPLAY, "--plugin", os.path.join(work, "none.so"), FIXTURE], check=False)
    check(p.returncode == 2 and "none.so" in p.stderr, "missing plugin: exit 2: %r" % p.stderr)
    p = run([REPLAY, "--include", "nothing-matches", FIXTURE], check=False)
    check(p.returncode == 1 and "no dumps selected" in p.stderr, "nothing selected: exit 1")


    p = run(RP + ["--include", "configure", "--include", "no_args", FIXTURE], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 0, "configure and no_args pass: exit %d %r" % (p.returncode, p.stdout))
    check(lines[:2] == ["[1] configure (20261121_125033_790_pid23322_configure_call0001): Passed (bit-exact)",
                        "[2] no_args (20261121_125033_791_pid23322_no_args_call0001): Passed (bit-exact)"],
          "per-call lines: %r" % lines)
    check(lines[-1] == "Summary: 2 passed, 0 failed" and lines[-2] == "", "summary line: %r" % lines[-2:])
    check("\u2705" not in p.stdout, "no emoji off a terminal")

    syn = os.path.join(work, "synthetic")
    os.makedirs(syn)
    last = open(os.path.join(FIXTURE, NAMES[5], "metadata.jsonl")).read().splitlines()[-1]
    cfg = json.loads(last)
    mutated = write_dump(syn, 1, "configure", "completed", cfg["input_metadata"],
                         dict(cfg["output_metadata"], result_0=15))
    crashed = write_dump(syn, 2, "crashes", "inputs_saved", {"arg_1": 11})
    failed = write_dump(syn, 3, "crashes", "failed", {"arg_1": 12}, extra={"error": "RuntimeError: code 12"})
    fixed = write_dump(syn, 4, "no_args", "inputs_saved", {})
    odd = write_dump(syn, 5, "mystery", "completed", {}, {"result": None})
    alias = write_dump(syn, 6, "Tensor.no_args", "completed", {}, {"result": None})
    structured = write_dump(syn, 7, "configure", "completed", {
        "arg_0": 7, "arg_1": 0.5, "arg_2": True, "arg_3": "bf16", "arg_4": None,
        "arg_5": {"type": "list", "length": 3, "items": [1, 2, 3], "truncated": False},
        "arg_6": {"type": "tuple", "length": 2, "items": [4, 5], "truncated": False},
        "arg_7": {"type": "dict", "length": 2, "items": [{"key": "k", "value": 1},
                                                          {"key": "v", "value": {"type": "list", "items": [2]}}]},
        "kwarg_mode": {"type": "enum", "name": "Mode.FAST", "value": 0}, "kwarg_tail": 9},
        {"result_0": 14, "result_1": {"type": "list", "length": 2, "items": [0.5, True], "truncated": False}})
    p = run(RP + [syn], check=False)
    out = p.stdout
    check(p.returncode == 1, "mismatch and failures: exit 1")
    check("[1] configure (%s): Mismatch: result_0: expected 15, got 14" % mutated in out,
          "non-tensor mismatch names the output and both values: %r" % out)
    check("[2] crashes (%s): Reproduced the failure: RuntimeError: crashes with code 11" % crashed in out,
          "a crash (inputs_saved) is re-executed: reproduced: %r" % out)
    check("[3] crashes (%s): Reproduced the failure: RuntimeError: crashes with code 12 "
          "(recorded: RuntimeError: code 12)" % failed in out, "a recorded failure reproduced")
    check("[4] no_args (%s): Now runs" % fixed in out, "an inputs_saved call that now completes: %r" % out)
    check("[5] mystery (%s): Unsupported: no replay handler for 'mystery'" % odd in out, "unknown function")
    check("[6] Tensor.no_args (%s): Passed" % alias in out, "Tensor.NAME replays as NAME")
    check("[7] configure (%s): Passed" % structured in out, "structured values decode: %r" % out)
    check("Summary: 2 passed, 5 failed (1 mismatch, 1 unsupported, 2 reproduced failures, 1 now runs)" in out,
          "summary breakdown: %r" % out)
    # crashes are never counted as passed, even alone
    p = run(RP + [os.path.join(syn, crashed)], check=False)
    check("Summary: 0 passed, 1 failed" in p.stdout, "a reproduced failure is not a pass")
    check(p.returncode == 0, "a reproduced failure is what a replay of a crash expects: exit 0 (%d)" % p.returncode)
    p = run(RP + [os.path.join(syn, fixed)], check=False)
    check(p.returncode == 1, "a call that now runs where it failed: exit 1 (%d)" % p.returncode)
    p = run(RP + [os.path.join(syn, odd)], check=False)
    check(p.returncode == 1, "an unsupported call: exit 1 (%d)" % p.returncode)

    # --jsonl: one object per call, summary on stderr
    p = run(RP + ["--jsonl", syn], check=False)
    objs = [json.loads(l) for l in p.stdout.splitlines()]
    check(len(objs) == 7, "7 JSON objects: %r" % p.stdout)
    check([o["verdict"] for o in objs] == ["mismatch", "reproduced_failure", "reproduced_failure", "now_runs",
                                           "unsupported", "passed", "passed"], "verdicts")
    check(objs[0]["key"] == "result_0" and objs[0]["status"] == "completed" and objs[5]["bit_exact"] is True,
          "jsonl fields: %r" % objs[0])
    check(all("seconds" in o and "max_abs_err" in o and "first_bad_index" in o for o in objs), "jsonl keys")
    check("Summary: 2 passed, 5 failed" in p.stderr and "Summary" not in p.stdout, "jsonl summary on stderr")

    # --include/--exclude and -j: the same lines in the same order
    many = os.path.join(work, "many")
    os.makedirs(many)
    for i in range(60):
        write_dump(many, i, ["configure", "no_args", "crashes"][i % 3], "completed" if i % 3 != 2 else "inputs_saved",
                   cfg["input_metadata"] if i % 3 == 0 else {"arg_1": i},
                   cfg["output_metadata"] if i % 3 == 0 else {"result": None})
    one = run(RP + [many], check=False)
    four = run(RP + ["-j", "4", many], check=False)
    check(one.stdout == four.stdout and one.returncode == four.returncode == 0, "-j 4 prints as -j 1")
    check("Summary: 40 passed, 20 failed (20 reproduced failures)" in one.stdout, "60 calls: %r" % one.stdout[-200:])
    p = run(RP + ["--exclude", "crash*", "-j", "3", many], check=False)
    check(p.returncode == 0 and "Summary: 40 passed, 0 failed" in p.stdout, "--exclude: exit 0")
    p = run(RP + ["--status", "inputs_saved", many], check=False)
    check(p.returncode == 0 and "Summary: 0 passed, 20 failed (20 reproduced failures)" in p.stdout, "--status inputs_saved")
    p = run(RP + ["--status", "completed", many], check=False)
    check(p.returncode == 0 and "Summary: 40 passed, 0 failed" in p.stdout, "--status completed")
    p = run(RP + ["--dir", many, "--include", "no_*"], check=False)
    check(p.returncode == 0 and "Summary: 20 passed, 0 failed" in p.stdout, "--dir and --include")
    if HAVE_PLUGIN:
        p = run([MATE, "replay", "--plugin", PLUGIN, "--include", "no_args", many], check=False, env=env)
        check(p.returncode == 0 and "Summary: 20 passed, 0 failed" in p.stdout, "mate replay runs mate-replay")
    else:
        print("plugins cannot be loaded in this (static) build: the linked-in handlers are used")


def test_example_plugin():
    """the example plugin of libmate(3), built from the page (mk/replay.mk)"""
    EXAMPLE = build_path("tests", ".libs", "plugin-man-example.so")

    def f_tensor(dt, vals, sid):
        fmt, size = {"float32": ("<%df", 4), "float64": ("<%dd", 8)}[dt]
        raw = struct.pack(fmt % len(vals), *vals)
        return {"type": "tensor", "dtype": dt, "shape": [len(vals)], "stride": [1], "offset": 0,
                "storage": sid, "storage_nbytes": len(raw), "hex": raw.hex()}

    def write_st(path, tensors):
        items = [[{"type": "str", "value": k}, v] for k, v in tensors.items()]
        with open(path + ".json", "w") as f:
            json.dump({"root": {"type": "dict", "ordered": False, "items": items}, "metadata": None}, f)
        run([TOOL, "write", path + ".json", path])
        os.remove(path + ".json")

    def example_dump(root, i, fn, inputs, tin=None, tout=None, outputs=None, self_id=None):
        """A completed call of fn: tin and tout map keys to (dtype, values) tensors."""
        extra = {} if self_id is None else {"self_id": self_id}
        name = write_dump(root, i, fn, "completed", inputs, outputs or {}, extra)
        d = os.path.join(root, name)
        for stem, ts, listed in (("inputs", tin, "input_tensor_keys"), ("outputs", tout, "output_tensor_keys")):
            if ts:
                write_st(os.path.join(d, stem + ".safetensors"),
                         {k: f_tensor(dt, vals, 0) for k, (dt, vals) in ts.items()})
                meta = os.path.join(d, "metadata.jsonl")
                text = open(meta).read().replace('"%s": []' % listed, '"%s": %s' % (listed, json.dumps(list(ts))))
                open(meta, "w").write(text)

    # The example as a dlopen()ed plugin, or linked into tests/mate-replay-example
    # where nothing can be dlopen()ed (static and sanitizer builds).
    check(os.path.exists(EXAMPLE) or not HAVE_PLUGIN, "libmate(3)'s example plugin was built: %s" % EXAMPLE)
    EX_REPLAY = [REPLAY, "--plugin", EXAMPLE] if os.path.exists(EXAMPLE) else [build_path("tests", "mate-replay-example")]
    ex = os.path.join(work, "example")
    os.makedirs(ex)
    for i, (dt, factor, out) in enumerate([("float32", None, [2, 4, 6]), ("float32", 3, [3, 6, 9]),
                                           ("float64", None, [2, 4, 6])]):
        example_dump(ex, i, "scale", {} if factor is None else {"kwarg_factor": factor},
                     tin={"arg_0": (dt, [1, 2, 3])}, tout={"result": (dt, out)})
    # a Scaler object (self_id 7) made with factor 4 and run twice; one (self_id 8) never made
    example_dump(ex, 3, "Scaler.__init__", {"kwarg_factor": 4}, outputs={"result": None}, self_id=7)
    example_dump(ex, 4, "Scaler.run", {}, tin={"arg_1": ("float32", [1, 2, 3])},
                 tout={"result": ("float32", [4, 8, 12])}, self_id=7)
    example_dump(ex, 5, "Scaler.run", {}, tin={"kwarg_x": ("float32", [0.5, -1])},
                 tout={"result": ("float32", [2, -4])}, self_id=7)
    example_dump(ex, 6, "Scaler.run", {}, tin={"arg_1": ("float32", [1])},
                 tout={"result": ("float32", [2])}, self_id=8)
    p = run(EX_REPLAY + [ex], check=False)
    lines = p.stdout.splitlines()
    check(p.returncode == 1 and len(lines) == 9, "man page plugin: exit %d %r %s" % (p.returncode, lines, p.stderr))
    lines += [""] * 9
    check(lines[0].endswith("Passed (bit-exact)") and lines[1].endswith("Passed (bit-exact)"),
          "the example replays scale(): %r" % lines)
    check(lines[2].endswith("Unsupported: scale: only float32"), "and declines float64: %r" % lines)
    check(lines[3].startswith("[4] Scaler.__init__ ") and " Passed" in lines[3], "Scaler.__init__: %r" % lines)
    check(lines[4].endswith("Passed (bit-exact)") and lines[5].endswith("Passed (bit-exact)"),
          "Scaler.run finds the object's factor: %r" % lines)
    check(lines[6].endswith("Unsupported: Scaler.run: __init__ was not replayed"),
          "an object never made: %r" % lines)
    check(lines[8] == "Summary: 5 passed, 2 failed (2 unsupported)", "summary: %r" % lines[8])
    # -j 4: the calls on the object still run in order, on one thread
    p4 = run(EX_REPLAY + ["-j", "4", ex], check=False)
    check(p4.stdout == p.stdout, "-j 4 as -j 1: %r" % p4.stdout)
    p = run(EX_REPLAY + ["--include", "Scaler.run", ex], check=False)
    check("Summary: 0 passed, 3 failed (3 unsupported)" in p.stdout, "run without __init__: %r" % p.stdout)


def test_missing_outputs():
    """a record that lists outputs its files lack: never Passed"""
    # (an empty outputs.pt; an in-place file without the argument listed). A call
    # that returned None has no outputs file and lists none: that one passes ([6] above).
    EMPTY = {"root": {"type": "dict", "ordered": False, "items": []}, "metadata": None}
    lack = os.path.join(work, "lacking")
    os.makedirs(lack)
    shutil.copytree(os.path.join(FIXTURE, NAMES[0]), os.path.join(lack, NAMES[0]))
    with open(os.path.join(work, "empty.json"), "w") as f:
        json.dump(EMPTY, f)
    run([TOOL, "write", os.path.join(work, "empty.json"), os.path.join(lack, NAMES[0], "outputs.pt")])
    p = run(RP + [lack], check=False)
    check(p.returncode == 1 and "Passed" not in p.stdout and "Summary: 0 passed, 1 failed (1 error)" in p.stdout,
          "outputs.pt without the listed result is no pass: exit %d %r" % (p.returncode, p.stdout))
    check("Error: outputs.pt lacks 'result', which the record lists" in p.stdout,
          "the missing output is named as mate-list-dumps -d names it: %r" % p.stdout)
    p = run([LIST, "--details", lack], check=False)
    check(p.returncode == 1 and "Problem: outputs.pt lacks 'result', which the record lists" in p.stdout,
          "list-dumps -d reports the missing output: exit %d %r" % (p.returncode, p.stdout))
    p = run([LIST, "--details", "--jsonl", lack], check=False)
    check(p.returncode == 1 and json.loads(p.stdout)["problem"] == "outputs.pt lacks 'result', which the record lists",
          "--jsonl problem: %r" % p.stdout)
    inpl = write_dump(lack, 9, "no_args", "completed", {}, {"result": None},
                      {"tensor_info": {"input_tensor_keys": [], "output_tensor_keys": [],
                                       "inplace_tensor_keys": ["arg_0", "arg_1"], "input_size_bytes": 0}})
    run([TOOL, "write", os.path.join(work, "empty.json"), os.path.join(lack, inpl, "inplace.pt")])
    p = run(RP + [os.path.join(lack, inpl)], check=False)
    check(p.returncode == 1 and "Passed" not in p.stdout and "inplace.pt lacks 'arg_0'" in p.stdout,
          "an in-place file without the listed arguments is no pass: %r" % p.stdout)
    p = run([LIST, "--details", os.path.join(lack, inpl)], check=False)
    check(p.returncode == 1 and "Problem: inplace.pt lacks 2 tensors the record lists ('arg_0', ...)" in p.stdout,
          "list-dumps -d reports the missing in-place tensors: exit %d %r" % (p.returncode, p.stdout))

    shutil.rmtree(work)


run_cases(test_list_dumps, test_torn_records, test_mate_verb, test_replay, test_example_plugin,
          test_missing_outputs)
