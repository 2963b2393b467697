"""harness.text: words and content words (set statistics, the BM25 tokenizer), and the shortlist of an error line."""

from harness.text import STOP_WORDS, content_words, shortlist, words


def test_words_split_on_punctuation_and_underscores_and_keep_unicode():
    assert words("Parse_config: the Café's 2 files!") == ["parse", "config", "the", "café", "s", "2", "files"]


def test_content_words_drop_english_stop_words():
    assert "the" in STOP_WORDS and content_words("how is the config file parsed") == {"config", "file", "parsed"}


def test_shortlist_shows_the_first_few_then_says_some_are_left_out():
    ids = [f"q{n}" for n in range(1, 8)]
    assert shortlist(ids[:5]) == "q1, q2, q3, q4, q5"  # exactly five: nothing left out
    assert shortlist(ids) == "q1, q2, q3, q4, q5 ..."
    assert shortlist(ids, 3, counted=True, separator="; ") == "q1; q2; q3 (+4 more)"
    assert shortlist([], counted=True) == ""
