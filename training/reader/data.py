"""Training pairs for the reader: (question, sentence, label) groups from public QA sets.

A group is one question with some sentences of its paragraph (or paper), each with the sentence
before it there ("" for a paragraph's first: what a model that reads context sees with it): every
sentence that contains an answer text is positive; the others, and every sentence shown with an
unanswerable question, are negative. Sentences are cut by the product's own splitter
(`statement_spans`), so training sees sentences as the reader does.

Sources (`../shared/reader-data`, see its README; covidqa-dev from `../shared/bench-data`):
- SQuAD 1.1 dev, less the held-out articles (validation): every sentence of the paragraph, and
  one of another paragraph of the article (a passage the search may also bring back);
- SQuAD 2.0 dev unanswerable, less the same articles: every sentence of the paragraph, negative
  (they were written to look answerable);
- JaQuAD train (all of it, or a seeded sample): Japanese questions over Japanese paragraphs;
- covidqa-dev's fit half of papers (answer_quality.py's split): research-paper sentences, the
  negatives those of the same paper that share most words with the question;
- the same questions over the candidates the search and the feature reader give them
  (`bench/reader_fit.py --cache`): the sentences the model has to choose between at run time.
  A quarter of the fit half's papers are kept out of training for validation (`covidqa_validation`),
  or, in a pack built for folds, the quarter each training run names (`covidqa_folds`).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import defaultdict
from pathlib import Path

from monjyu.ingest.sentences import statement_spans

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "reader-data"
VALIDATION_ARTICLES = 10  # of the 35 articles SQuAD 2.0's unanswerable questions share with SQuAD 1.1
_WORD = re.compile(r"[^\W_]+")


def read_jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in statement_spans(text)]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _contains(sentence: str, answers: list[str]) -> bool:
    return any(a and a.strip() and a.strip() in sentence for a in answers)


def validation_articles(squad: list[dict], unanswerable: list[dict], seed: int = 0) -> set[str]:
    """Articles held out of training, drawn from those both SQuAD files share (so the validation
    has answerable and unanswerable questions on the same paragraphs)."""
    shared = sorted({r["title"] for r in squad} & {r["title"] for r in unanswerable})
    return set(random.Random(seed).sample(shared, VALIDATION_ARTICLES))


def _by_overlap(question: str, pool: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(sentence, before) pairs, those sharing most words with the question first."""
    q = _words(question)
    return sorted(pool, key=lambda s: -len(q & _words(s[0])))


def with_before(sents: list[str]) -> list[tuple[str, str]]:
    """Each sentence with the one before it ("" for the first)."""
    return list(zip(sents, ["", *sents[:-1]]))


def squad_groups(records: list[dict], rng: random.Random, answerable: bool,
                 neg_in_paragraph: int, neg_elsewhere: int) -> list[dict]:
    split: dict[str, list[tuple[str, str]]] = {}
    by_article: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if r["context"] not in split:
            split[r["context"]] = with_before(sentences(r["context"]))
            by_article[r["title"]].append(r["context"])
    groups = []
    for r in records:
        sents = split[r["context"]]
        answers = [a["text"] for a in r["answers"]]
        pos = [s for s in sents if _contains(s[0], answers)] if answerable else []
        if answerable and not pos:
            continue  # the answer crosses a sentence boundary: no sentence holds it
        neg = [s for s in sents if s not in pos]
        if answerable:
            rng.shuffle(neg)
        else:
            neg = _by_overlap(r["question"], neg)
        neg = neg[:neg_in_paragraph]
        others = [c for c in by_article[r["title"]] if c != r["context"]]
        for _ in range(neg_elsewhere if others else 0):
            neg.append(rng.choice(split[rng.choice(others)] or [("", "")]))
        items = [(s, 1, b) for s, b in pos[:2]] + [(s, 0, b) for s, b in neg if s]
        groups.append({"source": r["source"], "lang": r["lang"], "question": r["question"], "items": items})
    return groups


def answer_pieces(answers: list[str]):
    """sentence -> whether it holds a 5-word piece of an answer (the whole of a shorter one), as
    reader_fit.py labels covidqa-dev's sentences."""
    from monjyu.eval.qa import answer_words

    pieces = []
    for a in answers:
        w = answer_words(a)
        n = min(5, len(w))
        pieces += [" " + " ".join(w[i:i + n]) + " " for i in range(len(w) - n + 1)]
    return lambda sentence: any(p in " " + " ".join(answer_words(sentence)) + " " for p in pieces)


def covidqa_groups(folder: Path, rng: random.Random, negatives: int = 6) -> list[dict]:
    """The fit half's questions over their own paper's sentences (answers are spans of the paper:
    a sentence holding a 5-word piece of one is positive, as reader_fit.py labels)."""

    rows = [json.loads(line) for line in open(folder / "questions.jsonl", encoding="utf-8") if line.strip()]
    docs = sorted({r["doc"] for r in rows})
    fit = set(docs[0::2])  # answer_quality.covidqa_questions' split
    paper: dict[str, list[tuple[str, str]]] = {}
    groups = []
    for r in rows:
        if r["doc"] not in fit:
            continue
        if r["doc"] not in paper:
            paper[r["doc"]] = with_before(sentences((folder / "docs" / r["doc"]).read_text(encoding="utf-8")))
        sents = paper[r["doc"]]
        holds = answer_pieces(r["answers"])
        pos, neg = [], []
        for s in sents:
            (pos if holds(s[0]) else neg).append(s)
        if not pos:
            continue
        hard = _by_overlap(r["question"], neg)
        chosen = hard[:negatives - 2] + rng.sample(hard[negatives - 2:], min(2, len(hard[negatives - 2:])))
        items = [(s, 1, b) for s, b in pos[:2]] + [(s, 0, b) for s, b in chosen]
        groups.append({"source": "covidqa-fit", "lang": "en", "question": r["question"], "doc": r["doc"],
                       "items": items})
    return groups


def candidate_groups(rows: list[dict]) -> list[dict]:
    """reader_fit.py's cached candidates of one half's questions: (question, its candidate
    sentences, labels) as the reader sees them. Questions none of whose candidates holds a piece of
    the gold are left out: their sentences may still answer in other words. The sentence before
    each is the one before it in its passage, as the reader gives it (a cache built before
    2026-11-30 has none)."""
    return [{"source": "covidqa-candidates", "lang": "en", "question": r["question"], "doc": r["doc"],
             "items": [(q, int(y), b)
                       for q, y, b in zip(r["quotes"], r["y"], r.get("before") or [""] * len(r["y"]))]}
            for r in rows if r["y"].any()]


FOLDS = 4  # the fit half's papers in quarters (`covidqa_folds`)
COVIDQA_REPEAT = 3  # a covidqa-dev training group is seen this many times an epoch (the data are few)
HELD_FOLD = 3  # the quarter the shipped model was validated on


def covidqa_folds(covidqa: Path) -> dict[str, int]:
    """Each of the fit half's papers -> its quarter (every fourth paper in name order shares one).
    covidqa-dev's test half is in none: it is never seen."""
    docs = sorted({json.loads(line)["doc"] for line in open(covidqa / "questions.jsonl", encoding="utf-8") if line.strip()})
    return {doc: i % FOLDS for i, doc in enumerate(docs[0::2])}


def covidqa_validation(covidqa: Path, fold: int = HELD_FOLD) -> set[str]:
    """The fit half's papers of one quarter, kept out of training: the in-domain check for choosing
    depth and checkpoint (the shipped model's: `HELD_FOLD`)."""
    return {doc for doc, f in covidqa_folds(covidqa).items() if f == fold}


def weight_successors(groups: list[dict], copies: int) -> list[dict]:
    """Each group with every negative read after a positive (its sentence before holds the answer)
    `copies` more times: a model that reads the sentence before must not credit the sentence after
    the answer with it. New groups: the covidqa groups are repeated by reference in the list."""
    out = []
    for g in groups:
        positives = {s for s, y, _ in g["items"] if y}
        after = [item for item in g["items"] if not item[1] and item[2] in positives]
        out.append({**g, "items": g["items"] + after * copies})
    return out


# A question's opening that asks (its question word or auxiliary), and a Japanese question's ending.
_ASKING = re.compile(r"^(?:what|which|who|whom|whose|when|where|why|how(?: many| much| long| often| far)?|"
                     r"is|are|was|were|do|does|did|can|could|has|have|had)\b\s*", re.I)
_ASKING_JA = re.compile(r"(?:何|なに|なん|どこ|いつ|誰|だれ|どの|どれ|どんな|どう|いくつ|いくら|どのくらい|どれくらい)")
_ASKED_JA = re.compile(r"(?:でしょうか|ですか|ますか|か)?[？?]\s*$")


def restated(question: str, lang: str) -> str:
    """The question said back as a statement, without its answer ("What is the size of bovine
    coronavirus?" -> "The size of bovine coronavirus."): a sentence that shares every word with the
    question and answers nothing. The shipped model reads such sentences as answers (log-odds 2.5 on
    average over covidqa-dev's test-half questions, above every gold sentence in 256 of 433:
    evaluate.py --restatements), as the papers' sentences that restate a question ("Civets were
    proposed to be an intermediate host of the bat-CoVs ..." for "Why were civets proposed to be
    ...?") lead answers."""
    if lang == "ja":
        return _ASKING_JA.sub("", _ASKED_JA.sub("", question.strip())) + "。"
    text = _ASKING.sub("", _ASKING.sub("", question.strip())).rstrip("?？ ").strip()  # "What is", "How many were"
    return text[:1].upper() + text[1:] + "."


def with_restated(groups: list[dict]) -> list[dict]:
    """Each group with a positive gets its question restated (`restated`) as one more negative."""
    return [{**g, "items": g["items"] + [(restated(g["question"], g["lang"]), 0, "")]}
            if any(y for _, y, _ in g["items"]) else g for g in groups]


def build(reader_data: Path, covidqa: Path, candidates: list[dict], seed: int = 13, jaquad_questions: int = 0,
          unanswerable_questions: int = 0, covidqa_repeat: int = COVIDQA_REPEAT,
          successor_copies: int = 0, restatements: bool = False, folds: bool = False) -> dict[str, list[dict]]:
    """{"train", "val", "covidqa-val"} groups. val: every sentence of the paragraph for the held-out
    SQuAD articles' questions, answerable and not; covidqa-val: the candidates of the held-out fit
    papers' questions. `candidates`: reader_fit.py's cached fit-half rows (each with its "doc").
    0 questions: all of them. `restatements`: each training question's restatement is a negative of
    its group (`with_restated`). `folds`: no quarter held out here; every fit paper's groups go
    once to "covidqa-train" and its candidates to "covidqa-val", each with its "doc", and training
    chooses the quarter it leaves out (train.py --covidqa-fold), `covidqa_repeat` times the rest."""
    rng = random.Random(seed)
    squad = read_jsonl_gz(reader_data / "squad11-dev.jsonl.gz")
    unans = read_jsonl_gz(reader_data / "squad20-dev-unanswerable.jsonl.gz")
    held = validation_articles(squad, unans)
    train = squad_groups([r for r in squad if r["title"] not in held], rng, True, 99, 1)
    u = [r for r in unans if r["title"] not in held]
    train += squad_groups(rng.sample(u, min(unanswerable_questions or len(u), len(u))), rng, False, 99, 0)
    ja = read_jsonl_gz(reader_data / "jaquad-train.jsonl.gz")
    train += squad_groups(rng.sample(ja, min(jaquad_questions or len(ja), len(ja))), rng, True, 99, 0)
    covid_held = set() if folds else covidqa_validation(covidqa)
    own = [g for g in covidqa_groups(covidqa, rng) if g["doc"] not in covid_held]
    searched = [g for g in candidate_groups(candidates) if g["doc"] not in covid_held]
    train += [] if folds else own * covidqa_repeat + searched * covidqa_repeat
    rng.shuffle(train)
    out = {"train": train, "covidqa-train": own + searched} if folds else {"train": train}
    for split, gs in out.items():
        gs = weight_successors(gs, successor_copies)
        out[split] = with_restated(gs) if restatements else gs
    val = squad_groups([r for r in squad if r["title"] in held], rng, True, 99, 0)
    val += squad_groups([r for r in unans if r["title"] in held], rng, False, 99, 0)
    covid_val = [g for g in candidate_groups(candidates) if folds or g["doc"] in covid_held]
    return {**out, "val": val, "covidqa-val": covid_val}


# --------------------------------------------------------------------------- windows (a model that reads context)

def paragraph_group(r: dict, passage: list[str], rng: random.Random, answerable: bool,
                    elsewhere: list[str] | None = None) -> dict | None:
    """One question over its paragraph, for a window model: every sentence labelled, the windows
    centred on its answer (or, unanswerable, on the sentence sharing most words with it); with
    `elsewhere`, another paragraph of the article too (a passage the search may also bring back)."""
    answers = [a["text"] for a in r["answers"]] if answerable else []
    labels = [int(_contains(s, answers)) for s in passage]
    if answerable and not any(labels):
        return None  # the answer crosses a sentence boundary: no sentence holds it
    q = _words(r["question"])
    centres = ([i for i, y in enumerate(labels) if y][:2] if answerable
               else [max(range(len(passage)), key=lambda i: len(q & _words(passage[i])))])
    passages = [(passage, labels, centres)]
    if elsewhere:
        passages.append((elsewhere, [0] * len(elsewhere), [rng.randrange(len(elsewhere))]))
    return {"source": r["source"], "lang": r["lang"], "question": r["question"], "passages": passages}


def paragraph_groups(records: list[dict], rng: random.Random, answerable: bool, elsewhere: bool = False,
                     cover: bool = False) -> list[dict]:
    """`cover`: windows over every sentence of the paragraph (validation reads them all)."""
    split: dict[str, list[str]] = {}
    by_article: dict[str, list[str]] = defaultdict(list)
    for r in records:
        if r["context"] not in split:
            split[r["context"]] = sentences(r["context"])
            by_article[r["title"]].append(r["context"])
    groups = []
    for r in records:
        other = None
        if elsewhere and (others := [c for c in by_article[r["title"]] if c != r["context"] and split[c]]):
            other = split[rng.choice(others)]
        g = paragraph_group(r, split[r["context"]], rng, answerable, other) if split[r["context"]] else None
        if g is not None:
            if cover:
                g["passages"] = [(p, y, None) for p, y, _ in g["passages"]]
            groups.append(g)
    return groups


def covidqa_window_groups(folder: Path, rng: random.Random, papers: set[str], validation: bool = False) -> list[dict]:
    """covidqa-dev questions of `papers` over their paper, windows centred on the answering
    sentences, on those sharing most words with the question (the search's likely candidates) and
    on one at random; `validation`: on the answering ones and the 9 sharing most words, each read
    only in its own window (as the reader reads its candidates)."""

    rows = [json.loads(line) for line in open(folder / "questions.jsonl", encoding="utf-8") if line.strip()]
    paper: dict[str, list[str]] = {}
    groups = []
    for r in rows:
        if r["doc"] not in papers:
            continue
        if r["doc"] not in paper:
            paper[r["doc"]] = sentences((folder / "docs" / r["doc"]).read_text(encoding="utf-8"))
        sents = paper[r["doc"]]
        holds = answer_pieces(r["answers"])
        labels = [int(holds(s)) for s in sents]
        if not any(labels):
            continue
        q = _words(r["question"])
        hard = sorted((i for i, y in enumerate(labels) if not y), key=lambda i: -len(q & _words(sents[i])))
        pos = [i for i, y in enumerate(labels) if y]
        if validation:
            centres = pos + hard[:9]
        else:
            centres = pos[:2] + hard[:3] + ([rng.choice(hard[3:])] if hard[3:] else [])
        groups.append({"source": "covidqa-fit", "lang": "en", "question": r["question"], "doc": r["doc"],
                       "passages": [(sents, labels, centres)], "targets": validation})
    return groups


def build_windows(reader_data: Path, covidqa: Path, seed: int = 13, covidqa_repeat: int = 2) -> dict[str, list[dict]]:
    """{"train", "val", "covidqa-val"} window groups, from the same sources and held-out splits as
    `build` (covidqa-dev from its papers; the search's candidates are not needed)."""
    rng = random.Random(seed)
    squad = read_jsonl_gz(reader_data / "squad11-dev.jsonl.gz")
    unans = read_jsonl_gz(reader_data / "squad20-dev-unanswerable.jsonl.gz")
    held = validation_articles(squad, unans)
    train = paragraph_groups([r for r in squad if r["title"] not in held], rng, True, elsewhere=True)
    train += paragraph_groups([r for r in unans if r["title"] not in held], rng, False)
    train += paragraph_groups(read_jsonl_gz(reader_data / "jaquad-train.jsonl.gz"), rng, True)
    docs = sorted({json.loads(line)["doc"] for line in open(covidqa / "questions.jsonl", encoding="utf-8") if line.strip()})
    covid_held = covidqa_validation(covidqa)
    train += covidqa_window_groups(covidqa, rng, set(docs[0::2]) - covid_held) * covidqa_repeat
    rng.shuffle(train)
    val = paragraph_groups([r for r in squad if r["title"] in held], rng, True, cover=True)
    val += paragraph_groups([r for r in unans if r["title"] in held], rng, False, cover=True)
    return {"train": train, "val": val, "covidqa-val": covidqa_window_groups(covidqa, rng, covid_held, True)}
