"""`keel cache report` as a user runs it: a real process, real files, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.trace import TraceSlot, record_for_request
from harness.types import Message, ModelRequest, ToolSpec

REPO = Path(__file__).resolve().parents[3]


def keel(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "KEEL_HOME": str(home)}
    env.pop("KEEL_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "harness", "cache", "report", *args],
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
