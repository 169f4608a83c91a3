"""Every Python example of the README and the docs site runs against the facade, so a call that
moves (see the API reference's table of calls that moved) fails here, not in a reader's hands.

Each page's examples run in order in one namespace, from a folder holding the sample documents
(the examples index `samples/` into `./.monjyu`), with `m` already made. An example naming a
paper the samples do not hold ("papers/resnet.pdf") reaches the facade and is refused by name.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest

from monjyu import Monjyu
from monjyu.errors import MonjyuError
from tests.conftest import REPO, SAMPLES

EXAMPLE = re.compile(r"```python\n(.*?)```", re.S)
PAGES = [p for p in sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
         if EXAMPLE.search(p.read_text(encoding="utf-8"))]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, cache_dir) -> Path:
    """A folder with the samples, indexed once into ./.monjyu as the examples do it."""
    where = tmp_path_factory.mktemp("examples")
    shutil.copytree(SAMPLES, where / "samples")
    return where


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_example_runs(page, folder, cache_dir, monkeypatch):
    monkeypatch.chdir(folder)
    monkeypatch.setenv("MONJYU_CACHE_DIR", str(cache_dir))
    m = Monjyu(".monjyu")
    if not (folder / ".monjyu").exists():
        m.index(["samples/"])
    namespace = {"m": m}
    for example in EXAMPLE.findall(page.read_text(encoding="utf-8")):
        if "async for" in example:  # an example for an async caller: run it in one
            example = "async def example():\n" + textwrap.indent(example, "    ") + \
                "\n\nimport asyncio\nasyncio.run(example())\n"
        try:
            exec(compile(example, str(page), "exec"), namespace)
        except MonjyuError as exc:
            assert "no document with id" in str(exc), f"{page.name}: {exc}\n{example}"
