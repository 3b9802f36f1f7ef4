"""Labelled workload: a Dataset that fetches each sample over TCP from a key-value "feature store"
(a server thread in the job, on the loopback, that waits 5 ms before answering each request, as a
remote store's round trip does; nothing busy), one loader worker holding one connection,
batch 8, a small MLP. Intervention: the store answers at once (the same requests and bytes over
the same socket)."""

LABEL = "undetermined"
PATTERN = "per-sample TCP request to a store answering after 5 ms, one worker"
STAGE = "data"
#: the recommendation (knowledge-base id) its intervention proves (scripts/eval.py scores the top one)
PROVES = "hide_loader_latency"
INTERVENTION = "the store answers without its 5 ms wait (same requests over the same socket)"
MIN_SPEEDUP = 3.0

import socket
import struct
import threading
import time

import numpy as np
import torch
from common import classifier_step, options, set_threads, train
from torch import nn
from torch.utils.data import DataLoader, Dataset

args = options(__doc__).parse_args()
set_threads()
DELAY = 0.0 if args.intervene else 0.005
ROWS, DIM = 4096, 256
table = np.random.default_rng(0).standard_normal((ROWS, DIM)).astype(np.float32)


def recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("store closed the connection")
        buf += chunk
    return bytes(buf)


def serve_one(conn: socket.socket) -> None:
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            try:
                (key,) = struct.unpack("!q", recv_exact(conn, 8))
            except ConnectionError:
                return
            if DELAY:
                time.sleep(DELAY)  # the remote round trip
            conn.sendall(table[key % ROWS].tobytes())


def serve(listener: socket.socket) -> None:
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve_one, args=(conn,), daemon=True).start()


listener = socket.create_server(("127.0.0.1", 0))
threading.Thread(target=serve, args=(listener,), daemon=True).start()
ADDRESS = listener.getsockname()


class Store(Dataset):
    def __init__(self) -> None:
        self.conn: socket.socket | None = None  # one per worker process, opened on first use

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int):  # noqa: ANN204
        if self.conn is None:
            self.conn = socket.create_connection(ADDRESS)
            self.conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn.sendall(struct.pack("!q", i))
        row = np.frombuffer(recv_exact(self.conn, DIM * 4), dtype=np.float32)
        return torch.from_numpy(row.copy()), i % 10


model = nn.Sequential(nn.Linear(DIM, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Store(), batch_size=8, shuffle=True, num_workers=1, persistent_workers=True)
train(classifier_step(model, opt, nn.CrossEntropyLoss()), lambda: loader, args.seconds)
