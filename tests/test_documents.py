"""Documents by id and page: what MCP's get_document / list_documents and citations in context use."""

from __future__ import annotations

import pytest

from monjyu import Monjyu
from monjyu.errors import MonjyuError


def test_list_documents_pages_through_all_of_them(sample_index):
    first = sample_index.documents.list(limit=4)
    rest = sample_index.documents.list(limit=10, offset=4)
    assert first["total"] == 9 and len(first["documents"]) == 4 and len(rest["documents"]) == 5
    ids = [d["id"] for d in first["documents"] + rest["documents"]]
    assert ids == sorted(ids) and len(set(ids)) == 9
    assert all(d["text_units"] >= 1 for d in first["documents"])
    with pytest.raises(MonjyuError, match="limit"):
        sample_index.documents.list(limit=0)


def test_get_document_with_a_cited_unit_in_context(tmp_path, make_config):
    long = tmp_path / "long.txt"
    long.write_text(" ".join(f"Sentence number {i} talks about topic {i % 5}." for i in range(400)))
    m = Monjyu(tmp_path / "idx", make_config(chunking={"size": 64, "overlap": 8}))
    m.index([long])
    doc = m.documents.get("long.txt", max_chars=50)
    assert doc["truncated"] and len(doc["text"]) == 50 and doc["length"] > 5000
    units = doc["text_units"]
    assert len(units) > 3 and [u["chunk_index"] for u in units] == list(range(len(units)))
    middle = units[2]["id"]
    ctx = m.documents.get("long.txt", text_unit_id=middle, context_units=1)["context"]
    assert ctx["start_char"] == units[1]["start_char"] and ctx["end_char"] == units[3]["end_char"]
    assert ctx["unit_text"] in ctx["text"]


@pytest.mark.parametrize("bad", ["nope", "x' OR '1'='1", "../../etc/passwd", ""])
def test_unknown_ids_are_clear_errors(sample_index, bad):
    with pytest.raises(MonjyuError, match="no document with id"):
        sample_index.documents.get(bad)


def test_unit_of_another_document_is_refused(sample_index):
    other = sample_index.documents.get("abs-e5")["text_units"][0]["id"]
    with pytest.raises(MonjyuError, match="not part of document"):
        sample_index.documents.get("abs-leiden", text_unit_id=other)
