#!/usr/bin/env python3
"""The results file of `scripts/gpu_check.sh`: reads what the steps left in OUT, however
little, and writes OUT/results.json and OUT/results.md (atomically, after every step).

    python3 tools/gpu_report.py write --out OUT          # results.json + results.md
    python3 tools/gpu_report.py check --out OUT --expect tests/cuda/fixtures/expected.json
    python3 tools/gpu_report.py status --out OUT          # exit 0 iff the run is healthy

Inputs in OUT (all optional; every reader tolerates a missing or truncated file):
  steps.jsonl        one line per step, appended by gpu_check.sh: name, kind, rc, seconds,
                     limit_s, timed_out, log, json, note;
  gtest_<name>.json  --gtest_output=json of one test process (one kernel family);
  <step>.log         a step's output (sanitizer refusals are recognized here);
  bench_cuda.jsonl   bench_cuda's per-case lines (written and flushed as each case ends);
  bench_cuda.json    Google Benchmark's JSON (complete or cut off mid-file);
  torch.jsonl        tools/torch_baseline.py's per-figure lines;
  env.txt            device, driver, toolchain;
  cuda_resources.md  the build's register table (tools/cuda_resources.py).

Test accounting is read from the gtest JSON, never from text: a test passes when it ran
to completion with no failure; a SKIPPED test is never counted as passed. The one skip
expected on a GPU machine is the no-device test (EXPECTED_SKIPS); any other skip means the
device was not seen and fails its step.
"""
import argparse
import json
import math
import os
import re
import sys
import time

# Tests that skip by design where a device IS present (tests/cuda/cuda_kernels_test.cpp).
EXPECTED_SKIPS = {"CudaNoDevice.RunThrowsRuntimeErrorSayingNoDevice"}

# compute-sanitizer refusing the machine (not a finding about our kernels): recorded as a
# skipped step. Its findings end in "ERROR SUMMARY: N errors".
SANITIZER_REFUSAL = re.compile(
    r"device (is )?not supported|not supported on this (device|platform|gpu)|unsupported (device|gpu)|"
    r"could not (attach|find the injection)|unable to find injection library|"
    r"insufficient.privilege|CUPTI_ERROR_(INSUFFICIENT_PRIVILEGES|NOT_SUPPORTED|NOT_INITIALIZED)",
    re.IGNORECASE)
SANITIZER_ERRORS = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")

HEAD_DIMS = (64, 128)
SEQ_LENS = (4096, 8192, 16384, 32768, 65536)
WINDOWS = (256, 1024)

BAD = ("fail", "timeout", "crashed", "not_run")


# ---------------------------------------------------------------- tolerant readers

def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def read_jsonl(path):
    """Every complete JSON object of a JSON-lines file; a cut-off last line is dropped."""
    out = []
    for line in read_text(path).splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # the line a kill cut in half
        if isinstance(obj, dict):
            out.append(obj)
    return out


def read_json_prefix(path, array_key):
    """(header, items) of a JSON file that may be cut off anywhere: the complete objects of
    the array under `array_key`, decoded one by one until the text ends, and the complete
    scalar/object fields before it (e.g. Google Benchmark's "context")."""
    text = read_text(path)
    if not text:
        return {}, []
    try:
        whole = json.loads(text)
        return {k: v for k, v in whole.items() if k != array_key}, list(whole.get(array_key, []))
    except ValueError:
        pass
    dec = json.JSONDecoder()
    header = {}
    m = re.search(r'"context"\s*:\s*', text)
    if m:
        try:
            header["context"], _ = dec.raw_decode(text, m.end())
        except ValueError:
            pass
    m = re.search(r'"%s"\s*:\s*\[' % re.escape(array_key), text)
    items = []
    if not m:
        return header, items
    pos = m.end()
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            obj, pos = dec.raw_decode(text, pos)
        except ValueError:
            break  # the object the kill cut in half
        items.append(obj)
    header["truncated"] = True
    return header, items


def read_gtest(path):
    """Counts of one gtest JSON file: passed / failed / skipped (expected or not), with the
    names of failed and unexpectedly skipped tests. None when there is no readable file."""
    text = read_text(path)
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None  # gtest writes its JSON at exit: a partial file means a crash
    res = dict(passed=0, failed=0, skipped=0, expected_skips=0, unexpected_skips=0, not_run=0,
               failures=[], unexpected=[])
    for suite in data.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{t.get('classname', suite.get('name'))}.{t.get('name')}"
            if t.get("failures"):
                res["failed"] += 1
                msg = [l.strip() for l in t["failures"][0].get("failure", "").strip().splitlines() if l.strip()]
                res["failures"].append(f"{name}: {' / '.join(msg[:6])}"[:400])
            elif t.get("result") == "SKIPPED":
                res["skipped"] += 1
                if name in EXPECTED_SKIPS:
                    res["expected_skips"] += 1
                else:
                    res["unexpected_skips"] += 1
                    res["unexpected"].append(name)
            elif t.get("status") == "RUN" and t.get("result", "COMPLETED") == "COMPLETED":
                res["passed"] += 1
            else:
                res["not_run"] += 1  # filtered out or disabled: neither passed nor skipped
    return res


def load_bench(out):
    """bench_cuda's records: the JSON lines first (flushed per case), then whatever the
    Google Benchmark JSON holds that the lines lack. Keyed by benchmark name."""
    recs = {}
    for b in read_jsonl(os.path.join(out, "bench_cuda.jsonl")):
        if "name" in b:
            recs[b["name"]] = b
    header, items = read_json_prefix(os.path.join(out, "bench_cuda.json"), "benchmarks")
    for b in items:
        if isinstance(b, dict) and "name" in b and b["name"] not in recs:
            recs[b["name"]] = b
    out_recs = []
    for name, b in recs.items():
        parts = name.split("/")
        if len(parts) < 4:
            continue
        family, kernel, dpart, npart = parts[:4]
        try:
            d, n = int(dpart[1:]), int(npart[1:])
        except ValueError:
            continue
        err = b.get("error_occurred") or b.get("skipped")
        ms = None if err else b.get("ms", b.get("real_time"))
        dtype = "fp32" if kernel.endswith(("_f32", "_dense")) and "_bf16" not in kernel else (
            "fp16" if kernel.endswith("_f16") else "bf16")
        out_recs.append(dict(impl=kernel, family=family, dtype=dtype, head_dim=d, seq_len=n, ms=ms,
                             tflops=b.get("TFLOPs"), note=b.get("error_message", "") or ""))
    return header.get("context", {}), out_recs, bool(header.get("truncated"))


def load_torch(out):
    recs, meta, errors = [], {}, []
    for r in read_jsonl(os.path.join(out, "torch.jsonl")):
        kind = r.get("kind", "record")
        if kind == "meta":
            meta.update({k: v for k, v in r.items() if k != "kind"})
        elif kind == "error":
            errors.append(r.get("what", "") + ": " + r.get("error", ""))
        else:
            recs.append(r)
    return meta, recs, errors


# ---------------------------------------------------------------- step statuses

def classify(step, out):
    """pass / fail / timeout / crashed / skipped / not_run for one step record."""
    s = dict(step)
    rc = s.get("rc")
    note = s.get("note", "")
    if s.get("not_run"):
        s["status"] = "not_run"
        return s
    if s.get("timed_out"):
        s["status"] = "timeout"
    elif rc == 0:
        s["status"] = "pass"
    else:
        s["status"] = "fail"
    kind = s.get("kind", "")
    log = read_text(os.path.join(out, s["log"])) if s.get("log") else ""
    if kind == "gtest":
        g = read_gtest(os.path.join(out, s.get("json", "")))
        s["tests"] = g
        if g is None:
            if s["status"] != "timeout":
                s["status"] = "crashed" if rc not in (0, None) else "fail"
            note = note or "no gtest JSON: the process died before writing it"
        else:
            if g["failed"] or (rc not in (0, None) and not s.get("timed_out")):
                s["status"] = "fail"
            elif g["unexpected_skips"]:
                s["status"] = "fail"
                note = f"{g['unexpected_skips']} test(s) skipped that must run on a GPU machine (device not seen?)"
            elif g["passed"] == 0:
                s["status"] = "fail"
                note = note or "no test ran"
    elif kind == "sanitizer":
        found = SANITIZER_ERRORS.findall(log)
        errors = sum(int(x) for x in found)
        if SANITIZER_REFUSAL.search(log) and not errors:
            s["status"] = "skipped"
            line = next((l for l in log.splitlines() if SANITIZER_REFUSAL.search(l)), "")
            note = "compute-sanitizer refused this machine: " + line.strip().lstrip("= ")[:200]
        elif errors:
            s["status"] = "fail"
            note = f"{errors} sanitizer error(s)"
        s["sanitizer_errors"] = errors
    if s["status"] in ("fail", "timeout", "crashed") and not note:
        tail = [l.strip() for l in log.splitlines() if l.strip()]
        note = ("last line of its log: " + tail[-1][:200]) if tail else "no output"
    s["note"] = note
    return s


# ---------------------------------------------------------------- targets

def window_nnz(n, w):
    return sum(min(i + w, n - 1) - max(i - w, 0) + 1 for i in range(n))


def ratio(a, b):
    return (a / b) if (a and b) else None


def summarize(ours, theirs):
    def find(recs, impl, family, d, n, dtype=None):
        for r in recs:
            if r.get("impl") == impl and r.get("family") == family and r.get("head_dim") == d and \
                    r.get("seq_len") == n and (dtype is None or r.get("dtype") == dtype) and r.get("ms"):
                return r
        return None

    rows = []
    for d in HEAD_DIMS:
        for n in SEQ_LENS:
            dense = find(ours, "cuda_c04_flash_dense_bf16", "dense", d, n)
            sdpa = find(theirs, "torch_sdpa", "dense", d, n, "bf16")
            row = dict(head_dim=d, seq_len=n, dense_bf16_vs_sdpa=ratio(sdpa and sdpa["ms"], dense and dense["ms"]))
            for w in WINDOWS:
                win = find(ours, "cuda_c05_window_bf16", f"window_w{w}", d, n)
                bound = (n * n) / window_nnz(n, w)
                speedup = ratio(dense and dense["ms"], win and win["ms"])
                row[f"window_w{w}_speedup_over_dense"] = speedup
                row[f"window_w{w}_flop_bound"] = bound
                row[f"window_w{w}_fraction_of_bound"] = ratio(speedup, bound)
                flex = find(theirs, "torch_flex", f"window_w{w}", d, n)
                row[f"window_w{w}_vs_flex"] = ratio(flex and flex["ms"], win and win["ms"])
            bb = find(ours, "cuda_c07_bigbird_bf16", "bigbird_b64_r3", d, n)
            flex = find(theirs, "torch_flex", "bigbird_b64_r3", d, n)
            row["bigbird_bf16_vs_flex"] = ratio(flex and flex["ms"], bb and bb["ms"])
            if any(v is not None for k, v in row.items() if k not in ("head_dim", "seq_len") and "bound" not in k):
                rows.append(row)
    return rows


# ---------------------------------------------------------------- writing

def fmt(x, digits=2):
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def atomic_write(path, text):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def build(out):
    steps = [classify(s, out) for s in read_jsonl(os.path.join(out, "steps.jsonl"))]
    context, ours, bench_truncated = load_bench(out)
    tmeta, theirs, terrors = load_torch(out)
    meta = {}
    for line in read_text(os.path.join(out, "run.json")).splitlines()[:1]:
        try:
            meta = json.loads(line)
        except ValueError:
            pass
    counts = dict(passed=0, failed=0, skipped=0, expected_skips=0, unexpected_skips=0)
    for s in steps:
        for k in counts:
            counts[k] += (s.get("tests") or {}).get(k, 0)
    bad = [s["name"] for s in steps if s["status"] in BAD]
    prev = {}
    try:
        with open(os.path.join(out, "results.json")) as f:
            prev = json.load(f)
    except (OSError, ValueError):
        pass
    return dict(
        date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        command=meta.get("command", "bash scripts/gpu_check.sh"), mode=meta.get("mode", "gpu"),
        deadline_s=meta.get("deadline_s"), started=meta.get("started"), git=meta.get("git"),
        env=read_text(os.path.join(out, "env.txt")).strip().splitlines(),
        writes=int(prev.get("writes", 0)) + 1,
        healthy=not bad and bool(steps), bad_steps=bad, tests=counts, steps=steps,
        bench_context=context, bench_truncated=bench_truncated, ours=ours,
        torch=tmeta, torch_records=theirs, torch_errors=terrors, targets=summarize(ours, theirs),
        registers=[l for l in read_text(os.path.join(out, "cuda_resources.md")).splitlines() if l.startswith("|")])


def markdown(r):
    L = [f"# gpu-check results — {r['date']}", "",
         f"Command: `{r['command']}` ({r['mode']}); deadline {r['deadline_s']} s; git {r['git']}; "
         f"results written {r['writes']} time(s).", ""]
    L += ["```"] + r["env"][:12] + ["```", ""]
    t = r["tests"]
    L += [f"**{'HEALTHY' if r['healthy'] else 'NOT HEALTHY: ' + ', '.join(r['bad_steps'])}** — tests: "
          f"{t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped "
          f"({t['expected_skips']} expected, {t['unexpected_skips']} unexpected). A skip is never a pass.", "",
          "| step | status | rc | seconds / limit | tests (pass/fail/skip) | note |", "|---|---|---|---|---|---|"]
    for s in r["steps"]:
        g = s.get("tests")
        tc = f"{g['passed']}/{g['failed']}/{g['skipped']}" if g else ""
        L.append(f"| {s['name']} | {s['status']} | {s.get('rc', '')} | {s.get('seconds', '')} / {s.get('limit_s', '')} | "
                 f"{tc} | {(s.get('note') or '').replace('|', '/')} |")
    fails = [(s["name"], f) for s in r["steps"] for f in ((s.get("tests") or {}).get("failures", []) +
                                                           (s.get("tests") or {}).get("unexpected", []))]
    if fails:
        L += ["", "## Failed or unexpectedly skipped tests (first 40)", ""]
        L += [f"- {n}: `{f}`" for n, f in fails[:40]]
    if r["targets"]:
        L += ["", "## Targets (docs/cuda.md; recorded, never asserted; > 1: ours faster)", "",
              "| head_dim | seq_len | dense bf16 / SDPA | w256 speedup / bound | w1024 speedup / bound | w256 / Flex | w1024 / Flex | BigBird / Flex |",
              "|---|---|---|---|---|---|---|---|"]
        for x in r["targets"]:
            L.append(f"| {x['head_dim']} | {x['seq_len']} | {fmt(x['dense_bf16_vs_sdpa'])} | "
                     f"{fmt(x['window_w256_speedup_over_dense'])} / {fmt(x['window_w256_flop_bound'], 1)} | "
                     f"{fmt(x['window_w1024_speedup_over_dense'])} / {fmt(x['window_w1024_flop_bound'], 1)} | "
                     f"{fmt(x['window_w256_vs_flex'])} | {fmt(x['window_w1024_vs_flex'])} | {fmt(x['bigbird_bf16_vs_flex'])} |")
    recs = r["ours"] + r["torch_records"]
    if recs or r["torch_errors"]:
        L += ["", "## All timings (ms; TFLOP/s over the FLOPs the pattern needs)"
              + (" — bench_cuda.json was cut off; complete cases kept" if r["bench_truncated"] else ""), "",
              "| impl | family | dtype | head_dim | seq_len | ms | TFLOP/s | note |", "|---|---|---|---|---|---|---|---|"]
        for x in sorted(recs, key=lambda x: (str(x.get("family")), x.get("head_dim") or 0, x.get("seq_len") or 0,
                                              str(x.get("impl")))):
            L.append(f"| {x.get('impl')} | {x.get('family')} | {x.get('dtype')} | {x.get('head_dim')} | "
                     f"{x.get('seq_len')} | {fmt(x.get('ms'), 3)} | {fmt(x.get('tflops'), 1)} | "
                     f"{str(x.get('note') or '').replace('|', '/')[:120]} |")
        for e in r["torch_errors"]:
            L.append(f"\nPyTorch side: {e[:300]}")
    if r.get("registers"):
        L += ["", "## Registers and spills (build/cuda_resources.md, from -Xptxas=-v)", ""] + r["registers"]
    return "\n".join(L) + "\n"


def write(out):
    r = build(out)
    atomic_write(os.path.join(out, "results.json"), json.dumps(r, indent=1) + "\n")
    atomic_write(os.path.join(out, "results.md"), markdown(r))
    return r


# ---------------------------------------------------------------- check (the dry run)

def check(out, expect_path):
    """Asserts the results file against tests/cuda/fixtures/expected.json; returns the list
    of mismatches (empty = the script's parsing and reporting did what it must)."""
    with open(os.path.join(out, "results.json")) as f:
        r = json.load(f)
    with open(expect_path) as f:
        e = json.load(f)
    bad = []
    steps = {s["name"]: s for s in r["steps"]}
    for name, want in e["steps"].items():
        s = steps.get(name)
        if s is None:
            bad.append(f"step {name}: missing from results.json")
            continue
        for key, val in want.items():
            got = (s.get("tests") or {}).get(key) if key in ("passed", "failed", "skipped", "expected_skips",
                                                             "unexpected_skips") else s.get(key)
            if key == "note_contains":
                if val.lower() not in (s.get("note") or "").lower():
                    bad.append(f"step {name}: note {s.get('note')!r} lacks {val!r}")
            elif key == "limit_at_most":
                if not (s.get("limit_s") is not None and s["limit_s"] <= val):
                    bad.append(f"step {name}: limit_s {s.get('limit_s')} > {val}")
            elif key == "seconds_at_most":
                if not (s.get("seconds") is not None and s["seconds"] <= val):
                    bad.append(f"step {name}: ran {s.get('seconds')} s > {val}")
            elif got != val:
                bad.append(f"step {name}: {key} = {got!r}, expected {val!r}")
    for key in ("healthy", "bench_truncated"):
        if key in e and r.get(key) != e[key]:
            bad.append(f"{key} = {r.get(key)!r}, expected {e[key]!r}")
    if "tests" in e:
        for key, val in e["tests"].items():
            if r["tests"].get(key) != val:
                bad.append(f"tests.{key} = {r['tests'].get(key)!r}, expected {val!r}")
    if "writes_at_least" in e and r["writes"] < e["writes_at_least"]:
        bad.append(f"results written {r['writes']} times, expected >= {e['writes_at_least']} (after every step)")
    for want in e.get("records", []):
        hits = [x for x in r["ours"] + r["torch_records"] if all(x.get(k) == v for k, v in want.items() if k != "ms_min")]
        if not hits:
            bad.append(f"no record matching {want}")
        elif "ms_min" in want and not all((x.get("ms") or 0) >= want["ms_min"] for x in hits):
            bad.append(f"record {want}: ms below {want['ms_min']}")
    if "records_count" in e:
        for who, n in e["records_count"].items():
            got = len(r["ours"] if who == "ours" else r["torch_records"])
            if got != n:
                bad.append(f"{who} records: {got}, expected {n}")
    if e.get("torch_errors_at_least") and len(r["torch_errors"]) < e["torch_errors_at_least"]:
        bad.append("the FlexAttention error was not recorded")
    for t in e.get("targets", []):
        row = next((x for x in r["targets"] if x["head_dim"] == t["head_dim"] and x["seq_len"] == t["seq_len"]), None)
        if row is None:
            bad.append(f"no target row for {t}")
            continue
        for k, v in t.items():
            if k in ("head_dim", "seq_len"):
                continue
            if row.get(k) is None or abs(row[k] - v) > 1e-6 * max(1.0, abs(v)):
                bad.append(f"target {t['head_dim']}/{t['seq_len']} {k} = {row.get(k)}, expected {v}")
    md = read_text(os.path.join(out, "results.md"))
    for needle in e.get("markdown_contains", []):
        if needle not in md:
            bad.append(f"results.md lacks {needle!r}")
    return bad


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("action", choices=["write", "check", "status"])
    p.add_argument("--out", required=True)
    p.add_argument("--expect", help="check: expected.json")
    a = p.parse_args()
    if a.action == "write":
        r = write(a.out)
        return 0 if r["healthy"] else 1
    if a.action == "status":
        r = build(a.out)
        return 0 if r["healthy"] else 1
    bad = check(a.out, a.expect)
    for b in bad:
        print("gpu_report check: MISMATCH:", b)
    print(f"gpu_report check: {'OK' if not bad else str(len(bad)) + ' mismatch(es)'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
