"""Tests for adapters/tokenizer.py: identifiers split and kept whole, Unicode words, options."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.tokenizer import Tokenizer, chunk_tokens, s_stem, tokenize


@pytest.mark.parametrize("text, expected", [
    # camelCase: whole identifier, then its parts
    ("parseConfigFile", ["parseconfigfile", "parse", "config", "file"]),
    # snake_case: same parts, the whole keeps its underscores
    ("parse_config_file", ["parse_config_file", "parse", "config", "file"]),
    # dotted path: whole path, each segment, and the compound segment's own parts
    ("http.client.HTTPResponse",
     ["http.client.httpresponse", "http", "client", "httpresponse", "http", "response"]),
    # a capital run followed by a word splits before the word's capital
    ("XMLHttpRequest", ["xmlhttprequest", "xml", "http", "request"]),
    # a digit then a capital is a boundary; letters then digits are not
    ("utf8Decode", ["utf8decode", "utf8", "decode"]),
    # dunder names lose their underscores and are one plain token
    ("__init__", ["init"]),
    ("_private_helper", ["private_helper", "private", "helper"]),
    # plain words: one token each, lowercased
    ("Hello World", ["hello", "world"]),
    ("HTTP", ["http"]),
])
def test_identifiers_are_split_and_kept_whole(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_prose_punctuation_separates_words_and_a_sentence_dot_does_not_join() -> None:
    assert tokenize("Parse it, then (maybe) stop. Next: done!") == [
        "parse", "it", "then", "maybe", "stop", "next", "done"]


def test_numbers_and_dotted_numbers() -> None:
    assert tokenize("version 3.14 and 42") == ["version", "3.14", "3", "14", "and", "42"]


@pytest.mark.parametrize("text, expected", [
    ("Größe STRASSE", ["größe", "strasse"]),
    ("naïve Café", ["naïve", "café"]),
    # Cyrillic camelCase splits like Latin
    ("ПриветМир", ["приветмир", "привет", "мир"]),
    # scripts without case stay one word
    ("中文 检索", ["中文", "检索"]),
    ("λόγος", ["λόγος"]),
])
def test_unicode_words(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_decomposed_accents_are_composed_first() -> None:
    # "e" + COMBINING ACUTE ACCENT is the same word as the precomposed "é"
    assert tokenize("cafe\u0301") == tokenize("caf\u00e9") == ["café"]


def test_stop_words_are_dropped_only_when_asked() -> None:
    text = "the parser of the files"
    assert tokenize(text) == ["the", "parser", "of", "the", "files"]
    assert tokenize(text, stopwords=True) == ["parser", "files"]


def test_stop_word_parts_of_an_identifier_are_dropped_but_the_whole_stays() -> None:
    assert tokenize("get_the_value", stopwords=True) == ["get_the_value", "get", "value"]


@pytest.mark.parametrize("word, stem", [
    ("queries", "query"),     # -ies -> -y
    ("species", "specy"),     # -ies -> -y: Harman's rule has no exception for it
    ("files", "file"),        # -es -> -e
    ("classes", "classe"),    # -es -> -e (a light stemmer; queries are stemmed the same way)
    ("goes", "goe"),          # -oes is exempt from the -es rule, so the -s rule applies
    ("trees", "tree"),        # -ees likewise: only the final s goes
    ("parsers", "parser"),    # -s -> ''
    ("status", "status"),     # -us kept
    ("class", "class"),       # -ss kept
    ("bus", "bus"),           # three letters or fewer kept
    ("utf8s", "utf8s"),       # not purely alphabetic
])
def test_s_stemmer(word: str, stem: str) -> None:
    assert s_stem(word) == stem


def test_stemming_applies_to_tokens_and_to_queries_alike() -> None:
    assert tokenize("Parses files", stem=True) == ["parse", "file"]
    assert tokenize("parse file", stem=True) == ["parse", "file"]


def test_chunk_tokens_keeps_each_occurrence() -> None:
    # "http" appears twice in the dotted path, so it counts twice toward tf
    assert chunk_tokens("http.HTTPServer").count("http") == 2


def test_memo_gives_the_same_answer_as_a_fresh_tokenizer() -> None:
    shared = Tokenizer(stem=True)
    texts = ["ParseFiles now", "parseFiles", "ParseFiles now", "the Files"]
    assert [shared(text) for text in texts] == [Tokenizer(stem=True)(text) for text in texts]


@given(st.text(max_size=60), st.text(max_size=60))
def test_tokens_are_lowercase_nonempty_and_compose_over_whitespace(left: str, right: str) -> None:
    tokens = tokenize(left)
    assert all(token and token == token.lower() for token in tokens)
    assert tokenize(left + " " + right) == tokens + tokenize(right)


def test_memo_is_bounded_and_answers_stay_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    import adapters.tokenizer as tokenizer_module

    monkeypatch.setattr(tokenizer_module, "MEMO_LIMIT", 3)
    shared = Tokenizer()
    texts = [f"word{i} parseConfig{i}" for i in range(20)]
    assert [shared(text) for text in texts] == [tokenize(text) for text in texts]
    assert len(shared._memo) <= 3 + 2  # cleared once over the limit, then refilled by one text
