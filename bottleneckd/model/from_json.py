"""Frozen dataclasses from a trace's or machine file's JSON objects, as the trace format's contract
says a reader takes them: fields it does not know are ignored, and a missing field that may be
unknown is None (unknown). A missing field that must be known still fails (the caller names it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any, TypeVar

__all__ = ["from_json"]

_T = TypeVar("_T")


def from_json(cls: type[_T], d: Mapping[str, Any], **fixed: Any) -> _T:
    """``cls`` from ``d``; ``fixed`` overrides (values converted by the caller)."""
    known = fields(cls)  # type: ignore[arg-type]
    kw = {f.name: d[f.name] for f in known if f.name in d}
    for f in known:
        if f.name not in kw and f.default is MISSING and f.default_factory is MISSING and "None" in str(f.type):
            kw[f.name] = None
    return cls(**{**kw, **fixed})
