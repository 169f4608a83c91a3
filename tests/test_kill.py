"""A build killed at any moment leaves the previous index fully readable.

Each round starts a real `monjyu index` process and SIGKILLs it after a growing delay; the
embedding cache keeps what finished, so later rounds die in later phases (embedding, writing
LanceDB, BM25, commit) until a build completes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from monjyu import Monjyu

from .conftest import SAMPLES


def make_corpus(folder, n):
    folder.mkdir()
    for i in range(n):
        (folder / f"note-{i:03d}.txt").write_text(
            f"Note {i}. Topic {i % 7} concerns retrieval experiment {i}. "
            f"The measured recall was {i / n:.3f} for configuration {i * 13 % 17}.")


def test_killed_builds_never_corrupt_the_index(tmp_path, make_config):
    cfg = make_config()
    index_dir = tmp_path / "idx"
    base = Monjyu(index_dir, cfg)
    first = base.index([SAMPLES])
    expected = [h.text_unit_id for h in base.search("Leiden communities", mode="hybrid", top_k=5).hits]

    extra = tmp_path / "extra"
    make_corpus(extra, 80)
    env = {**os.environ, "MONJYU_CACHE_DIR": str(tmp_path / "kill-cache")}
    cmd = [sys.executable, "-m", "monjyu.cli", "index", str(SAMPLES), str(extra), "--index", str(index_dir), "--json"]
    kills, delay, completed = 0, 1.5, False
    for _ in range(40):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            proc.wait(timeout=delay)
            completed = proc.returncode == 0
            assert completed, proc.stderr.read().decode()
            break
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
        # After every kill the index is either the previous one, answering exactly as before, or
        # (killed after its manifest was committed) the complete new one.
        reader = Monjyu(index_dir, cfg)
        if reader.status()["generation"] != first.generation:
            assert reader.status()["counts"]["documents"] == first.documents + 80
            completed = subprocess.run(cmd, env=env, capture_output=True).returncode == 0  # tidies leftovers
            break
        assert [h.text_unit_id for h in reader.search("Leiden communities", mode="hybrid", top_k=5).hits] == expected
        delay += 0.7
        time.sleep(0.1)
    assert completed and kills >= 3
    done = Monjyu(index_dir, cfg)
    assert done.status()["counts"]["documents"] == first.documents + 80
    assert done.search("retrieval experiment 42", mode="keyword", top_k=1).hits[0].document_id == "extra/note-042.txt"
    # The current generation and the one before it; every leftover of the killed builds is gone.
    assert sorted(p.name for p in (index_dir / "generations").iterdir()) == [first.generation, done.status()["generation"]]
