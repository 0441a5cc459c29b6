"""A closed executor child is not waited for (Executor.close); the next close reaps those
that have ended, so a process running many sessions (pytester in-process) keeps no zombies."""
import subprocess
import sys
import time

from pytest_paddle_infer import supervise as ex


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_ended_children_are_reaped(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    ex._EXITING.append(proc)
    deadline = time.time() + 30
    while state(proc.pid) != "Z" and time.time() < deadline:
        time.sleep(0.05)
    assert state(proc.pid) == "Z"  # ended, not yet reaped
    ex.reap_exited()
    assert proc not in ex._EXITING and proc.returncode == 0
