"""--paddle-model's help names every zoo entry (options.py writes them out: it does not import
the zoo, which the start-up of a session without cases must not pay for)."""
from pytest_paddle_infer.models.zoo import ZOO
from pytest_paddle_infer.session.options import OPTIONS


def test_every_zoo_entry_is_in_the_help():
    help_text = next(o for o in OPTIONS if o.flag == "--paddle-model").help
    assert [name for name in ZOO if name not in help_text] == []
