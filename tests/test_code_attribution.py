"""Name the code (issue 20 item 1): which frame is the user's, stack counts on the wire and in
traces, the attribution of a stage to the user's functions, and the verdict, report, HTML and
live view that show it. Windows built through the real pipeline; only the stacks are constructed."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import replace

import pytest

import bottleneckd
from bottleneckd.diagnosis.code import MIN_STAGE_SAMPLES, CodeProfile, wilson
from bottleneckd.model.code import MAIN, MAX_ROWS, WORKER, CodeSite, StackCount, StackCounts, merge_counts
from bottleneckd.model.sample import Sample
from bottleneckd.outputs.live import render_screen
from bottleneckd.outputs.report import render_text
from bottleneckd.peaks.resolve import PeakTable
from bottleneckd.runtime.run import Run
from bottleneckd.samplers.code_sites import StackTally, user_file, user_site
from bottleneckd.samplers.self_stacks import SelfStackSampler, frame_records
from tests.windows import HOST, job, sample

STDLIB = os.path.dirname(os.__file__)
TORCH = "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py"
OURS = os.path.join(os.path.dirname(bottleneckd.__file__), "torch", "loader.py")


def fr(name: str, filename: str, line: int = 1) -> dict:
    return {"name": name, "filename": filename, "line": line}


def test_a_user_frame_is_none_of_stdlib_packages_bottleneckd_or_generated_code(tmp_path) -> None:
    assert user_file("/home/me/train.py") and user_file(str(tmp_path / "x.py"))
    for lib in (f"{STDLIB}/threading.py", TORCH, "/usr/lib/python3/dist-packages/numpy/fft/_pocketfft.py", OURS):
        assert not user_file(lib), lib
    assert not user_file("<frozen importlib._bootstrap>") and not user_file("<string>") and not user_file("")


def test_bottleneckds_frames_through_the_link_bottleneckd_run_hands_the_job_are_not_the_users(tmp_path) -> None:
    """``bottleneckd run`` puts this package on the job's path through a link in its run directory
    (runtime/job_env.py): the job's frames name our files under the link."""
    from bottleneckd.runtime.job_env import job_env

    job_env(str(tmp_path), str(tmp_path / "s.sock"), inject=True)
    linked = tmp_path / "pkg" / "bottleneckd" / "torch" / "loader.py"
    assert linked.exists() and not user_file(str(linked))


def test_the_site_is_the_innermost_user_frame_with_its_source_line(tmp_path) -> None:
    src = tmp_path / "train.py"
    src.write_text("def tokenize(s):\n    return [ord(c) for c in s]\n")
    stack = [
        fr("list.__init__", f"{STDLIB}/x.py"),
        fr("tokenize", str(src), 2),
        fr("collate", str(src), 1),
        fr("f", TORCH),
    ]
    site = user_site(stack)
    assert site == CodeSite("tokenize", str(src), 2, "return [ord(c) for c in s]")
    assert site.where == "tokenize (train.py:2)"
    assert user_site([fr("f", TORCH), fr("g", OURS)]) is None
    assert CodeSite("<module>", "/a/train.py", 7).where == "module level (train.py:7)"


def test_stack_counts_round_trip_and_refuse_what_is_not_theirs() -> None:
    c = StackCounts(
        "py-spy",
        2.0,
        (StackCount("other", MAIN, CodeSite("f", "/a.py", 3, "x = 1"), 5), StackCount("data_wait", WORKER, None, 2)),
    )
    assert StackCounts.from_json(json.loads(json.dumps(c.to_json()))) == c
    good = c.to_json()
    bad = [
        {**good, "source": "gdb"},
        {**good, "rate_hz": float("inf")},
        {**good, "rate_hz": 0},
        {**good, "rows": [["nap", "main", None, None, 0, "", 1]]},
        {**good, "rows": [["other", "boss", None, None, 0, "", 1]]},
        {**good, "rows": [["other", "main", "f", "/a.py", 3, "", 0]]},
        {**good, "rows": [["other", "main", "f", "/a.py", 3, "", True]]},
        {**good, "rows": [["other", "main", "f" * 999, "/a.py", 3, "", 1]]},
        {**good, "rows": [["other", "main", "f", "/a.py", "3", "", 1]]},
        {**good, "rows": [["other", "main", "f", "/a.py", 3, "", 1]] * (MAX_ROWS + 1)},
        {**good, "rows": [["other", "main", "f", "/a.py", 3]]},
        "rows",
    ]
    for d in bad:
        with pytest.raises(ValueError):
            StackCounts.from_json(d)
    s = Sample(1.0, 1.0, (), stacks=c)  # a trace line keeps them
    assert Sample.from_json(json.loads(json.dumps(s.to_json()))).stacks == c
    assert "stacks" not in Sample(1.0, 1.0, ()).to_json()


def test_the_tally_is_bounded_and_folds_the_rarest_sites_into_their_phase() -> None:
    t = StackTally("self", 5.0)
    assert t.drain() is None
    for k in range(400):
        for _ in range(1 + (k == 7) * 50):
            t.add("other", MAIN, CodeSite(f"f{k}", "/a.py", k))
    c = t.drain()
    assert c is not None and len(c.rows) <= MAX_ROWS and c.total == 450
    assert max((r for r in c.rows if r.site), key=lambda r: r.count).site.function == "f7"
    assert any(r.site is None for r in c.rows) and t.drain() is None
    assert merge_counts([None, c, None]) is c and merge_counts([]) is None
    assert merge_counts([c, c]).total == 900


def counts(rows: list[tuple[str, str, str | None, int, int]], source: str = "py-spy") -> StackCounts:
    return StackCounts(
        source,
        1.0,
        tuple(
            StackCount(ph, role, None if fn is None else CodeSite(fn, f"/job/{fn}.py", line, f"{fn}()"), n)
            for ph, role, fn, line, n in rows
        ),
    )


def test_a_stage_is_attributed_to_functions_with_their_share_and_interval() -> None:
    p = CodeProfile()
    p.add(counts([("other", MAIN, "metric", 10, 6), ("other", MAIN, "metric", 11, 2), ("other", MAIN, None, 0, 2)]))
    p.add(
        counts([("other", MAIN, "log_line", 3, 4), ("other", MAIN, "once", 1, 1), ("forward", MAIN, "model_fn", 1, 30)])
    )
    a = p.attribute("other")
    assert a is not None and a.samples == 15 and a.role == MAIN and a.source == "py-spy"
    (m, lg), lib = a.sites, a.library_share
    assert (m.function, m.line, m.samples) == ("metric", 10, 8) and m.share == pytest.approx(8 / 15)
    assert (lg.function, lg.samples) == ("log_line", 4)  # "once" (1 sample) is not named
    assert lib == pytest.approx(2 / 15) and m.low < m.share < m.high
    assert "metric (metric.py:10) 53%" in a.evidence() and "other stage's 15 stack samples" in a.evidence()
    assert p.attribute("compute").sites[0].function == "model_fn"  # forward and backward are the compute stage
    assert p.attribute("data") is None  # no sample in the stage


def test_too_few_samples_name_only_a_function_that_holds_most_of_them_and_the_workers_name_the_data_stage() -> None:
    split = CodeProfile()  # 9 samples over two functions: 5 of 9 is not known to be most (low 0.27)
    split.add(counts([("other", MAIN, "metric", 1, 5), ("other", MAIN, "log_line", 2, MIN_STAGE_SAMPLES - 6)]))
    assert split.attribute("other") is None
    few = CodeProfile()  # 3 of 3: the interval's low end 0.44, not most beyond doubt
    few.add(counts([("other", MAIN, "metric", 1, 3)]))
    assert few.attribute("other") is None
    short = CodeProfile()  # a short job: 7 of its 8 samples in one function (low 0.53): named, alone
    short.add(counts([("other", MAIN, "python_loop", 4, 7), ("other", MAIN, "log_line", 2, 1)]))
    a = short.attribute("other")
    assert a.samples == 8 and [s.function for s in a.sites] == ["python_loop"] and a.sites[0].low > 0.5
    p = CodeProfile()
    # with loader workers the training process only waits in the data stage: the workers' code is named
    p.add(counts([("data_wait", MAIN, "train_loop", 5, 40), ("data_wait", WORKER, "Tokenizer.encode", 9, 12)]))
    a = p.attribute("data")
    assert a.role == WORKER and a.sites[0].function == "Tokenizer.encode" and a.source == "py-spy"
    assert "in the DataLoader workers" in a.evidence()
    q = CodeProfile()  # workers that ran only torch's code: the main thread's samples are used
    q.add(counts([("data_wait", MAIN, "Records.__getitem__", 5, 40), ("data_wait", WORKER, None, 0, 12)]))
    assert q.attribute("data").role == MAIN


def test_wilson_interval_worked_numbers() -> None:
    lo, hi = wilson(8, 10)  # 0.8 of 10 samples: 0.490 to 0.943 (Wilson 1927, z = 1.96)
    assert lo == pytest.approx(0.4902, abs=1e-3) and hi == pytest.approx(0.9433, abs=1e-3)


OTHER = {"other": 0.8, "forward": 0.1, "backward": 0.1}


def test_the_verdict_report_html_and_live_view_name_the_code(tmp_path) -> None:
    p = Run(PeakTable(()), window=5)
    stacks = counts([("other", MAIN, "bookkeeping", 34, 4), ("other", MAIN, "train", 43, 1)])
    for i in range(8):
        s = sample({**HOST, **job(1.0, 0.98)}, OTHER, t=float(i))
        snap = p(Sample(s.t, s.interval, s.readings, s.phases, stacks=stacks))
    v = snap.verdict
    assert (v.resource, v.stage) == ("cpu_compute", "other")
    assert v.code is not None and v.code.sites[0].function == "bookkeeping" and v.code.samples == 40
    assert any(e.startswith("code: bookkeeping (bookkeeping.py:34) 80%") for e in v.evidence)
    assert snap.dominant.code == v.code  # the run's verdict names it too
    doc = p.report()
    assert doc["verdict"]["code"]["sites"][0]["function"] == "bookkeeping"
    assert json.loads(json.dumps(doc))["verdict"]["code"]["sites"][0]["line"] == 34
    assert "code: bookkeeping (bookkeeping.py:34) 80% [bookkeeping()]" in render_text(doc)
    assert "code: bookkeeping (bookkeeping.py:34) 80%" in render_screen(snap, width=160)
    from bottleneckd.outputs.html_report import _verdict_html

    page = _verdict_html(doc)
    assert '<table id="code">' in page and "bookkeeping" in page and "80% (65% to 90%)" in page


def test_no_stacks_no_code() -> None:
    p = Run(PeakTable(()), window=5)
    for i in range(6):
        snap = p(sample({**HOST, **job(1.0, 0.98)}, OTHER, t=float(i)))
    assert snap.verdict.resource == "cpu_compute" and snap.verdict.code is None
    assert not any(e.startswith("code") for e in snap.verdict.evidence)
    assert p.report()["verdict"]["code"] is None


def busy_python(stop: threading.Event, ready: threading.Event) -> None:
    ready.set()
    while not stop.is_set():
        sum(i * i for i in range(2000))


def test_the_self_sampler_reads_the_training_threads_own_frames() -> None:
    stop, ready = threading.Event(), threading.Event()
    t = threading.Thread(target=busy_python, args=(stop, ready))
    t.start()
    ready.wait(5)
    s = SelfStackSampler(t.ident, rate_hz=50.0).start()
    try:
        deadline = time.monotonic() + 20
        while s.samples_total < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        s.stop()
        stop.set()
        t.join()
    c = s.drain()
    assert c is not None and c.source == "self" and c.total >= 10
    fns = {r.site.function for r in c.rows if r.site is not None}
    assert fns & {"busy_python", "busy_python.<locals>.<genexpr>"}, fns
    assert all(r.phase == "other" for r in c.rows)  # no torch frame: between the phases
    here = frame_records(sys._getframe())
    assert (
        here[0]["name"].endswith("test_the_self_sampler_reads_the_training_threads_own_frames") and here[0]["line"] > 0
    )


def test_a_workers_stack_is_cut_at_its_loop_and_other_stacks_are_not_workers() -> None:
    from bottleneckd.samplers.stack_frames import worker_frames

    loop = fr("_worker_loop", "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py")
    forked = [fr("Tokenizer.encode", "/job/tok.py", 4), fr("fetch", TORCH), loop, fr("train", "/job/train.py", 40)]
    assert worker_frames(forked) == forked[:2]  # the parent's training loop, copied by fork, is not the worker's
    assert user_site(worker_frames([fr("collate", TORCH), loop, fr("train", "/job/train.py", 40)])) is None
    assert worker_frames([fr("train", "/job/train.py", 40)]) is None  # a rank, not a loader worker


def test_an_undetermined_step_that_waits_with_nothing_busy_names_the_code_that_waits() -> None:
    """A loader that sleeps (a remote store): no resource limits the step, it waits in the data stage
    (fact idle_wait_stage); the stacks name the code that waits. An undetermined verdict that does
    not wait in its stage names nothing."""
    p = Run(PeakTable(()), window=5)
    stacks = counts([("data_wait", MAIN, "RemoteStore.fetch", 12, 5)])
    for i in range(8):
        s = sample({**HOST, **job(0.05, 0.05)}, {"data_wait": 0.9, "forward": 0.1}, t=float(i))
        snap = p(Sample(s.t, s.interval, s.readings, s.phases, stacks=stacks))
    v = snap.verdict
    assert v.resource == "undetermined" and v.stage == "data" and snap.facts.get("idle_wait_stage") == "data"
    assert v.code is not None and v.code.sites[0].function == "RemoteStore.fetch"
    bare = p.pipeline.with_code(replace(v, code=None, evidence=()), snap.facts.unset("idle_wait_stage"))
    assert bare.code is None and bare.evidence == ()


def test_a_launchers_ranks_are_dumped_once_and_not_counted_as_loader_workers(tmp_path) -> None:
    import subprocess

    from bottleneckd.samplers.stacks import StackSampler, find_py_spy

    if find_py_spy() is None:
        pytest.skip("py-spy is not installed")
    rank = "import time\nwhile True:\n    sum(i * i for i in range(10000))\n"
    launcher = tmp_path / "launch.py"
    launcher.write_text(
        "import subprocess, sys, time\n"
        f"kids = [subprocess.Popen([sys.executable, '-c', {rank!r}]) for _ in range(2)]\n"
        "time.sleep(120)\n"
    )
    p = subprocess.Popen([sys.executable, str(launcher)])
    s = StackSampler(p.pid, rate_hz=10.0, main=False)
    try:
        deadline = time.monotonic() + 60
        while len(s._not_workers) < 2 and time.monotonic() < deadline:
            s._dumps += 1
            s._sample_worker()
        assert len(s._not_workers) == 2 and s.tally.drain() is None  # seen as ranks, never counted
        s._dumps += 1
        s._sample_worker()
        assert s._workers == []  # and not dumped again
    finally:
        import psutil

        for k in psutil.Process(p.pid).children():
            k.kill()
        p.kill()
        p.wait()
