"""The memoised accounting gives Opacus' own ε to the last bit (it only caches what Opacus recomputes)."""

import pytest
from opacus.accountants import PRVAccountant, RDPAccountant

from dpsyn.privacy import accountant as acc

HISTORIES = [
    [(1.1, 0.01, 300)],
    [(8.4, 0.5, 4), (30.7, 1.0, 12), (6.07, 1.0, 1)],
    [(0.9, 0.2, 25), (4.0, 1.0, 3)],
    [(2.5, 0.004, 2000), (12.0, 1.0, 1), (12.0, 1.0, 1)],
]


@pytest.mark.parametrize("history", HISTORIES)
@pytest.mark.parametrize("delta", [1e-5, 1e-7])
def test_prv_matches_opacus_exactly(history, delta):
    plain = PRVAccountant()
    plain.history = list(history)
    ours = acc._make("prv")
    ours.history = list(history)
    assert ours.get_epsilon(delta=delta) == plain.get_epsilon(delta=delta)


@pytest.mark.parametrize("history", HISTORIES)
def test_rdp_matches_opacus_exactly(history):
    plain = RDPAccountant()
    plain.history = list(history)
    expected = float(plain.get_epsilon(delta=1e-5, alphas=acc._RDP_ORDERS))
    assert acc._rdp_epsilon(history, 1e-5, tuple(acc._RDP_ORDERS)) == expected


def test_a_second_question_reuses_the_curves():
    acc._rdp_per_step.cache_clear()
    acc._rdp_epsilon([(3.0, 0.1, 10)], 1e-5, None)
    acc._rdp_epsilon([(3.0, 0.1, 20), (5.0, 1.0, 1)], 1e-5, None)
    info = acc._rdp_per_step.cache_info()
    assert info.hits == 1 and info.misses == 2
