"""Which of the node's GPUs are the job's, from what each source says (a pure function).

On a shared node other tenants' GPUs are busy, full and hot too; the verdict, the transfer and
communication rules and the energy per step must read the job's own GPUs. In order of authority:

1. the GPUs each rank names: the UUID in its identity (the GPU of its model) and the CUDA UUIDs the
   hook reports (``cuda_uuids``), whatever the PID namespace; matched to NVML's units by
   ``gpu_key`` (``GPU-``/``MIG-`` prefixes aside);
2. NVML's process lists (the GPU sampler's ``job_process``): 1 on a GPU where a process of the
   job's tree is listed, 0 where none is and every listed PID is visible to us; unknown where NVML
   lists PIDs of another PID namespace;
3. neither: where the hook says the job trains on CUDA and as many GPUs ran kernels as it has
   ranks on the node, those (a one-GPU job on an eight-GPU node: the idle seven are not its, nor
   can their idleness speak for it); else every GPU. The note says which (``known`` stays False).

A job seen on no GPU at all (every GPU's list read, none of them holding a job process) runs on
none: its GPUs are the empty set, *known* (a CPU job on a GPU node), not "every GPU". So does a job
whose hook reports a device other than CUDA (``device``: the hook's fact), whatever the process
lists could not tell (another tenant's PIDs in another namespace leave them unknown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bottleneckd.model.identity import gpu_key


@dataclass(frozen=True)
class JobGpus:
    devices: tuple[str, ...]  # the job's GPU units on this node; when not known, every GPU (or those that ran kernels)
    known: bool  # False: ``devices`` is a guess (every GPU, or those that ran kernels), for lack of knowledge
    note: str  # how they were found, or why every GPU is considered
    #: (rank, device) for each rank whose own GPU is one of this node's units
    ranks: tuple[tuple[int, str], ...] = ()

    @property
    def none(self) -> bool:
        """Known to run on no GPU of this node."""
        return self.known and not self.devices


def job_gpus(
    devices: Iterable[str],
    uuid_of: Mapping[str, str],
    rank_uuids: Mapping[int, Iterable[str]],
    job_process: Mapping[str, float],
    device: str = "",
    idle: Iterable[str] = (),
) -> JobGpus:
    """``devices``: the GPU units sampled here; ``uuid_of``: unit -> NVML UUID; ``rank_uuids``: rank
    -> the GPU UUIDs it names; ``job_process``: unit -> 1/0 where NVML's process lists tell;
    ``device``: the hook's device fact ("" when no hook reports); ``idle``: the units that ran no
    kernel throughout the window."""
    devs = sorted(devices)
    if not devs:
        return JobGpus((), True, "no GPU sampled on this node")
    if device and not device.startswith("cuda"):
        return JobGpus((), True, f"the hook reports the job on {device}: none of the {len(devs)} GPUs is its own")
    key_of = {d: gpu_key(uuid_of[d]) for d in devs if uuid_of.get(d)}
    ranks = sorted(
        {(r, d) for r, us in rank_uuids.items() for u in us if u for d in devs if key_of.get(d) == gpu_key(u)}
    )
    if ranks:
        mine = tuple(sorted({d for _, d in ranks}))
        return JobGpus(mine, True, "the GPUs the ranks name (their CUDA UUIDs)", tuple(ranks))
    on = [d for d in devs if (job_process.get(d) or 0.0) > 0]
    if on:
        return JobGpus(tuple(on), True, "NVML's process lists")
    unknown = [d for d in devs if d not in job_process]
    if not unknown:
        return JobGpus((), True, f"no process of the job on any of the {len(devs)} GPUs (NVML's process lists)")
    if len(unknown) < len(devs):
        return JobGpus(
            tuple(unknown),
            False,
            f"no job process on {', '.join(d for d in devs if d not in unknown)}; "
            f"{', '.join(unknown)} considered (NVML lists PIDs of another namespace there)",
        )
    why = "which GPUs are the job's is unknown (no CUDA UUIDs from the hook, no NVML process list)"
    quiet = sorted(set(idle) & set(devs))
    if quiet and len(quiet) < len(devs):
        busy = [d for d in devs if d not in quiet]
        return JobGpus(
            tuple(busy),
            False,
            f"{why}: the {len(busy)} that ran kernels considered ({', '.join(quiet)} idle throughout)",
        )
    return JobGpus(tuple(devs), False, f"{why}: every GPU considered")
