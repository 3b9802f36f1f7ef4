"""The HTML report, opened in a real browser (Debian's chromium, headless, through Playwright):
it loads with no console error and no network request, every plot is drawn, the verdict, the
recommendations' taxonomy and citations and the energy figures are on the page. Screenshots are
kept under pytest's tmp dir (the path is printed)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.sample import RankPhases, Reading
from bottleneckd.outputs.trace import TraceWriter, read_trace
from tests.browser import need_browser, open_page
from tests.conftest import ROOT, run_cli
from tests.test_run_attach import PLAIN_JOB

DATA = ROOT / "tests" / "data"
FACTS = {
    "flops_per_step": 4.0e12,
    "operand_bytes_per_step": 2.0e10,
    "achieved_flops": 1.6e14,
    "param_dtype": "float32",
    "autocast_dtype": "bfloat16",  # bf16 autocast: MFU against the bf16 tensor peak
}


def multi_rank_trace(path: Path) -> dict:
    """Two constructed two-GPU DDP scenarios back to back (tests/data/balanced, then
    cpu_gpu_interconnect: a regime change), with what a real run adds: NVML energy counters,
    per-rank phases (rank 1 slower), example counts, the roofline counts, and a mitigation applied
    half-way. Returns what the energy must come to."""
    header, samples = read_trace(str(DATA / "balanced" / "trace.jsonl"))
    items = list(samples)
    shift = (
        items[-1].t
        + items[-1].interval
        - read_trace(str(DATA / "cpu_gpu_interconnect" / "trace.jsonl"))[1].__next__().t
    )
    items += [replace(s, t=s.t + shift) for s in read_trace(str(DATA / "cpu_gpu_interconnect" / "trace.jsonl"))[1]]
    w = TraceWriter(str(path), header.machine, header.peaks, header.interval)
    gpu_j, steps, examples, training_j = [1.0e6, 2.0e6], 0, 0, 0.0
    for k, s in enumerate(items):
        if k:
            for g in range(2):
                gpu_j[g] += 350.0 * s.interval  # 350 W a GPU
            training_j += 700.0 * s.interval
            steps += s.phases.steps
            examples += 64 * s.phases.steps
        energy = tuple(Reading("gpu_compute", f"gpu{g}", "energy", gpu_j[g], "J") for g in range(2))
        ph = replace(s.phases, facts={**s.phases.facts, **FACTS}, examples=64 * s.phases.steps)
        ranks = tuple(
            RankPhases(
                RankIdentity("job1", "", 0, r, r, 2, 2, "node-a", 0),
                replace(
                    ph,
                    wall_seconds=ph.wall_seconds * (1.0 + 0.4 * r),
                    phases={**ph.phases, "communication": 0.01 + 0.3 * r * ph.wall_seconds},
                ),
            )
            for r in range(2)
        )
        w(replace(s, readings=s.readings + energy, phases=ph, ranks=ranks))
        if k == len(items) // 2:
            w._write(
                {
                    "type": "event",
                    "t": s.t + 0.5,
                    "kind": "mitigation_applied",
                    "name": "mixed_precision",
                    "changes_semantics": False,
                }
            )
    w.close()
    return {"per_step": training_j / steps, "per_example": training_j / examples}


@pytest.mark.slow
def test_report_of_a_multi_rank_gpu_run_in_a_browser(tmp_path, cli_env):
    need_browser()
    trace, out, js = tmp_path / "run.jsonl", tmp_path / "report.html", tmp_path / "report.json"
    want = multi_rank_trace(trace)
    r = run_cli(["report", str(trace), "-o", str(out), "--json", str(js), "--grid-intensity", "400"], cli_env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert doc["energy"]["joules_per_step"] == pytest.approx(want["per_step"], rel=1e-3)
    assert doc["energy"]["joules_per_example"] == pytest.approx(want["per_example"], rel=1e-3)
    html = out.read_text()
    assert "<script src=" not in html and "<link " not in html  # plotly.js is in the file; nothing is fetched

    view = open_page(out, tmp_path / "multi_rank.png")
    assert view.errors == []
    assert set(view.plots) == {"phases", "utilization", "roofline", "ranks", "energy-plot"}
    assert all(n > 0 for n in view.plots.values()), view.plots
    v = doc["verdict"]
    assert v["resource"] == "cpu_gpu_interconnect" and f"Bottleneck: {v['resource']}" in view.text
    assert doc["regime_changes"]
    for e in v["evidence"]:
        assert e in view.text
    top = doc["recommendations"][0]
    assert (
        top["name"] in view.text
        and top["action"] in view.text
        and (top["cites"][0] if top["cites"] else top["section"]) in view.text
    )
    assert f"Energy per step: {doc['energy']['joules_per_step']:.3g} J" in view.text
    assert html.count("<h2>Energy</h2>") == 1  # the energy figures and their plot are one section
    # throughput: 64 examples a step over the run's steps, and MFU from the hook's FLOP count
    t = doc["throughput"]
    assert t["samples_per_second"] == pytest.approx(t["examples"] * 2 / t["wall_seconds"], rel=1e-9)  # 2 ranks
    assert t["mfu"] == pytest.approx(FACTS["flops_per_step"] / t["step_seconds"] / t["peak_flops"], rel=1e-9)
    assert f"MFU): {t['mfu']:.1%} of the {t['peak_path']} peak" in view.text
    assert "g CO2 at 400 g/kWh" in view.text
    assert "this job: 200 FLOP/byte" in view.text
    assert (
        "applied mixed_precision" in view.text and "regime: " in view.text
    )  # marks on the utilisation plot  # the roofline's measured point, from the hook's counts
    assert view.screenshot.stat().st_size > 10_000


@pytest.mark.slow
def test_report_says_why_a_plot_is_missing(tmp_path, cli_env):
    """The idle trace has no steps and no energy: those plots are replaced by their reasons."""
    need_browser()
    out = tmp_path / "idle.html"
    r = run_cli(["report", str(DATA / "idle" / "trace.jsonl"), "-o", str(out)], cli_env)
    assert r.returncode == 0, r.stderr
    view = open_page(out, tmp_path / "idle.png")
    assert view.errors == []
    assert "phases" not in view.plots and "energy-plot" not in view.plots
    assert all(n > 0 for n in view.plots.values()), view.plots
    assert "no step phases" in view.text and "Energy per step: unknown" in view.text
    assert "Bottleneck:" in view.text


@pytest.mark.slow
def test_run_report_html_of_a_real_cpu_job(tmp_path, cli_env):
    need_browser()
    job = tmp_path / "train.py"
    job.write_text(PLAIN_JOB)
    out, rep = tmp_path / "run.html", tmp_path / "run.json"
    r = run_cli(
        ["run", "--quiet", "--report-html", str(out), "--report-json", str(rep), "--", sys.executable, str(job), "4"],
        cli_env,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(rep.read_text())
    assert "energy" in doc and doc["energy"]["steps"] >= 0
    from bottleneckd.compare.runs import load_run

    assert load_run(str(rep), None).seconds_per_step > 0  # compare reads the run's JSON report
    view = open_page(out, tmp_path / "run.png")
    assert view.errors == []
    assert "phases" in view.plots and "utilization" in view.plots
    assert all(n > 0 for n in view.plots.values()), view.plots
    assert f"Bottleneck: {doc['verdict']['resource']}" in view.text


@pytest.mark.slow
def test_bad_output_is_exit_2_and_nothing_is_overwritten(tmp_path, cli_env):
    out = tmp_path / "keep.html"
    out.write_text("mine")
    r = run_cli(["report", str(DATA / "idle" / "trace.jsonl"), "-o", str(out)], cli_env)
    assert r.returncode == 2 and "already exists" in r.stderr and out.read_text() == "mine"
    r = run_cli(["report", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "x.html")], cli_env)
    assert r.returncode == 2 and "missing.jsonl" in r.stderr and not (tmp_path / "x.html").exists()
    r = run_cli(["run", "--report-html", str(out), "--", sys.executable, "-c", "print(1)"], cli_env)
    assert r.returncode == 2 and out.read_text() == "mine"


@pytest.mark.slow
def test_report_with_plotly_from_the_cdn(tmp_path, cli_env):
    """--plotly cdn: a small page whose plotly.js comes from plotly's CDN at the installed version,
    pinned by its integrity hash; served the bundled file (what the CDN holds), every plot draws."""
    need_browser()
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    trace, out, inline = tmp_path / "run.jsonl", tmp_path / "cdn.html", tmp_path / "inline.html"
    multi_rank_trace(trace)
    r = run_cli(["report", str(trace), "-o", str(out), "--plotly", "cdn"], cli_env)
    assert r.returncode == 0, r.stderr
    r = run_cli(["report", str(trace), "-o", str(inline)], cli_env)
    assert r.returncode == 0, r.stderr
    url = f"https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js"
    page = out.read_text()
    assert f'src="{url}"' in page and 'integrity="sha384-' in page
    assert out.stat().st_size < 200_000 < 3_000_000 < inline.stat().st_size  # plotly.js is ~4.8 MB
    view = open_page(out, tmp_path / "cdn.png", serve={url: get_plotlyjs()})
    assert view.errors == []
    assert set(view.plots) == {"phases", "utilization", "roofline", "ranks", "energy-plot"}
    assert all(n > 0 for n in view.plots.values()), view.plots
    # a file that is not the one the hash pins is refused by the browser: nothing draws
    view = open_page(out, tmp_path / "tampered.png", serve={url: get_plotlyjs() + "\n;"})
    assert any("integrity" in e.lower() or "plotly is not defined" in e for e in view.errors), view.errors
