"""The parts of the `Monjyu` facade by concern (documents and pages, the concept graph,
conversations); `monjyu.api.Monjyu` combines them with indexing and the search engines.

Each part is a mixin over the facade's core: it uses `manifest()`, `generation_dir()`,
`_searcher()`, `_embed_query()`, `config`, `index_dir` and `remote`, which `Monjyu` defines."""
