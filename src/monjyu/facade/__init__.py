"""The services of the `Monjyu` facade, each over one shared `Workspace` (facade.workspace):
documents and pages (`m.documents`), papers and the citation graph (`m.papers`), the concept
graph (`m.graph`), the LLM levels (`m.levels`) and conversations (`m.conversations`)."""
