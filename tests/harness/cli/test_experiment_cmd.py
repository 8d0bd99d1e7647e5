"""`keel run`, `keel scenario` and `keel experiment` with the scripted model (offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from tests.subprocesses import run_python

SCENARIO = {
    "name": "tiny",
    "description": "three turns",
    # a tail of two messages and no protected head, so three turns leave a middle to compress
    "config": {"compression": {"protect_first_n": 0, "protect_last_n": 2}},
    "initial_memory": {"memory": ["Project is called tidewater"], "user": []},
    "turns": [
        {
            "user": "Hi, I'm Dana and my dog is Biscuit.",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "memory",
                            "arguments": {"action": "add", "target": "user", "content": "Dog is Biscuit"},
                        }
                    ]
                },
                {"say": "Nice to meet you, Dana. " + "Tell me about the project whenever you like. " * 12},
            ],
        },
        {
            "user": "What should I test first?",
            "replies": [{"say": "The ingest job."}],
            "memory_writes": [{"target": "memory", "content": "CI uses Python 3.12"}],
        },
        {"user": "Thanks.", "replies": [{"say": "Any time."}], "compress": True},
    ],
    "probes": [
        {"fact": "Dog is Biscuit", "target": "user", "turn": 1, "keyword": "Biscuit", "question": "Dog?"}
    ],
}


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_run_plays_a_scripted_scenario_and_reports_the_trace(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.json"
    code = main(
        ["--home", str(home), "run", str(_write(tmp_path, SCENARIO)), "--scripted", "--json", str(out)]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "Nice to meet you, Dana." in text
    assert "saved to user: Dog is Biscuit" in text
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert [t["turn"] for t in payload["turns"]] == [1, 2, 3]
    trace = Path(payload["trace"])
    assert trace.exists()
    run_home = trace.parent.parent
    assert run_home.parent == home / "runs"
    assert (run_home / "memories" / "USER.md").read_text(encoding="utf-8").strip() == "Dog is Biscuit"
    # the user's own memory was not touched
    assert not (home / "memories" / "USER.md").exists()


def test_run_with_use_home_plays_in_the_home_itself(tmp_path: Path, home: Path) -> None:
    assert (
        main(["--home", str(home), "run", str(_write(tmp_path, SCENARIO)), "--scripted", "--use-home"]) == 0
    )
    assert (home / "memories" / "USER.md").read_text(encoding="utf-8").strip() == "Dog is Biscuit"


def test_run_rejects_a_bad_scenario_naming_the_field(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {"name": "x", "turns": [{"user": ""}]}
    code = main(["--home", str(home), "run", str(_write(tmp_path, bad)), "--scripted"])
    assert code == 2
    assert "turns.0.user" in capsys.readouterr().err


def test_run_names_the_builtins_when_the_scenario_does_not_exist(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", str(home), "run", "no-such-scenario", "--scripted"]) == 2
    assert "synthetic-200" in capsys.readouterr().err


def test_scenario_list_and_show(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--home", str(home), "scenario", "list"]) == 0
    assert "synthetic-200 — 200 turns" in capsys.readouterr().out
    assert main(["--home", str(home), "scenario", "show", "synthetic-200", "--head", "2"]) == 0
    out = capsys.readouterr().out
    assert "forced compressions 1" in out


def test_scenario_from_locomo_builds_a_valid_scenario_outside_the_repo(
    locomo_path: Path, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "conv.yaml"
    assert (
        main(
            [
                "--home",
                str(home),
                "scenario",
                "from-locomo",
                str(locomo_path),
                "conv-26",
                "--sessions",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    from harness.experiments import load_scenario

    scenario = load_scenario(out)
    assert len(scenario.turns) > 10
    assert sum(t.compress for t in scenario.turns) == 1
    assert all(t.replies for t in scenario.turns)


def test_scenario_from_locomo_with_an_unknown_sample_lists_the_real_ones(
    locomo_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["--home", str(home), "scenario", "from-locomo", str(locomo_path), "conv-999", "--out", "-"])
        == 2
    )
    assert "conv-26" in capsys.readouterr().err


def test_experiment_policies_on_synthetic_turns_shows_frozen_far_above_live(
    tmp_path: Path, home: Path
) -> None:
    out = tmp_path / "exp.json"
    run_python(
        "-m",
        "harness",
        "experiment",
        "policies",
        "synthetic-200",
        "--turns",
        "60",
        "--out",
        str(tmp_path / "runs"),
        "--json",
        str(out),
        "--plot",
        str(tmp_path / "p.png"),
        env={"KEEL_HOME": str(home)},
        timeout_s=300,
    )
    arms = {a["label"]: a for a in json.loads(out.read_text(encoding="utf-8"))["arms"]}
    assert set(arms) == {"frozen", "invalidate_on_write", "live"}
    frozen, live = arms["frozen"], arms["live"]
    assert frozen["steady_hit_ratio"]["ideal"] >= 0.98
    assert live["steady_hit_ratio"]["ideal"] < frozen["steady_hit_ratio"]["ideal"] - 0.05
    assert live["prompt_tokens"]["ideal"] - live["reused_tokens"]["ideal"] > 2 * (
        frozen["prompt_tokens"]["ideal"] - frozen["reused_tokens"]["ideal"]
    )
    assert frozen["compressions"] == 1
    assert (tmp_path / "p.png").stat().st_size > 1000


def _flush_arms(home: Path, tmp_path: Path, *scenario: str) -> dict[str, dict[str, Any]]:
    """`keel experiment flush SCENARIO...` run to the end, its JSON report's arms by label."""
    out = tmp_path / "flush.json"
    argv = [
        "--home",
        str(home),
        "experiment",
        "flush",
        *scenario,
        "--out",
        str(tmp_path / "r"),
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    return {a["label"]: a for a in json.loads(out.read_text(encoding="utf-8"))["arms"]}


def test_experiment_flush_compares_modes_and_retention(tmp_path: Path, home: Path) -> None:
    arms = _flush_arms(home, tmp_path, str(_write(tmp_path, SCENARIO)))
    assert set(arms) == {"memory_only", "cache_safe", "off", "recall_not_persisted", "memory_last"}
    # the scripted model saved the probe fact in turn 1 already; every arm keeps it in memory
    assert all(a["retention"][0]["in_memory"] for a in arms.values())
    assert "flush" in arms["memory_only"]["by_purpose"]
    assert "summary" in arms["memory_only"]["by_purpose"]
    assert "flush" not in arms["off"]["by_purpose"]
    assert all(a["compressions"] == 1 for a in arms.values())


def test_experiment_with_a_missing_scenario_file_fails_cleanly(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", str(home), "experiment", "flush", "/nonexistent/s.yaml"]) == 2
    assert "no scenario" in capsys.readouterr().err


def test_without_a_flush_the_planted_facts_do_not_reach_memory(tmp_path: Path, home: Path) -> None:
    arms = _flush_arms(home, tmp_path, "synthetic-200", "--turns", "70")
    kept = {label: sum(p["in_memory"] for p in a["retention"]) for label, a in arms.items()}
    assert kept["memory_only"] == kept["cache_safe"] == len(arms["off"]["retention"]) > 0
    assert kept["off"] == 0

    # cache_safe's one flush request shares the turn's prefix; memory_only's pieces share
    # only the note-taker system prompt and the memory tool with each other, so the
    # conversation in every piece is prefilled anew
    def flush_tokens(arm: str) -> tuple[float, float]:
        flush = arms[arm]["by_purpose"]["flush"]
        return float(flush["prompt_tokens"]), float(flush["reused_tokens"]["llamacpp"])

    safe_prompt, safe_reused = flush_tokens("cache_safe")
    only_prompt, only_reused = flush_tokens("memory_only")
    assert safe_reused / safe_prompt > 0.9
    assert only_prompt - only_reused > 10 * (safe_prompt - safe_reused)
