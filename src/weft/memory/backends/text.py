"""The words token recall matches, and Okapi BM25 over them.

Every memory backend searches the same words: lower-case runs of letters, digits and
``_``, less English stopwords. The SQL backends rank with their own full-text engines;
``bm25`` is the ranking of backends that have none (the in-memory one, and the default
``MemoryBackend._search_rows``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Final

_WORD: Final = re.compile(r"\w+")

_STOPWORDS = (
    "a about above after again against all am an and any are as at be because been before "
    "being below between both but by can did do does doing down during each few for from "
    "further had has have having he her here hers herself him himself his how i if in into "
    "is it its itself just me more most my myself no nor not now of off on once only or "
    "other our ours ourselves out over own same she should so some such than that the their "
    "theirs them themselves then there these they this those through to too under until up "
    "very was we were what when where which while who whom why will with you your yours "
    "yourself yourselves"
)
STOPWORDS: Final = frozenset(_STOPWORDS.split())
"""English words a query ignores (PostgreSQL's ``english`` configuration drops the same
kind), so "my boss" matches on "boss", not on every entry that says "my"."""


def tokens(text: str) -> list[str]:
    """The words token recall matches: lower-case runs of letters, digits and ``_``."""
    return _WORD.findall(text.lower())


def query_words(text: str) -> list[str]:
    """The words of a query that recall searches for: ``tokens`` less ``STOPWORDS``."""
    return [word for word in tokens(text) if word not in STOPWORDS]


def bm25(texts: Sequence[str], words: Sequence[str]) -> list[float]:
    """The Okapi BM25 score (k1=1.2, b=0.75) of each text for the query ``words`` (OR-ed),
    the texts being the whole collection; 0 for a text that has none of the words."""
    if not texts:
        return []
    documents = [tokens(text) for text in texts]
    average = sum(len(d) for d in documents) / len(documents) or 1.0
    counts = [Counter(d) for d in documents]
    query = set(words)
    having = {word: sum(1 for c in counts if word in c) for word in query}
    idf = {w: math.log(1 + (len(documents) - n + 0.5) / (n + 0.5)) for w, n in having.items()}
    scores = []
    for document, count in zip(documents, counts, strict=True):
        norm = 1.2 * (0.25 + 0.75 * len(document) / average)
        scores.append(sum(idf[w] * count[w] * 2.2 / (count[w] + norm) for w in query if count[w]))
    return scores
