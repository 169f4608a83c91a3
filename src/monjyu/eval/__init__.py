"""Retrieval evaluation on BEIR-layout datasets."""

from .beir import BeirDataset, evaluate_beir
from .metrics import retrieval_metrics

__all__ = ["BeirDataset", "evaluate_beir", "retrieval_metrics"]
