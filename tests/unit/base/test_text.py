"""harness.text: words and content words, shared by set statistics and the BM25 tokenizer."""

from harness.text import STOP_WORDS, content_words, words


def test_words_split_on_punctuation_and_underscores_and_keep_unicode():
    assert words("Parse_config: the Café's 2 files!") == ["parse", "config", "the", "café", "s", "2", "files"]


def test_content_words_drop_english_stop_words():
    assert "the" in STOP_WORDS and content_words("how is the config file parsed") == {"config", "file", "parsed"}
