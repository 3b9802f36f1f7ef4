import pytest

from bottleneckd.hardware.detect import detect_machine
from bottleneckd.model.resources import RESOURCES
from bottleneckd.peaks.catalog import load_catalog
from bottleneckd.peaks.resolve import resolve_peaks
from tests.fake_nvml import FakeGpu, FakeNvml


def test_host_detection_from_fake_trees(fake_tree):
    sys_root, proc_root = fake_tree
    m = detect_machine(sys_root, proc_root, nvml=None)
    assert m.cpu.model.startswith("Intel(R) Xeon(R) Platinum 8380")
    assert (m.cpu.logical_cores, m.cpu.physical_cores, m.cpu.sockets, m.cpu.max_mhz) == (8, 8, 1, 3400.0)
    assert "avx512f" in m.cpu.flags
    assert m.memory_total_bytes == 64 * 2**30
    assert [b.name for b in m.block_devices] == ["nvme0n1"]  # loop devices skipped
    assert m.block_devices[0].pcie_generation == 4 and m.block_devices[0].transport == "nvme"
    assert [(n.name, n.speed_mbps) for n in m.nics] == [("eth0", 100000)]
    assert [(p.device, p.port, p.rate_gbps, p.state) for p in m.ib_ports] == [("mlx5_0", 1, 200.0, "ACTIVE")]
    nfs = [x for x in m.mounts if x.network]
    assert [(x.mountpoint, x.fstype) for x in nfs] == [("/mnt/data", "nfs4")]
    assert m.gpus == () and m.unknown["gpus"] == "NVML disabled"


def test_peaks_from_fake_machine_cover_all_twelve(fake_tree):
    sys_root, proc_root = fake_tree
    m = detect_machine(sys_root, proc_root, nvml=FakeNvml([FakeGpu(), FakeGpu()]))
    t = resolve_peaks(m, load_catalog())
    assert {p.resource for p in t.peaks} == set(RESOURCES)
    assert t.value("gpu_compute", "gpu0", "fp16_bf16_tensor_dense") == pytest.approx(989e12)
    assert t.value("gpu_memory", "gpu1") == 80e9
    assert t.value("cpu_gpu_interconnect", "gpu0") == pytest.approx(63e9, rel=0.01)  # gen5 x16 per direction
    assert t.value("inter_gpu_interconnect", "gpu0") == pytest.approx(900e9)  # 18 active links of 18
    assert t.get("cpu_compute", "cpu").origin == "catalog"  # Xeon 8380 is Table 4's CPU
    assert t.value("storage_bandwidth", "nvme0n1", "sequential_read") == 7e9
    assert t.value("inter_node_interconnect", "eth0") == 100e9 / 8
    assert t.value("inter_node_interconnect", "mlx5_0/1") == 200e9 / 8
    assert t.value("storage_network_bandwidth", "/mnt/data") == 200e9 / 8  # bounded by the fastest link
    bw = t.get("cpu_memory_bandwidth", "host")
    assert bw.value is None and bw.origin == "unknown" and "calibrate" in bw.source


def test_gpu_without_nvlink_and_partial_links(fake_tree):
    sys_root, proc_root = fake_tree
    m = detect_machine(
        sys_root,
        proc_root,
        nvml=FakeNvml(
            [
                FakeGpu(name="NVIDIA L4", nvlink_links=0, pcie_max=(4, 16)),
                FakeGpu(name="NVIDIA L4", nvlink_links=0, pcie_max=(4, 16)),
            ]
        ),
    )
    t = resolve_peaks(m, load_catalog())
    p = t.get("inter_gpu_interconnect", "gpu0")
    assert p.metric == "pcie_peer" and p.value == pytest.approx(31.5e9, rel=0.01)
    m = detect_machine(sys_root, proc_root, nvml=FakeNvml([FakeGpu(nvlink_links=9), FakeGpu(nvlink_links=9)]))
    assert resolve_peaks(m, load_catalog()).value("inter_gpu_interconnect", "gpu0") == pytest.approx(450e9)


def test_unknown_gpu_model_is_unknown_not_invented(fake_tree):
    sys_root, proc_root = fake_tree
    m = detect_machine(sys_root, proc_root, nvml=FakeNvml([FakeGpu(name="NVIDIA Quantum X9000")]))
    t = resolve_peaks(m, load_catalog())
    g = t.get("gpu_compute", "gpu0", "fp16_bf16_tensor_dense")
    assert g.value is None and "not in the catalog" in g.source
    assert t.get("inter_gpu_interconnect", "gpu0").value is None  # one GPU


def test_nvml_missing_on_this_machine_is_reported_with_reason():
    m = detect_machine()  # this CI machine has no GPU: the real NVML path fails cleanly
    if m.gpus:
        pytest.skip("this machine has a GPU")
    assert "NVML" in m.unknown["gpus"]
    t = resolve_peaks(m, load_catalog())
    assert {p.resource for p in t.peaks} == set(RESOURCES)
    for p in t.for_resource("gpu_compute"):
        assert p.value is None and "NVML" in p.source
