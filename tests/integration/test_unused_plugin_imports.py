"""An installed but unused plugin imports no numpy (nor paddle) at any point of a plain session,
its end included (the xdist hooks' clean-up imported the executor's runner, and numpy, there)."""


def test_a_plain_session_never_imports_numpy(pytester, xdist_mode):
    pytester.makeconftest('''
        import atexit
        import sys

        atexit.register(lambda: print("modules at exit:", "numpy" in sys.modules, "paddle" in sys.modules))
    ''')
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *xdist_mode)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["modules at exit: False False"])
