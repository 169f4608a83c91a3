"""Language detection and tokenizers (English, Japanese)."""

from .analyzer import Analyzer
from .lang import detect_language

__all__ = ["Analyzer", "detect_language"]
