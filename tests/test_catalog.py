import json
from pathlib import Path

import pytest

from bottleneckd.model.errors import InputError
from bottleneckd.peaks.catalog import UNITS, default_catalog_path, load_catalog
from tests.conftest import run_cli

REQUIRED_GPUS = [
    "V100",
    "A100 40GB SXM",
    "A100 80GB SXM",
    "A100 40GB PCIe",
    "A100 80GB PCIe",
    "H100 SXM",
    "H100 PCIe",
    "H200",
    "L4",
    "L40S",
    "A10",
    "T4",
    "RTX 4090",
    "B200",
]


def test_catalog_has_every_required_part_with_sources():
    c = load_catalog()
    names = [g.name for g in c.gpus]
    for want in REQUIRED_GPUS:
        assert any(want in n for n in names), want
    for g in c.gpus:
        metrics = {(p.resource, p.metric) for p in g.peaks}
        tensor = {("gpu_compute", "fp16_bf16_tensor_dense"), ("gpu_compute", "fp16_tensor_dense")} & metrics
        assert len(tensor) == 1 and ("gpu_compute", "fp32") in metrics
        assert ("gpu_memory_bandwidth", "dram_bandwidth") in metrics and ("gpu_memory", "capacity") in metrics
        for p in g.peaks:
            assert p.source and p.unit in UNITS and p.value > 0
    ids = {link.id for link in c.links}
    for want in [
        "pcie_gen3_x16",
        "pcie_gen4_x16",
        "pcie_gen5_x16",
        "ddr4_3200_channel",
        "ddr5_4800_channel",
        "nvme_gen4_seq_read",
        "nvme_gen5_seq_read",
        "ethernet_10g",
        "ethernet_800g",
        "infiniband_hdr_4x",
        "infiniband_ndr_4x",
    ]:
        assert want in ids, want
    assert len(c.table4) == 10


def test_units_are_exact():
    c = load_catalog()
    h100 = c.gpu_spec("NVIDIA H100 80GB HBM3")
    assert h100.peak("gpu_compute", "fp16_bf16_tensor_dense").value == pytest.approx(989e12)
    nvl = h100.peak("inter_gpu_interconnect")
    assert nvl.direction == "both" and nvl.value == pytest.approx(900e9)
    assert c.link("pcie_gen4_x16").peak.direction == "per direction"
    assert c.link("pcie_gen4_x16").peak.value == pytest.approx(31.5e9, rel=0.01)
    a100_f32 = next(r for r in c.table4 if "f32" in r.row)
    assert a100_f32.unit == "madd/s" and "19.5" in a100_f32.note  # Table 4's 'FLOPs' is multiply-adds


@pytest.mark.parametrize(
    "name,expected",
    [
        ("NVIDIA A100-SXM4-40GB", "nvidia_a100_sxm_40gb"),
        ("NVIDIA A100-SXM4-80GB", "nvidia_a100_sxm_80gb"),
        ("NVIDIA A100 80GB PCIe", "nvidia_a100_pcie_80gb"),
        ("NVIDIA A10", "nvidia_a10"),
        ("NVIDIA H100 PCIe", "nvidia_h100_pcie"),
        ("NVIDIA H100 80GB HBM3", "nvidia_h100_sxm"),
        ("NVIDIA H200", "nvidia_h200_sxm"),
        ("Tesla T4", "nvidia_t4"),
        ("Tesla V100-SXM2-32GB", "nvidia_v100_sxm2"),
        ("NVIDIA L4", "nvidia_l4"),
        ("NVIDIA L40S", "nvidia_l40s"),
        ("NVIDIA GeForce RTX 4090", "nvidia_rtx_4090"),
        ("NVIDIA B200", "nvidia_b200"),
        # a left word boundary too: GH200 is not an H200, GB200 not an HGX B200, H100 NVL not an H100 SXM
        ("NVIDIA GH200 480GB", "nvidia_gh200"),
        ("NVIDIA GB200", "nvidia_gb200"),
        ("NVIDIA H100 NVL", "nvidia_h100_nvl"),
    ],
)
def test_nvml_names_match_the_right_entry(name, expected):
    assert load_catalog().gpu_spec(name).id == expected


def test_v100_and_t4_have_no_bf16_tensor_path_and_gh200_has_a_c2c_host_link():
    c = load_catalog()
    for name in ("Tesla V100-SXM2-32GB", "Tesla T4"):
        g = c.gpu_spec(name)
        assert (
            g.peak("gpu_compute", "fp16_bf16_tensor_dense") is None
            and g.peak("gpu_compute", "fp16_tensor_dense") is not None
        )
    link = c.gpu_spec("NVIDIA GH200 480GB").peak("cpu_gpu_interconnect")
    assert link.metric.startswith("nvlink_c2c") and link.value == pytest.approx(450e9)


def test_b200_is_the_hgx_column():
    """NVIDIA's HGX table: HGX B200 FP32 75 TFLOPS and 7.7 TB/s per GPU (80 and 8 are GB200's)."""
    b = load_catalog().gpu_spec("NVIDIA B200")
    assert b.peak("gpu_compute", "fp32").value == pytest.approx(75e12)
    assert b.peak("gpu_memory_bandwidth").value == pytest.approx(7.7e12)
    assert "HGX B200" in b.peak("gpu_compute", "fp32").source


def _broken(tmp_path: Path, mutate) -> Path:
    doc = json.loads(default_catalog_path().read_text())
    mutate(doc)
    p = tmp_path / "catalog.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize(
    "mutate,field,problem",
    [
        (lambda d: d["gpus"][2]["peaks"][0].__setitem__("value", -5), "gpus[2].peaks[0].value", "positive"),
        (lambda d: d["gpus"][0]["peaks"][1].__setitem__("value", 0), "gpus[0].peaks[1].value", "positive"),
        (
            lambda d: d["links"][3].__setitem__("resource", "gpu_speed"),
            "links[3].resource",
            "unknown resource id 'gpu_speed'",
        ),
        (lambda d: d["links"][0].__setitem__("unit", "GB/s"), "links[0].unit", "unknown unit"),
        (lambda d: d["gpus"][1]["peaks"][0].pop("source"), "gpus[1].peaks[0].source", "missing"),
    ],
)
def test_bad_catalog_names_file_field_and_problem(tmp_path, mutate, field, problem):
    p = _broken(tmp_path, mutate)
    with pytest.raises(InputError) as e:
        load_catalog(p)
    msg = str(e.value)
    assert str(p) in msg and field in msg and problem in msg and "\n" not in msg


@pytest.mark.slow
def test_bad_catalog_on_the_command_line_exits_2_with_one_line(tmp_path, cli_env):
    p = tmp_path / "bad.json"
    p.write_text('{"schema": "bottleneckd.peaks/1", "gpus": [}')
    before = p.read_text()
    r = run_cli(["--catalog", str(p), "peaks"], cli_env)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and str(p) in r.stderr and "not valid JSON" in r.stderr
    assert "Traceback" not in r.stderr
    assert p.read_text() == before
    r = run_cli(["--debug", "--catalog", str(p), "peaks"], cli_env)
    assert "Traceback" in r.stderr
