"""Retrieval evaluation: BEIR-layout datasets, and QA pairs over folders of papers."""

from .beir import BeirDataset, evaluate_beir
from .metrics import retrieval_metrics
from .qa import QADataset, evaluate_qa, holds_answer

__all__ = ["BeirDataset", "QADataset", "evaluate_beir", "evaluate_qa", "holds_answer", "retrieval_metrics"]
