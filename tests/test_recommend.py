"""The ranking of mitigations, and whether each fits the job (issue 11 item 6; issue 10 items 1, 8):
unit tests over the real knowledge base, with facts as the hook and the machine produce them."""

from __future__ import annotations

import pytest

from bottleneckd.advice.fit import in_effect, machine_facts, unfit
from bottleneckd.advice.knowledge import load_knowledge
from bottleneckd.advice.recommend import COST_WEIGHT, SECONDARY_WEIGHT, not_fitting, recommend, score, skipped
from bottleneckd.diagnosis.verdict import Verdict
from bottleneckd.hardware.detect.machine import Machine
from bottleneckd.hardware.detect.types import CpuInfo
from bottleneckd.model.facts import Facts

KB = load_knowledge()
BY_ID = {m.id: m for m in KB}


def verdict(resource: str, stage: str = "compute", secondary: tuple = ()) -> Verdict:
    return Verdict(resource=resource, stage=stage, confidence=0.8, evidence=("e",), secondary=secondary)


def ids(recs) -> list[str]:
    return [r.mitigation.id for r in recs]


def machine(flags: tuple[str, ...], gpus: int = 0) -> Machine:
    return Machine(
        "h", CpuInfo("cpu", 8, 4, 1, None, flags), 1 << 34, tuple(object() for _ in range(gpus)), (), (), (), ()
    )  # type: ignore[arg-type] - only the GPU count is read


CPU_JOB = Facts(device="cpu", has_conv=False, input_rank=2, compiled=False, ddp=False, sharded=False, offloading=False)
IMAGE_JOB = Facts(device="cuda", has_conv=True, input_rank=4, gpu_count=1, compiled=False, ddp=False)


def test_ranked_by_strength_and_cost_highest_first() -> None:
    recs = recommend(verdict("gpu_compute"), KB, IMAGE_JOB, limit=50)
    assert recs and [r.score for r in recs] == sorted((r.score for r in recs), reverse=True)
    for r in recs:
        assert r.score == pytest.approx(score(r.mitigation, 1.0 if r.resource == "gpu_compute" else SECONDARY_WEIGHT))
    top = recs[0].mitigation
    assert (
        top.strength * COST_WEIGHT[top.cost]
        >= max(
            m.strength * COST_WEIGHT[m.cost]
            for m in KB
            if "gpu_compute" in m.resources
            and "compute" in m.stages
            and not unfit(m, IMAGE_JOB)
            and not in_effect(m, IMAGE_JOB)
        )
        - 1e-9
    )


def test_only_mitigations_of_the_active_stage_for_the_active_resource() -> None:
    recs = recommend(verdict("cpu_compute", stage="data"), KB, CPU_JOB, limit=50)
    assert recs and all("data" in r.mitigation.stages for r in recs if r.resource == "cpu_compute")
    assert "more_loader_workers" in ids(recs) and "shrink_tensors" not in ids(recs)


def test_secondary_pressure_ranks_below_the_same_mitigation_for_the_active_resource() -> None:
    v = verdict("gpu_memory_bandwidth", secondary=(("gpu_compute", 0.6),))
    recs = {r.mitigation.id: r for r in recommend(v, KB, IMAGE_JOB, limit=50)}
    sec_only = [r for r in recs.values() if r.resource == "gpu_compute"]
    assert sec_only and all(r.score == pytest.approx(score(r.mitigation, SECONDARY_WEIGHT * 0.6)) for r in sec_only)
    assert recs["mixed_precision"].resource == "gpu_memory_bandwidth"  # the better of its two scores


def test_undetermined_gets_no_advice_unless_the_step_waits_on_latency_in_its_stage() -> None:
    assert recommend(verdict("undetermined"), KB, IMAGE_JOB) == []
    assert recommend(verdict("undetermined", stage="data"), KB, IMAGE_JOB) == []  # balanced, say
    assert recommend(verdict("undetermined", stage="data"), KB, IMAGE_JOB.set(idle_wait_stage="other")) == []
    recs = recommend(verdict("undetermined", stage="data"), KB, IMAGE_JOB.set(idle_wait_stage="data"))
    assert ids(recs) == ["hide_loader_latency"] and recs[0].resource == "undetermined"


def test_progressive_resizing_only_for_image_batches_with_convolutions() -> None:
    v = verdict("gpu_compute")
    assert "progressive_resizing" in ids(recommend(v, KB, IMAGE_JOB, limit=50))
    for facts in (IMAGE_JOB.set(input_rank=2), IMAGE_JOB.set(has_conv=False), IMAGE_JOB.unset("input_rank")):
        recs = recommend(v, KB, facts, limit=50)
        assert "progressive_resizing" not in ids(recs)
        assert any(m.id == "progressive_resizing" and "needs" in why for m, why in not_fitting(v, KB, facts))


def test_channels_last_only_with_convolutions() -> None:
    v = verdict("gpu_memory_bandwidth")
    assert "channels_last" in ids(recommend(v, KB, IMAGE_JOB, limit=50))
    assert "channels_last" not in ids(recommend(v, KB, IMAGE_JOB.set(has_conv=False), limit=50))


def test_mixed_precision_on_a_cpu_only_with_fast_bf16() -> None:
    v = verdict("cpu_compute")
    slow = Facts({**machine_facts(machine(("avx2", "fma"))), **CPU_JOB})
    fast = Facts({**machine_facts(machine(("avx512f", "avx512_bf16"))), **CPU_JOB})
    amx = Facts({**machine_facts(machine(("amx_bf16",))), **CPU_JOB})
    assert slow.get("cpu_fast_bf16") is False and fast.get("cpu_fast_bf16") is True
    assert "mixed_precision" not in ids(recommend(v, KB, slow, limit=50))
    assert "mixed_precision" in ids(recommend(v, KB, fast, limit=50))
    assert "mixed_precision" in ids(recommend(v, KB, amx, limit=50))
    # attach mode (no hook facts) on a machine with no GPU and no bf16: not advised either
    bare = machine_facts(machine(("avx2",)))
    assert bare.get("gpu_count") == 0 and "mixed_precision" not in ids(recommend(v, KB, bare, limit=50))
    # a GPU job is unaffected by the CPU's flags
    assert "mixed_precision" in ids(recommend(verdict("gpu_compute"), KB, IMAGE_JOB.set(cpu_fast_bf16=False), limit=50))


def test_never_a_mitigation_already_in_effect_and_a_reverted_one_is_advised_again() -> None:
    v = verdict("gpu_compute")
    on = IMAGE_JOB.set(autocast_dtype="bfloat16", mitigations=("mixed_precision", "progressive_resizing"))
    recs = ids(recommend(v, KB, on, limit=50))
    assert "mixed_precision" not in recs and "progressive_resizing" not in recs
    why = dict((m.id, w) for m, w in skipped(v, KB, on))
    assert why["progressive_resizing"] == "applied through the hook (progressive_resizing)"
    off = on.unset("autocast_dtype", "mitigations")  # both reverted: the hook's next report lacks them
    recs = ids(recommend(v, KB, off, limit=50))
    assert "mixed_precision" in recs and "progressive_resizing" in recs


def test_not_applicable_is_not_reported_as_in_effect() -> None:
    v = verdict("inter_gpu_interconnect", stage="communication")
    facts = IMAGE_JOB.set(ddp=False, world_size=1)
    assert not any(m.id == "less_frequent_sync" for m, _ in skipped(v, KB, facts))
    assert any(
        m.id == "less_frequent_sync" and why.startswith("no data-parallel ranks synchronise gradients here")
        for m, why in not_fitting(v, KB, facts)
    )


def test_a_loop_that_all_reduces_itself_can_sync_less_often() -> None:
    """Ranks that all-reduce their gradients without DDP (the suite's communication_bound, proved by
    skipping the all_reduce): synchronising every k batches fits them too."""
    v = verdict("inter_gpu_interconnect", stage="communication")
    facts = IMAGE_JOB.set(ddp=False, world_size=2)
    assert "less_frequent_sync" in ids(recommend(v, KB, facts, limit=50))


def test_machine_facts_unknown_cpu_leaves_bf16_unknown() -> None:
    m = Machine("h", CpuInfo(None, None, None, None, None, ()), None, (), (), (), (), (), {"cpu": "no cpuinfo"})
    assert "cpu_fast_bf16" not in machine_facts(m) and machine_facts(None) == {}


def test_bf16_autocast_is_not_advised_for_a_cpu_step_whose_weights_serve_few_rows():
    """On a CPU, autocast casts every weight at each forward: with few rows per weight it lost
    (x0.41-x1.04 at 45-365 FLOP per parameter, scripts/eval.py --also-proofs); with many it won
    (x1.52 at 5553, BERT). The measured facts carry FLOP per parameter (diagnosis/measured.py)."""
    v = verdict("cpu_compute", stage="compute")
    few = Facts(device="cpu", gpu_count=0, cpu_fast_bf16=True, flops_per_parameter=341.0)
    assert "mixed_precision" not in ids(recommend(v, KB, few, limit=50))
    why = dict((m.id, w) for m, w in not_fitting(v, KB, few))["mixed_precision"]
    assert why.startswith("each weight serves few rows a step") and "flops_per_parameter" in why
    many = few.set(flops_per_parameter=5553.0)
    assert "mixed_precision" in ids(recommend(v, KB, many, limit=50))
    unknown = few.unset("flops_per_parameter")  # not counted (attach): no claim either way
    assert "mixed_precision" in ids(recommend(v, KB, unknown, limit=50))


def test_a_cpu_step_of_row_wise_operators_is_told_to_block_its_rows_not_to_autocast():
    """LayerNorm + GELU far past the caches (the suite's memory-bandwidth jobs): the same rows in
    cache-sized blocks measured x2.29 and x1.97; bf16 autocast x0.82 and x1.14 (it lowers only
    matrix products and convolutions on a CPU, and the step has none); torch.compile x0.89/x0.98."""
    v = verdict("cpu_memory_bandwidth", stage="compute")
    run = CPU_JOB.set(gpu_count=0, cpu_fast_bf16=True, flops_per_step=0.0, arithmetic_intensity=0.0)
    recs = ids(recommend(v, KB, run, limit=50))
    assert recs[0] == "cache_sized_blocks" and "mixed_precision" not in recs, recs
    why = dict((m.id, w) for m, w in not_fitting(v, KB, run))["mixed_precision"]
    assert why.startswith("no matrix products or convolutions in the step")
    # under attach: no FLOP count, but the forward's stack samples are all in row-wise operators
    attach = Facts(gpu_count=0, cpu_fast_bf16=True, low_intensity_op_share=1.0)
    recs = ids(recommend(v, KB, attach, limit=50))
    assert recs[0] == "cache_sized_blocks" and "mixed_precision" not in recs, recs
    assert "mixed_precision" in ids(recommend(v, KB, attach.set(low_intensity_op_share=0.5), limit=50))
    # under attach with most forward samples elsewhere (matrix products): blocking would re-read weights
    assert "cache_sized_blocks" not in ids(recommend(v, KB, attach.set(low_intensity_op_share=0.3), limit=50))


def test_another_loader_worker_comes_first_where_a_whole_core_is_idle_and_it_is_predicted_to_gain():
    """The knowledge base's first_if: the one-argument change a performance engineer makes before
    caching the preprocessing, whose larger predicted gain needs a deterministic pipeline (measured
    x1.53 for 0 -> 2 workers, x1.98 for 1 -> 2, scripts/eval.py --also-proofs)."""
    from bottleneckd.diagnosis.step_inputs import Share, StepInputs

    v = verdict("cpu_compute", stage="data")
    shares = {"data_wait": Share(0.9, 0.9, 0.9), "forward": Share(0.1, 0.1, 0.1)}
    i = StepInputs(step=0.1, shares=shares, loader_workers=1.0, worker_cores=1.0, idle_cores=1.1, cores=2.0)
    idle = CPU_JOB.set(job_idle_cores=1.1)
    recs = recommend(v, KB, idle, limit=50, inputs=i)
    top = recs[0]
    assert top.mitigation.id == "more_loader_workers" and "first: a whole core is idle" in top.why, ids(recs)
    assert "cache_preprocessing" in ids(recs[1:3])  # predicted higher (the data stage removed), second
    # less than a whole core idle: by predicted gain per cost, caching first
    half = recommend(v, KB, idle.set(job_idle_cores=0.7), limit=50, inputs=i)
    assert half[0].mitigation.id == "cache_preprocessing" and not any(r.first for r in half)
    # no prediction (no measured inputs): nothing is put first on a condition alone; by score
    blind = recommend(v, KB, idle, limit=50)
    assert blind[0].mitigation.id == "cache_preprocessing" and blind[0].prediction.speedup is None
    workers = blind[ids(blind).index("more_loader_workers")]
    assert workers is not blind[0] and workers.first is None and "first:" not in workers.why


def test_blocking_rows_does_not_fit_a_step_whose_bytes_are_weights():
    """Micro-batches of 16 rows through 1536-wide layers (grad_accumulation: 3.8 FLOP/byte, the
    weights streamed for every micro-batch; more rows per weight measured x2.41): smaller blocks
    would read every weight once more per block."""
    v = verdict("cpu_memory_bandwidth", stage="compute")
    weights = CPU_JOB.set(gpu_count=0, cpu_fast_bf16=True, flops_per_step=2.0e9, arithmetic_intensity=3.8)
    assert "cache_sized_blocks" not in ids(recommend(v, KB, weights, limit=50))
    why = dict((m.id, w) for m, w in not_fitting(v, KB, weights))["cache_sized_blocks"]
    assert "re-read every weight" in why and "arithmetic_intensity" in why
    assert "more_compute_per_byte" in ids(recommend(v, KB, weights, limit=50))


def test_random_augmentation_is_made_cheaper_first_and_not_cached():
    """The loader's time in code that draws random numbers per sample (the fact data_random_share,
    samplers/random_draws.py): a cache would freeze the draws, so it does not fit; making the
    augmentation cheaper comes first, with its prediction. Deterministic preprocessing (a
    tokenizer): caching it stays first."""
    from bottleneckd.diagnosis.step_inputs import Share, StepInputs

    v = verdict("cpu_compute", stage="data")
    shares = {"data_wait": Share(0.9, 0.9, 0.9), "forward": Share(0.1, 0.1, 0.1)}
    full = CPU_JOB.set(job_idle_cores=0.2)  # the workers fill the cores: no other worker fits
    i = StepInputs(step=0.1, shares=shares, loader_workers=2.0, worker_cores=1.8, idle_cores=0.2, cores=2.0)
    drawn = StepInputs(**{**i.__dict__, "data_random": 0.9})
    random = full.set(data_random_share=0.9, data_seeded_share=0.0)
    recs = recommend(v, KB, random, limit=50, inputs=drawn)
    assert recs[0].mitigation.id == "simplify_augmentation" and "first: half or more" in recs[0].why, ids(recs)
    assert recs[0].prediction.speedup == pytest.approx(1 / max(0.1, 1 - 0.9 * 0.5))
    assert "cache_preprocessing" not in ids(recs)
    why = {m.id: w for m, w in not_fitting(v, KB, random)}
    assert "stop augmenting" in why["cache_preprocessing"]
    # the same draws seeded by the sample (a generator seeded by its index): the same each epoch, so
    # the cache is exact and fits; cheaper augmentation stays first, saying so
    seeded = full.set(data_random_share=0.9, data_seeded_share=0.8)
    recs = recommend(v, KB, seeded, limit=50, inputs=drawn)
    assert recs[0].mitigation.id == "simplify_augmentation" and "seeded by the sample" in recs[0].why, ids(recs)
    assert "cache_preprocessing" in ids(recs)[:3]
    assert "cache_preprocessing" not in {m.id for m, _ in not_fitting(v, KB, seeded)}
    # a tokenizer's loader: nothing drawn, the cache is exact and removes the whole stage
    det = recommend(
        v, KB, full.set(data_random_share=0.0), limit=50, inputs=StepInputs(**{**i.__dict__, "data_random": 0.0})
    )
    assert det[0].mitigation.id == "cache_preprocessing" and not any(r.first for r in det), ids(det)
    # not read (no stack samples of the loader): as before, no condition holds either way
    blind = recommend(v, KB, full, limit=50, inputs=i)
    assert blind[0].mitigation.id == "cache_preprocessing"
    assert blind[ids(blind).index("simplify_augmentation")].prediction.speedup is None


def test_removing_a_stage_that_is_the_whole_step_goes_before_changing_semantics_to_reduce_it():
    """Under attach every stack sample of a tokenizing loader's job was in the data wait: caching the
    preprocessing (removal) cannot be given a figure, data echoing (half of it) can, x1.98. Removing
    the stage gains more than halving it: the cache, which keeps what is trained, goes first."""
    from bottleneckd.diagnosis.step_inputs import Share, StepInputs

    v = verdict("cpu_compute", stage="data")
    facts = CPU_JOB.set(job_idle_cores=0.2, data_random_share=0.0, data_seeded_share=0.0)
    i = StepInputs(step=0.1, shares={"data_wait": Share(1.0, 1.0, 1.0)}, idle_cores=0.2, cores=2.0, data_random=0.0)
    recs = recommend(v, KB, facts, limit=50, inputs=i)
    cache, echo = (next(r for r in recs if r.mitigation.id == k) for k in ("cache_preprocessing", "data_echoing"))
    assert cache.prediction.speedup is None and cache.prediction.removes_all
    assert echo.prediction.speedup == pytest.approx(1.98, abs=0.01)
    assert ids(recs).index("cache_preprocessing") < ids(recs).index("data_echoing"), ids(recs)
    # where the stage is not all of the step, both have figures and the usual comparison decides
    part = StepInputs(**{**i.__dict__, "shares": {"data_wait": Share(0.6, 0.5, 0.7), "forward": Share(0.4, 0.3, 0.5)}})
    recs = recommend(v, KB, facts, limit=50, inputs=part)
    assert not next(r for r in recs if r.mitigation.id == "cache_preprocessing").prediction.removes_all


def test_a_memory_bound_step_of_small_products_is_told_to_give_each_weight_more_rows_not_to_fuse():
    """grad_accumulation (micro-batches of 16 rows, the bytes the products' weights: more rows per
    weight measured x2.41): fusing the elementwise operators does not fit, and the model-less
    more_compute_per_byte comes first on the knowledge base's condition. Elementwise traffic
    (layernorm_gelu_wide): fusing fits and nothing is put first."""
    v = verdict("cpu_memory_bandwidth", stage="compute")
    weights = CPU_JOB.set(gpu_count=0, cpu_fast_bf16=True, arithmetic_intensity=3.8, weight_byte_share=0.95)
    recs = recommend(v, KB, weights, limit=50)
    assert (
        recs[0].mitigation.id == "more_compute_per_byte"
        and "first: most of the step's operand bytes are the weights'" in recs[0].why
    )
    why = dict((m.id, w) for m, w in not_fitting(v, KB, weights))["fuse_operators"]
    assert "fusing the elementwise operators on activations does not cut" in why and "weight_byte_share" in why
    rowwise = recommend(v, KB, weights.set(arithmetic_intensity=0.05, weight_byte_share=0.01), limit=50)
    assert "fuse_operators" in ids(rowwise) and not any(r.first for r in rowwise)
    assert rowwise[0].mitigation.id != "more_compute_per_byte"


def test_host_memory_the_job_holds_itself_is_shrunk_first_other_processes_memory_freed_first() -> None:
    """Host memory full: where the job holds most of it (its caches, each loader worker's copy of
    the dataset's Python objects, its batches in flight), holding less comes first (the suite's
    memory_capacity workload: its in-RAM cache not held measured x2 or more; a blind trace of
    workers prefetching deep into swap); where other processes hold most of it, freeing theirs."""
    v = verdict("cpu_memory", stage="data")
    own = ids(recommend(v, load_knowledge(), Facts({"job_memory_share": 0.97})))
    assert own[0] == "hold_less_in_memory" and "free_host_memory" not in own
    others = ids(recommend(v, load_knowledge(), Facts({"job_memory_share": 0.2})))
    assert others[0] == "free_host_memory" and "hold_less_in_memory" not in others
