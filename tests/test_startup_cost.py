"""An installed but unused plugin must not import paddle (nor numpy)."""
import subprocess
import sys


def test_importing_the_plugin_does_not_import_paddle():
    code = ("import sys, pytest_paddle_infer.plugin, pytest_paddle_infer;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('paddle', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_plain_session_does_not_import_paddle(pytester):
    pytester.makepyfile(test_plain='''
        import sys

        def test_no_paddle():
            assert "paddle" not in sys.modules
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "paddle-infer:" not in result.stdout.str()  # no header when unused
