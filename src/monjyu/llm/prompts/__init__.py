"""Prompt files, one per name and language: `{name}.{lang}.txt` in this folder.

Placeholders use `string.Template` syntax (`$name`), so JSON examples in prompts need no
escaping. A directory given as `override_dir` (from config) wins over the shipped files.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import ConfigError

PROMPT_DIR = Path(__file__).parent


def load_prompt(name: str, lang: str = "en", override_dir: str | Path | None = None) -> str:
    """Text of prompt `name` in `lang` ("en" or "ja"); English when the language has no file."""
    if lang not in ("en", "ja"):
        raise ConfigError(f"prompt language must be 'en' or 'ja', not {lang!r}")
    dirs = ([Path(override_dir)] if override_dir else []) + [PROMPT_DIR]
    for candidate in (f"{name}.{lang}.txt", f"{name}.en.txt"):
        for folder in dirs:
            path = folder / candidate
            if path.is_file():
                return path.read_text(encoding="utf-8")
    raise ConfigError(f"no prompt file {name}.{lang}.txt in {', '.join(str(d) for d in dirs)}")
