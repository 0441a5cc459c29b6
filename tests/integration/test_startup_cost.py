"""An installed but unused plugin must not import paddle (nor numpy): a plain session."""


def test_a_plain_session_does_not_import_paddle(pytester, xdist_mode):
    pytester.makepyfile(test_plain='''
        import sys

        def test_no_paddle():
            assert "paddle" not in sys.modules
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *xdist_mode)
    result.assert_outcomes(passed=1)
    assert "paddle-infer:" not in result.stdout.str()  # no header when unused
