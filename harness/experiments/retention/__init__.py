# The retention eval (`keel eval retention`): does the flush keep what a compression removes?
# `script` (what is replayed — a LoCoMo conversation or a scenario — and its questions),
# `run` (one arm through a real session: replay, compress, ask), `arms` (the arms side by
# side, `run_retention`), `scores` (LoCoMo F1, answer retained), `costs` (the compression's
# cache costs from the arm's trace), `report` (per-arm figures, JSON), `shared_replies` (one
# reply per identical temperature-0 request across the arms).
# The long-session form (`--compressions K`, the default of the CLI): `facts` (facts files and
# the local-flush matcher), `items` (what is scored: facts or questions, said at a line),
# `long` (one arm through K real compressions, a snapshot after each), `longrun` (the arms
# side by side, resumable state), `outcomes` (per-item outcomes by depth, gains), `stats`
# (paired bootstrap).
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
from harness.experiments.retention.facts import (
    FactConversation,
    PlantedFact,
    fact_in,
    fact_in_text,
    load_facts,
)
from harness.experiments.retention.items import Item, LongReplay, fact_groups, facts_replay, questions_replay
from harness.experiments.retention.longrun import (
    LONG_ARMS,
    LongArmName,
    LongOptions,
    LongState,
    run_long_retention,
)
from harness.experiments.retention.outcomes import DepthRow, Outcome, depth_rows, depth_table, final_gain
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
from harness.experiments.retention.stats import Interval, paired_bootstrap

__all__ = [
    "FLUSH_ARMS",
    "LONG_ARMS",
    "RETENTION_ARMS",
    "RETENTION_SOURCES",
    "ArmFigures",
    "DepthRow",
    "FactConversation",
    "Interval",
    "Item",
    "LongArmName",
    "LongOptions",
    "LongReplay",
    "LongState",
    "Outcome",
    "PlantedFact",
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
    "depth_rows",
    "depth_table",
    "fact_groups",
    "fact_in",
    "fact_in_text",
    "facts_replay",
    "final_gain",
    "load_facts",
    "load_replay",
    "model_config",
    "paired_bootstrap",
    "questions_replay",
    "replay_locomo",
    "retained",
    "retention_json",
    "run_long_retention",
    "run_retention",
]
