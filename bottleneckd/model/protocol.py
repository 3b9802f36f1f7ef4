"""The messages from the hook to the sidecar, versioned, with one parser for both ends.

Two messages, each one JSON object in one datagram:

- ``StepReport`` (``"type": "step"``): one rank's step phases summed over an interval, with the
  rank's identity and its *whole* current fact state (the receiver replaces, never merges).
- ``Event`` (``"type": "event"``): something that happened to the job (``kind``:
  ``mitigation_applied``, ``mitigation_reverted`` ...). The same keys are used on the wire, in
  trace event lines and in the exporter.

``decode`` is safe against hostile input from any local process that can reach the socket: a
size cap, a bound on nesting (no RecursionError), no NaN/Infinity, no numbers of hundreds of
digits, no string that is not valid Unicode text (a lone surrogate such as ``"\\ud800"`` would
make every /metrics answer fail to encode), no negative or non-finite times, every field
type-checked. Every rejection raises one ``ProtocolError`` (``UnknownVersion`` for a message of
another version), which the receiver counts; a rejected message changes nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bottleneckd.model.facts import Facts
from bottleneckd.model.files import json_problem, loads_strict
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.resources import PHASES
from bottleneckd.model.sample import StepPhases

VERSION = 2  # version 1 was the untyped dict ({"v": 1, "wall": ...}) before this module
MAX_MESSAGE = 65536  # bytes: one datagram
MAX_BRACKETS = 256  # '[' plus '{' in one message: a real one has fewer than 10
MAX_STEPS = 10**9
MAX_SECONDS = 1e7  # ~4 months in one interval: anything above is garbage
MAX_TEXT = 256
KIND = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


class ProtocolError(ValueError):
    """A message that is not one of ours: dropped and counted by the receiver."""


class UnknownVersion(ProtocolError):
    """A message of a version this bottleneckd does not read."""


#: examples in one report: a billion per interval is far past any real batch rate
MAX_EXAMPLES = 10**9


@dataclass(frozen=True)
class StepReport:
    identity: RankIdentity
    steps: int
    wall_seconds: float
    #: seconds per phase name (names from model.resources.PHASES), summed over ``steps``
    phases: Mapping[str, float]
    facts: Facts = field(default_factory=Facts)
    version: int = VERSION
    #: training examples in those steps (for joules per example); None when the sender did not count them
    examples: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "step",
            "version": self.version,
            "identity": self.identity.to_json(),
            "steps": self.steps,
            "wall_seconds": self.wall_seconds,
            "phases": dict(self.phases),
            "facts": Facts(self.facts).to_json(),
            # a count past MAX_EXAMPLES (a 1-D input of 2**29 elements counts each as an example) is
            # left out: the receiver would not trust it, and the steps and phases must still arrive
            **({"examples": self.examples} if self.examples is not None and self.examples <= MAX_EXAMPLES else {}),
        }

    def step_phases(self) -> StepPhases:
        return StepPhases(self.steps, self.wall_seconds, dict(self.phases), self.facts, self.examples)

    @staticmethod
    def from_json(d: Any) -> StepReport:
        d = _object(d, "step", ("type", "version", "identity", "steps", "wall_seconds", "phases", "facts", "examples"))
        phases = d.get("phases")
        if not isinstance(phases, dict) or len(phases) > len(PHASES):
            raise ProtocolError("phases: expected an object of phase name -> seconds")
        if d.get("facts") is not None and not isinstance(d["facts"], dict):
            raise ProtocolError("facts: expected an object of fact name -> value")
        bad = [k for k in phases if k not in PHASES]
        if bad:
            raise ProtocolError(f"phases: unknown phase {bad[0]!r:.40}; known: {', '.join(PHASES)}")
        return StepReport(
            identity=_identity(d.get("identity")),
            steps=_int(d.get("steps"), "steps", MAX_STEPS),
            wall_seconds=_seconds(d.get("wall_seconds"), "wall_seconds"),
            phases={k: _seconds(v, f"phases.{k}") for k, v in phases.items()},
            facts=Facts.from_json(d.get("facts")),
            examples=_examples(d.get("examples")),
        )


@dataclass(frozen=True)
class Event:
    kind: str  # mitigation_applied | mitigation_reverted | ...
    name: str  # what it is about (a mitigation's hook id)
    t: float  # Unix time
    changes_semantics: bool = False
    note: str = ""
    version: int = VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "event",
            "version": self.version,
            "kind": self.kind,
            "name": self.name,
            "t": self.t,
            "changes_semantics": self.changes_semantics,
            "note": self.note,
        }

    @staticmethod
    def from_json(d: Any) -> Event:
        d = _object(d, "event", ("type", "version", "kind", "name", "t", "changes_semantics", "note"))
        kind = d.get("kind")
        if not isinstance(kind, str) or not KIND.match(kind):
            raise ProtocolError("kind: expected a lower-case identifier")
        cs = d.get("changes_semantics", False)
        if type(cs) is not bool:
            raise ProtocolError("changes_semantics: expected true/false")
        return Event(
            kind,
            _text(d.get("name", ""), "name"),
            _seconds(d.get("t"), "t", 1e11),
            cs,
            _text(d.get("note", ""), "note"),
        )


Message = StepReport | Event


def encode(msg: Message) -> bytes:
    return json.dumps(msg.to_json(), separators=(",", ":"), allow_nan=False).encode()


def decode(data: bytes | str) -> Message:
    """One message from one datagram (or trace line); ProtocolError for anything else."""
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    if len(data) > MAX_MESSAGE:
        raise ProtocolError(f"message of {len(data)} bytes is over {MAX_MESSAGE}")
    if data.count(b"[") + data.count(b"{") > MAX_BRACKETS:
        raise ProtocolError("too deeply nested or too many objects")
    try:
        d = loads_strict(data)  # no NaN/Infinity, no 1e400, no integers of 20 digits or more
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"not JSON: {json_problem(e)[:120]}") from None
    return from_json(d)


def from_json(d: Any) -> Message:
    if not isinstance(d, dict):
        raise ProtocolError("expected a JSON object")
    version = d.get("version")
    if type(version) is not int or version != VERSION:
        raise UnknownVersion(f"version {str(version)[:20]!r} is not {VERSION}")
    kind = d.get("type")
    if kind == "step":
        return StepReport.from_json(d)
    if kind == "event":
        return Event.from_json(d)
    raise ProtocolError(f"type {str(kind)[:20]!r} is not 'step' or 'event'")


# --- field checks ----------------------------------------------------------------------------
def _object(d: Any, kind: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise ProtocolError(f"{kind}: expected an object")
    extra = [k for k in d if k not in keys]
    if extra:
        raise ProtocolError(f"{kind}: unknown field {str(extra[0])[:40]!r}")
    return d


def _int(v: Any, name: str, hi: int) -> int:
    if type(v) is not int or not 0 <= v <= hi:
        raise ProtocolError(f"{name}: expected an integer in 0..{hi}")
    return v


def _examples(v: Any) -> int | None:
    """The report's example count: None when absent, or past MAX_EXAMPLES (unknown, not a reason to
    drop the report's steps and phases: a hook that counted a 1-D input's 2**29 elements as examples
    had every report after its first refused, and its job read as not training); garbage is refused."""
    if v is None or (type(v) is int and v > MAX_EXAMPLES):
        return None
    return _int(v, "examples", MAX_EXAMPLES)


def _seconds(v: Any, name: str, hi: float = MAX_SECONDS) -> float:
    if type(v) not in (int, float) or not math.isfinite(v) or not 0 <= v <= hi:
        raise ProtocolError(f"{name}: expected seconds, a finite number in 0..{hi:g}")
    return float(v)


def _text(v: Any, name: str) -> str:
    if not isinstance(v, str) or len(v) > MAX_TEXT:
        raise ProtocolError(f"{name}: expected a string of at most {MAX_TEXT} characters")
    return v


_ID_TEXT = ("job", "run", "node", "gpu", "pod", "namespace")
_ID_INT = ("restart", "rank", "local_rank", "world_size", "local_world_size", "node_rank", "pid")


def _identity(d: Any) -> RankIdentity:
    if not isinstance(d, dict):
        raise ProtocolError("identity: expected an object")
    extra = [k for k in d if k not in _ID_TEXT + _ID_INT]
    if extra:
        raise ProtocolError(f"identity: unknown field {str(extra[0])[:40]!r}")
    for k in _ID_TEXT:
        if k in d and (not isinstance(d[k], str) or len(d[k]) > 128):
            raise ProtocolError(f"identity.{k}: expected a string of at most 128 characters")
    for k in _ID_INT:
        if k in d:
            _int(d[k], f"identity.{k}", 2**31)
    if d.get("world_size", 1) < 1 or d.get("local_world_size", 1) < 1:
        raise ProtocolError("identity: world sizes must be at least 1")
    return RankIdentity.from_json(d)
