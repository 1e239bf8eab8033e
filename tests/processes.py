"""Running a command whose hang must fail the test with evidence, not a bare timeout: on
timeout, every process under it is listed with its state and the kernel function it waits in,
each `fgpo` process is asked for its Python stacks (the CLI dumps them on SIGUSR1), and the
whole process group is killed so no descendant keeps the output pipe open."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest


def run_or_explain(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float
                   ) -> subprocess.CompletedProcess:
    """`cmd` with its stdout and stderr captured (one stream); a run past `timeout` seconds
    fails the test with the process tree and the stacks."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        procs = _tree(proc.pid)
        tree = _describe(procs)
        for p in procs:
            if any("fgpo" in part for part in _cmdline(p)[:2]):
                _signal(p, signal.SIGUSR1)  # faulthandler: all threads' stacks to stderr
        time.sleep(3)
        os.killpg(proc.pid, signal.SIGKILL)
        for p in procs:  # those that left the group (a daemon's setsid)
            _signal(p, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} still running after {timeout:.0f} s\n"
                    f"processes:\n{tree}\noutput (last 20,000 characters):\n{out[-20000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, "")


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _signal(p: psutil.Process, sig: int) -> None:
    try:
        p.send_signal(sig)
    except psutil.Error:
        pass


def _describe(procs: list[psutil.Process]) -> str:
    lines = []
    for p in procs:
        try:
            wchan = Path(f"/proc/{p.pid}/wchan").read_text().strip() or "-"
        except OSError:
            wchan = "?"
        try:
            state, threads, ppid = p.status(), p.num_threads(), p.ppid()
        except psutil.Error:
            state, threads, ppid = "gone", 0, "?"
        lines.append(f"  {p.pid} ppid {ppid} {state} wchan {wchan} threads {threads}: "
                     f"{' '.join(_cmdline(p))[:200]}")
    return "\n".join(lines)
