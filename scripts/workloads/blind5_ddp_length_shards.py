"""Labelled workload (blind set 5): DDP over gloo, 2 ranks started with torch.multiprocessing.spawn,
a keyword-spotting style audio classifier. Each rank has its own DataLoader (num_workers=0) over
its shard of 2048 synthetic clips; __getitem__ synthesises the clip's waveform (its length: a
short command of 0.3-1 s or a long utterance of 6-10 s) and computes log band energies (framed
Hann-window numpy FFT, 40 bands, mean and std over frames): its cost grows with the clip's length.
The shards come from a length-sorted index split in two contiguous halves (rank 0 the short
clips, rank 1 the long ones), so rank 1's loader does many times the work of rank 0's and rank 0
waits for it in the gradient all-reduce every step; the model (a small MLP) is cheap.
Intervention: the same length-sorted index dealt out alternately (index[rank::2]): each rank gets
the same mix of short and long clips, the same total work, no rank waiting for the other."""

# Label: rank 1 is the straggler, and what it spends its step on is its own loader's FFT feature
# extraction in the training process (CPU work, data stage); the files, model and all-reduce are
# not what limits it.
LABEL = "cpu_compute"
PATTERN = "DDP gloo 2 ranks by spawn, per-rank loader, audio FFT features; length-sorted contiguous shards (rank 1 long clips)"
STAGE = "data"
PROVES = "balance_ranks"
INTERVENTION = "the length-sorted index dealt alternately to the ranks (the same clips, the same total work)"
MIN_SPEEDUP = 1.35
PROOF_SECONDS = 10
STRAGGLER = 1

N = 2048
RATE = 16000
BATCH = 8


def clip_length(i: int) -> int:
    import random

    rng = random.Random(i * 7919)
    seconds = rng.uniform(0.3, 1.0) if rng.random() < 0.5 else rng.uniform(6.0, 10.0)
    return int(seconds * RATE)


class Clips:
    """A clip's log band energies (mean and std over frames), computed from its waveform."""

    def __init__(self) -> None:
        import numpy as np

        self.window = np.hanning(512).astype(np.float32)
        self.edges = np.linspace(0, 257, 41).astype(int)[:-1]  # 40 bands, summed with reduceat (no BLAS threads)

    def __len__(self) -> int:
        return N

    def __getitem__(self, i: int):  # noqa: ANN204
        import numpy as np
        import torch

        rng = np.random.default_rng(i)
        n = clip_length(i)
        t = np.arange(n, dtype=np.float32) / RATE
        wave = 0.1 * rng.standard_normal(n).astype(np.float32)
        for f in rng.uniform(100, 4000, 3):
            wave += np.sin(2 * np.pi * f * t).astype(np.float32)
        frames = np.lib.stride_tricks.sliding_window_view(wave, 512)[::160] * self.window
        power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
        logbands = np.log(np.add.reduceat(power, self.edges, axis=1) + 1e-6)
        feats = np.concatenate([logbands.mean(0), logbands.std(0)]).astype(np.float32)
        return torch.from_numpy(feats), i % 12


def rank_main(rank: int, port: int, seconds: float, intervene: bool) -> None:
    import ranks
    import torch
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Subset

    ranks.init(rank, 2, port)
    torch.manual_seed(0)
    ds = Clips()
    by_length = sorted(range(N), key=clip_length)
    shard = by_length[rank::2] if intervene else by_length[rank * N // 2 : (rank + 1) * N // 2]
    loader = DataLoader(Subset(ds, shard), batch_size=BATCH, shuffle=True, drop_last=True)
    model = DDP(nn.Sequential(nn.Linear(80, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 12)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    it = iter(loader)

    def step() -> None:
        nonlocal it
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    ranks.timed_loop(step, seconds)


if __name__ == "__main__":
    import torch.multiprocessing as mp
    from common import free_port, options

    args = options(__doc__).parse_args()
    mp.spawn(rank_main, args=(free_port(), args.seconds, args.intervene), nprocs=2)
