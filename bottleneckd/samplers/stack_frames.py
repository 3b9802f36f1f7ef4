"""How a py-spy stack is read: the stage of the step it is in (the whole stack, not its innermost
frame), whether a forward sits in low- or high-intensity operators, whether the thread waits, and
which wrapper (DDP, FSDP) is on it. Pure functions of the frames py-spy dumps."""

from __future__ import annotations

import linecache
import re

from bottleneckd.model.resources import Phase

#: path fragment of PyTorch's data loading (the DataLoader, its fetchers and workers): a stack in it
#: is the data stage; a user frame it called is the data's code (samplers/code_sites.py)
LOADER_PATH = "torch/utils/data/"
#: PyTorch's fetch of a batch from the dataset: on a stack, the batch is being built in that thread
FETCH_PATH = LOADER_PATH + "_utils/fetch.py"

# (substring of file path, function name substring or "", phase). A stack is classified by the
# whole of it, not its innermost frame: the first phase in PHASE_ORDER with a matching frame
# anywhere in the stack wins, so a dataset's __getitem__ that runs a model, a numpy FFT or a torch
# operator is still the data stage, and a collective called from forward is communication.
RULES: tuple[tuple[str, str, str], ...] = (
    (LOADER_PATH, "", Phase.DATA_WAIT),
    ("datasets/arrow_dataset", "__getitem__", Phase.DATA_WAIT),
    ("datasets/iterable_dataset", "__iter__", Phase.DATA_WAIT),
    ("torchvision/datasets/", "", Phase.DATA_WAIT),
    ("webdataset/", "", Phase.DATA_WAIT),
    ("torch/distributed/", "", Phase.COMMUNICATION),
    # DDP's own collectives called from Python: buffer broadcast before forward, the delayed
    # all-reduce of a static graph, the unused-parameter/grad-sync agreement
    ("torch/nn/parallel/distributed", "_sync_buffers", Phase.COMMUNICATION),
    ("torch/nn/parallel/distributed", "_sync_module_buffers", Phase.COMMUNICATION),
    ("torch/nn/parallel/distributed", "_default_broadcast_coalesced", Phase.COMMUNICATION),
    ("torch/nn/parallel/distributed", "_distributed_broadcast_coalesced", Phase.COMMUNICATION),
    ("torch/nn/parallel/distributed", "_delay_all_reduce", Phase.COMMUNICATION),
    ("torch/nn/parallel/distributed", "_check_global_requires_backward_grad_sync", Phase.COMMUNICATION),
    ("torch/nn/parallel/distributed", "_match_all_reduce_for_bwd_pass", Phase.COMMUNICATION),
    ("torch/cuda/__init__", "synchronize", Phase.GPU_WAIT),
    ("torch/cuda/streams", "synchronize", Phase.GPU_WAIT),
    ("torch/serialization", "load", Phase.FILE_IO),  # torch.save (a checkpoint) is outside the step's phases: "other"
    # the frameworks' batch copies to the device (Lightning, Accelerate, the Hugging Face Trainer)
    ("lightning/fabric/utilities/apply_func", "move_data_to_device", Phase.TRANSFER),
    ("accelerate/utils/operations", "send_to_device", Phase.TRANSFER),
    ("transformers/trainer", "_prepare_input", Phase.TRANSFER),
    ("torch/optim/", "", Phase.OPTIMIZER),
    ("torch/autograd/", "backward", Phase.BACKWARD),
    ("torch/_tensor", "backward", Phase.BACKWARD),
    ("torch/nn/modules/module", "_call_impl", Phase.FORWARD),
)
#: importing modules, building the model, joining or leaving the group: not a step; drained samples of it are left out
STARTUP = "startup"
#: set-up and teardown frames anywhere in the stack: constructing modules (their parameters'
#: initialisation), DDP's constructor (parameter broadcast), joining or leaving the process group
SETUP: tuple[tuple[str, str], ...] = (
    ("torch/nn/init", ""),
    ("torch/nn/modules/", "__init__"),
    ("torch/nn/parallel/distributed", "__init__"),
    ("torch/distributed/distributed_c10d", "init_process_group"),
    ("torch/distributed/distributed_c10d", "destroy_process_group"),
)
PHASE_ORDER = (
    Phase.DATA_WAIT,
    Phase.COMMUNICATION,
    Phase.GPU_WAIT,
    Phase.FILE_IO,
    Phase.TRANSFER,
    Phase.OPTIMIZER,
    Phase.BACKWARD,
    Phase.FORWARD,
)
#: native frames (a recorded native stack, or py-spy --native where pausing is allowed): DDP's C++
#: reducer and the backends' collectives are communication wherever they sit in the stack
NATIVE_COMM = re.compile(
    r"c10d::Reducer|\bReducer::|gloo::|ProcessGroupGloo|ProcessGroupNCCL|ncclAllReduce|c10d::.*[Aa]llreduce"
)
#: frames that show the model is wrapped for data-parallel training (facts ddp / fsdp under attach)
WRAPPERS = (("torch/nn/parallel/distributed", "ddp"), ("torch/distributed/fsdp/", "fsdp"))

# operator classes by arithmetic intensity (section 2.3): normalisation and elementwise ops move
# bytes with few multiply-adds; matrix products and convolutions reuse each byte many times
LOW_INTENSITY = re.compile(
    r"^(LayerNorm|BatchNorm\w*|GroupNorm|InstanceNorm\w*|RMSNorm|GELU|ReLU|SiLU|Tanh|Sigmoid|Dropout\w*|Softmax)\.forward$"
    r"|^(layer_norm|batch_norm|group_norm|gelu|relu|silu|dropout|softmax|normalize)$"
)
HIGH_INTENSITY = re.compile(
    r"^(Linear|Conv[123]d|ConvTranspose[123]d|MultiheadAttention|Bilinear)\.forward$|^(linear|conv[123]d|scaled_dot_product_attention)$"
)


#: a source line that copies a tensor to a device: ``.to(...)``, ``.cuda(...)``, ``.copy_(...)``
#: (the copy itself is C++, so the innermost Python frame is the line that calls it); not a copy
#: back to the host (``.to("cpu")``), whose time is the wait for the GPU's queued work
COPY_LINE = re.compile(r"\.(cuda|copy_)\(|\.to\((?![^)]*[\'\"]cpu)")


def classify_frames(frames: list[dict]) -> str:
    """The stage of one stack (frames innermost first, as py-spy gives them): the first phase of
    PHASE_ORDER matched by any frame; else "transfer" where the innermost frame's source line is a
    copy to a device outside the model's forward (a pageable ``batch.to("cuda")`` read as "other"
    under attach on an H200 while pinning its memory made the step x2.6 faster); else "other"."""
    if not frames:
        return (
            STARTUP  # no Python frame on the main thread: the interpreter starting or shutting down (atexit, teardown)
        )
    if all(f.get("name") == "<module>" for f in frames):
        return STARTUP  # module-level code only (building the model, the data): set-up, not a step
    seen: set[str] = set()
    for f in frames:
        path = (f.get("filename") or f.get("short_filename") or "").replace("\\", "/")
        name = f.get("name", "")
        if "importlib._bootstrap" in path:  # start-up: a module being imported, not a training step
            return STARTUP
        if name == "<module>":
            continue
        if any(n in path and fn in name for n, fn in SETUP):
            return STARTUP
        if NATIVE_COMM.search(name):
            seen.add(Phase.COMMUNICATION)
        for needle, func, phase in RULES:
            if needle in path and func in name:
                seen.add(phase)
    matched = next((ph for ph in PHASE_ORDER if ph in seen), None)
    if matched is not None:
        return matched
    top = frames[0]
    line = linecache.getline(top.get("filename", ""), int(top.get("line", 0) or 0))
    return Phase.TRANSFER if COPY_LINE.search(line) else Phase.OTHER


HIGH_LINE = re.compile(
    r"\b(linear|matmul|mm|bmm|addmm|conv[123]d|einsum|Linear|Conv[123]d|scaled_dot_product_attention)\b|@"
)
LOW_LINE = re.compile(
    r"\b(layer_norm|LayerNorm|batch_norm|BatchNorm\w*|group_norm|gelu|GELU|relu|ReLU|silu|sigmoid|tanh|softmax|dropout|normalize)\b"
)


def op_intensity(frames: list[dict]) -> str | None:
    """'low' or 'high' for the innermost operator recognised: by the frame's function name, or
    else by the source line it is executing (builtin ops such as F.gelu have no frame of their
    own, but their call sits on the innermost Python line)."""
    for f in frames:
        name = f.get("name", "")
        if LOW_INTENSITY.search(name):
            return "low"
        if HIGH_INTENSITY.search(name):
            return "high"
    if frames:
        f = frames[0]
        line = linecache.getline(f.get("filename", ""), int(f.get("line", 0) or 0))
        if HIGH_LINE.search(line):
            return "high"
        if LOW_LINE.search(line):
            return "low"
    return None


#: innermost Python frames (function name, or method name after the class) of a thread that waits:
#: a sleep, a lock, an event, a child process or a socket; py-spy's ``active`` flag covers the C calls
#: (time.sleep, select, futex) that have no Python frame of their own
IDLE_FUNCS = frozenset(
    {
        "sleep",
        "wait",
        "_wait",
        "wait_for",
        "join",
        "_wait_for_tstate_lock",
        "acquire",
        "select",
        "poll",
        "epoll",
        "waitpid",
        "_try_wait",
        "recv",
        "recv_into",
        "recv_bytes",
        "_recv_bytes",
        "_recv",
        "accept",
        "get",
        "readinto",
    }
)


def thread_idle(thread: dict) -> bool:
    """The sampled thread is waiting (sleeping, on a lock, a child, a socket), not running code:
    py-spy marks it inactive, or its innermost frame is a known wait."""
    if thread.get("active") is False:
        return True
    frames = thread.get("frames") or []
    if not frames:
        return False
    f = frames[0]
    name = f.get("name", "").rsplit(".", 1)[-1]
    path = (f.get("filename") or "").replace("\\", "/")
    stdlib_wait = any(
        m in path
        for m in ("/threading.py", "/queue.py", "/selectors.py", "/subprocess.py", "/multiprocessing/", "/socket.py")
    )
    return name in IDLE_FUNCS and (stdlib_wait or name in ("sleep", "select", "poll", "epoll", "waitpid"))


def wrappers(frames: list[dict]) -> set[str]:
    """ "ddp" / "fsdp" when a frame of that wrapper's code runs on the stack (its forward runs in
    every step). A module being imported is not the wrapper running: importing torch.distributed
    imports the FSDP package, and a DDP job read as FSDP lost its less-frequent-sync advice."""
    out: set[str] = set()
    for f in frames:
        if f.get("name") == "<module>":
            continue
        path = (f.get("filename") or f.get("short_filename") or "").replace("\\", "/")
        out.update(fact for needle, fact in WRAPPERS if needle in path)
    return out


#: the DataLoader worker's loop: frames outside it are the parent's, copied by fork
WORKER_LOOP = LOADER_PATH + "_utils/worker"


def worker_frames(frames: list[dict]) -> list[dict] | None:
    """A worker's frames inside its loop (innermost first): a forked worker's stack still holds the
    training loop that started it below ``_worker_loop``, which is not what the worker runs. None
    when the stack is not a DataLoader worker's (a rank of a launcher, another helper)."""
    for k, f in enumerate(frames):
        if WORKER_LOOP in (f.get("filename") or "").replace("\\", "/"):
            return frames[:k]
    return None
