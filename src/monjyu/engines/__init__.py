"""Query engines over the retrieval core: answers with citations (baseline RAG), lazy search, HybridRAG."""
