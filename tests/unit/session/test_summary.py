"""session/summary.py: what the session says at its end."""


def test_update_goldens_without_a_golden_baseline_is_said():
    from pytest_paddle_infer.session.summary import unused_update_goldens

    class Settings:
        update_goldens = True

    assert "rewrote nothing" in unused_update_goldens(Settings, [{"paddle_baseline": "auto"}])
    assert unused_update_goldens(Settings, [{"paddle_baseline": "golden:g"}]) == ""
    Settings.update_goldens = False
    assert unused_update_goldens(Settings, []) == ""
