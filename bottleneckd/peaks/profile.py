"""The calibration profile: what ``bottleneckd calibrate`` measured on this machine.

Saved as JSON (schema ``bottleneckd.profile/1``) and read by every later run, so measured peaks
replace catalog ones. A malformed profile is an InputError naming the file and field.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bottleneckd.model.errors import InputError
from bottleneckd.model.files import read_json_file
from bottleneckd.model.resources import RESOURCES, Resource

SCHEMA = "bottleneckd.profile/1"


@dataclass(frozen=True)
class Measurement:
    resource: Resource
    device: str
    metric: str
    value: float
    unit: str
    method: str
    seconds: float


@dataclass(frozen=True)
class Profile:
    hostname: str
    created: float
    measurements: tuple[Measurement, ...]

    def best(self, resource: str, device: str | None = None, metric: str | None = None) -> Measurement | None:
        """The highest measured value for a resource (optionally a device and metric)."""
        ms = [
            m
            for m in self.measurements
            if m.resource == resource
            and (device is None or m.device == device)
            and (metric is None or m.metric == metric)
        ]
        return max(ms, key=lambda m: m.value, default=None)


def default_profile_path() -> Path:
    base = os.environ.get("BOTTLENECKD_HOME") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "bottleneckd"
    )
    return Path(base) / "profile.json"


def save_profile(measurements: list[Measurement], path: Path, extra: dict[str, object] | None = None) -> Profile:
    """Write atomically (temp file + rename): a crash never leaves half a profile. ``extra``: more
    top-level fields (the automatic profile's machine fingerprint: auto_profile.py)."""
    prof = Profile(hostname=socket.gethostname(), created=time.time(), measurements=tuple(measurements))
    doc = {
        "schema": SCHEMA,
        "hostname": prof.hostname,
        "created": prof.created,
        "measurements": [asdict(m) for m in measurements],
        **(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".profile.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)
    return prof


def load_profile(path: Path | str | None = None, *, required: bool = False) -> Profile | None:
    """Load a profile. A missing default profile is None; a missing named one is an error."""
    p = Path(path) if path is not None else default_profile_path()
    if not p.exists():
        if required or path is not None:
            raise InputError(
                f"{p}: calibration profile not found; run 'bottleneckd calibrate' or pass an existing --profile"
            )
        return None
    doc = read_json_file(str(p), "calibration profile", "rerun 'bottleneckd calibrate' or pass another --profile")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"{p}: schema: expected {SCHEMA!r}; rerun 'bottleneckd calibrate'")
    ms = doc.get("measurements")
    if not isinstance(ms, list):
        raise InputError(f"{p}: measurements: expected a list")
    out = []
    for i, m in enumerate(ms):
        where = f"{p}: measurements[{i}]"
        if not isinstance(m, dict):
            raise InputError(f"{where}: expected an object")
        if m.get("resource") not in RESOURCES:
            raise InputError(
                f"{where}.resource: unknown resource id {m.get('resource')!r}; use one of: {', '.join(RESOURCES)}"
            )
        v = m.get("value")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0 or v == float("inf"):
            raise InputError(f"{where}.value: peak must be a positive finite number, got {v!r}")
        try:
            out.append(
                Measurement(
                    resource=Resource(m["resource"]),
                    device=str(m["device"]),
                    metric=str(m["metric"]),
                    value=float(v),
                    unit=str(m["unit"]),
                    method=str(m.get("method", "")),
                    seconds=float(m.get("seconds", 0.0)),
                )
            )
        except KeyError as e:
            raise InputError(f"{where}.{e.args[0]}: missing") from e
    return Profile(
        hostname=str(doc.get("hostname", "")), created=float(doc.get("created", 0.0)), measurements=tuple(out)
    )
