"""Who sent a step report: one rank of one job, with the identity its launcher gives it.

RANK is not stable across elastic restarts (torchrun's docs), so a rank is keyed by job, run id,
restart count and rank together, and by the GPU's UUID where there is one. Read from the
launcher's environment: torchrun (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT), Slurm (SLURM_JOB_ID, SLURM_PROCID,
SLURM_LOCALID, SLURM_NODEID, SLURM_NTASKS), Kubernetes (POD_NAME, POD_NAMESPACE from the
downward API), or a plain process (rank 0 of 1).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


def _int(env: Mapping[str, str], *names: str, default: int) -> int:
    for n in names:
        v = env.get(n)
        if v is not None and v.strip().lstrip("-").isdigit():
            return int(v)
    return default


def gpu_key(uuid: str | None) -> str:
    """A GPU's identity whatever names it: NVML's ``GPU-<hex>`` or ``MIG-<hex>``, the ``GPU-<hex>`` the
    hook and ``calibrate`` write from CUDA's UUID, DCGM's ``UUID`` label: the hex, lower case."""
    u = (uuid or "").strip().lower()
    for prefix in ("gpu-", "mig-"):
        if u.startswith(prefix):
            return u[len(prefix) :]
    return u


def _text(v: str) -> str:
    """An environment value as valid Unicode text: os.environ keeps undecodable bytes as lone
    surrogates, which the receiver refuses (model/protocol.py); they become U+FFFD here."""
    return v.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


@dataclass(frozen=True)
class RankIdentity:
    job: str  # SLURM_JOB_ID, TORCHELASTIC_RUN_ID, the pod, or "local"
    run: str  # the elastic run id ("" when not elastic)
    restart: int  # TORCHELASTIC_RESTART_COUNT
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    node: str  # host name (or Kubernetes node / pod where given)
    node_rank: int  # GROUP_RANK / SLURM_NODEID
    gpu: str = ""  # the GPU's UUID, "" on CPU
    pid: int = 0
    pod: str = ""  # Kubernetes: POD_NAME and POD_NAMESPACE (downward API), "" elsewhere
    namespace: str = ""

    @property
    def key(self) -> str:
        """Stable within one (re)start of a job: never a step or sequence number."""
        return f"{self.job}/{self.restart}/{self.rank}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> RankIdentity:
        return RankIdentity(
            job=str(d.get("job", "local"))[:128],
            run=str(d.get("run", ""))[:128],
            restart=int(d.get("restart", 0)),
            rank=int(d.get("rank", 0)),
            local_rank=int(d.get("local_rank", 0)),
            world_size=max(1, int(d.get("world_size", 1))),
            local_world_size=max(1, int(d.get("local_world_size", 1))),
            node=str(d.get("node", ""))[:128],
            node_rank=int(d.get("node_rank", 0)),
            gpu=str(d.get("gpu", ""))[:128],
            pid=int(d.get("pid", 0)),
            pod=str(d.get("pod", ""))[:128],
            namespace=str(d.get("namespace", ""))[:128],
        )

    @staticmethod
    def from_env(
        env: Mapping[str, str] | None = None, pid: int | None = None, host: str | None = None, gpu: str = ""
    ) -> RankIdentity:
        env = os.environ if env is None else env
        world = _int(env, "WORLD_SIZE", "SLURM_NTASKS", default=1)
        local_world = _int(env, "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE", default=world)
        job = (
            env.get("BOTTLENECKD_JOB")
            or env.get("SLURM_JOB_ID")
            or env.get("TORCHELASTIC_RUN_ID")
            or (f"{env['POD_NAMESPACE']}/{env['POD_NAME']}" if env.get("POD_NAME") and env.get("POD_NAMESPACE") else "")
            or "local"
        )
        return RankIdentity(
            job=_text(job),
            run=_text(env.get("TORCHELASTIC_RUN_ID", "")),
            restart=_int(env, "TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT", default=0),
            rank=_int(env, "RANK", "SLURM_PROCID", default=0),
            local_rank=_int(env, "LOCAL_RANK", "SLURM_LOCALID", default=0),
            world_size=max(1, world),
            local_world_size=max(1, min(local_world, world)),
            node=_text(env.get("NODE_NAME") or host or socket.gethostname()),
            node_rank=_int(env, "GROUP_RANK", "SLURM_NODEID", default=0),
            gpu=gpu,
            pid=os.getpid() if pid is None else pid,
            pod=env.get("POD_NAME", ""),
            namespace=env.get("POD_NAMESPACE", ""),
        )
