"""Typed facts: declared types, set and unset, bad values dropped and counted, bounded size."""

from __future__ import annotations

import json

from bottleneckd.model.facts import FACTS, MAX_STR, FactBoard, Facts


def test_typed_values_kept_and_wrong_ones_dropped() -> None:
    f = Facts(
        {
            "device": "cpu",
            "loader_workers": 4,
            "has_conv": True,
            "achieved_flops": 3,
            "low_intensity_op_share": "x",
            "loader_workers_saturate_cores": 1,
            "epoch": -1,
            "made_up": 1,
            "arithmetic_intensity": float("inf"),
            "autocast_dtype": "float64",
        }
    )
    assert dict(f) == {"device": "cpu", "loader_workers": 4, "has_conv": True, "achieved_flops": 3.0}
    assert f.rejected == 6 and any("low_intensity_op_share" in d for d in f.dropped)
    assert f.get("missing") is None and f.get("missing", 5) == 5 and "device" in f


def test_set_and_unset_make_new_facts() -> None:
    f = Facts(autocast_dtype="bfloat16")
    g = f.unset("autocast_dtype")
    assert "autocast_dtype" in f and "autocast_dtype" not in g
    assert g.set(channels_last=True).get("channels_last") is True


def test_facts_are_immutable() -> None:
    f = Facts(device="cpu")
    try:
        f._d = {}  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("Facts accepted an assignment")
    assert dict(f) == {"device": "cpu"}


def test_board_validates_on_write_and_unsets() -> None:
    b = FactBoard({"device": "cpu"})
    b["autocast_dtype"] = "bfloat16"
    b["has_conv"] = "yes"  # wrong type: dropped, counted, not raised
    assert b.rejected == 1 and "has_conv" not in b
    assert b.freeze().get("autocast_dtype") == "bfloat16"
    b.pop("autocast_dtype")
    assert "autocast_dtype" not in b.freeze()
    b["prefetch_factor"] = None  # None unsets
    assert "prefetch_factor" not in b


def test_size_is_bounded_whatever_arrives() -> None:
    raw = {f"k{i}": "x" * 10_000 for i in range(1000)}
    raw.update({name: "y" * 10_000 for name in FACTS})
    f = Facts(raw)
    assert len(json.dumps(f.to_json())) < 100 and f.rejected == 1000 + len(FACTS)
    biggest = {n: ("x" * MAX_STR if s.type == "str" and not s.choices else None) for n, s in FACTS.items()}
    assert len(json.dumps(Facts({k: v for k, v in biggest.items() if v}).to_json())) < 64 * len(FACTS) + 2000


# --- contract: every fact the knowledge base reads is produced, by the producer it names ------
def _kb_facts() -> set[str]:
    from bottleneckd.advice.fit import facts_read
    from bottleneckd.advice.knowledge import load_knowledge

    return {f for m in load_knowledge() for c in (*m.skip_if, *m.requires, *m.unfit_if) for f in facts_read(c)}


def _source(module: str) -> str:
    from pathlib import Path

    return (Path(__file__).resolve().parents[1] / (module.replace(".", "/") + ".py")).read_text()


def test_every_declared_producer_sets_its_fact() -> None:
    missing = []
    for name, spec in FACTS.items():
        assert spec.producers, f"{name} has no producer"
        for mod in spec.producers:
            src = _source(mod)
            if f'"{name}"' not in src and f"{name}=" not in src:
                missing.append(f"{name} in {mod}")
    assert not missing, f"declared producers that never set their fact: {missing}"


def test_the_knowledge_base_reads_only_declared_facts_with_producers() -> None:
    read = _kb_facts()
    assert read, "the knowledge base reads no facts: the test would prove nothing"
    assert read <= set(FACTS), f"undeclared: {read - set(FACTS)}"
    assert {
        "input_rank",
        "has_conv",
        "cpu_fast_bf16",
        "gpu_count",
        "device",
        "ddp",
        "sharded",
        "offloading",
        "compiled",
    } <= read


def test_hook_side_producers_really_produce_each_fact_they_declare() -> None:
    torch = __import__("pytest").importorskip("torch")
    import threading

    from torch.utils.data import DataLoader, TensorDataset

    from bottleneckd.torch.probe import Precision, input_facts, loader_facts, model_facts, runtime_facts

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten()).to(torch.bfloat16)
    got = {
        **model_facts(model),
        **Precision(model, "cpu").facts(),
        **runtime_facts(model, threading.get_native_id()),
        **loader_facts(DataLoader(TensorDataset(torch.randn(4, 3)), batch_size=2, num_workers=1)),
        **input_facts((torch.randn(2, 3, 8, 8),)),
    }
    declared = {n for n, s in FACTS.items() if "bottleneckd.torch.probe" in s.producers}
    declared.discard("ddp")  # set by probe only for a DistributedDataParallel model (needs a process group)
    assert declared - set(got) == set(), f"declared for torch/probe.py but not produced: {declared - set(got)}"
    f = Facts(got)
    assert f.rejected == 0, f.dropped
    assert f.get("input_rank") == 4 and f.get("has_conv") is True and f.get("param_dtype") == "bfloat16"


def test_daemon_side_producers_really_produce_each_fact_they_declare() -> None:
    from bottleneckd.advice.fit import machine_facts
    from bottleneckd.hardware.detect.machine import Machine
    from bottleneckd.hardware.detect.types import CpuInfo

    got = machine_facts(Machine("h", CpuInfo("x", 2, 2, 1, None, ("avx512_bf16",)), None, (), (), (), (), ()))
    declared = {n for n, s in FACTS.items() if "bottleneckd.advice.fit" in s.producers}
    assert declared == set(got) and got.rejected == 0 and got["cpu_fast_bf16"] is True


def test_an_optimizer_stepping_on_host_memory_parameters_is_offloading() -> None:
    """ZeRO-Offload's CPU Adam (or any master copy in host memory) steps on CPU tensors while the
    model's are on a GPU: ``offloading`` (rules/offload.py judges its optimizer step as the CPU's).
    A CPU model's optimizer on the CPU is not offloading."""
    torch = __import__("pytest").importorskip("torch")
    from bottleneckd.torch.probe import model_facts, optimizer_on_cpu, parallel_facts

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    assert optimizer_on_cpu(opt) and not optimizer_on_cpu(None) and not optimizer_on_cpu(object())
    assert parallel_facts(model, optimizer_offloaded=True)["offloading"] is True
    assert model_facts(model, opt)["offloading"] is False  # the model is on the CPU too


def test_the_optimizers_implementation_is_read_off_its_parameter_group() -> None:
    """torch.optim's fused, foreach or for-loop step (fused_optimizer is advised where it is not
    fused); unset foreach is torch's default, foreach on a GPU; an optimizer without the options
    (a custom one, LBFGS) reports none."""
    torch = __import__("pytest").importorskip("torch")
    from bottleneckd.model.facts import check
    from bottleneckd.torch.probe import model_facts, optimizer_impl

    model = torch.nn.Linear(4, 2)
    ps = list(model.parameters())
    assert optimizer_impl(torch.optim.AdamW(ps, foreach=False), cuda=True) == "for-loop"
    assert optimizer_impl(torch.optim.AdamW(ps, foreach=True), cuda=False) == "foreach"
    assert optimizer_impl(torch.optim.AdamW(ps), cuda=True) == "foreach"
    assert optimizer_impl(torch.optim.AdamW(ps), cuda=False) == "for-loop"
    assert optimizer_impl(torch.optim.SGD(ps, lr=0.1), cuda=True) == "foreach"
    assert optimizer_impl(torch.optim.LBFGS(ps), cuda=True) is None
    assert optimizer_impl(None, cuda=True) is None and optimizer_impl(object(), cuda=True) is None
    fact = model_facts(model, torch.optim.AdamW(ps, foreach=False))["optimizer_impl"]
    assert fact == "for-loop" and check("optimizer_impl", fact) == "for-loop"
