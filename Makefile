# Two entry points (see README): `make demo` and `make test`. Both install into ./.venv from this repo.
VENV ?= .venv
BIN := $(VENV)/bin
PYTHON ?= python3

.PHONY: demo test docs install install-test install-docs ocr-tools browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'

# Index the bundled sample documents and ask two questions, fully offline.
demo: install
	$(BIN)/monjyu index samples --index .monjyu
	$(BIN)/monjyu search "How does LazyGraphRAG keep indexing cheap?" --index .monjyu --top-k 3
	$(BIN)/monjyu search "グラフを使った検索はどのように索引を作りますか？" --index .monjyu --top-k 3

# OCR tests need Debian's tesseract with the English and Japanese models (installed when missing).
ocr-tools:
	@command -v tesseract >/dev/null && tesseract --list-langs 2>/dev/null | grep -q jpn || \
	  (apt-get install -y -q tesseract-ocr tesseract-ocr-eng tesseract-ocr-jpn >/dev/null || \
	   sudo apt-get install -y -q tesseract-ocr tesseract-ocr-eng tesseract-ocr-jpn >/dev/null)

# Web app tests drive Debian's chromium through playwright; a Japanese font for the screenshots.
browser:
	@command -v chromium >/dev/null && fc-list :lang=ja 2>/dev/null | grep -q . || \
	  (apt-get install -y -q chromium fonts-ipafont-gothic >/dev/null || \
	   sudo apt-get install -y -q chromium fonts-ipafont-gothic >/dev/null)

test: install-test ocr-tools browser
	$(BIN)/python -m pytest -q

install-docs: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[docs]'

# The docs site from docs/ and the docstrings (API reference); a warning fails the build.
docs: install-docs
	$(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) .monjyu .monjyu-eval site
