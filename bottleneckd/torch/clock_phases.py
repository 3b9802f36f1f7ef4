"""Phase arithmetic shared by the step clocks (timing.HostClock, cuda_clock.CudaClock): one
step's marks (timestamps, or CUDA event times) turned into phase seconds in PHASE_KEYS order."""

from __future__ import annotations

from bottleneckd.model.resources import HOOK_PHASES

PHASE_KEYS = HOOK_PHASES  # phase tuples from the clocks are in this order (model.resources, the one list)
Step = tuple[tuple[float, ...], float]


def phases_of_marks(t: dict[str, float], start: float, comm: float, comm_before: float = 0.0) -> Step:
    """Phase seconds from one step's timestamps (or event times), step start to step end.
    ``comm``: exposed communication after forward's end (out of backward); ``comm_before``: before
    it (out of forward, then out of the transfer before it)."""
    return phases_of(
        t.get("step_start"),
        t.get("data_ready"),
        t.get("forward_start"),
        t.get("forward_end"),
        t.get("optimizer_start"),
        t["step_end"],
        start,
        comm,
        comm_before,
    )


def phases_of(
    ss: float | None,
    dr: float | None,
    fs: float | None,
    fe: float | None,
    os_: float | None,
    end: float,
    start: float,
    comm: float,
    comm_before: float = 0.0,
) -> Step:
    wall = max(0.0, end - start)
    data = max(0.0, dr - (ss if ss is not None else start)) if dr is not None else 0.0
    transfer = max(0.0, fs - dr) if fs is not None and dr is not None else 0.0
    forward = max(0.0, fe - fs) if fe is not None and fs is not None else 0.0
    early = 0.0  # exposed communication before forward's end, out of forward and then the transfer
    if comm_before > 0:
        from_fwd = min(comm_before, forward)
        from_transfer = min(comm_before - from_fwd, transfer)
        forward -= from_fwd
        transfer -= from_transfer
        early = from_fwd + from_transfer
    if fe is not None and os_ is not None:
        span = max(0.0, os_ - fe)
        comm = min(comm, span)
        backward = span - comm
    else:
        backward = 0.0
    optim = max(0.0, end - os_) if os_ is not None else 0.0
    comm += early
    busy = data + transfer + forward + backward + optim + comm
    if busy > wall > 0:  # marks from several micro-batches overlap: keep the wall, scale the phases into it
        k = wall / busy
        return (data * k, transfer * k, forward * k, backward * k, optim * k, comm * k, 0.0), wall
    return (data, transfer, forward, backward, optim, comm, wall - busy), wall
