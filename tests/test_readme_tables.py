"""README.md's tables that code generates stay what the code says (issue 22 item 12): the
parameters of ``w.apply(name, ...)`` for each hook mitigation, from the classes' signatures."""

from __future__ import annotations

import sys

from tests.conftest import ROOT


def test_the_mitigations_table_is_generated_from_the_classes():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mitigation_table
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    readme = (ROOT / "README.md").read_text()
    assert mitigation_table.BEGIN in readme and mitigation_table.END in readme
    assert mitigation_table.readme_with_table(readme) == readme, "run: python scripts/mitigation_table.py"
    from bottleneckd.torch.mitigations import REGISTERED

    for hook in REGISTERED:  # every registered mitigation has its row
        assert f'| `"{hook.id}"` |' in readme, hook.id
    assert "`dtype: str = 'bfloat16'`" in readme  # mixed_precision's parameter, as in its constructor
