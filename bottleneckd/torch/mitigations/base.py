"""What a hook mitigation is: a class that applies one of the knowledge base's mitigations to a
running training loop and can revert it, driven by the watcher's loop events (as Composer's
algorithms run on the engine's events). Its metadata sits beside its code and is checked when the
class is defined:

    class ChannelsLast(HookMitigation):
        hook = declared_hook("channels_last")   # the typed link: data/mitigations.json's 'hooks'
        facts = {"channels_last": bool}          # every fact it sets, with its type
        changes_semantics = False

``__init_subclass__`` raises :class:`HookDeclarationError` when the id is not declared, the class
is not in ``bottleneckd/torch/mitigations/<id>.py``, the facts differ from the declaration (names or
types), ``changes_semantics`` is missing, or a second class claims the hook; the package
``__init__`` checks that every declared hook has its class. The registry is the set of classes so
declared: there is no list to keep.

Each has ``note``, ``apply(ctx)``, ``revert()`` and, optionally, ``events`` (the
:class:`LoopEvent` s it wants) with ``on_event(event, ctx)``. It never counts steps itself
(``ctx.step``, ``ctx.optimizer_calls`` are the watcher's counts), never patches anything
process-wide, and never writes facts: it records fact changes on ``ctx.facts`` (only those it
declares; another raises :class:`UndeclaredFact`); the engine applies them and restores the
previous values when it is reverted. A user's own object with ``name``, ``changes_semantics``,
``note``, ``apply`` and ``revert`` can be applied too; it is not registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

import torch

from bottleneckd.model.facts import FACTS
from bottleneckd.model.hooks import HOOK_PACKAGE, Hook, declared_hook

__all__ = [
    "REGISTERED",
    "Context",
    "FactChanges",
    "Handles",
    "HookDeclarationError",
    "HookMitigation",
    "LoopEvent",
    "UndeclaredFact",
    "declared_hook",
]

#: a fact's declared type, as a hook class writes it
PY_TYPES: dict[type, str] = {bool: "bool", int: "int", float: "float", str: "str", tuple: "strs"}


class LoopEvent(Enum):
    """A point of the training loop at which the engine runs the mitigations that want it."""

    BEFORE_OPTIMIZER_STEP = "before_optimizer_step"  # inside optimizer.step(), before it updates anything
    STEP_END = "step_end"  # an optimizer step (not a micro-step) completed
    EPOCH_END = "epoch_end"


class HookDeclarationError(TypeError):
    """A hook mitigation's declaration disagrees with data/mitigations.json (raised at import)."""


class UndeclaredFact(ValueError):
    """A mitigation set a fact it does not declare (a bug of ours: declare it beside the code)."""


@dataclass
class FactChanges:
    """Facts a mitigation sets (a value) or unsets (None); applied by the engine. ``allowed``:
    the names it declares (None for a user's own mitigation, whose facts are validated on write)."""

    changes: dict[str, Any] = field(default_factory=dict)
    allowed: frozenset[str] | None = None
    owner: str = ""

    def set(self, name: str, value: Any) -> None:
        self._check(name)
        self.changes[name] = value

    def unset(self, name: str) -> None:
        self._check(name)
        self.changes[name] = None

    def _check(self, name: str) -> None:
        if self.allowed is not None and name not in self.allowed:
            raise UndeclaredFact(
                f"{self.owner} sets fact {name!r} but declares only {sorted(self.allowed)}: "
                "add it to the class's facts and to its hook in bottleneckd/data/mitigations.json"
            )


@dataclass
class Context:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer | None
    loader: Any  # bottleneckd.torch.loader.InstrumentedLoader, or None
    step: int = 0  # optimizer steps completed (micro-steps not counted)
    epoch: int = 0  # epochs completed
    optimizer_calls: int = 0  # optimizer.step() calls, this one included at BEFORE_OPTIMIZER_STEP
    facts: FactChanges = field(default_factory=FactChanges)
    micro_step: bool = False  # set at BEFORE_OPTIMIZER_STEP: this call only accumulates (not a step)


#: the class that applies each declared hook, filled as the classes are defined
REGISTERED: dict[Hook, type[HookMitigation]] = {}


class HookMitigation:
    """The base of every mitigation the hook applies by id (see the module docstring)."""

    hook: ClassVar[Hook]
    facts: ClassVar[dict[str, type]]
    changes_semantics: ClassVar[bool]
    name: ClassVar[str]  # the hook's id: what trials, events and the ``mitigations`` fact name it
    events: tuple[LoopEvent, ...] = ()
    note: str = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "hook" not in cls.__dict__:
            return  # a subclass that applies the same hook differently (a user's): not registered
        hook = cls.__dict__["hook"]
        where = f"{cls.__module__}.{cls.__qualname__}"
        if not isinstance(hook, Hook):
            raise HookDeclarationError(f"{where}.hook: expected declared_hook('<id>'), got {hook!r}")
        if cls.__module__ != hook.module:
            raise HookDeclarationError(f"{where}: the class of hook {hook.id!r} belongs in {hook.module}")
        if cls.__dict__.get("changes_semantics") is not hook.changes_semantics:
            raise HookDeclarationError(
                f"{where}.changes_semantics: must be {hook.changes_semantics}, as the knowledge entries it applies "
                f"({', '.join(hook.applies)}) say"
            )
        declared = cls.__dict__.get("facts")
        if not isinstance(declared, dict):
            raise HookDeclarationError(f"{where}.facts: declare every fact it sets, as {{name: type}} ({{}} for none)")
        if set(declared) != hook.fact_names:
            raise HookDeclarationError(
                f"{where}.facts: declares {sorted(declared)} but data/mitigations.json's hook {hook.id!r} "
                f"declares {sorted(hook.fact_names)}: make them the same"
            )
        for name, t in declared.items():
            want = FACTS[name].type
            if PY_TYPES.get(t) != want:
                raise HookDeclarationError(f"{where}.facts[{name!r}]: {t!r} but the fact is declared {want!r}")
        if hook in REGISTERED and REGISTERED[hook].__qualname__ != cls.__qualname__:
            raise HookDeclarationError(f"{where}: hook {hook.id!r} is already applied by {REGISTERED[hook].__name__}")
        cls.name = hook.id
        REGISTERED[hook] = cls

    @property
    def declared_facts(self) -> frozenset[str]:
        return frozenset(type(self).facts)

    def apply(self, ctx: Context) -> None:
        raise NotImplementedError

    def revert(self) -> None:
        raise NotImplementedError

    def settle_steps(self) -> int:
        """Steps after it is applied or reverted that still run on work begun before the turn (a
        verification skips them); 0 for a mitigation that takes effect at once."""
        return 0

    def on_event(self, event: LoopEvent, ctx: Context) -> None:
        """Called at each of ``events``."""


def check_registered(registered: dict[Hook, type[HookMitigation]], hooks: dict[str, Hook]) -> None:
    """Every declared hook has its class (HookDeclarationError naming those without)."""
    missing = [h.id for h in hooks.values() if h not in registered]
    if missing:
        raise HookDeclarationError(
            f"hooks declared in data/mitigations.json with no class: {', '.join(missing)}; "
            f"write {HOOK_PACKAGE}.<id> with a HookMitigation subclass declaring hook = declared_hook('<id>')"
        )


def check_modules(package: str, modules: list[str], hooks: dict[str, Hook]) -> None:
    """Every module of the package (bar its machinery) is named for a declared hook."""
    stray = [m for m in modules if m not in hooks]
    if stray:
        raise HookDeclarationError(
            f"{package}: {', '.join(stray)}: a module here applies the hook of its name; declare it under 'hooks' "
            "in bottleneckd/data/mitigations.json, or move the module out of the package"
        )


class Handles:
    """Removable things collected by apply(), undone by revert() in reverse order."""

    def __init__(self) -> None:
        self._undo: list[Any] = []

    def add(self, undo: Any) -> None:
        self._undo.append(undo)

    def undo(self) -> None:
        while self._undo:
            u = self._undo.pop()
            u.remove() if hasattr(u, "remove") else u()
