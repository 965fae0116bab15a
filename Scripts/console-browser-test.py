#!/usr/bin/env python3
"""The support console in a real browser: headless Chromium driven by Selenium, against a real
`upgrade-cli serve --dev` on loopback (SQLite, the development Apple emulator) with its console
listener. Signs in, looks accounts up, deletes one, compares every number of the report page (by
default the last 30 days, then a range chosen in its date fields, then all time) with the API's and
the CLI's report of the window the page names, and probes the console as an attacker would:
a wrong token, POSTs without and with a wrong form token, a token without the `accounts` scope
posting a deletion anyway, display names holding HTML and script, a page framing the console, a
session cookie replayed after sign-out and a session whose token left the token file. Every probe
must be inert. Saves a screenshot of every page at desktop (1280) and phone (390) widths under
.build/console-screenshots/.

    Scripts/console-browser-test.py [PATH-TO-upgrade-cli]

Needs Debian's chromium and chromium-driver and selenium from PyPI (Scripts/setup installs them).
"""
import datetime
import http.cookiejar
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
if CLI is None:
    bin_path = subprocess.run(["swift", "build", "--show-bin-path"], capture_output=True, text=True, check=True,
                              cwd=ROOT).stdout.strip()
    CLI = os.path.join(bin_path, "upgrade-cli")
SHOTS = os.path.join(ROOT, ".build", "console-screenshots")
WORKDIR = tempfile.mkdtemp(prefix="siwa-console-")
CLIENT_ID = "com.example.siwa-upgrade"
# Display names an attacker might have smuggled in through an import: each must show as text.
PAYLOADS = {
    "xss-script": '<script>alert("xss")</script>',
    "xss-img": '<img src=x onerror="alert(1)">',
    "xss-attr": '"><svg onload=alert(2)><b id="injected">',
    "xss-quote": "'><iframe src=\"javascript:alert(3)\"></iframe>",
}
# The scripted upgrades: (account, outcome), an ASExtensionError name for a cancellation.
SCRIPT = [("carol", "completed"), ("dave", "completed"), ("erin", "userCanceled"), ("frank", "userInteractionRequired"),
          ("gina", "failed"), ("hank", "credentialIdentityNotFound")]
children = []
passed = 0


def check(condition, what):
    global passed
    if not condition:
        raise SystemExit(f"console-browser-test: FAILED: {what}")
    passed += 1
    print(f"ok  {what}")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cli(arguments, environment, stdin=None):
    return subprocess.run([CLI] + arguments, env={**os.environ, **environment}, input=stdin, capture_output=True,
                          text=True, timeout=120)


def call(method, url, body=None, headers=None, form=None, cookies=None):
    """One HTTP request without following redirects: (status, headers, body text)."""
    data = None
    headers = dict(headers or {})
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    if cookies:
        headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in cookies.items())

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *arguments):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with opener.open(request, timeout=20) as answer:
            return answer.status, answer.headers, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def start_server(environment):
    process = subprocess.Popen([CLI, "serve", "--dev"], env={**os.environ, **environment}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    children.append(process)
    output, deadline = "", time.time() + 60
    while "support console on" not in output:
        line = process.stderr.readline()
        if not line or time.time() > deadline:
            raise SystemExit(f"console-browser-test: serve did not start: {output[-2000:]}")
        output += line
    # Drain the log so the server never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    api = re.search(r"listening on (http://127\.0\.0\.1:\d+)", output).group(1)
    console = re.search(r"support console on (http://127\.0\.0\.1:\d+)/", output).group(1)
    return process, api, console


def upgrade(api, apple, username, password, outcome):
    """One scripted upgrade of `username`, ending `completed` or cancelled with an ASExtensionError name."""
    status, started = json_call("POST", api + "/v1/upgrades",
                                {"username": username, "password": password, "serviceIdentifier": "example.com"})
    assert status == 201, (status, started)
    if outcome != "completed":
        status, cancelled = json_call("POST", api + f"/v1/upgrades/{started['id']}/cancel", {"reason": outcome})
        assert status == 200, (status, cancelled)
        return
    status, user = json_call("POST", apple + "/emulator/users", {"email": f"{username}@example.com"})
    status, sheet = json_call("POST", apple + "/emulator/authorize", {
        "userId": user["userId"], "clientId": CLIENT_ID, "nonce": started["nonce"], "state": started["state"]})
    status, done = json_call("POST", api + f"/v1/upgrades/{started['id']}/apple-credential", {
        "identityToken": sheet["identityToken"], "authorizationCode": sheet["authorizationCode"],
        "state": started["state"]})
    assert status == 200 and done.get("status") == "completed", (status, done)


def json_call(method, url, body):
    status, _, text = call(method, url, body=body)
    return status, json.loads(text or "{}")


def report_document(api, environment, token, since=None, until=None):
    """The report of [since, until) as `GET /v1/admin/report` answers it, or `upgrade-cli report --json` prints it; None
    without either. Left out, `since` is the first event and `until` now, as on the API and the CLI."""
    window = {name: value for name, value in (("since", since), ("until", until)) if value is not None}
    query = "?" + urllib.parse.urlencode(window) if window else ""
    status, _, text = call("GET", api + "/v1/admin/report" + query, headers={"Authorization": "Bearer " + token})
    if status == 200:
        return json.loads(text)
    printed = cli(["report", "--json"] + [f"--{name}={value}" for name, value in window.items()], environment)
    return json.loads(printed.stdout) if printed.returncode == 0 else None


def lookup(document, path):
    """The number at a `data-field` path (dots between keys and list indexes); 0 where the document leaves it out."""
    value = document
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return 0
    return value


def report_window(driver):
    """The window the report page names: its since (None for the first event) and until, RFC 3339."""
    times = {element.get_attribute("id"): element.get_attribute("datetime")
             for element in driver.find_elements(By.CSS_SELECTOR, "#window-since, #window-until")}
    return times.get("window-since"), times.get("window-until")


def report_numbers(driver):
    """Every number on the report page by its `data-field` path."""
    return {element.get_attribute("data-field"): int(element.text)
            for element in driver.find_elements(By.CSS_SELECTOR, "[data-field]")}


def compare_report(api, environment, token, shown, since, until, name):
    """The page's numbers against `GET /v1/admin/report` and `upgrade-cli report --json` for the same window."""
    document = report_document(api, environment, token, since, until)
    if document is None:
        print("    (no GET /v1/admin/report or upgrade-cli report in this build: compared with the script only)")
        return
    check(document.get("since") == since and document.get("until") == until,
          f"{name}: the API's report covers the page's window, {since} to {until}")
    different = {field: (value, lookup(document, field)) for field, value in shown.items()
                 if lookup(document, field) != value}
    check(not different, f"{name}: all {len(shown)} numbers on the report page equal the API's report: {different}")
    window = [f"--{option}={value}" for option, value in (("since", since), ("until", until)) if value is not None]
    printed = cli(["report", "--json"] + window, environment)
    check(printed.returncode == 0, f"{name}: upgrade-cli report --json {' '.join(window)} {printed.stderr.strip()}".rstrip())
    document = json.loads(printed.stdout)
    different = {field: (value, lookup(document, field)) for field, value in shown.items()
                 if lookup(document, field) != value}
    check(not different, f"{name}: and `upgrade-cli report --json`'s: {different}")


class Browser:
    """Headless Chromium with screenshots of whole pages at a given width."""

    def __init__(self):
        options = webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,900", "--no-first-run", "--disable-extensions"]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
        # Chromium leaves its singleton socket's directory in TMPDIR after quitting: kept inside
        # this run's working directory, it goes with it.
        service = Service(driver_path, env={**os.environ, "TMPDIR": WORKDIR})
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_page_load_timeout(20)

    def get(self, url):
        self.driver.get(url)

    def check_accessible(self, name):
        """Landmarks, one h1, a label for every field, and the skip link first in the tab order."""
        problems = self.driver.execute_script("""
            const problems = [];
            if (document.querySelectorAll('main#main').length !== 1) problems.push('main landmark');
            if (document.querySelectorAll('h1').length !== 1) problems.push('one h1');
            document.querySelectorAll('nav').forEach(nav => { if (!nav.getAttribute('aria-label')) problems.push('nav label'); });
            document.querySelectorAll('input:not([type=hidden])').forEach(input => {
                if (!input.id || !document.querySelector('label[for="' + input.id + '"]')) problems.push('label for ' + input.name);
            });
            document.querySelectorAll('table').forEach(table => {
                if (!table.querySelector('caption') || !table.querySelector('th[scope=col]')) problems.push('table caption/headers');
            });
            document.querySelectorAll('svg.chart').forEach(svg => {
                if (svg.getAttribute('role') !== 'img' || !svg.querySelector('title')) problems.push('chart title');
            });
            return problems;""")
        self.driver.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        first = self.driver.switch_to.active_element
        if first.get_attribute("class") != "skip":
            problems.append("skip link not first")
        check(not problems, f"{name}: landmarks, one heading 1, labelled fields and tables, skip link first: {problems}")

    def shoot(self, name):
        """The whole page at 1280 and at 390 CSS pixels wide (a phone, with touch and mobile viewport),
        then its accessibility checked (which moves the focus, so after the pictures)."""
        for label, width, mobile in (("desktop", 1280, False), ("phone", 390, True)):
            metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile}
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            height = self.driver.execute_script("return document.documentElement.scrollHeight")
            metrics["height"] = max(600, min(int(height), 6000))
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            self.driver.save_screenshot(os.path.join(SHOTS, f"{name}-{label}.png"))
        self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        self.check_accessible(name)

    def text(self):
        return self.driver.find_element(By.TAG_NAME, "body").text

    def submit(self, form_selector, values):
        form = self.driver.find_element(By.CSS_SELECTOR, form_selector)
        for name, value in values.items():
            field = form.find_element(By.NAME, name)
            field.clear()
            field.send_keys(value)
        self.click_and_wait(form.find_element(By.CSS_SELECTOR, "button[type=submit]"))

    def click_and_wait(self, button):
        """Clicks and waits for the next page: the old document carries a mark the new one lacks."""
        self.driver.execute_script("document.documentElement.dataset.before = 'yes'")
        button.click()

        def loaded(driver):
            try:
                return driver.execute_script(
                    "return document.readyState === 'complete' && !document.documentElement.dataset.before")
            except WebDriverException:
                return False

        WebDriverWait(self.driver, 10).until(loaded)

    def no_alert(self):
        try:
            self.driver.switch_to.alert
            return False
        except NoAlertPresentException:
            return True

    def session_cookie(self):
        return self.driver.get_cookie("console-session")


def main():
    os.makedirs(SHOTS, exist_ok=True)
    for old in os.listdir(SHOTS):
        os.remove(os.path.join(SHOTS, old))
    os.chdir(WORKDIR)
    environment = {"UPGRADE_DB": "sqlite:console.db", "UPGRADE_ADMIN_TOKENS_FILE": "tokens",
                   "UPGRADE_LISTEN": "127.0.0.1:0", "UPGRADE_CONSOLE_LISTEN": "127.0.0.1:0",
                   "UPGRADE_DEV_EMULATOR_PORT": str(free_port())}
    tokens = {}
    for name, scopes in (("support", "accounts,audit"), ("auditor", "audit"), ("temporary", "accounts,audit")):
        made = cli(["admin", "tokens", "add", name, "--scopes", scopes, "--file", "tokens"], {})
        assert made.returncode == 0, made.stderr
        tokens[name] = made.stdout.strip()
    check(cli(["db", "migrate"], environment).returncode == 0, "db migrate")
    users = ["alice", "bob", "carol", "dave", "erin", "frank", "gina", "hank", "ivan"]
    for user in users:
        assert cli(["accounts", "add", user], environment, stdin=f"pw-{user}").returncode == 0
    rows = "".join(json.dumps({"username": name, "displayName": payload, "email": f"{name}@example.com",
                               "legacyPassword": True}) + "\n" for name, payload in PAYLOADS.items())
    imported = cli(["accounts", "import", "-", "--format", "jsonl"], environment, stdin=rows)
    check(imported.returncode == 0, "accounts whose display names hold HTML and script imported")

    server, api, console = start_server(environment)
    apple = f"http://127.0.0.1:{environment['UPGRADE_DEV_EMULATOR_PORT']}"
    for user, outcome in SCRIPT:
        upgrade(api, apple, user, f"pw-{user}", outcome)
    status, _ = json_call("POST", api + "/v1/upgrades", {"username": "ivan", "password": "wrong", "serviceIdentifier": "example.com"})
    check(status == 401, "scripted upgrades: 2 completed, one cancelled by each ASExtensionError reason, 1 failed (wrong password)")

    # Headers every answer carries, the sign-in page's included.
    status, headers, _ = call("GET", console + "/")
    policy = headers.get("Content-Security-Policy", "")
    check(status == 200 and "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
          and "script-src" not in policy and "'unsafe-inline'" not in policy, "CSP: no script at all, no framing")
    check(headers.get("X-Frame-Options") == "DENY" and headers.get("X-Content-Type-Options") == "nosniff"
          and headers.get("Referrer-Policy") == "no-referrer" and headers.get("Cache-Control") == "no-store",
          "X-Frame-Options DENY, nosniff, no-referrer, no-store")

    browser = Browser()
    driver = browser.driver
    try:
        browser.get(console + "/")
        check(driver.find_element(By.CSS_SELECTOR, "label[for=token]").text == "Admin token", "sign-in form, labelled")
        browser.shoot("01-sign-in")

        # A wrong token: refused as on the REST admin API, and counted.
        browser.submit("form[action='/sign-in']", {"token": "siwa_admin_" + "A" * 43})
        check("the admin token is not valid" in browser.text() and browser.session_cookie() is None,
              "a wrong token is refused with the REST API's words, no session")
        browser.shoot("02-sign-in-refused")
        jar_cookie = driver.get_cookie("console-sign-in")["value"]
        status, _, _ = call("POST", console + "/sign-in", form={"token": "wrong", "csrf": jar_cookie},
                            cookies={"console-sign-in": jar_cookie})
        check(status == 401, "a wrong token is 401")
        status, _, _ = call("POST", console + "/sign-in", form={"token": tokens["support"]})
        check(status == 403, "a sign-in without its form token is 403")

        browser.submit("form[action='/sign-in']", {"token": tokens["support"]})
        cookie = browser.session_cookie()
        check(cookie is not None and cookie["httpOnly"] and cookie.get("sameSite") == "Strict"
              and cookie["path"] == "/" and not cookie["secure"],
              "session cookie: HttpOnly, SameSite=Strict, Path=/, not Secure on loopback")
        check("Signed in with support" in browser.text(), "signed in; the overview names the token")
        browser.shoot("03-overview")

        # Look an account up.
        browser.get(console + "/accounts")
        browser.shoot("04-accounts-search")
        browser.submit("form[role=search]", {"username": "carol"})
        text = browser.text()
        check("Account carol" in text and "appleOnly" in text, "carol's overview: Apple-only after her upgrade")
        check("completed" in text, "carol's audit trail shows the upgrade")
        browser.shoot("05-account-carol")
        browser.get(console + "/accounts?username=frank")
        check("Open flows" in browser.text(), "frank's open flows listed")

        # Display names with HTML and script: shown as text, nothing runs, nothing is injected.
        for name, payload in PAYLOADS.items():
            browser.get(console + "/accounts?username=" + urllib.parse.quote(name))
            check(browser.no_alert(), f"{name}: no alert")
            check(not driver.find_elements(By.TAG_NAME, "script") and not driver.find_elements(By.TAG_NAME, "iframe")
                  and not driver.find_elements(By.CSS_SELECTOR, "img, #injected, main svg"),
                  f"{name}: no script, frame, image or injected element")
            check(payload in browser.text(), f"{name}: the display name reads as text")
        browser.shoot("06-account-xss")

        # CSRF: a deletion without the form token, then with a wrong one: 403, nothing deleted. The
        # wrong one differs from the real one in its first character whatever that is (a fixed 'x'
        # left one token in 64 unchanged, and the deletion then went through).
        wrong = "arguments[0].value = (arguments[0].value[0] === 'x' ? 'y' : 'x') + arguments[0].value.slice(1)"
        for label, change in (("without", "arguments[0].remove()"), ("with a wrong", wrong)):
            browser.get(console + "/accounts?username=bob")
            field = driver.find_element(By.CSS_SELECTOR, "form[action='/accounts/delete'] input[name=csrf]")
            driver.execute_script(change, field)
            browser.submit("form[action='/accounts/delete']", {"confirm": "bob"})
            check("did not come from the console" in browser.text(), f"a deletion {label} form token is refused")
        session = {"console-session": browser.session_cookie()["value"]}
        status, _, _ = call("POST", console + "/accounts/delete", form={"username": "bob", "confirm": "bob"},
                            cookies=session)
        check(status == 403, "a deletion without a form token is 403")
        status, _, _ = call("POST", console + "/accounts/delete",
                            form={"username": "bob", "confirm": "bob", "csrf": "A" * 43}, cookies=session)
        check(status == 403, "a deletion with a wrong form token is 403")
        status, _, _ = call("GET", api + "/v1/admin/accounts/bob",
                            headers={"Authorization": "Bearer " + tokens["support"]})
        check(status == 200, "bob still exists")

        # Delete bob: a wrong confirmation first, then the right one.
        browser.get(console + "/accounts?username=bob")
        browser.shoot("07-account-bob")
        browser.submit("form[action='/accounts/delete']", {"confirm": "bobby"})
        check("type its username exactly" in browser.text(), "a wrong confirmation deletes nothing")
        browser.get(console + "/accounts?username=bob")
        browser.submit("form[action='/accounts/delete']", {"confirm": "bob"})
        check("The account bob was deleted." in browser.text(), "bob deleted through the console")
        browser.shoot("08-account-deleted")
        status, _, _ = call("GET", api + "/v1/admin/accounts/bob",
                            headers={"Authorization": "Bearer " + tokens["support"]})
        check(status == 404, "bob is gone for the REST API too")

        for path, name in (("/jobs", "09-jobs"), ("/webhooks", "10-webhooks"), ("/revocations", "11-revocations")):
            browser.get(console + path)
            check(driver.find_element(By.TAG_NAME, "h1").text and browser.no_alert(), f"{path} renders")
            browser.shoot(name)
        browser.get(console + "/webhooks")
        browser.submit("form[action='/webhooks/replay']", {"since": "0"})
        check(re.search(r"\d+ webhook event\(s\) created since .* are pending again", browser.text()) is not None,
              "webhook replay from the console")
        browser.shoot("10-webhooks-replayed")
        browser.get(console + "/jobs")
        cells = [cell.text for cell in driver.find_elements(
            By.CSS_SELECTOR, "section[aria-labelledby=imports-heading] tbody tr:first-child td")]
        check(len(cells) == 9 and cells[3] == str(len(PAYLOADS)), "the import run is listed with its counts")

        # The migration report: the numbers the script made, and the same numbers as the API's document for the
        # window the page names. By default the last 30 days: from the start of the UTC day 29 days before today.
        browser.get(console + "/report")
        check(browser.no_alert() and len(driver.find_elements(By.CSS_SELECTOR, "svg.chart[role=img]")) >= 3,
              "the report page draws its charts (conversions, accounts remaining, funnels) as SVG")
        browser.shoot("00-report")
        since, until = report_window(driver)
        today = datetime.date.fromisoformat(until[:10])
        first = today - datetime.timedelta(days=29)
        heading = driver.find_element(By.TAG_NAME, "h1").text
        check(since == f"{first}T00:00:00Z" and heading == f"Migration report, last 30 days, {first} to {today}"
              and abs(datetime.datetime.fromisoformat(until.replace("Z", "+00:00")).timestamp() - time.time()) < 120,
              f"by default the last 30 days, said in the heading: {heading!r}, from {since} to {until} (now)")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#conversions-title ~ rect")) == 30,
              "the conversions chart has a bar for each of the 30 days")
        shown = report_numbers(driver)
        cancelled = {reason: shown.get(f"upgrades.total.cancelled.{reason}") for _, reason in SCRIPT[2:]}
        check(shown.get("upgrades.total.completed") == 2 and all(count == 1 for count in cancelled.values())
              and sum(value for key, value in shown.items() if key.startswith("upgrades.total.failed.")) >= 1,
              "the report shows 2 completed, 1 cancelled per reason and the failure: " + json.dumps(cancelled))
        compare_report(api, environment, tokens["support"], shown, since, until, "the last 30 days")

        # A custom range from the two date fields (yesterday and today), sent by the page's GET form.
        form = driver.find_element(By.CSS_SELECTOR, "form[action='/report']")
        yesterday = today - datetime.timedelta(days=1)
        for name, value in (("since", yesterday), ("until", today)):
            field = form.find_element(By.NAME, name)
            check(field.get_attribute("type") == "date", f"the range's {name} is a date field")
            driver.execute_script("arguments[0].value = arguments[1]", field, str(value))
        browser.click_and_wait(form.find_element(By.CSS_SELECTOR, "button[type=submit]"))
        since, until = report_window(driver)
        heading = driver.find_element(By.TAG_NAME, "h1").text
        check(driver.current_url.endswith(f"/report?since={yesterday}&until={today}") and since == f"{yesterday}T00:00:00Z"
              and heading == f"Migration report, {yesterday} to {today}",
              f"a custom range from the date fields: {heading!r}, from {since} to {until}")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#conversions-title ~ rect")) == 2,
              "the conversions chart follows it: a bar for each of its 2 days")
        browser.shoot("00-report-custom")
        compare_report(api, environment, tokens["support"], report_numbers(driver), since, until, "the custom range")

        # The presets are links; all time is labelled as slow, and is the API's default window.
        for preset, label in (("7d", "Last 7 days"), ("90d", "Last 90 days"), ("all", "All time (slow on large histories)")):
            link = driver.find_element(By.CSS_SELECTOR, f"a[href='/report?range={preset}']")
            check(link.text == label, f"the preset link {label!r}")
            browser.click_and_wait(link)
            check(driver.find_element(By.CSS_SELECTOR, f"a[href='/report?range={preset}']").get_attribute("aria-current")
                  == "true", f"{label}: marked as the range shown")
        since, until = report_window(driver)
        check(since is None and driver.find_element(By.TAG_NAME, "h1").text.startswith("Migration report, all time"),
              "all time: from the first event")
        compare_report(api, environment, tokens["support"], report_numbers(driver), None, until, "all time")

        # A range that ends before it starts, or in the future: a 400 that says why, and no report.
        browser.get(console + f"/report?since={today}&until={yesterday}")
        check(f"since ({today}) is after until ({yesterday})" in browser.text() and not report_numbers(driver),
              "since after until: the page says so and shows no report")
        browser.shoot("00-report-refused")
        session = {"console-session": browser.session_cookie()["value"]}
        for query, reason in ((f"since={today}&until={today + datetime.timedelta(days=1)}", "is in the future"),
                              ("since=2026-02-30&until=2026-03-01", "must be a day written YYYY-MM-DD")):
            status, _, body = call("GET", console + "/report?" + query, cookies=session)
            check(status == 400 and reason in body and "data-field" not in body, f"{query}: 400, {reason!r}, no report")

        # Clickjacking: a page on another origin framing the console gets nothing.
        framing_port = free_port()
        with open(os.path.join(WORKDIR, "frame.html"), "w") as page:
            page.write(f'<!DOCTYPE html><title>framing</title><iframe id="victim" src="{console}/" width="800" height="600"></iframe>')
        handler = lambda *arguments: http.server.SimpleHTTPRequestHandler(*arguments, directory=WORKDIR)
        framing = http.server.ThreadingHTTPServer(("127.0.0.1", framing_port), handler)
        http.server.SimpleHTTPRequestHandler.log_message = lambda *arguments: None
        threading.Thread(target=framing.serve_forever, daemon=True).start()
        try:
            browser.get(f"http://localhost:{framing_port}/frame.html")
            time.sleep(1)
            driver.switch_to.frame(driver.find_element(By.ID, "victim"))
            # Chromium shows its own error page in the frame instead.
            framed = driver.find_elements(By.CSS_SELECTOR, "#token, form[action='/sign-in'], a.skip")
            framed += ["title"] if "siwa-upgrade console" in driver.title else []
            driver.switch_to.default_content()
            refusals = [entry["message"] for entry in driver.get_log("browser")
                        if "frame-ancestors" in entry["message"] or "X-Frame-Options" in entry["message"]]
            check(not framed and refusals, "a page framing the console shows none of it: the browser refused the frame")
            print(f"    (browser: {refusals[0][:150]})")
        finally:
            framing.shutdown()

        # Sign out: the cookie goes, and a copy of it opens nothing any more.
        browser.get(console + "/")
        old = browser.session_cookie()["value"]
        browser.click_and_wait(driver.find_element(By.CSS_SELECTOR, "form[action='/sign-out'] button"))
        check(browser.session_cookie() is None and driver.find_elements(By.ID, "token"), "signed out")
        status, headers, _ = call("GET", console + "/accounts?username=alice", cookies={"console-session": old})
        check(status == 303 and headers.get("Location") == "/", "the old session cookie opens nothing after sign-out")

        # A token without `accounts`: no delete button, and a deletion posted anyway is 403.
        browser.get(console + "/")
        browser.submit("form[action='/sign-in']", {"token": tokens["auditor"]})
        browser.get(console + "/accounts?username=alice")
        check("Audit trail of alice" in browser.text() and not driver.find_elements(By.CSS_SELECTOR, "button.danger"),
              "an audit-only token sees the trail and no delete button")
        browser.shoot("12-account-audit-only")
        csrf = driver.find_element(By.CSS_SELECTOR, "form[action='/sign-out'] input[name=csrf]").get_attribute("value")
        status, _, body = call("POST", console + "/accounts/delete",
                               form={"username": "alice", "confirm": "alice", "csrf": csrf},
                               cookies={"console-session": browser.session_cookie()["value"]})
        check(status == 403 and "lacks the &#39;accounts&#39; scope" in body, "its deletion posted anyway is 403")
        status, _, _ = call("GET", api + "/v1/admin/accounts/alice",
                            headers={"Authorization": "Bearer " + tokens["support"]})
        check(status == 200, "alice still exists")

        # A session ends when its token leaves the token file (on the next reload).
        driver.delete_all_cookies()
        browser.get(console + "/")
        browser.submit("form[action='/sign-in']", {"token": tokens["temporary"]})
        check("Signed in with temporary" in browser.text(), "signed in with a temporary token")
        removed = cli(["admin", "tokens", "remove", "temporary", "--file", "tokens"], {})
        check(removed.returncode == 0, "the temporary token removed from the file")
        server.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while time.time() < deadline:
            browser.get(console + "/accounts")
            if driver.find_elements(By.ID, "token"):
                break
            time.sleep(0.3)
        check(driver.find_elements(By.ID, "token") and browser.session_cookie() is not None,
              "after the reload its session opens nothing: back at sign-in")
    finally:
        browser.driver.quit()
    shots = sorted(os.listdir(SHOTS))
    check(len(shots) >= 28, f"{len(shots)} screenshots in .build/console-screenshots")
    print(f"console-browser-test: passed ({passed} checks)")


try:
    main()
finally:
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
    shutil.rmtree(WORKDIR, ignore_errors=True)
