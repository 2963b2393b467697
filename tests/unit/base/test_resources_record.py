"""The resources record (harness/measured.py): written only when measured, read back strictly, absent in older
documents read as nothing measured; the banner's `index_bytes` checked on the wire."""

from __future__ import annotations

import pytest

from harness.adapter.protocol import banner_index_bytes, decode_banner
from harness.errors import BaselineError, ProtocolError
from harness.measured import Resources, StrictReader, read_resources


def read(value: object) -> Resources:
    return read_resources(StrictReader(value, "b.json", BaselineError, "sets.tiny.resources"))


def test_a_record_round_trips_and_writes_only_what_was_measured():
    record = Resources(startup_seconds=1.25, peak_rss_mib=310.5, index_bytes=4096)
    assert record.to_dict() == {"startup_seconds": 1.25, "peak_rss_mib": 310.5, "index_bytes": 4096}
    assert read(record.to_dict()) == record
    assert Resources(peak_rss_mib=2.0).to_dict() == {"peak_rss_mib": 2.0}
    assert not Resources().measured and Resources(index_bytes=0).measured


def test_absent_or_null_reads_as_nothing_measured():
    assert read(None) == Resources()
    assert read({}) == Resources()


@pytest.mark.parametrize("value, message", [
    ({"peak_rss_mib": -1}, "b.json: sets.tiny.resources.peak_rss_mib: must be >= 0, got -1"),
    ({"startup_seconds": "2"}, "b.json: sets.tiny.resources.startup_seconds: must be a finite number, got \"2\""),
    ({"index_bytes": 1.5}, "b.json: sets.tiny.resources.index_bytes: must be an integer, got 1.5"),
    ({"index_bytes": -3}, "b.json: sets.tiny.resources.index_bytes: must be >= 0, got -3"),
    ({"peak_rss": 3}, "b.json: sets.tiny.resources.peak_rss: unknown field"),
    ([1], "b.json: sets.tiny.resources: must be an object, got list"),
])
def test_a_bad_figure_is_refused_naming_the_field(value, message):
    with pytest.raises(BaselineError) as caught:
        read(value)
    assert str(caught.value).startswith(message)


def test_the_banner_index_bytes_must_be_a_count():
    assert banner_index_bytes(decode_banner(b'{"ready": true, "index_bytes": 5000}', check_fields=True)) == 5000
    assert banner_index_bytes(decode_banner(b'{"ready": true}', check_fields=True)) is None
    for bad in (b"-1", b"1.5", b"true", b'"5"'):
        with pytest.raises(ProtocolError, match="'index_bytes' must be an integer >= 0"):
            decode_banner(b'{"ready": true, "index_bytes": ' + bad + b"}", check_fields=True)


def test_shards_merge_to_each_figures_largest():
    merged = Resources.largest([Resources(startup_seconds=2.0, peak_rss_mib=100.0),
                                Resources(startup_seconds=1.0, peak_rss_mib=150.0), Resources()])
    assert merged == Resources(startup_seconds=2.0, peak_rss_mib=150.0, index_bytes=None)
    assert Resources.largest([]) == Resources()


def test_check_adapter_names_a_bad_index_bytes_as_a_run_would_refuse_it():
    from harness.adapter.protocol import banner_problem
    assert banner_problem({"ready": True, "index_bytes": 10}) is None
    assert banner_problem({"ready": True, "index_bytes": True}) == (
        "banner: 'index_bytes' must be an integer >= 0 (bytes), got 'true'")
