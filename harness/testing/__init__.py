"""Test doubles for agents built on keel: a scripted model, a fake tokenizer, and fakes for
the session's ports with a builder that runs a real turn loop over them.

```python
from harness.testing import ScriptedModel, say, call_tool, make_session, run_turn

model = ScriptedModel([call_tool("memory", {"action": "add", ...}), say("Saved.")])
async with make_session(model, memory=FakeMemory()) as session:
    events = await run_turn(session, "Remember that I deploy on Fridays.")
model.assert_complete()
```

The fakes record what the session asked of them, so tests assert on the loop's behaviour
(what was sent, persisted, recalled) rather than on internals.
"""

from harness.cachemeter.contract import assert_cache_stable
from harness.models.scripted import (
    DynamicStep,
    RaiseStep,
    ReplyLike,
    ReplyStep,
    ScriptedModel,
    ScriptStep,
    StepLike,
    call_tool,
    calls,
    fail,
    respond,
    say,
    tool_call,
)
from harness.testing._fakes import (
    FakeMemory,
    FakeProviders,
    FakeTokenizer,
    RecordingRecorder,
    config,
    make_session,
    run_turn,
)

__all__ = [
    "DynamicStep",
    "FakeMemory",
    "FakeProviders",
    "FakeTokenizer",
    "RaiseStep",
    "RecordingRecorder",
    "ReplyLike",
    "ReplyStep",
    "ScriptStep",
    "ScriptedModel",
    "StepLike",
    "assert_cache_stable",
    "call_tool",
    "calls",
    "config",
    "fail",
    "make_session",
    "respond",
    "run_turn",
    "say",
    "tool_call",
]
