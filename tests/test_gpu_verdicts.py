"""The GPU verdicts on the setups most GPU jobs use (issue 19, daemon side): a full allocator cache,
an A100 without GPM or the hook, launch-bound steps whose backward runs on the autograd thread,
every rank's own GPU, CPU jobs on shared GPU nodes. Windows built through the real Window from
readings and rank reports; the machine and its peaks from the fake NVML and the real catalog."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from typing import Any

import pytest

from bottleneckd.diagnosis.classify import classify, findings
from bottleneckd.diagnosis.window import Window, WindowStats
from bottleneckd.hardware.detect import detect_machine
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.resources import UNDETERMINED
from bottleneckd.model.sample import RankPhases, Reading, Sample, StepPhases
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import PeakTable, resolve_peaks
from bottleneckd.samplers.gpu import GpuSampler
from tests.fake_nvml import FakeGpu, FakeNvml

H200, A100 = "NVIDIA H200", "NVIDIA A100-SXM4-80GB"
COMPUTE = {"forward": 0.30, "backward": 0.55, "optimizer": 0.05, "data_wait": 0.05, "other": 0.05}
GB = 10**9


def _peaks(fake_tree, *names: str) -> PeakTable:
    return resolve_peaks(detect_machine(*fake_tree, nvml=FakeNvml([FakeGpu(name=n) for n in names])), load_catalog())


def _readings(figures: dict[str, float | None]) -> tuple[Reading, ...]:
    out = []
    for key, v in figures.items():
        r, d, m = key.split("/")
        out.append(Reading(r, d, m, v, "", "" if v is not None else "unknown in this test"))
    return tuple(out)


def _phases(facts: dict[str, Any], shares: dict[str, float] = COMPUTE, steps: int = 10) -> StepPhases:
    wall = steps * 0.1
    return StepPhases(steps, wall, {k: v * wall for k, v in shares.items()}, facts)


def win(
    figures: dict[str, float | None],
    facts: dict[str, Any] | None = None,
    ranks: dict[int, dict[str, Any]] | None = None,
    shares: dict[str, float] = COMPUTE,
    n: int = 5,
) -> WindowStats:
    """A window of ``n`` equal samples; ``ranks``: rank -> its facts (its ``gpu`` UUID among them)."""
    w = Window(n)
    for i in range(n):
        rp = tuple(
            RankPhases(
                RankIdentity("job", "", 0, r, r, len(ranks), len(ranks), "node-a", 0, gpu=str(f.get("gpu", ""))),
                _phases({k: v for k, v in f.items() if k != "gpu"}, shares),
            )
            for r, f in (ranks or {}).items()
        )
        job_facts = facts if facts is not None else (rp[0].phases.facts if rp else {})
        w.add(Sample(float(i), 1.0, _readings(figures), _phases(dict(job_facts), shares), ranks=rp))
    st = w.stats()
    assert st is not None
    return st


def gpu(dev: str, **v: float) -> dict[str, float]:
    """A GPU's readings by short name."""
    res = {
        "busy": ("gpu_compute", "busy_fraction"),
        "sm": ("gpu_compute", "sm_activity"),
        "tensor": ("gpu_compute", "tensor_activity"),
        "fp32": ("gpu_compute", "fp32_activity"),
        "dram": ("gpu_memory_bandwidth", "utilization"),
        "mem_busy": ("gpu_memory_bandwidth", "memory_busy_fraction"),
        "used": ("gpu_memory", "utilization"),
        "job": ("gpu_compute", "job_process"),
        "pcie": ("cpu_gpu_interconnect", "utilization"),
        "nvlink": ("inter_gpu_interconnect", "utilization"),
    }
    return {f"{res[k][0]}/{dev}/{res[k][1]}": x for k, x in v.items()}


def top(w: WindowStats, peaks: PeakTable):
    return classify(w, peaks)


# --- item 3: a full allocator cache is not a memory bottleneck ------------------------------------


def test_a_full_caching_allocator_on_a_compute_bound_job_is_not_gpu_memory(fake_tree):
    """SM 75% on a GPU NVML calls 94% used: the allocator's cache, tensors at 40%: gpu_compute."""
    peaks = _peaks(fake_tree, H200)
    figs = gpu("gpu0", busy=1.0, sm=0.75, tensor=0.6, dram=0.3, used=0.94)
    hook = {
        "device": "cuda",
        "cuda_memory_total_bytes": 141 * GB,
        "cuda_memory_reserved_bytes": 132 * GB,
        "cuda_memory_peak_allocated_bytes": 56 * GB,
        "cuda_alloc_retries_per_step": 0.0,
    }
    v = top(win(figs, hook), peaks)
    assert v.resource == "gpu_compute", v
    assert "gpu_memory" not in [r for r, _ in v.secondary]
    v = top(win(figs, {"device": "cuda"}), peaks)  # NVML alone: a secondary pressure at most
    assert v.resource == "gpu_compute", v
    f = {x.resource: x for x in findings(win(figs, {"device": "cuda"}), peaks)}
    assert f["gpu_memory"].score < 0.5 and any("caching allocator" in e for e in f["gpu_memory"].evidence)


def test_tensors_that_fill_the_gpu_or_allocation_retries_are_gpu_memory(fake_tree):
    peaks = _peaks(fake_tree, H200)
    figs = gpu("gpu0", busy=1.0, sm=0.40, tensor=0.3, dram=0.3, used=0.97)
    facts = {
        "device": "cuda",
        "cuda_memory_total_bytes": 141 * GB,
        "cuda_memory_reserved_bytes": 138 * GB,
        "cuda_memory_peak_allocated_bytes": 136 * GB,
        "cuda_alloc_retries_per_step": 2.0,
    }
    v = top(win(figs, facts), peaks)
    assert v.resource == "gpu_memory" and any("retried" in e for e in v.evidence), v


def test_another_tenants_full_gpu_is_not_the_jobs_memory(fake_tree):
    """The job's GPU 40% used beside another tenant's at 97%."""
    peaks = _peaks(fake_tree, H200, H200)
    figs = {
        **gpu("gpu0", busy=1.0, sm=0.85, tensor=0.7, dram=0.3, used=0.40, job=1.0),
        **gpu("gpu1", busy=1.0, sm=0.9, tensor=0.8, dram=0.2, used=0.97, job=0.0),
    }
    fs = {f.resource for f in findings(win(figs, {"device": "cuda"}), peaks)}
    assert "gpu_memory" not in fs and top(win(figs, {"device": "cuda"}), peaks).resource == "gpu_compute"


# --- item 4: an A100 without GPM and without the hook ------------------------------------------------


ATTACH = {"phase_source": "py-spy"}  # attach: phases from stacks, no device fact, no roofline


def test_a100_without_gpm_or_hook_is_not_gpu_compute_from_busy_alone(fake_tree):
    peaks = _peaks(fake_tree, A100)
    figs = {**gpu("gpu0", busy=0.99, mem_busy=0.35, used=0.5), "gpu_compute/gpu0/sm_activity": None}
    v = top(win(figs, ATTACH), peaks)
    assert v.resource == UNDETERMINED, v
    assert "read busy ~100%" in v.reason and "BOTTLENECKD_DCGM_URL" in v.reason
    # NVML's memory-busy rate near the practical DRAM maximum: memory bandwidth
    figs = {**gpu("gpu0", busy=0.99, mem_busy=0.93, used=0.5), "gpu_compute/gpu0/sm_activity": None}
    v = top(win(figs, ATTACH), peaks)
    assert v.resource == "gpu_memory_bandwidth" and any("memory-busy" in e for e in v.evidence), v


class _Exporter:
    def __init__(self, body: bytes) -> None:
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a100_with_a_dcgm_exporter_is_judged_on_its_profiling_fields(fake_tree):
    """The captured A100 page (tensor pipe 93%, DRAM 69%) read by the sampler, through the window
    and the rules: compute-bound on its tensor pipe, not memory-bound at DRAM 69%."""
    page = (Path(__file__).resolve().parent / "data/dcgm/a100_mig_exporter.txt").read_bytes()
    ex = _Exporter(page)
    try:
        nvml = FakeNvml(
            [
                FakeGpu(
                    name=A100,
                    uuid="GPU-34319582-d595-d1c7-d1d2-179bcfa61660",
                    gpm=None,
                    util=(99.0, 70.0),
                    nvlink_links=0,
                )
            ]
        )
        peaks = resolve_peaks(detect_machine(*fake_tree, nvml=nvml), load_catalog())
        s = GpuSampler(peaks, nvml, dcgm=ex.url)
        w = Window(5)
        for i in range(3):
            w.add(Sample(float(i), 1.0, tuple(s.sample()), _phases(ATTACH)))
        v = top(w.stats(), peaks)
    finally:
        ex.close()
    assert v.resource == "gpu_compute", v
    assert any("tensor 93%" in e and "dcgm-exporter" in e for e in v.evidence), v.evidence


# --- item 5: launch-bound steps whose backward runs on the autograd thread -----------------------------


def _launch(main: float, launch: float) -> dict[str, float]:
    return {"cpu_compute/job/main_busy_cores": main, "cpu_compute/job/launch_thread_cores": launch}


def test_launch_bound_counts_the_autograd_thread_that_launches_backward(fake_tree):
    """Main 0.45 + autograd 0.50 of a core with SMs 20% busy: launch-bound, not undetermined."""
    peaks = _peaks(fake_tree, H200)
    figs = {**gpu("gpu0", busy=0.9, sm=0.2, tensor=0.05, dram=0.05), **_launch(0.45, 0.95)}
    v = top(win(figs, {"device": "cuda"}), peaks)
    assert v.resource == "cpu_compute" and any("autograd device threads 0.50" in e for e in v.evidence), v
    # the same step replayed from CUDA graphs: no launch cost to blame
    v = top(win(figs, {"device": "cuda", "cuda_graphs": True}), peaks)
    assert v.resource == UNDETERMINED and "CUDA graphs" in v.reason, v


# --- item 6: every rank's own GPU ------------------------------------------------------------------


def _rank_facts(k: int, **extra: Any) -> dict[str, Any]:
    return {"gpu": f"GPU-fake-{k}", "device": "cuda", "cuda_uuids": (f"GPU-fake-{k}",), **extra}


def test_every_ranks_gpu_is_judged_not_only_rank_0s(fake_tree):
    """Rank 0's GPU compute-bound, rank 1's memory-bound: rank 1 is judged on its own GPU."""
    peaks = _peaks(fake_tree, H200, H200)
    figs = {
        **gpu("gpu0", busy=1.0, sm=0.9, tensor=0.8, dram=0.3),
        **gpu("gpu1", busy=1.0, sm=0.95, tensor=0.1, dram=0.9),
    }
    fs = {f.resource: f for f in findings(win(figs, ranks={0: _rank_facts(0), 1: _rank_facts(1)}), peaks)}
    assert {"gpu_compute", "gpu_memory_bandwidth"} <= set(fs)
    assert any("gpu1 (rank 1)" in e for e in fs["gpu_memory_bandwidth"].evidence)


def test_the_jobs_verdict_over_its_ranks_gpus(fake_tree):
    """Four ranks: three compute-bound, one memory-bound: the job is gpu_compute on 3 of 4."""
    peaks = _peaks(fake_tree, H200, H200, H200, H200)
    figs = {}
    for k in range(4):
        figs.update(
            gpu(f"gpu{k}", busy=1.0, sm=0.95, tensor=0.1, dram=0.9)
            if k == 2
            else gpu(f"gpu{k}", busy=1.0, sm=0.92, tensor=0.85, dram=0.3)
        )
    v = top(win(figs, ranks={k: _rank_facts(k) for k in range(4)}), peaks)
    assert v.resource == "gpu_compute" and any("on 3 of the 4 GPUs judged" in e for e in v.evidence), v
    assert any("gpu2 (rank 2): gpu_memory_bandwidth" in e for e in v.evidence), v.evidence


def test_each_rank_is_judged_with_its_own_roofline(fake_tree):
    """No GPM: each rank's own achieved FLOP/s and bytes/s decide its GPU (rank 1's are memory-bound)."""
    peaks = _peaks(fake_tree, H200, H200)
    figs = {**gpu("gpu0", busy=1.0), **gpu("gpu1", busy=1.0)}
    roof = {"autocast_dtype": "bfloat16"}
    ranks = {
        0: _rank_facts(0, achieved_flops=700e12, achieved_bytes_per_second=1.0e12, **roof),
        1: _rank_facts(1, achieved_flops=100e12, achieved_bytes_per_second=4.0e12, **roof),
    }
    fs = {f.resource: f for f in findings(win(figs, ranks=ranks), peaks)}
    assert {"gpu_compute", "gpu_memory_bandwidth"} <= set(fs)


# --- item 7: a CPU job on a shared GPU node; every rule reads the job's GPUs ----------------------------


def _cpu_bound_job() -> dict[str, float]:
    return {
        "cpu_compute/job/busy_cores": 7.6,
        "cpu_compute/job/main_busy_cores": 0.98,
        "cpu_compute/job/hottest_thread_busy": 0.98,
        "cpu_compute/job/usable_cores": 8.0,
        "cpu_compute/job/ranks": 1.0,
        "cpu_compute/host/cores": 8.0,
        "cpu_compute/host/utilization": 0.95,
    }


def test_a_cpu_job_on_a_shared_gpu_node_is_not_judged_on_other_tenants_gpus(fake_tree):
    peaks = _peaks(fake_tree, H200, H200)
    tenants = {
        **gpu("gpu0", busy=1.0, sm=0.9, tensor=0.8, dram=0.3, job=0.0),
        **gpu("gpu1", busy=1.0, sm=0.9, tensor=0.8, dram=0.3, job=0.0),
    }
    attach = {"phase_source": "py-spy"}  # no device fact: NVML's process lists show the job on no GPU
    v = top(win({**tenants, **_cpu_bound_job()}, attach), peaks)
    assert v.resource == "cpu_compute", v
    assert "gpu_compute" not in {f.resource for f in findings(win({**tenants, **_cpu_bound_job()}, attach), peaks)}


def test_transfer_and_communication_read_the_jobs_gpus_links(fake_tree):
    peaks = _peaks(fake_tree, H200, H200)
    base = {
        **gpu("gpu0", busy=1.0, sm=0.9, tensor=0.8, dram=0.3, pcie=0.05, nvlink=0.05, job=1.0),
        **gpu("gpu1", busy=1.0, sm=0.1, tensor=0.0, dram=0.1, pcie=0.9, nvlink=0.9, job=0.0),
    }
    got = {f.resource for f in findings(win(base, {"device": "cuda"}), peaks)}
    assert "cpu_gpu_interconnect" not in got and "inter_gpu_interconnect" not in got, got
    # without step phases (machine-only rules): the other tenant's NVLink is not the job's
    w = Window(5)
    for i in range(5):
        w.add(Sample(float(i), 1.0, _readings(base)))
    got = {f.resource for f in findings(w.stats(), peaks)}
    assert "inter_gpu_interconnect" not in got, got


@pytest.mark.parametrize("owner", ["gpu0", "gpu1"])
def test_the_same_readings_judge_whichever_gpu_is_the_jobs(fake_tree, owner):
    """A control: the PCIe evidence is the job's GPU's, whichever that is."""
    peaks = _peaks(fake_tree, H200, H200)
    base = {
        **gpu("gpu0", busy=1.0, sm=0.1, tensor=0.0, dram=0.1, pcie=0.9, job=1.0 if owner == "gpu0" else 0.0),
        **gpu("gpu1", busy=1.0, sm=0.9, tensor=0.8, dram=0.3, pcie=0.05, job=1.0 if owner == "gpu1" else 0.0),
    }
    shares = {"transfer": 0.45, "forward": 0.2, "backward": 0.3, "optimizer": 0.05}
    f = {x.resource: x for x in findings(win(base, {"device": "cuda"}, shares=shares), peaks)}
    pcie_ev = [e for e in f["cpu_gpu_interconnect"].evidence if "PCIe" in e]
    assert pcie_ev and all(e.startswith(owner) for e in pcie_ev), pcie_ev  # the job's link, never the other's
    busy_while_idle = [e for e in pcie_ev if "while SM activity" in e]
    assert bool(busy_while_idle) == (owner == "gpu0"), pcie_ev
