"""supervise.py: how a dead executor is described (exit status, signal, log tail), and
closed children reaped."""
import subprocess
import sys
import time

from pytest_paddle_infer import supervise as ex
from pytest_paddle_infer.supervise import describe_exit, log_tail


def test_exit_descriptions():
    assert describe_exit(-11) == "was killed by SIGSEGV"
    assert describe_exit(-6) == "was killed by SIGABRT"
    assert describe_exit(3) == "exited with status 3"
    assert describe_exit(139) == "exited with status 139 (SIGSEGV)"


def test_log_tail_keeps_messages_without_colour_codes_or_stack_frames(tmp_path):
    log = tmp_path / "executor.log"
    log.write_text("\x1b[32m--- Running PIR pass [fc_fuse_pass]\x1b[0m\n"
                   "C++ Traceback (most recent call last):\n"
                   "--------------------------------------\n"
                   "0   paddle::AnalysisPredictor::Run()\n"
                   "12  phi::FullKernel<float>\n"
                   "FatalError: `Segmentation fault` is detected by the operating system.\n")
    assert log_tail(log).splitlines() == [
        "--- Running PIR pass [fc_fuse_pass]",
        "C++ Traceback (most recent call last):",
        "FatalError: `Segmentation fault` is detected by the operating system.",
    ]
    assert log_tail(tmp_path / "missing.log") == ""


# ---------------------------------------------------------------------------------------
# A closed executor child is not waited for (Executor.close); the next close reaps those
# that have ended, so a process running many sessions (pytester in-process) keeps no zombies.
# ---------------------------------------------------------------------------------------


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
