"""`monjyu ui`: a local web app over the facade (search with a streamed, cited answer; a cited
passage in its document and PDF page; the documents and the community map; lazy search's trace)."""

from .app import create_app

__all__ = ["create_app"]
