"""Drives `thund ui` in a real headless Chromium (through chromedriver) as a person would: the graph
shows every dataset, a click shows a dataset's details, a run started meanwhile changes the nodes'
states on the page, an expectation's pass rate is shown, a failed flow's error points at its line.

    python ui_browser.py URL THUND PROJECT SCREENSHOT_DIR DATASET...

DATASET: the qualified name of every dataset the graph must show. Prints one line per check; any
failure raises (non-zero exit) with what the page showed.
"""
import os
import pathlib
import subprocess
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

url, thund, project, shots = sys.argv[1:5]
datasets = sys.argv[5:]
shots = pathlib.Path(shots)
shots.mkdir(parents=True, exist_ok=True)

options = webdriver.ChromeOptions()
options.binary_location = os.environ.get("THUND_CHROMIUM", "/usr/bin/chromium")
for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1500,1000",
            "--disable-gpu", "--no-first-run", "--disable-extensions"]:
    options.add_argument(arg)
# The browser's console, to see that the page's Content-Security-Policy blocks nothing it uses.
options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
driver = webdriver.Chrome(service=Service(os.environ.get("THUND_CHROMEDRIVER", "/usr/bin/chromedriver")),
                          options=options)


def wait(what, check, timeout=15.0):
    """Polls `check` until it returns a true value; fails naming `what`, with the page's text."""
    end = time.monotonic() + timeout
    while True:
        try:
            v = check()
            if v:
                return v
        except Exception as e:  # the page may be re-rendering: retry until the timeout
            last = e
        if time.monotonic() > end:
            body = driver.find_element(By.TAG_NAME, "body").text
            raise AssertionError(f"timed out waiting for {what}\n--- page ---\n{body}")
        time.sleep(0.05)


def node(name):
    return driver.find_element(By.CSS_SELECTOR, f'#graph .node[data-name="{name}"]')


def states():
    return {n.get_attribute("data-name"): n.get_attribute("data-state")
            for n in driver.find_elements(By.CSS_SELECTOR, "#graph .node")}


def run(*args):
    return subprocess.run([thund, "run", "-p", project, *args], capture_output=True, text=True)


def check(message):
    print(f"ok: {message}", flush=True)


try:
    driver.get(url)
    # Every dataset of the project is a node, none has run yet.
    wait("every dataset in the graph", lambda: sorted(states()) == sorted(datasets))
    assert set(states().values()) == {"none"}, states()
    assert len(driver.find_elements(By.CSS_SELECTOR, "#graph path.edge")) >= len(datasets) - 2
    check(f"the graph shows all {len(datasets)} datasets, none run yet")
    # Layers left to right: a dataset is drawn right of what it reads.
    x = lambda n: float(node(n).get_attribute("transform").split("(")[1].split(",")[0])
    enriched = next(d for d in datasets if d.endswith(".orders_enriched"))
    revenue = next(d for d in datasets if d.endswith(".revenue_by_region"))
    raw = next(d for d in datasets if d.endswith(".orders_raw"))
    assert x(raw) < x(enriched) < x(revenue), (x(raw), x(enriched), x(revenue))
    check("layers run left to right by read")

    node(enriched).click()
    details = lambda: driver.find_element(By.ID, "details").text
    wait("the dataset's details", lambda: "CREATE MATERIALIZED VIEW orders_enriched" in details())
    text = details()
    assert "materialized view" in text and "transformations/02_silver.sql:10:1" in text, text
    assert "never run" in text, text
    check("a click shows the dataset's kind, SQL and file:line")

    # A run started now, in another process: the page follows it.
    done = run()
    assert done.returncode == 0, done.stdout + done.stderr
    ended = time.monotonic()
    wait("every table COMPLETED on the page",
         lambda: all(states()[d] == "COMPLETED" for d in datasets if d.endswith((".orders_raw", ".revenue_by_region"))))
    check(f"the run's states reached the page {time.monotonic() - ended:.2f} s after it ended")
    wait("the run in the history", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")) == 1)
    row = driver.find_element(By.CSS_SELECTOR, "#runs tbody tr")
    assert "COMPLETED" in row.text and "native" in row.text, row.text

    # The open panel now has the refresh's numbers and the stored table's schema and rows.
    wait("rows in the open panel", lambda: driver.find_element(By.ID, "d-rows").text == "58")
    text = details()
    assert "region" in driver.find_element(By.ID, "d-schema").text and "COMPLETED" in text, text
    # A first refresh has no state to merge into: a complete recompute, with the reason.
    technique = driver.find_element(By.ID, "d-technique").text
    assert technique.startswith("complete recompute (") and "_" in technique, technique
    check(f"the open dataset shows its row count, schema, state and how it was refreshed: {technique}")

    checked = next(d for d in datasets if d.endswith(".checked_orders"))
    node(checked).click()
    wait("the expectation's pass rate",
         lambda: "%" in driver.find_element(By.CSS_SELECTOR, '#d-expectations tr[data-expectation="big_order"]').text)
    rate = driver.find_element(By.CSS_SELECTOR, '#d-expectations tr[data-expectation="big_order"] .rate').text
    # The expected rate, from the sample's own data file.
    import csv
    with open(pathlib.Path(project, "data", "orders.csv")) as f:
        amounts = [float(r["amount"]) for r in csv.DictReader(f) if r["amount"]]
    passed = sum(a > 100 for a in amounts)
    want = f"{100 * passed / len(amounts):.1f}% ({passed}/{len(amounts)})"
    assert rate == want, (rate, want)
    bar = driver.find_element(By.CSS_SELECTOR, '#d-expectations tr[data-expectation="big_order"] .rate .bar span')
    width = float(driver.execute_script("return arguments[0].style.width", bar).rstrip("%"))
    assert abs(width - 100 * passed / len(amounts)) < 1e-3, width  # CSS keeps 4 decimals
    blocked = [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]
    assert not blocked, blocked
    check(f"the expectation's pass rate is shown: {rate}, its bar as wide, nothing blocked by the page's policy")
    driver.save_screenshot(str(shots / "pipeline.png"))

    # A dataset defined in Python: its panel shows the definition as written, at its line.
    regions = next(d for d in datasets if d.endswith(".region_totals"))
    node(regions).click()
    wait("the Python definition", lambda: "def region_totals():" in details())
    text = details()
    assert "@dp.materialized_view(comment=" in text and "transformations/04_regions.py:8" in text, text
    assert "CREATE MATERIALIZED VIEW" not in text, text
    wait("the Python dataset's rows", lambda: driver.find_element(By.ID, "d-rows").text not in ("", "—"))
    check("a Python dataset's panel shows its decorator and function at its file:line, and its rows")

    # Open the run: its flows with states, rows and durations.
    driver.find_element(By.CSS_SELECTOR, "#runs tbody tr").click()
    wait("the run's flows", lambda: driver.find_elements(By.CSS_SELECTOR, "#r-flows tr[data-flow]"))
    flows = driver.find_element(By.ID, "r-flows").text
    assert "orders_raw" in flows and "60" in flows and "COMPLETED" in flows, flows
    assert "complete recompute" in flows, flows
    check("a run opens to its flows' states, rows, durations and refresh techniques")

    # A broken flow: the node turns FAILED and the error points at the line, as the CLI prints it.
    sql = pathlib.Path(project, "transformations", "03_checks.sql")
    sql.write_text(sql.read_text().replace("amount > 100", "amount_typo > 100"))
    failed = run()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    wait("the node FAILED", lambda: states()[checked] == "FAILED")
    node(checked).click()
    error = wait("the error", lambda: driver.find_element(By.ID, "d-error").text)
    assert "--> transformations/03_checks.sql:" in error and "amount_typo" in error and "^" in error, error
    wait("two runs", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")) == 2)
    assert "FAILED" in driver.find_element(By.CSS_SELECTOR, "#runs tbody tr").text
    check("a failed flow shows FAILED and its error with the file:line snippet")
    driver.save_screenshot(str(shots / "failed.png"))
    print(f"screenshots: {shots}", flush=True)
finally:
    driver.quit()
