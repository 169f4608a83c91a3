"""HybridRAG: classify the query, search BM25 + vector + graph (graph mode by query type) with
weighted RRF, rerank, grade with Corrective RAG, and answer only when the context suffices."""
