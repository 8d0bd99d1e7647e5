"""The second layer: a check by meaning, for the phrasings no rule was written for.

The rules match words; an attack paraphrased past them ("the guidance you got earlier is
void") passes. This layer reads the sentence vector of the local embedder (all-MiniLM-L6-v2,
`memory.providers.semantic.embedder`) and scores it with a linear probe — a logistic
regression on those 384 numbers — trained on the project's own labelled corpora (attacks
and harmless look-alikes; `benchmarks/scanner_probe.py` trains it and writes
`meaning_probe.json`). A text scoring at or above the threshold is reported as
`meaning_attack`.

Measured before choosing (benchmarks/scanner_probe.py, trained on two corpora and tested on
the third, so on texts it never saw): nearest neighbours against the labelled texts caught
0.16–0.24 of the unseen corpus' attacks at 0.000–0.022 false positives (tau 0.6, margin
0.05); the probe at threshold 0.9 caught 0.16–0.44 at 0.000–0.042. Scoring each clause
apart raised false positives. The probe first flagged 8.9% of ordinary LoCoMo chat (it had
learned "addressed to you" = attack); harmless instructions and chat written for the round-2
corpus brought that to 0.5% at 0.9. MiniLM is English-centric: text in Korean, Arabic or
Hindi is mostly unknown tokens to it, so there the probe mostly sees *that* a text is
foreign, not what it says — the rules carry those languages.

Blocking work (the model, about 5–30 ms a text on one core): call it in a worker thread.
"""

from __future__ import annotations

import importlib.resources
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from memory.scanner._types import Finding

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DEFAULT_MEANING_THRESHOLD", "MeaningCheck", "MeaningProbe", "SentenceEmbedder", "load_probe"]

DEFAULT_MEANING_THRESHOLD = 0.9
_PROBE_FILE = "meaning_probe.json"


class SentenceEmbedder(Protocol):
    """What the check needs from an embedder (`memory.providers.semantic.Embedder` is one)."""

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


@dataclass(frozen=True, slots=True)
class MeaningProbe:
    """A logistic regression over one embedder's unit vectors.

    Attributes:
        model_id: the embedder it was trained on; vectors of another model are meaningless to it.
        weights: one weight per dimension (already multiplied by the training scale).
        bias: the intercept.
        trained_on: what it was trained on (corpus names and sizes), for the record.
    """

    model_id: str
    weights: tuple[float, ...]
    bias: float
    trained_on: str = ""
    kind: Literal["meaning_probe"] = "meaning_probe"

    def scores(self, vectors: NDArray[np.float32]) -> list[float]:
        """The probability of "attack" for each row of `vectors`."""
        import numpy as np  # here, not at import: the scanner loads with every memory command

        logits = vectors.astype(np.float64) @ np.asarray(self.weights, dtype=np.float64) + self.bias
        return [1.0 / (1.0 + math.exp(-float(z))) for z in logits]


def load_probe() -> MeaningProbe:
    """The probe shipped with keel (`memory/scanner/meaning_probe.json`)."""
    raw = json.loads(importlib.resources.files("memory.scanner").joinpath(_PROBE_FILE).read_text("utf-8"))
    return MeaningProbe(
        model_id=str(raw["model_id"]),
        weights=tuple(float(w) for w in raw["weights"]),
        bias=float(raw["bias"]),
        trained_on=str(raw.get("trained_on", "")),
    )


class MeaningCheck:
    """Scores texts by meaning and reports those that read like an attack.

    Args:
        embedder: the sentence embedder the probe was trained on (its `model_id` must match).
        threshold: the score at which a text is reported (0.9 by default; see the module docstring).
        probe: the probe; None → the shipped one.

    Raises:
        ValueError: the probe was trained on another embedder, or the threshold is outside (0, 1).
    """

    def __init__(
        self,
        embedder: SentenceEmbedder,
        *,
        threshold: float = DEFAULT_MEANING_THRESHOLD,
        probe: MeaningProbe | None = None,
    ) -> None:
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"the meaning threshold must be between 0 and 1, got {threshold!r}")
        self._probe = probe if probe is not None else load_probe()
        if self._probe.model_id != embedder.model_id:
            raise ValueError(
                f"the meaning probe was trained on {self._probe.model_id!r}, not {embedder.model_id!r}; "
                "retrain it with benchmarks/scanner_probe.py --write"
            )
        self._embedder = embedder
        self._threshold = threshold

    @property
    def threshold(self) -> float:
        """The score at which a text is reported."""
        return self._threshold

    def scores(self, texts: Sequence[str]) -> list[float]:
        """The attack score of each text (blocking)."""
        if not texts:
            return []
        return self._probe.scores(self._embedder.embed(list(texts)))

    def score_vector(self, vector: NDArray[np.float32]) -> float:
        """The attack score of a text already embedded with the same embedder (no model call)."""
        return self._probe.scores(vector.reshape(1, -1))[0]

    def findings(self, text: str) -> tuple[Finding, ...]:
        """`(meaning_attack,)` when `text` scores at or above the threshold, else `()` (blocking)."""
        if not text.strip():
            return ()
        (score,) = self.scores([text])
        return self.findings_for(score)

    def findings_for(self, score: float) -> tuple[Finding, ...]:
        """The findings for a score already computed with `scores` (no model call)."""
        if score < self._threshold:
            return ()
        return (
            Finding(
                "meaning_attack",
                "injection",
                f"reads like an instruction to the model or an attack (meaning check, score {score:.2f})",
            ),
        )
