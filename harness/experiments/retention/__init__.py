# The retention eval (`keel eval retention`): does the flush keep what a compression removes?
# `script` (what is replayed — a LoCoMo conversation or a scenario — and its questions),
# `run` (one arm through a real session: replay, compress, ask), `arms` (the arms side by
# side, `run_retention`), `scores` (LoCoMo F1, answer retained), `costs` (the compression's
# cache costs from the arm's trace), `report` (per-arm figures, JSON), `shared_replies` (one
# reply per identical temperature-0 request across the arms).
from harness.experiments.retention.arms import (
    FLUSH_ARMS,
    RETENTION_ARMS,
    RetentionArm,
    RetentionArmName,
    RetentionOptions,
    RetentionResult,
    model_config,
    run_retention,
)
from harness.experiments.retention.report import ArmFigures, arm_figures, retention_json
from harness.experiments.retention.scores import RETENTION_SOURCES, answer_f1, retained
from harness.experiments.retention.script import (
    Question,
    RetentionReplay,
    ScriptLine,
    load_replay,
    replay_locomo,
)
from harness.experiments.retention.shared_replies import SharedReplies

__all__ = [
    "FLUSH_ARMS",
    "RETENTION_ARMS",
    "RETENTION_SOURCES",
    "ArmFigures",
    "Question",
    "RetentionArm",
    "RetentionArmName",
    "RetentionOptions",
    "RetentionReplay",
    "RetentionResult",
    "ScriptLine",
    "SharedReplies",
    "answer_f1",
    "arm_figures",
    "load_replay",
    "model_config",
    "replay_locomo",
    "retained",
    "retention_json",
    "run_retention",
]
