"""Generated input through every public door (tests/fuzz_doors.py), bounded for `make test`;
bench/fuzz.py runs the same doors for 100,000 cases and more. No case may crash (a traceback or
a 500), and every refusal names what was wrong."""

from __future__ import annotations

import pytest

from tests import fuzz_doors
from tests.fuzz_doors import Tally


@pytest.fixture(scope="module")
def tally():
    counted = Tally()
    yield counted
    print("\n" + counted.table())


@pytest.mark.parametrize("door", ["api", "settings", "web", "mcp"])
def test_no_generated_input_crashes_a_door_or_gets_a_vague_refusal(door, sample_index, tally, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # settings cases read ./monjyu.yaml: none here
    examples = {"api": 60, "settings": 150, "web": 150, "mcp": 120}[door]
    if door == "settings":
        fuzz_doors.settings_doors(tally, examples)
    else:
        getattr(fuzz_doors, f"{door}_doors")(sample_index, tally, examples)
    mine = Tally()
    mine.counts = {k: v for k, v in tally.counts.items() if k[0] == door}
    mine.examples = {k: v for k, v in tally.examples.items() if k[0] == door}
    assert mine.total("crash") == 0 and mine.total("vague") == 0, mine.report()


def test_what_the_fuzz_suite_found_stays_fixed(sample_index, tmp_path, monkeypatch):
    """Each case the fuzz suite found, kept: once a crash or a refusal that did not say what was
    wrong."""
    from monjyu.config import load_config
    from monjyu.errors import ConfigError, MonjyuError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "q.yaml").write_text("?\n")  # YAML for {None: None}: a TypeError
    with pytest.raises(ConfigError, match="q.yaml must hold a mapping of setting names"):
        load_config(tmp_path / "q.yaml")
    monkeypatch.setenv("MONJYU_MCP__ALLOWED_ROOTS", "not JSON")  # pydantic-settings' SettingsError
    with pytest.raises(ConfigError, match="MONJYU_MCP__ALLOWED_ROOTS cannot be read: a list or table setting takes JSON"):
        load_config()
    monkeypatch.delenv("MONJYU_MCP__ALLOWED_ROOTS")
    monkeypatch.setenv("MONJYU_CHUNKING____", "x")  # an empty key: the message named "chunking." only
    with pytest.raises(ConfigError, match="environment variable MONJYU_CHUNKING____ names no setting"):
        load_config()
    monkeypatch.delenv("MONJYU_CHUNKING____")
    with pytest.raises(MonjyuError, match="hybrid search top_k: Input should be less than or equal to 100"):
        sample_index.ask("Leiden", "hybridrag", top_k=716203)  # named the request's "limit"
    with pytest.raises(MonjyuError, match="threshold is a cosine similarity between -1 and 1"):
        sample_index.ask("Leiden", "hybrid", threshold=-5.9e279)  # overflowed in a float32 cast
