# The project's own tests drive pytest sessions through pytester.
import pytest

pytest_plugins = ["pytester"]


def pytest_ignore_collect(collection_path, config):
    """`pytest --paddle-model=resnet50` at this root checks that model, as it does elsewhere:
    without paths on the command line pytest would take testpaths (tests/) and run the
    project's whole test suite beside the case."""
    sources = getattr(pytest.Config, "ArgsSource", None)  # pytest >= 7.2
    if sources is not None and config.args_source == sources.TESTPATHS and config.getoption("paddle_model"):
        return True
    return None
