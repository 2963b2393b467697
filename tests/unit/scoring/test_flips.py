"""harness.scoring.flips: the one definition of a flip that the gate, compare and the HTML page use."""

from harness.scoring.flips import Flip, find_flips


def test_lost_gained_and_unchanged_by_hand():
    base = {"q1": ["a", "b"], "q2": ["c"], "q3": [], "only-base": ["x"]}
    now = {"q1": ["b"], "q2": ["c"], "q3": ["d"], "only-now": ["y"]}
    flips = find_flips("s", base, now, {"q1": "first", "q3": "third"})
    # q1 lost a (b kept); q2 unchanged; q3 gained d; qids in one run only are not compared
    assert flips == [Flip("s", "q1", "first", ("a",), ()), Flip("s", "q3", "third", (), ("d",))]


def test_order_of_lost_and_gained_follows_each_run():
    flips = find_flips("s", {"q": ["c", "a", "b"]}, {"q": ["e", "b", "d"]})
    assert (flips[0].lost, flips[0].gained) == (("c", "a"), ("e", "d"))
    assert flips[0].query == ""  # no text given
