"""The README's throughput line, reproduced: this machine's fp32 matmul peak measured into a
fresh profile home (as 'bottleneckd calibrate' does), then two epochs of an embedding MLP over
token-id batches under watch(), whose epoch blocks print samples/s, tokens/s and MFU.

    python scripts/throughput_example.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds of the matmul peak measurement")
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="bottleneckd-home-")
    os.environ["BOTTLENECKD_HOME"] = home  # read when the watcher's sidecar resolves its peaks
    from bottleneckd.peaks.calibrate import cpu_matmul
    from bottleneckd.peaks.profile import save_profile

    m = cpu_matmul(seconds=args.seconds)
    save_profile([m], Path(home) / "profile.json")
    print(f"fp32 matmul peak: {m.value / 1e9:.0f} GFLOP/s ({m.method})")

    import torch
    from torch import nn

    from bottleneckd.torch import watch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Embedding(1000, 64), nn.Flatten(), nn.Linear(64 * 32, 256), nn.ReLU(), nn.Linear(256, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids, y = torch.randint(0, 1000, (2048, 32)), torch.randint(0, 2, (2048,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(ids, y), batch_size=32)
    w = watch(model, opt, loader, local_sampling=True)
    for _ in range(2):
        for x, t in loader:
            loss = nn.functional.cross_entropy(model(x), t)
            opt.zero_grad()
            loss.backward()
            opt.step()
    w.close()


if __name__ == "__main__":
    main()
