"""Language detection by script: enough to route English vs Japanese text, and exact for it."""

import re

_KANA = re.compile(r"[\u3040-\u30ff]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
_LATIN = re.compile(r"[A-Za-z]")


def detect_language(text: str) -> str:
    """'ja' when Japanese script dominates (any kana, or more CJK than Latin letters), else 'en'."""
    sample = text[:2000]
    cjk = len(_CJK.findall(sample))
    if cjk == 0:
        return "en"
    if _KANA.search(sample) or cjk >= len(_LATIN.findall(sample)) / 4:
        return "ja"
    return "en"
