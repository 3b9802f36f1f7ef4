"""The channel's socket directory against a second local user (issue 25 item 1), played by
``nobody``: the tests run as root and each attack runs in a forked child that has dropped to
nobody's uid and gid (``os.setuid``), with real files, links and sockets.

The attack that worked: nobody links ``/tmp/bottleneckd-0`` to a root-owned 0755 directory (the
owner check followed the link and passed), root's sidecar and hook start on it, then nobody swaps
the link for one to a directory of its own where it listens: it received root's step reports, and
root's sidecar wrote and deleted its report file there.
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bottleneckd.channel.link import PhaseReceiver, PhaseSender
from bottleneckd.channel.report_file import REPORT_FILE_NAME, read_report_file, write_report_file
from bottleneckd.channel.socket_path import ChannelError, untrusted_dir
from bottleneckd.model.facts import Facts
from bottleneckd.model.identity import RankIdentity
from bottleneckd.model.protocol import StepReport
from tests.conftest import run_cli


def _nobody() -> pwd.struct_passwd:
    if os.geteuid() != 0:
        pytest.skip("a second user needs root to switch to it (os.setuid); these tests run unprivileged here")
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no second user: this machine has no 'nobody' account")


def as_nobody(fn: Callable[[Callable[[], None]], Any]) -> tuple[int, int, int]:
    """Run ``fn(ready)`` in a forked child as nobody. Returns (pid, fd its JSON result arrives on,
    fd that becomes readable once the child calls ``ready()``)."""
    pw = _nobody()
    out_r, out_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: plain os and socket calls only, then _exit
        code = 1
        try:
            os.close(out_r)
            os.close(ready_r)
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            result = fn(lambda: os.write(ready_w, b"r"))
            os.write(out_w, json.dumps(result).encode())
            code = 0
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            os.write(out_w, json.dumps({"error": repr(e)}).encode())
        finally:
            os._exit(code)
    os.close(out_w)
    os.close(ready_w)
    return pid, out_r, ready_r


def result_of(pid: int, fd: int) -> Any:
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def run_as_nobody(fn: Callable[[], Any]) -> Any:
    pid, out, ready = as_nobody(lambda _ready: fn())
    os.close(ready)
    return result_of(pid, out)


def report(epoch: int) -> StepReport:
    ident = RankIdentity.from_env({}, pid=os.getpid(), host="root-job")
    return StepReport(ident, 1, 0.1, {"forward": 0.1}, Facts(device="cpu", epoch=epoch))


@pytest.fixture
def shared_tmp():
    """A stand-in for /tmp: sticky and writable by everyone, reachable by nobody (pytest's own
    tmp_path is under a 0700 directory)."""
    d = tempfile.mkdtemp(prefix="bottleneckd-test-", dir="/tmp")
    os.chmod(d, 0o1777)
    yield Path(d)
    import shutil

    shutil.rmtree(d, ignore_errors=True)


def test_a_link_planted_by_another_user_is_refused_by_both_ends(shared_tmp: Path) -> None:
    root_dir = shared_tmp / "root-owned-0755"  # a directory only root writes, like /usr/share
    root_dir.mkdir()
    os.chmod(root_dir, 0o755)
    link = shared_tmp / "bottleneckd-0"
    got = run_as_nobody(lambda: os.symlink(root_dir, link) or os.lstat(link).st_uid)
    assert got == _nobody().pw_uid and link.is_symlink()
    sock = str(link / "bottleneckd.sock")
    with pytest.raises(ChannelError, match=r"bottleneckd-0: unsafe directory .*symbolic link .*root-owned-0755"):
        PhaseReceiver(sock)
    assert os.listdir(root_dir) == []  # nothing was bound through the link
    assert "symbolic link" in (untrusted_dir(str(link)) or "")
    sender = PhaseSender(sock)
    try:
        assert sender.send(report(1)) is False and "symbolic link" in sender.untrusted
    finally:
        sender.close()
    assert read_report_file(sock) is None  # the hook reads no report through it either


@pytest.mark.slow
def test_serve_on_the_default_path_refuses_the_planted_link(shared_tmp: Path, cli_env: dict) -> None:
    """The issue's first step through the command line: ``$TMPDIR/bottleneckd-0`` is nobody's link."""
    root_dir = shared_tmp / "root-owned-0755"
    root_dir.mkdir()
    os.chmod(root_dir, 0o755)
    link = shared_tmp / f"bottleneckd-{os.getuid()}"
    run_as_nobody(lambda: os.symlink(root_dir, link))
    env = {k: v for k, v in cli_env.items() if k not in ("BOTTLENECKD_SOCKET", "XDG_RUNTIME_DIR")}
    env["TMPDIR"] = str(shared_tmp)
    r = run_cli(["serve", "--quiet", "--bind", "127.0.0.1:0", "--duration", "1"], env, timeout=60)
    assert r.returncode == 2, r.stderr[-800:]
    assert "symbolic link" in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert os.listdir(root_dir) == []


@pytest.mark.slow
def test_the_directory_swapped_after_the_check_redirects_nothing() -> None:
    """Root's sidecar and hook hold their directory; nobody then renames it away and puts a link to
    a directory of its own, where it listens, in its place. Nothing of root's reaches nobody."""
    parent = Path(tempfile.mkdtemp(prefix="bottleneckd-test-", dir="/tmp"))
    os.chmod(parent, 0o777)  # writable by all, not sticky: entries can be renamed by anyone
    try:
        chan = parent / "chan"
        sock = str(chan / "bottleneckd.sock")
        rx = PhaseReceiver(sock).start()
        sender = PhaseSender(sock)
        try:
            assert sender.send(report(1))
            _wait(lambda: rx.received >= 1)

            def attack(ready: Callable[[], None]) -> dict[str, Any]:
                evil = parent / "evil"
                evil.mkdir(mode=0o700)
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                s.bind(str(evil / "bottleneckd.sock"))
                s.settimeout(3.0)
                os.rename(chan, parent / "chan.moved")
                os.symlink(evil, parent / "chan.new")
                os.rename(parent / "chan.new", chan)  # a new link renamed over the old path
                ready()
                got = 0
                try:
                    while True:
                        s.recv(65536)
                        got += 1
                except TimeoutError:
                    pass
                return {"received": got, "files": sorted(os.listdir(evil))}

            pid, out, ready = as_nobody(attack)
            assert os.read(ready, 1) == b"r"
            os.close(ready)
            assert chan.is_symlink()
            for k in range(2, 12):
                assert sender.send(report(k))
            got = result_of(pid, out)
            assert got == {"received": 0, "files": ["bottleneckd.sock"]}, got  # none of root's reports reached nobody
            _wait(lambda: rx.received >= 11)  # they reached root's sidecar
            write_report_file(rx.dir, {"verdict": "root's"})  # the sidecar's report, beside its socket
            assert read_report_file(sock, sender.report_dir()) == {"verdict": "root's"}
        finally:
            sender.close()
            rx.close()
        assert os.listdir(parent / "evil") == ["bottleneckd.sock"]  # nothing written or deleted in nobody's directory
        assert os.listdir(parent / "chan.moved") == [REPORT_FILE_NAME]  # but in root's, where the socket was unlinked
    finally:
        import shutil

        shutil.rmtree(parent, ignore_errors=True)


def _wait(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)
