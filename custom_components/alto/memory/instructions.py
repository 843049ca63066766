"""What an embedding model expects before a text, by model family.

Retrieval models trained on question-to-passage pairs read a role prefix: multilingual-e5 and
e5 want ``query: `` before a question and ``passage: `` before what is searched, nomic-embed-text
``search_query: `` and ``search_document: ``, EmbeddingGemma a task before the query and a title
before the document; mxbai-embed-large, the English BGE v1.5 models, snowflake-arctic-embed (v1)
and Qwen3-Embedding an instruction before the query only, snowflake-arctic-embed2 E5's
``query: ``. Each is the retrieval prompt of its model card. Without it both sides are embedded
alike and a question lands nearest other questions. Ollama's `/api/embed` passes text through
unchanged, so Alto adds the prefix; the family is read from the configured model name (what
`/api/show` reports as the family is the architecture, "bert" for e5 and BGE alike). A model of
no listed family gets none.

Changing the embedding model (or this table) leaves earlier rows embedded as they were: a store
keeps working, with some loss of recall for rows embedded the other way, until `alto.reembed`
embeds them again (`intake.reembed`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EmbeddingInstructions:
    """The prefixes of a query and of a stored document."""

    query: str = ""
    document: str = ""


NONE = EmbeddingInstructions()
_BGE_QUERY = "Represent this sentence for searching relevant passages: "
_QWEN3_QUERY = (
    "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
)
FAMILIES: tuple[tuple[re.Pattern[str], EmbeddingInstructions], ...] = (
    (re.compile(r"(?:^|[-_.])e5(?:$|[-_.])"), EmbeddingInstructions("query: ", "passage: ")),
    (re.compile(r"^nomic-embed"), EmbeddingInstructions("search_query: ", "search_document: ")),
    (re.compile(r"^mxbai-embed"), EmbeddingInstructions(_BGE_QUERY, "")),
    (re.compile(r"^bge-(?:small|base|large)-en"), EmbeddingInstructions(_BGE_QUERY, "")),
    (
        re.compile(r"^embeddinggemma"),
        EmbeddingInstructions("task: search result | query: ", "title: none | text: "),
    ),
    (re.compile(r"^snowflake-arctic-embed2"), EmbeddingInstructions("query: ", "")),
    (re.compile(r"^snowflake-arctic-embed(?!\d)"), EmbeddingInstructions(_BGE_QUERY, "")),
    (re.compile(r"^qwen3-embedding"), EmbeddingInstructions(_QWEN3_QUERY, "")),
)


def bare_name(model: str) -> str:
    """`model` ("namespace/name:tag" as configured) without namespace and tag, casefolded."""
    return model.rsplit("/", 1)[-1].split(":", 1)[0].casefold()


def instructions_for(model: str) -> EmbeddingInstructions:
    """The instructions of `model` ("namespace/name:tag" as configured), NONE if unknown."""
    name = bare_name(model)
    return next((found for family, found in FAMILIES if family.search(name)), NONE)


def learnt_for[T](learnt: Mapping[str, T], model: str) -> T | None:
    """What `learnt` holds for `model`: under a fragment of its bare name, None if none.

    Ollama's namespaces and tags vary ("multilingual-e5-small" in
    "jeffh/intfloat-multilingual-e5-small:f16"), so a fragment of the bare name decides.
    """
    name = bare_name(model)
    return next((found for fragment, found in learnt.items() if fragment in name), None)
