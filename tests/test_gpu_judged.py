"""Rule fixes found by judging the constructed held-out GPU traces (tests/data/gpu_heldout, written
by tests/data/construct_gpu.py) as a GPU performance engineer would: each test is the general case
behind one wrong or doubtful verdict, on windows built through the real Window."""

from __future__ import annotations

from bottleneckd.diagnosis.classify import findings
from tests.test_gpu_verdicts import A100, _peaks, gpu, top, win
from tests.windows import HOST, job

#: attach on a GPU job whose loop reads loss.item() each step: py-spy sees the loop's own line
#: ("other") while the main thread spins in the CUDA synchronisation
ATTACH = {"other": 0.55, "forward": 0.15, "backward": 0.22, "optimizer": 0.05, "data_wait": 0.03}
PYSPY = {"phase_source": "py-spy", "stack_samples": 100}


def test_a_thread_spinning_on_a_gpu_that_never_idles_is_not_host_python(fake_tree):
    """The GPU ran kernels 99% of the time: the thread at a full core outside the phases waits on it
    (CUDA's spin-wait), so the GPU is judged (its memory-busy fraction here), not the host's Python."""
    peaks = _peaks(fake_tree, A100, A100)
    figs = {
        **HOST,
        **job(1.4, 0.98, workers=0.4, n_workers=4, usable=32.0),
        **gpu("gpu0", busy=0.99, mem_busy=0.86, job=1.0),
        **gpu("gpu1", busy=1.0, mem_busy=0.4, job=0.0),  # another tenant's
    }
    v = top(win(figs, PYSPY, shares=ATTACH), peaks)
    assert v.resource == "gpu_memory_bandwidth" and v.stage == "compute", v
    assert any("waited on the GPU" in e for e in v.evidence), v.evidence
    assert all(f.resource != "cpu_compute" for f in findings(win(figs, PYSPY, shares=ATTACH), peaks))


def test_python_between_the_phases_of_a_gpu_job_that_leaves_its_gpu_idle_is_still_the_host(fake_tree):
    """The same thread at a full core while the job's GPU runs kernels 40% of the time: the host's
    Python work between the phases starves it."""
    peaks = _peaks(fake_tree, A100, A100)
    figs = {
        **HOST,
        **job(1.4, 0.98, workers=0.4, n_workers=4, usable=32.0),
        **gpu("gpu0", busy=0.40, mem_busy=0.3, job=1.0),
        **gpu("gpu1", busy=1.0, mem_busy=0.4, job=0.0),  # another tenant's GPU never idles: not the job's
    }
    v = top(win(figs, PYSPY, shares=ATTACH), peaks)
    assert (v.resource, v.stage) == ("cpu_compute", "other"), v


def test_a_cpu_job_is_not_judged_on_another_tenants_nvlink_or_memory(fake_tree):
    """NVML lists PIDs of another namespace on every GPU (the job's absence is not shown), but the
    hook says the job runs on the CPU: the tenant's busy NVLink and full memory are not the job's (at 95%
    the tenant's NVLink outscored the job's own CPU and was the verdict)."""
    peaks = _peaks(fake_tree, A100, A100)
    figs = {**HOST, **job(7.8, 0.99, usable=8.0)}
    for dev in ("gpu0", "gpu1"):
        figs.update(gpu(dev, busy=1.0, sm=0.9, tensor=0.6, dram=0.4, used=0.97, nvlink=0.95, pcie=0.9))
    shares = {"data_wait": 0.03, "forward": 0.35, "backward": 0.52, "optimizer": 0.07, "other": 0.03}
    w = win(figs, {"device": "cpu"}, shares=shares)
    fs = {f.resource for f in findings(w, peaks)}
    assert not fs & {"inter_gpu_interconnect", "gpu_memory", "cpu_gpu_interconnect", "gpu_compute"}, fs
    assert top(w, peaks).resource == "cpu_compute"
