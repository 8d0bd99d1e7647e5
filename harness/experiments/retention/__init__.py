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
from harness.experiments.retention.arms import RetentionOptions, run_retention
from harness.experiments.retention.facts import load_facts
from harness.experiments.retention.items import LongReplay, facts_replay, questions_replay
from harness.experiments.retention.longrun import LongOptions, LongState, run_long_retention
from harness.experiments.retention.script import RetentionReplay, load_replay

__all__ = [
    "LongOptions",
    "LongReplay",
    "LongState",
    "RetentionOptions",
    "RetentionReplay",
    "facts_replay",
    "load_facts",
    "load_replay",
    "questions_replay",
    "run_long_retention",
    "run_retention",
]
