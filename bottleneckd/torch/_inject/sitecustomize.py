"""Loaded by ``bottleneckd run`` (through PYTHONPATH) in the job's Python processes.

It does nothing until the job imports torch, and nothing in DataLoader worker processes; then it
installs the step-phase instrumentation. Any other sitecustomize on the path still runs.

It runs once per process: a sitecustomize that chains to the next one on ``sys.path`` (as
monitoring agents' bootstraps do) finds ours again, and ours and theirs loaded each other until
RecursionError (issue 25 item 8). A second load does nothing; the mark is on ``sys`` because each
load is a new module object.
"""

import os
import sys


def _chain_other_sitecustomize() -> None:
    """Run the job's own sitecustomize (the next one on sys.path after ours) as Python would
    have, and leave it as ``sys.modules['sitecustomize']``, so ``import sitecustomize`` in the job
    returns the job's module, not ours."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    ours = sys.modules.get("sitecustomize")
    sys.modules["sitecustomize"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - what site.py does with a failing sitecustomize
        sys.modules["sitecustomize"] = ours  # type: ignore[assignment]
        sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(e).__name__}: {e}\n")


def _after_torch_import() -> None:
    import importlib.abc
    import importlib.machinery
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return  # a DataLoader worker or other child: not the training loop

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201
            if name != "torch":
                return None
            sys.meta_path.remove(self)
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            original = spec.loader.exec_module

            def exec_module(module):  # noqa: ANN001, ANN202
                original(module)
                try:
                    from bottleneckd.torch.inject import install

                    install()
                except Exception as e:  # noqa: BLE001
                    sys.stderr.write(f"bottleneckd: instrumentation not installed ({e})\n")

            spec.loader.exec_module = exec_module
            return spec

    if "torch" in sys.modules:
        from bottleneckd.torch.inject import install

        install()
    else:
        sys.meta_path.insert(0, _Finder())


_LOADED = "_bottleneckd_sitecustomize_loaded"

if not getattr(sys, _LOADED, False):
    setattr(sys, _LOADED, True)
    if os.environ.get("BOTTLENECKD_INJECT") == "1":
        try:
            _after_torch_import()
        except Exception as _e:  # noqa: BLE001
            sys.stderr.write(f"bottleneckd: instrumentation not installed ({_e})\n")
    _chain_other_sitecustomize()
