"""The ``bottleneckd`` command line: ``main`` (the group and small commands), ``sidecar`` (record,
analyze, serve), ``jobs`` (run, attach, demo), ``common`` (what they share)."""
