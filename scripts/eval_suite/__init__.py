"""The labelled suite's parts (``scripts/eval.py`` is the command): which workloads there are and
what each declares (``workloads``), the proof of a label by its interventions (``proof``), the
verdicts scored against the labels (``score``), and the record of a run (``record``)."""
