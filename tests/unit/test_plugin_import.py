"""Importing the plugin starts no process, imports no paddle or numpy and sets nothing in the
environment, whatever ``sys.argv`` holds: the executor child starts once the session knows it
has cases (pytest_configure, a suite's collection), never at import."""
import json
import subprocess
import sys

import pytest

PROBE = """
import json, os, sys
sys.argv = ["pytest"] + json.loads(sys.argv[1])
before = dict(os.environ)
import pytest_paddle_infer.plugin
children = []
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid():
            children.append(int(entry))
print(json.dumps({"children": children, "paddle": "paddle" in sys.modules,
                  "numpy": "numpy" in sys.modules,
                  "environ": sorted(set(os.environ.items()) ^ set(before.items()))}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("argv", [
    ["--paddle-model=tiny_cnn", "--run-mode=cpu_fp32"],          # a plain session with cases
    ["--paddle-model=tiny_cnn", "-n", "2"],                        # an xdist controller with cases
    ["example_suites/cpu_sweep.paddle.yaml"],                      # a suite by path
])
def test_importing_the_plugin_starts_nothing(argv):
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == {
        "children": [], "paddle": False, "numpy": False, "environ": []}
