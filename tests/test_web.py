"""The web app (`monjyu ui`) driven in a real headless browser: Debian's chromium through playwright,
against the real server (uvicorn on a free port) over a real index of the sample documents."""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from monjyu import Monjyu, MonjyuConfig
from monjyu.web import create_app
from tests.conftest import REPO, SAMPLES
from tests.llm_server import Scripted, llm_server  # noqa: F401  (fixture)

CHROMIUM = os.environ.get("MONJYU_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = REPO / "docs" / "screenshots"
QUESTION = "How does LazyGraphRAG keep indexing cheap?"


class UIServer:
    """`create_app` served by uvicorn in a thread, on 127.0.0.1 and a port the OS picks."""

    def __init__(self, monjyu: Monjyu):
        self.server = uvicorn.Server(uvicorn.Config(create_app(monjyu), host="127.0.0.1", port=0, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the web app did not start"
            time.sleep(0.05)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def web_index(tmp_path_factory, cache_dir) -> Monjyu:
    """The samples plus a broken PDF: the collection view must name the file the build skipped."""
    root = tmp_path_factory.mktemp("web-index")
    shutil.copytree(SAMPLES, root / "papers")
    (root / "papers" / "broken.pdf").write_bytes(b"%PDF-1.4\nnot really a PDF")
    m = Monjyu(root / ".monjyu", MonjyuConfig(cache_dir=str(cache_dir)))
    cwd = Path.cwd()
    os.chdir(root)  # indexed as `monjyu index papers` is run: paths shown relative, as users see them
    try:
        report = m.index([Path("papers")])
    finally:
        os.chdir(cwd)
    assert [Path(p).name for p, _ in report.failures] == ["broken.pdf"]
    return m


@pytest.fixture(scope="module")
def app_url(web_index):
    with UIServer(web_index) as url:
        yield url


@pytest.fixture(scope="module")  # playwright's sync API holds the main thread's event loop while it runs:
def browser():                   # closed after this module, so later tests can use asyncio.run
    if not CHROMIUM:
        pytest.fail("chromium is not installed: `make test` installs Debian's chromium (or set MONJYU_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert not errors, errors


def wait_until(page, expression: str, timeout_s: float = 60) -> None:
    """Poll a JS expression through the debugger (playwright's wait_for_function evaluates strings
    in the page, which the app's Content-Security-Policy rightly forbids)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


def ask(page, url: str, question: str, mode: str | None = None) -> None:
    page.goto(url + "/")
    if mode:
        page.select_option("#mode", mode)
    page.fill("#q", question)
    page.press("#q", "Enter")
    page.wait_for_selector("#results .hit, #results li", timeout=60_000)


def test_a_corrected_query_is_shown_and_can_be_searched_as_written(page, app_url):
    ask(page, app_url, "How does LazyGraphRAG keep indexing cheap and find comunities?", "hybrid")
    shown = page.locator("#spelling")
    shown.wait_for(state="visible")
    assert "Searched for: How does LazyGraphRAG keep indexing cheap and find communities?" in shown.inner_text()
    assert "comunities → communities" in shown.inner_text()
    shown.locator("button").click()
    # the search as written: the cost line is cleared when a search starts and written with its result
    wait_until(page, "document.getElementById('cost').textContent.length > 0 && document.getElementById('spelling').hidden")


def test_search_answers_with_citations_and_a_citation_opens_the_highlighted_passage(page, app_url):
    ask(page, app_url, QUESTION, "hybrid")
    assert page.locator("#answer-title").inner_text().startswith("Answer")
    assert page.locator("#answer-text .cite").count() >= 1
    assert "hybrid" in page.locator("#cost").inner_text() and "ms" in page.locator("#cost").inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "search-answer.png"))

    cited = page.locator("#answer-text .cite").first
    number = cited.get_attribute("data-cite")
    cited.click()
    mark = page.locator("#reader mark")
    mark.wait_for(state="visible")
    assert mark.inner_text().strip()
    snippet = page.locator(f"#citations li[value='{number}'] .cite").inner_text()
    assert page.locator("#reader-title").inner_text() == snippet  # the cited document is the one opened


def test_a_filter_keeps_pdfs_and_a_pdf_citation_shows_its_page_marked(page, app_url):
    page.set_viewport_size({"width": 1100, "height": 1250})
    page.goto(app_url + "/")
    page.click("#filters summary")
    # The form holds every filter the search takes, the library's and the citation graph's included.
    for field in ("collection", "tag", "item-type", "cites", "cited-by"):
        assert page.locator(f"#f-{field}").is_visible()
    assert "Zotero collection" in page.locator("#filters").inner_text()
    page.fill("#f-type", "pdf")
    page.select_option("#mode", "hybrid")
    page.fill("#q", "How are communities of phrases detected?")
    page.press("#q", "Enter")
    page.wait_for_selector("#results .hit")
    wheres = page.locator("#results .hit .where").all_inner_texts()
    assert wheres and all(".pdf" in w for w in wheres)
    page.locator("#answer-text .cite").first.click()  # a cited sentence: its lines are boxed on the page
    page.locator("#reader mark").wait_for(state="visible")
    image = page.locator("#reader-page")
    image.wait_for(state="visible")
    wait_until(page, "document.getElementById('reader-page').complete && "
                     "document.getElementById('reader-page').naturalWidth > 0")
    assert "p.1" in page.locator("#reader-where").inner_text()
    page.screenshot(path=str(SCREENSHOTS / "cited-passage-pdf-page.png"))


def test_japanese_interface_and_query(browser, app_url):
    context = browser.new_context(locale="ja-JP", viewport={"width": 1000, "height": 900})
    page = context.new_page()
    try:
        ask(page, app_url, "グラフを使った検索はどのように索引を作りますか？", "hybrid")
        assert page.locator("#go").inner_text() == "検索"
        assert page.locator("html").get_attribute("lang") == "ja"
        assert any("kensaku-kakucho.md" in w for w in page.locator("#results .hit .where").all_inner_texts()[:3])
        page.click("#lang")  # the toggle switches the interface to English and keeps the choice
        assert page.locator("#go").inner_text() == "Search"
    finally:
        context.close()


def test_lazy_search_shows_its_trace(page, app_url):
    page.goto(app_url + "/")
    assert page.locator("#level").is_disabled()  # the index level is lazy search's
    page.select_option("#mode", "lazy")
    assert page.locator("#level").is_enabled() and page.locator("#level option").all_inner_texts()[1:] == ["1", "2", "3", "4"]
    ask(page, app_url, "What are the main themes across these papers?", "lazy")
    page.locator("#trace").wait_for(state="visible")
    assert page.locator("#trace-table tbody tr").count() >= 1
    assert "budget" in page.locator("#trace-summary").inner_text()
    assert "levels 0, 1" in page.locator("#trace-summary").inner_text()
    assert page.locator("#answer-text .cite").count() >= 1
    # The themes' heading is a sentence ("3 themes across all 9 documents:"), as in the API.
    assert re.match(r"\d+ themes? across (all \d+|\d+ of the \d+) documents:", page.locator("#answer-text").inner_text())


def test_requests_for_files_outside_the_index_are_refused(page, app_url):
    for path in ("/api/document?id=../../etc/passwd", "/api/page?id=../../etc/passwd&page=1",
                 "/static/..%2F..%2F..%2F..%2Fetc%2Fpasswd", "/api/page?id=samples/lazygraphrag.md&page=1"):
        response = page.request.get(app_url + path)
        assert response.status == 404, path
        assert "root:" not in response.text()


def test_query_text_is_never_markup(page, app_url):
    ask(page, app_url, "<img src=x id=injected> leiden <b id=bold>communities</b>", "hybrid")
    assert page.locator("#injected, #bold").count() == 0


def test_narrow_screen_never_scrolls_sideways(browser, app_url):
    context = browser.new_context(viewport={"width": 360, "height": 740}, locale="en-US")
    page = context.new_page()
    wide = "document.documentElement.scrollWidth"
    try:
        ask(page, app_url, QUESTION, "lazy")
        assert page.evaluate(wide) <= 360
        page.locator("#results .hit").first.click()
        page.locator("#reader mark").wait_for(state="visible")
        assert page.evaluate(wide) <= 360
        page.click("#reader-close")
        page.click("#tab-collection")
        page.wait_for_selector("#documents tbody tr")
        assert page.evaluate(wide) <= 360
    finally:
        context.close()


def test_keyboard_alone_searches_and_moves_through_results(page, app_url):
    page.goto(app_url + "/")
    page.keyboard.type("Leiden communities")  # the box has focus when the page opens
    page.keyboard.press("Enter")
    page.wait_for_selector("#results .hit")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.index") == "0"
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.index") == "1"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    page.locator("#reader mark").wait_for(state="visible")


def test_collection_lists_documents_failures_and_links_the_map_to_passages(page, app_url):
    page.goto(app_url + "/")
    page.click("#tab-collection")
    page.wait_for_selector("#documents tbody tr")
    assert page.locator("#documents tbody tr").count() == 9
    assert "Okapi BM25 in practice" in page.locator("#documents").inner_text()
    assert "broken.pdf" in page.locator("#failures").inner_text()
    # Year, pages, type and passages keep one line each, however narrow the window.
    page.set_viewport_size({"width": 700, "height": 900})
    lines = page.evaluate("""[...document.querySelectorAll('#documents tbody td:nth-child(n+3)')].map((td) => {
        const range = document.createRange(); range.selectNodeContents(td);
        return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size; })""")
    assert lines and max(lines) <= 1, lines
    link = page.frame_locator("#map").locator("li a[href^='/?community=']").first  # the legend
    link.click()
    page.wait_for_url("**/?community=*")
    page.wait_for_selector("#results .hit")
    assert page.locator("#results-title").inner_text().startswith("Community #")


def test_an_answer_citation_opens_its_paper_page_and_cited_by_links_back(page, cited_papers):
    with UIServer(cited_papers) as url:
        ask(page, url, "What does ResNet learn with its residual functions?", "hybrid")
        link = page.locator("#citations li a.paper-link", has_text="Paper page").first
        link.wait_for(state="visible")
        link.click()
        page.wait_for_url("**/?paper=*")
        page.wait_for_selector("#paper-references li")
        title = page.locator("#paper-title").inner_text()
        if "Deep Residual Learning" not in title:  # the answer cited another paper first: go to ResNet
            page.goto(url + "/?paper=papers%2Fresnet.pdf")
            page.wait_for_selector("#paper-references li")
        assert page.locator("#paper-title").inner_text() == "Deep Residual Learning for Image Recognition"
        assert page.locator("#paper-references li").count() == 50
        citing = page.locator("#paper-cited-by li.citing")
        assert citing.count() >= 2 and "(He et al., 2016)" in page.locator("#paper-cited-by").inner_text()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "paper-page.png"))
        citing.locator("a.paper-link", has_text="PonderNet").first.click()  # cited-by links to the citing paper
        page.wait_for_url("**/?paper=papers%2Fponder_net.pdf")
        page.wait_for_selector("#paper-references li a.paper-link")
        back = page.locator("#paper-references li a.paper-link")  # its reference list links back to ResNet
        assert back.count() == 1
        back.click()
        page.wait_for_url("**/?paper=papers%2Fresnet.pdf")
        page.wait_for_selector("#paper-references li")
        assert page.locator("#paper-title").inner_text() == "Deep Residual Learning for Image Recognition"
        page.goto("about:blank")  # nothing of the app still loading when its server stops


def test_an_llm_answer_arrives_in_pieces(browser, web_index, llm_server):  # noqa: F811
    m = Monjyu(web_index.index_dir, MonjyuConfig(cache_dir=web_index.config.cache_dir, llm=llm_server.config()))
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    try:
        with UIServer(m) as url:
            ask(page, url, QUESTION, "hybrid")
            wait_until(page, "document.getElementById('cost').textContent.includes('LLM calls 1')")
            assert int(page.locator("#answer").get_attribute("data-chunks")) >= 2
            assert page.locator("#answer-title").inner_text() == "Answer"
            # Each sentence's check, with its support figure: one supported, one the passages do not hold
            top = m.search(QUESTION, "hybrid", answer=False).hits[0].text
            said = re.split(r"(?<=[.!?])\s+", " ".join(top.split()))
            llm_server.push(Scripted(content=f"{max(said, key=len).rstrip('.')} [1]. "
                                             "A Norwegian violinist won the prize for his sonatas in 1887 [1]."))
            ask(page, url, QUESTION, "hybrid")
            wait_until(page, "document.querySelectorAll('#answer-check-list li').length === 2")
            page.locator("#answer-checks summary").click()
            items = page.locator("#answer-check-list li")
            assert items.nth(0).get_attribute("data-status") == "supported" and re.search(r"support [01]\.\d\d", items.nth(0).inner_text())
            assert items.nth(1).get_attribute("data-status") == "dropped" and "violinist" in items.nth(1).inner_text()
            assert "violinist" not in page.locator("#answer-text").inner_text()
    finally:
        context.close()
