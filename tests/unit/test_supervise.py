"""execute/executor.py: how a dead executor is described (exit status, signal, log tail)."""
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
