"""`keel cache report` and `keel cache lint` as a user runs them: a real process, real files,
real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tokenizers import Tokenizer

from harness.trace import TraceSlot, record_for_request
from harness.types import Message, ModelRequest, ToolSpec
from tests.harness.cachemeter.meterkit import build_bpe

REPO = Path(__file__).resolve().parents[4]


def keel(*args: str, home: Path, verb: str = "report") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "KEEL_HOME": str(home)}
    env.pop("KEEL_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "harness", "cache", verb, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_trace(path: Path) -> None:
    system = "You are keel. " * 100 + "MEMORY: tea"
    slots = [
        TraceSlot(name="identity", start=0, end=1400),
        TraceSlot(name="memory", start=1400, end=len(system)),
    ]
    lines = []
    for n in range(1, 4):
        sys_n = system if n < 3 else system.replace("tea", "coffee")
        req = ModelRequest(
            system=sys_n,
            messages=tuple(Message("user", f"question {k} " * 30) for k in range(n)),
            tools=(ToolSpec("memory", "save facts"),),
        )
        record = record_for_request(
            req, session_id="s", turn=n, model="gpt-4o", slots=slots, timestamp=float(n)
        )
        lines.append(record.model_dump_json())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_report_prints_tables_writes_json_and_a_plot(home: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(trace)
    out_json, out_png = tmp_path / "report.json", tmp_path / "plot.png"
    proc = keel(
        str(trace), "--tokenizer", "chars", "--json", str(out_json), "--plot", str(out_png), home=home
    )
    assert proc.returncode == 0, proc.stderr
    assert "cache meter — 3 requests" in proc.stdout
    assert "system_changed:memory" in proc.stdout
    assert "by phase (hit ratio)" in proc.stdout
    assert "steady state" in proc.stdout
    data = json.loads(out_json.read_text(encoding="utf-8"))
    assert data["requests"][2]["content"]["reason"] == "system_changed:memory"
    assert data["requests"][0]["price"] == "gpt-4o"
    assert out_png.read_bytes()[:4] == b"\x89PNG"


def test_json_to_stdout_is_clean_json(home: Path, tmp_path: Path) -> None:
    trace = tmp_path / "chat.jsonl"
    system = {"role": "system", "content": "be brief " * 50}
    user, reply = {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}
    lines = [
        {"model": "gpt-4o", "messages": [system, user]},
        {"model": "gpt-4o", "messages": [system, user, reply]},
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    proc = keel(
        str(trace),
        "--tokenizer",
        "chars",
        "--renderer",
        "chatml",
        "--sim",
        "ideal,llamacpp",
        "--json",
        "-",
        home=home,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["simulators"] == ["ideal", "llamacpp"]
    assert data["renderer"] == "chatml"
    assert data["requests"][1]["sims"]["ideal"]["reason"] == "none"


def test_a_missing_trace_is_an_error_that_names_it(home: Path, tmp_path: Path) -> None:
    proc = keel(str(tmp_path / "nope.jsonl"), "--tokenizer", "chars", home=home)
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr
    assert "nope.jsonl" in proc.stderr
    assert proc.stdout == ""


def test_a_garbage_line_is_an_error_that_names_the_line(home: Path, tmp_path: Path) -> None:
    trace = tmp_path / "bad.jsonl"
    write_trace(trace)
    with trace.open("a", encoding="utf-8") as fh:
        fh.write("this is not json\n")
    proc = keel(str(trace), "--tokenizer", "chars", "--sim", "vllm,bogus", home=home)
    assert proc.returncode == 2
    assert "unknown simulator 'bogus'" in proc.stderr
    proc = keel(str(trace), "--tokenizer", "chars", home=home)
    assert proc.returncode == 2
    assert "bad.jsonl:4: not valid JSON" in " ".join(proc.stderr.split())


def test_lint_quotes_the_habit_and_exits_non_zero(home: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(trace)  # the memory slot changes from tea to coffee on the third request
    proc = keel(str(trace), home=home, verb="lint")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "3 requests, 1 habit, 0 notes" in out
    assert "✗ memory-write: memory written into the system prompt mid-session — 1 request" in out
    assert "line 3 (against line 2), system prompt, slot 'memory'" in out
    assert "- " in out and "MEMORY: tea" in out
    assert "+ " in out and "MEMORY: coffee" in out
    assert "fix: freeze the memory snapshot" in out


def test_lint_on_a_clean_trace_exits_zero_and_json_goes_to_stdout(home: Path, tmp_path: Path) -> None:
    trace = tmp_path / "chat.jsonl"
    system = {"role": "system", "content": "be brief"}
    user, reply = {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}
    lines = [
        {"model": "gpt-4o", "messages": [system, user]},
        {"model": "gpt-4o", "messages": [system, user, reply, {"role": "user", "content": "more"}]},
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    proc = keel(str(trace), home=home, verb="lint")
    assert proc.returncode == 0, proc.stderr
    assert "no cache-breaking habit found" in proc.stdout
    lines[1]["model"] = "gpt-4o-mini"
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    proc = keel(str(trace), "--json", "-", home=home, verb="lint")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["schema"] == "keel.cache-lint/1"
    assert [f["rule"] for f in data["findings"]] == ["model-switch"]
    assert data["findings"][0]["occurrences"][0]["added"] == ["gpt-4o-mini"]


def test_lint_notes_fail_only_with_strict(home: Path, tmp_path: Path) -> None:
    trace = tmp_path / "flush.jsonl"
    tools = (ToolSpec("memory", "save"), ToolSpec("search", "find"))
    turn = ModelRequest(system="You are keel.", messages=(Message("user", "hi"),), tools=tools)
    flush = ModelRequest(
        system="You are keel.",
        messages=(Message("user", "hi"), Message("user", "flush")),
        tools=tools[:1],  # the memory_only flush: the memory tool alone
        purpose="flush",
    )
    records = [record_for_request(r, session_id="s", turn=1, model="m") for r in (turn, flush)]
    trace.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    proc = keel(str(trace), home=home, verb="lint")
    assert proc.returncode == 0, proc.stderr
    assert "• flush-prefix" in proc.stdout
    assert "compression.flush: cache_safe" in " ".join(proc.stdout.split())
    assert keel(str(trace), "--strict", home=home, verb="lint").returncode == 1


def test_lint_of_a_missing_trace_is_an_error_that_names_it(home: Path, tmp_path: Path) -> None:
    proc = keel(str(tmp_path / "nope.jsonl"), home=home, verb="lint")
    assert proc.returncode == 2
    assert "nope.jsonl" in proc.stderr


def test_report_reads_a_hugging_face_tokenizer_directory_and_its_chat_template(
    home: Path, tmp_path: Path
) -> None:
    folder = build_bpe(tmp_path / "tok")
    trace = tmp_path / "chat.jsonl"
    line = {
        "model": "m",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
        "tools": [
            {"type": "function", "function": {"name": "search", "description": "find", "parameters": {}}}
        ],
    }
    trace.write_text(json.dumps(line) + "\n", encoding="utf-8")
    proc = keel(str(trace), "--tokenizer", str(folder), "--renderer", "jinja", "--json", "-", home=home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["tokenizer"] == "hf:tok"
    text = (
        "<s><|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    expected = Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text, add_special_tokens=False).ids
    assert data["requests"][0]["prompt_tokens"] == len(
        expected
    )  # tools dropped: the template never reads them
    assert any("never uses `tools`" in n for n in data["notices"])
    proc = keel(str(trace), "--tokenizer", str(tmp_path / "missing"), home=home)
    assert proc.returncode == 2
    assert "nothing is downloaded" in " ".join(proc.stderr.split())


def test_report_sweeps_the_timeout_and_routes_replicas_with_tables_json_and_plots(
    home: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(trace)  # requests one second apart
    out_json, out_png = tmp_path / "report.json", tmp_path / "plot.png"
    proc = keel(
        str(trace),
        "--tokenizer",
        "chars",
        "--sim",
        "ideal,sglang,openai",
        "--ttl-sweep",
        "0.5s,1h",
        "--replicas",
        "1,2",
        "--json",
        str(out_json),
        "--plot",
        str(out_png),
        home=home,
    )
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "sglang: hit ratio and cost against the cache timeout" in out
    assert "replicas: hit ratio and cost per routing policy and number of servers" in out
    data = json.loads(out_json.read_text(encoding="utf-8"))
    sweep = data["ttl_sweep"]
    assert sweep["ttls"] == [0.5, 3600.0] and sweep["simulators"] == ["sglang", "openai"]
    half, hour = sweep["rows"]["sglang"]
    assert (half["idle"]["requests"], hour["idle"]["requests"]) == (2, 0)  # every 1 s gap outlasts 0.5 s
    runs = {(r["policy"], r["replicas"]): r for r in data["replicas"]["runs"]}
    # request 1 lands on the server without request 0; request 2 (memory changed) shares as much with both
    assert runs[("round_robin", 2)]["routed_away"]["requests"] == 1
    assert [r["server"] for r in runs[("round_robin", 2)]["requests"]] == [0, 1, 0]
    assert runs[("session", 2)]["hit_ratio"] == runs[("session", 1)]["hit_ratio"]
    for path in (out_png, tmp_path / "plot-ttl.png", tmp_path / "plot-replicas.png"):
        assert path.read_bytes()[:4] == b"\x89PNG", path


def test_report_reads_a_claude_code_transcript_and_names_the_lines_it_skipped(home: Path) -> None:
    fixture = REPO / "tests" / "harness" / "cachemeter" / "traces" / "data" / "claude_code_session.jsonl"
    proc = keel(str(fixture), "--tokenizer", "chars", "--sim", "ideal,anthropic", "--json", "-", home=home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["requests"]) == 3
    assert data["reported"]["cache_read"] == 14_210
    assert any("claude_code_session.jsonl:9: skipped: not valid JSON" in n for n in data["notices"])
    assert any("carry neither the system prompt" in n for n in data["notices"])


def test_several_traces_are_interleaved_by_time_each_session_kept_apart(home: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_trace(first)
    lines = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line["timestamp"] += 0.5
    second.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    proc = keel(str(first), str(second), "--tokenizer", "chars", "--sim", "ideal", "--json", "-", home=home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["session_id"] for r in data["requests"]] == ["a/s", "b/s"] * 3
    assert [r["timestamp"] for r in data["requests"]] == [1.0, 1.5, 2.0, 2.5, 3.0, 3.5]


def test_lint_names_tools_changed_mid_session_with_the_tokens_it_cost(home: Path, tmp_path: Path) -> None:
    trace = tmp_path / "tools.jsonl"
    user = {"role": "user", "content": "hi " * 400}

    def tool(name: str) -> dict[str, object]:
        return {"type": "function", "function": {"name": name, "description": f"{name}.", "parameters": {}}}

    lines = [
        {"model": "gpt-4o", "messages": [user], "tools": [tool("read"), tool("search")]},
        {"model": "gpt-4o", "messages": [user], "tools": [tool("read"), tool("search"), tool("write")]},
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    proc = keel(str(trace), home=home, verb="lint")
    assert proc.returncode == 1, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "tools-changed: tools changed mid-session: added, removed or their schema changed" in out
    assert "tool list: 1 added (~" in out and "tokens re-read)" in out
    assert "+ tool 'write'" in out
