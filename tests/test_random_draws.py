"""Reading a data-stage stack for random draws (samplers/random_draws.py), carrying the reading
through the stack counts and traces (model/code.py), and the run's share of it (diagnosis/code.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bottleneckd.diagnosis.code import MIN_STAGE_SAMPLES, CodeProfile
from bottleneckd.model.code import MAIN, WORKER, CodeSite, StackCount, StackCounts
from bottleneckd.samplers.code_sites import data_draws, user_site
from bottleneckd.samplers.random_draws import frame_draws, function_draws, function_reading

JOB = textwrap.dedent(
    """
    import numpy as np


    class Signals:
        def __getitem__(self, i):
            rng = np.random.default_rng(i)
            x = rng.standard_normal(64)
            for _ in range(3):
                spec = np.fft.rfft(x)  # no draw on this line, but its function draws
            return x

        def decode(self, i):
            def helper():
                return np.random.rand(3)  # a nested function's draw is not decode's

            data = open(f"/data/{i}").read()
            # random.choice(...) in a comment is not a draw
            return data


    def tokenize(batch):
        return tok(list(batch), padding="max_length")


    class Crop:
        def __call__(self, img):
            top = torch.randint(0, 8, (1,))
            return img[top:]


    def load(path):
        '''Decode, then crop at random: random.shuffle() in a docstring is no draw.'''
        img = decode_jpeg(open(path, "rb").read())
        top = random.randint(0, 8)
        return img[top:]


    def train(loader, model):
        it = iter(loader)
        while True:
            noise = torch.randn(4, 8)  # the loop's own draw (a diffusion model's noise)
            x, y = next(it)
            model(x + noise).sum().backward()
    """
).lstrip()


@pytest.fixture
def job(tmp_path: Path) -> str:
    p = tmp_path / "job.py"
    p.write_text(JOB)
    return str(p)


def line(path: str, text: str) -> int:
    """The 1-based number of the line of ``path`` holding ``text``."""
    return next(k for k, s in enumerate(Path(path).read_text().splitlines(), 1) if text in s)


def test_a_function_that_draws_random_numbers_is_read_as_random_augmentation(job: str) -> None:
    assert function_draws(job, line(job, "np.fft.rfft")) is True  # default_rng, rng.standard_normal
    assert function_draws(job, line(job, "img[top:]")) is True  # torch.randint in a transform's __call__
    assert function_draws(job, line(job, "tok(list")) is False  # a tokenizer: deterministic
    # a draw only in a nested function, and one in a comment
    assert function_draws(job, line(job, "open(f")) is False


def test_the_work_before_a_functions_first_draw_is_deterministic(job: str) -> None:
    """Decoding, then a random crop: the decode's time is cacheable, the crop's is not."""
    assert function_draws(job, line(job, "decode_jpeg(")) is False
    assert function_draws(job, line(job, "return img[top:]")) is True


def test_a_function_too_long_to_read_is_unknown(tmp_path: Path) -> None:
    body = "".join(f"    x{k} = {k}\n" for k in range(500))
    p = tmp_path / "long.py"
    p.write_text("import random\n\n\ndef f():\n    r = random.random()\n" + body + "    return r\n")
    assert function_draws(str(p), 507) is None  # its def is 503 lines up: not read, not "no draw"
    assert function_draws(str(p), 20) is True


def test_unreadable_source_is_unknown_not_deterministic(tmp_path: Path) -> None:
    assert function_draws(str(tmp_path / "gone.py"), 3) is None
    assert function_draws("<string>", 1) is None


def test_random_transforms_of_libraries_are_read_by_their_frames() -> None:
    tv = "/venv/lib/python3.11/site-packages/torchvision/transforms/transforms.py"
    assert frame_draws({"name": "RandomResizedCrop.forward", "filename": tv})
    assert frame_draws({"name": "ColorJitter.forward", "filename": tv})
    assert frame_draws({"name": "randint", "filename": "/usr/lib/python3.11/random.py"})
    assert not frame_draws({"name": "Resize.forward", "filename": tv})
    assert not frame_draws({"name": "Normalize.forward", "filename": tv})
    # transforms v2: the parameters drawn in make_params / _get_params, applied in transform
    assert frame_draws({"name": "RandomHorizontalFlip.make_params", "filename": tv})
    assert frame_draws({"name": "_RandomApplyTransform.forward", "filename": tv})
    assert frame_draws({"name": "RandomResizedCrop.transform", "filename": tv})
    # albumentations: its random transforms, not its deterministic ones
    alb = "/venv/lib/python3.11/site-packages/albumentations/augmentations/transforms.py"
    assert frame_draws({"name": "HorizontalFlip.apply", "filename": alb})
    assert not frame_draws({"name": "Normalize.apply", "filename": alb})
    assert not frame_draws({"name": "Compose.__call__", "filename": alb})
    # Hugging Face's masked-language-model collator masks at random
    hf = "/venv/lib/python3.11/site-packages/transformers/data/data_collator.py"
    assert frame_draws({"name": "DataCollatorForLanguageModeling.torch_mask_tokens", "filename": hf})


def test_a_stack_draws_through_its_library_frames_or_its_user_function(job: str) -> None:
    tv = "/venv/lib/python3.11/site-packages/torchvision/transforms/transforms.py"
    loop = {"name": "_worker_loop", "filename": "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py"}
    # decode's line (deterministic) under a random crop of torchvision's: drawn
    frames = [
        {"name": "RandomCrop.forward", "filename": tv, "line": 5},
        {"name": "Signals.decode", "filename": job, "line": line(job, "open(f")},
        loop,
    ]
    site = user_site(frames)
    assert site is not None and site.function == "Signals.decode" and data_draws(frames, site)[0] is True
    # the same line with a deterministic transform inside it: not drawn
    frames[0] = {"name": "Resize.forward", "filename": tv, "line": 5}
    assert data_draws(frames, user_site(frames))[0] is False
    # library code only (torchvision's ImageFolder with its transforms): its frames decide, and say
    # "not random" only where the batch was being built (PyTorch's fetch on the stack)
    fetch_py = "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py"
    fetch = {"name": "_MapDatasetFetcher.fetch", "filename": fetch_py}
    lib = [{"name": "RandomResizedCrop.forward", "filename": tv, "line": 1}, fetch, loop]
    assert user_site(lib) is None and data_draws(lib, None)[0] is True
    assert data_draws([{"name": "Resize.forward", "filename": tv, "line": 1}, fetch, loop], None)[0] is False
    # a training thread waiting on its workers' queue says nothing of their code: unknown
    queue = [{"name": "Queue.get", "filename": "/usr/lib/python3.11/multiprocessing/queues.py", "line": 1}]
    assert data_draws(queue, None)[0] is None
    # unqualified names (Python 3.10's frames): "forward" cannot say which transform it is
    bare = [{"name": "forward", "filename": tv, "line": 1}, {"name": "fetch", "filename": fetch_py}]
    assert data_draws(bare, None)[0] is None
    # a frame of the user's outside the site's function (the loop calling the loader) is not read
    outer = [
        {"name": "Signals.decode", "filename": job, "line": line(job, "open(f")},
        {"name": "Signals.__getitem__", "filename": job, "line": line(job, "np.fft.rfft")},
        fetch,
    ]
    assert data_draws(outer, user_site(outer))[0] is False


def test_the_loop_that_asks_for_the_batch_is_not_the_datas_code(job: str) -> None:
    """A library dataset loading in the training process (torchvision's ImageFolder, no workers):
    the innermost user frame is the training loop, whose own draws (noise) are not the data's; the
    library frames inside it decide."""
    tv = "/venv/lib/python3.11/site-packages/torchvision"
    torch_data = "/venv/lib/python3.11/site-packages/torch/utils/data"
    loop = {"name": "train", "filename": job, "line": line(job, "x, y = next(it)")}
    inside = [
        {"name": "DatasetFolder.__getitem__", "filename": f"{tv}/datasets/folder.py", "line": 1},
        {"name": "_MapDatasetFetcher.fetch", "filename": f"{torch_data}/_utils/fetch.py", "line": 1},
        {"name": "_BaseDataLoaderIter.__next__", "filename": f"{torch_data}/dataloader.py", "line": 1},
    ]
    resize = [{"name": "Resize.forward", "filename": f"{tv}/transforms/transforms.py", "line": 1}, *inside, loop]
    crop = [
        {"name": "RandomResizedCrop.forward", "filename": f"{tv}/transforms/transforms.py", "line": 1},
        *inside,
        loop,
    ]
    assert user_site(resize) is not None and user_site(resize).function == "train"
    assert function_draws(job, loop["line"]) is True  # the loop draws ...
    assert data_draws(resize, user_site(resize))[0] is False  # ... but the data's code does not
    assert data_draws(crop, user_site(crop))[0] is True


def test_the_reading_travels_in_the_trace_and_an_older_trace_reads_as_unknown() -> None:
    site = CodeSite("Signals.__getitem__", "/job.py", 10, "spec = np.fft.rfft(x)")
    c = StackCounts(
        "py-spy", 2.0, (StackCount("data_wait", WORKER, site, 7, True), StackCount("data_wait", MAIN, None, 2, False))
    )
    assert StackCounts.from_json(c.to_json()) == c
    old = {"source": "py-spy", "rate_hz": 2.0, "rows": [["data_wait", "worker", "f", "/a.py", 3, "x", 4]]}
    assert StackCounts.from_json(old).rows[0].draws_random is None
    bad = {"source": "py-spy", "rate_hz": 2.0, "rows": [["data_wait", "worker", "f", "/a.py", 3, "x", 4, "yes"]]}
    with pytest.raises(ValueError, match="draws_random"):
        StackCounts.from_json(bad)


def test_the_runs_share_is_the_workers_when_they_were_read_and_unknown_below_the_minimum() -> None:
    p = CodeProfile()
    site = CodeSite("f", "/a.py", 1)
    p.add(StackCounts("py-spy", 2.0, (StackCount("data_wait", WORKER, site, 3, True),)))
    p.add(StackCounts("py-spy", 2.0, (StackCount("data_wait", MAIN, None, MIN_STAGE_SAMPLES, False),)))
    assert p.data_random_share() == 0.0  # too few worker samples: the main thread's
    p.add(
        StackCounts(
            "py-spy",
            2.0,
            (StackCount("data_wait", WORKER, site, 6, True), StackCount("data_wait", WORKER, None, 3, False)),
        )
    )
    assert p.data_random_share() == pytest.approx(9 / 12)
    none = CodeProfile()
    none.add(StackCounts("py-spy", 2.0, (StackCount("forward", MAIN, site, 50),)))  # no data stage
    none.add(StackCounts("py-spy", 2.0, (StackCount("data_wait", MAIN, site, 20, None),)))  # not read
    assert none.data_random_share() is None


SEEDED = textwrap.dedent(
    """
    import random

    import numpy as np
    import torch


    class Synthetic:
        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            x = torch.randn(3, 64, 64, generator=g)
            x = x * 2  # torch-generator
            return x

        def fresh(self, i):
            rng = np.random.default_rng()
            x = rng.standard_normal(64)  # unseeded
            return x

        def kept(self, i):
            x = self.rng.normal(size=64)  # a generator on self: shared across samples
            return x

        def by_epoch(self, i):
            rng = np.random.default_rng(self.epoch * 1000 + i)
            x = rng.standard_normal(64)  # seeded by the epoch too
            return x

        def global_seed(self, i):
            np.random.seed(i + 7)
            x = np.random.rand(64)  # global-seeded
            return x

        def mixed(self, i):
            g = torch.Generator().manual_seed(i)
            x = torch.randn(64, generator=g)
            x = x + torch.rand(64)  # one draw without the generator
            return x


    def make(seed):
        return np.random.default_rng(seed).standard_normal(64)  # inline


    def rebound(i):
        rng = np.random.default_rng(i)
        if i % 2:
            rng = np.random.default_rng()
        return rng.standard_normal(8)  # rebound to an unseeded generator on some path


    def chained(i, n):
        rng = np.random.default_rng(i)
        x = rng.standard_normal(n).astype(np.float32)
        return x * rng.uniform(-0.1, 0.1, n)  # a method on a draw's result


    def by_index(i):
        return make(i)  # the index


    def by_chance(i):
        return make(random.randint(0, 10**6))  # a seed drawn at random
    """
).lstrip()


@pytest.mark.parametrize(
    ("marker", "seeded"),
    [
        ("# torch-generator", True),  # torch.Generator().manual_seed(i) and generator=g (the demo's dataset)
        ("# unseeded", False),
        ("# a generator on self", False),
        ("# seeded by the epoch too", False),  # self.epoch is not a parameter: not shown the same each epoch
        ("# global-seeded", True),  # np.random.seed(i + 7), then the module's functions
        ("# one draw without the generator", False),
        ("# inline", True),  # default_rng(seed).standard_normal(...)
        ("# rebound to an unseeded generator", False),
        ("# a method on a draw's result", True),  # rng.standard_normal(n).astype(...): astype draws nothing
    ],
)
def test_draws_seeded_by_the_functions_arguments_are_the_same_for_the_same_sample(
    tmp_path: Path, marker: str, seeded: bool
) -> None:
    """Every one draws random numbers (its time is what cheaper augmentation cuts); those whose
    draws come from a generator seeded by the function's arguments make the same sample every
    epoch, so a cache of them is exact: lightning_numpy_getitem's ``default_rng(i)`` (caching it
    measured x28.3) was read as random augmentation only, which made caching unfit."""
    p = tmp_path / "seeded.py"
    p.write_text(SEEDED)
    assert function_reading(str(p), line(str(p), marker)) == (True, seeded)


def test_a_seeded_function_is_random_when_its_caller_drew_the_seed(tmp_path: Path) -> None:
    p = tmp_path / "seeded.py"
    p.write_text(SEEDED)
    path = str(p)
    fetch = {
        "name": "_MapDatasetFetcher.fetch",
        "filename": "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py",
    }
    site = {"name": "make", "filename": path, "line": line(path, "# inline")}
    by_index = [site, {"name": "by_index", "filename": path, "line": line(path, "# the index")}, fetch]
    assert data_draws(by_index, user_site(by_index)) == (True, True)
    by_chance = [site, {"name": "by_chance", "filename": path, "line": line(path, "# a seed drawn at random")}, fetch]
    assert data_draws(by_chance, user_site(by_chance)) == (True, False)
    # a caller that cannot be read here: not shown seeded
    gone = [site, {"name": "g", "filename": str(tmp_path / "gone.py"), "line": 3}, fetch]
    assert data_draws(gone, user_site(gone)) == (True, False)


def test_the_seeded_share_travels_in_the_trace_and_gives_its_fact() -> None:
    site = CodeSite("Synthetic.__getitem__", "/job.py", 12, "x = x * 2")
    rows = (
        StackCount("data_wait", WORKER, site, 30, True, True),
        StackCount("data_wait", WORKER, None, 10, True, False),
        StackCount("data_wait", WORKER, None, 10, False),
    )
    c = StackCounts("py-spy", 2.0, rows)
    assert StackCounts.from_json(c.to_json()) == c
    with pytest.raises(ValueError, match="seeded"):  # seeded only where it drew
        StackCounts.from_json(
            {"source": "py-spy", "rate_hz": 2.0, "rows": [["data_wait", "worker", None, None, 0, "", 3, False, True]]}
        )
    p = CodeProfile()
    p.add(c)
    assert p.data_random_share() == pytest.approx(40 / 50) and p.data_seeded_share() == pytest.approx(30 / 40)
    p2 = CodeProfile()
    p2.add(StackCounts("py-spy", 2.0, (StackCount("data_wait", WORKER, None, 50, False),)))
    assert p2.data_random_share() == 0.0 and p2.data_seeded_share() == 0.0
    assert CodeProfile().data_seeded_share() is None
