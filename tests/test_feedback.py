"""The hybrid feedback round reaches the second hop of a multi-hop question."""

from __future__ import annotations

import json

from monjyu import Monjyu

FILMS = [
    ("f1", "The Quiet Harbour", "The Quiet Harbour is a 1987 drama film directed by Mirela Vantongeren."),
    ("f2", "Salt and Iron", "Salt and Iron is a 1992 war film directed by Oskar Lindqvist."),
    ("f3", "Paper Lanterns", "Paper Lanterns is a 2004 animated film directed by Hana Oyelaran."),
    ("p1", "Mirela Vantongeren", "Mirela Vantongeren (1941-2010) was a screenwriter and director born in Utrecht."),
    ("p2", "Oskar Lindqvist", "Oskar Lindqvist was a cinematographer and director born in Malmo in 1950."),
    ("p3", "Hana Oyelaran", "Hana Oyelaran is an illustrator and director born in Lagos in 1975."),
    ("x1", "Birthplaces of film directors", "Many film directors were born in capital cities; a study of birthplaces of directors of drama films."),
    ("x2", "Harbour drama", "A drama about a harbour town and the quiet lives of its fishermen, not a film."),
    ("x3", "Directors born in 1941", "A list of film directors born in 1941 and the films they directed."),
]


def test_feedback_lifts_the_bridge_passage(tmp_path, make_config):
    corpus = tmp_path / "films.jsonl"
    corpus.write_text("\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in FILMS))
    question = "Where was the director of the film The Quiet Harbour born?"
    plain = Monjyu(tmp_path / "idx", make_config(search={"feedback": False}))
    plain.index([corpus])
    with_fb = Monjyu(tmp_path / "idx", make_config(search={"feedback": True, "feedback_keep": 1}))

    def rank_of(m, doc):
        ids = [h.document_id for h in m.search(question, mode="hybrid", top_k=9).hits]
        return ids.index(doc)

    assert rank_of(with_fb, "f1") == 0  # the kept first-round hit stays on top
    assert rank_of(with_fb, "p1") < rank_of(plain, "p1")
    assert rank_of(with_fb, "p1") <= 2
    result = with_fb.search(question, mode="hybrid", top_k=9)
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True) and "feedback_ms" in result.timings_ms
