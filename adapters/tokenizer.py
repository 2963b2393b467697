"""The BM25 tokeniser for code and prose: Unicode words, identifiers split into parts and kept whole.

`parseConfigFile`, `parse_config_file` and `http.client.HTTPResponse` all yield their whole
(lowercased) identifier plus its parts, so a query in words finds code and a query naming
the identifier finds it exactly. Stop words and a light stemmer are optional.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from harness.text import STOP_WORDS

# Bump whenever the tokens produced for some text change: it is part of the index cache key
# and of the adapter banner, so a baseline records which tokeniser made it.
TOKENIZER_VERSION = 1

# Chunks remembered by one Tokenizer before its memo is dropped (a corpus of 1M short
# documents has ~250k distinct chunks).
MEMO_LIMIT = 2_000_000

# An identifier-ish chunk: runs of word characters (letters, digits, underscore, any script)
# joined by single dots, so "http.client.HTTPResponse" is one chunk, "end. Next" is two.
_CHUNK = re.compile(r"\w+(?:\.\w+)*")


def _split_case(segment: str) -> list[str]:
    """Split one underscore-free segment at case changes: `HTTPResponse` -> HTTP, Response.

    A boundary falls before an upper-case letter that follows a lower-case letter or digit
    (`parseConfig`, `utf8Decode`), and before the last capital of a capital run that is
    followed by a lower-case letter (`HTTPResponse`). Works for any cased script.
    """
    parts: list[str] = []
    start = 0
    for i in range(1, len(segment)):
        char = segment[i]
        if not char.isupper():
            continue
        before = segment[i - 1]
        if before.islower() or before.isdigit():
            parts.append(segment[start:i])
            start = i
        elif before.isupper() and i + 1 < len(segment) and segment[i + 1].islower():
            parts.append(segment[start:i])
            start = i
    parts.append(segment[start:])
    return parts


def chunk_tokens(chunk: str) -> list[str]:
    """Tokens of one chunk, lowercased: the whole chunk if it is compound, then its parts.

    Parts come from dots, then underscores, then case changes; a dotted segment that is
    itself compound (`HTTPResponse`, `config_file`) is also kept whole. Empty parts (from
    `__init__` or `a__b`) are dropped.
    """
    if chunk.isalnum() and (chunk.islower() or not _has_case_change(chunk)):
        return [chunk.lower()]
    tokens: list[str] = []
    segments = chunk.split(".")
    if len(segments) > 1:
        tokens.append(chunk.lower())
    for segment in segments:
        pieces = [piece for piece in segment.split("_") if piece]
        parts = [part for piece in pieces for part in _split_case(piece)]
        if len(parts) > 1:
            whole = segment.strip("_").lower()
            if whole:
                tokens.append(whole)
        tokens.extend(part.lower() for part in parts)
    return tokens


def _has_case_change(word: str) -> bool:
    return len(_split_case(word)) > 1


def s_stem(word: str) -> str:
    """Harman's S-stemmer (1991), the classic light stemmer: plurals only.

    The first rule whose condition holds applies: -ies -> -y (not -eies, -aies); -es -> -e
    (not -aes, -ees, -oes); -s -> '' (not -us, -ss). So "trees" -> "tree" by the third rule.
    Words of three letters or fewer, and words with a digit, dot or underscore, are left alone.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


class Tokenizer:
    """Text -> tokens with fixed options; memoises chunks, which repeat heavily in any corpus.

    Use one instance per index (the memo grows with the vocabulary, which the index holds
    anyway). `__call__` is safe to use from one thread at a time.
    """

    def __init__(self, *, stopwords: bool = False, stem: bool = False) -> None:
        self.stopwords = stopwords
        self.stem = stem
        self._memo: dict[str, list[str]] = {}
        self._findall: Callable[[str], list[str]] = _CHUNK.findall

    def __call__(self, text: str) -> list[str]:
        """All tokens of `text` in order; a token repeats as often as it occurs."""
        if not text.isascii():
            # One spelling per accented letter: a decomposed "e + U+0301" would otherwise
            # split the word, since a combining mark is not a word character.
            text = unicodedata.normalize("NFC", text)
        memo = self._memo
        if len(memo) > MEMO_LIMIT:  # a long-lived adapter sees endless new query words
            memo.clear()
        tokens: list[str] = []
        for chunk in self._findall(text):
            found = memo.get(chunk)
            if found is None:
                found = memo[chunk] = self._chunk(chunk)
            tokens.extend(found)
        return tokens

    def _chunk(self, chunk: str) -> list[str]:
        tokens = chunk_tokens(chunk)
        if self.stopwords:
            tokens = [token for token in tokens if token not in STOP_WORDS]
        if self.stem:
            tokens = [s_stem(token) for token in tokens]
        return tokens


def tokenize(text: str, *, stopwords: bool = False, stem: bool = False) -> list[str]:
    """One-off tokenisation (no memo kept); see `Tokenizer` for the rules."""
    return Tokenizer(stopwords=stopwords, stem=stem)(text)
