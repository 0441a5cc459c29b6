"""plugin.py: an installed but unused plugin must not import paddle (nor numpy)."""
import subprocess
import sys


def test_importing_the_plugin_does_not_import_paddle():
    code = ("import sys, pytest_paddle_infer.plugin, pytest_paddle_infer;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('paddle', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
