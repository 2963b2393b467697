"""The identity check of a run's workers (harness/gating/identity.py `check_backend`)."""

import pytest

from harness.errors import BaselineError
from harness.gating.identity import BackendIdentity, check_backend


def test_workers_of_different_backends_with_settings_are_one_line_refusal():
    # identities holding a settings dict cannot be hashed: the refusal must still name each backend once
    first = BackendIdentity("bm25", settings={"k1": 1.2}, command=("python", "a.py"))
    other = BackendIdentity("dense", settings={"dim": 384}, command=("python", "b.py"))
    with pytest.raises(BaselineError) as error:
        check_backend([first, other, first], None, "baselines/current.json", allow_change=False)
    assert str(error.value) == ("the 3 workers are different backends: 'bm25' (`python a.py`); "
                                "'dense' (`python b.py`)")
