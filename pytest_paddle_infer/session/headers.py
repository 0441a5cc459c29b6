"""The ``paddle-infer:`` lines at the top of a session: what Paddle can run here, the CPU
and its run modes, baseline, tolerances, program, GPU mapping, goldens."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from .state import HEADER_SHOWN, installation, settings_of
from ..modes.devices import mapping_line
from ..cases.suite_scan import is_suite_name

def case_header(config, settings) -> List[str]:
    """The ``paddle-infer:`` lines of a session with cases, goldens aside."""
    caps, _ = installation(config)
    tol = ("atol={} rtol={}".format(settings.atol if settings.atol is not None else "mode default",
                                    settings.rtol if settings.rtol is not None else "mode default"))
    lines = [f"paddle-infer: {caps.describe}", f"paddle-infer: {caps.cpu_modes_line()}",
             f"paddle-infer: baseline {settings.baseline}, {tol}, seed {settings.seed}, "
             f"cache {settings.cache_dir}"] + program_header(settings, True)
    gpu_modes = [s.label for s in settings.run_modes if s.run_mode.device == "gpu"] or \
        (["baseline gpu"] if settings.baseline == "gpu" else [])
    if gpu_modes or caps.gpu_count:  # with GPUs visible, suites' GPU modes use the mapping
        workers = getattr(config.option, "numprocesses", None)
        lines.append(mapping_line(settings.device, workers if isinstance(workers, int) else None,
                                  caps.gpu_count, gpu_modes))
    return lines


def late_case_header(config) -> List[str]:
    """For a session that found its cases by collecting: the case header's lines not printed yet."""
    if settings_of(config).active:
        return []
    shown = config.stash.setdefault(HEADER_SHOWN, [])
    late = [line for line in case_header(config, settings_of(config)) if line not in shown]
    shown.extend(late)  # once: an xdist controller hears from every worker
    return late


def program_header(settings, cases_ahead: bool = False) -> List[str]:
    """The program the session checks (its --paddle-program), when it has cases or sets it."""
    if not (settings.active or cases_ahead) and "paddle_program" not in settings.given:
        return []
    from ..models.program import header_line
    from ..modes.capabilities import installed_paddle

    return [header_line(settings.program, installed_paddle()[1])]


def golden_header(config, settings) -> List[str]:
    """Where goldens are recorded, or what the compared ones were recorded with when that differs."""
    from ..cases.baseline_forms import GOLDEN, golden_dir, kind_of

    if settings.save_goldens is not None:
        return [f"paddle-infer: recording each case's baseline outputs as goldens in {settings.save_goldens}"]
    if kind_of(settings.baseline) != GOLDEN:
        return []
    from ..goldens import header_lines

    lines = header_lines(golden_dir(settings.baseline), installation(config)[1])
    if settings.update_goldens:
        lines.append("paddle-infer: --paddle-update-goldens: goldens are rewritten from live baselines")
    return lines


def report_header(config) -> Optional[List[str]]:
    settings = settings_of(config)
    goldens = golden_header(config, settings)
    if not settings.active:  # a suite's cases say so once collected (pytest_report_collectionfinish)
        config.stash[HEADER_SHOWN] = program_header(settings) + goldens
        return config.stash[HEADER_SHOWN] or None
    return case_header(config, settings) + goldens


def write_worker_header(config, ids) -> None:
    """The xdist controller collects nothing: a worker's suite cases bring the header."""
    if not any(is_suite_name(Path(nodeid.split("::")[0]).name) for nodeid in ids):
        return
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    for line in late_case_header(config):
        if terminal is not None:
            terminal.write_line(line)
