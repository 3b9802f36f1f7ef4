"""Mitigations the hook can apply, one module per declared hook (``<id>.py``), run by the engine on
the watcher's loop events.

Importing this package imports every module in it; each hook class registers itself when defined
(base.py checks its declaration against data/mitigations.json), and the package then checks that
every module here is a declared hook and every declared hook has its class. ``REGISTRY`` maps each
:class:`Hook` to its class; there is no list to keep by hand.
"""

from __future__ import annotations

import importlib
import pkgutil

from bottleneckd.model.hooks import HOOKS, Hook
from bottleneckd.torch.mitigations.base import REGISTERED, HookMitigation, check_modules, check_registered

#: the modules here that are not hooks
MACHINERY = frozenset({"base", "engine"})

_modules = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in MACHINERY)
check_modules(__name__, _modules, HOOKS)
for _name in _modules:
    importlib.import_module(f"{__name__}.{_name}")
check_registered(REGISTERED, HOOKS)

REGISTRY: dict[Hook, type[HookMitigation]] = dict(REGISTERED)


__all__ = ["REGISTRY"]
