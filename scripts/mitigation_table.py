#!/usr/bin/env python3
"""Writes README.md's table of ``w.apply(...)``'s parameters for each hook mitigation, generated
from the mitigation classes' own signatures (bottleneckd/torch/mitigations/<id>.py), so the table
cannot drift from the code. Run after changing a mitigation's constructor:
    python scripts/mitigation_table.py
tests/test_readme_tables.py fails while README.md differs from what this writes."""

from __future__ import annotations

import inspect
from pathlib import Path

BEGIN, END = "<!-- mitigations-table:begin (scripts/mitigation_table.py) -->", "<!-- mitigations-table:end -->"


def _param(p: inspect.Parameter) -> str:
    ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", str(p.annotation))
    ann = ann.replace("torch.nn.Module", "Module").replace("|", "\\|")  # a | would end the table cell
    if p.default is inspect.Parameter.empty:
        return f"`{p.name}: {ann}` (required)"
    return f"`{p.name}: {ann} = {p.default!r}`"


def table() -> str:
    from bottleneckd.advice.knowledge import load_knowledge
    from bottleneckd.torch.mitigations import REGISTERED

    names = {m.hook.id: m.name for m in load_knowledge() if m.hook is not None}
    rows = [
        "| `w.apply(...)` | what | parameters | changes semantics |",
        "|---|---|---|---|",
    ]
    for hook, cls in sorted(REGISTERED.items(), key=lambda kv: kv[0].id):
        params = [p for name, p in inspect.signature(cls.__init__).parameters.items() if name != "self"]
        rows.append(
            f'| `"{hook.id}"` | {names.get(hook.id, "")} | {", ".join(_param(p) for p in params) or "none"} '
            f"| {'yes' if cls.changes_semantics else 'no'} |"
        )
    return "\n".join(rows)


def readme_with_table(text: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


if __name__ == "__main__":
    readme = Path(__file__).resolve().parents[1] / "README.md"
    readme.write_text(readme_with_table(readme.read_text()))
    print(f"wrote the mitigations table into {readme}")
