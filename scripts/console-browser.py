#!/usr/bin/env python3
"""Drives the console in headless Chromium (Debian's /usr/bin/chromium, through Playwright for
Python) as a person would, for ConsoleBrowserTests (docs/testing.md):

  console-browser.py --url http://127.0.0.1:PORT --token-file F --delivery ID --device-search TOKEN \
                     --screenshots DIR --out result.json

Signs in (after checking that no session, a forged cookie and a wrong token all get the sign-in
page and never data), opens the deliveries list and the delivery's report, prints
"report-open" on stdout and waits for the page to refresh itself to its final figures, reads every
figure and table, searches the devices for a quarantined user key, checks that a form posted
without the CSRF token is refused, and signs out. Every page gets a screenshot in DIR. The
figures go to --out as JSON for the Swift test to compare with docs/analysts.md's queries.

Fails (exit 1, the reasons on stderr and in the JSON) on a page that does not load, a JavaScript
error or console error, or any unexpected page.
"""
import argparse
import datetime
import os
import time

from playwright.sync_api import sync_playwright

from console_harness import run_checked

CHROMIUM = os.environ.get("CONSOLE_TEST_CHROMIUM", "/usr/bin/chromium")


def run(args, token, problems, result, expect, shot):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        # An operator in Tokyo (no summer time): the compose page starts its send time's zone there.
        context = browser.new_context(viewport={"width": 1200, "height": 900}, timezone_id="Asia/Tokyo")
        page = context.new_page()
        page.on("pageerror", lambda error: problems.append("JavaScript error: %s" % error))
        # Chromium logs an expected refusal (the wrong token's 401, the CSRF check's 403) as a
        # console error: those are allowed only while `allowed` names their status.
        allowed = []

        def on_console(message):
            if message.type != "error":
                return
            if any("status of %d" % code in message.text for code in allowed):
                return
            problems.append("console error: %s" % message.text)

        page.on("console", on_console)
        def on_request_failed(request):
            # Leaving a page aborts what it was still loading in the background (the tab's icon,
            # the report's refresh): not a failure of the page.
            aborted = "ERR_ABORTED" in str(request.failure)
            if aborted and (request.url.endswith("/assets/icon.svg") or request.resource_type == "fetch"):
                return
            problems.append("request failed: %s %s" % (request.url, request.failure))

        page.on("requestfailed", on_request_failed)

        def goto(path, status=200):
            response = page.goto(args.url + path, wait_until="load")
            expect(response is not None and response.status == status,
                   "%s answered %s, expected %d" % (path, response.status if response else "nothing", status))
            return response

        report_path = "/deliveries/%s" % args.delivery

        # No session: the report's address shows the sign-in form, no figure.
        goto(report_path)
        expect(page.url.startswith(args.url + "/signin"), "without a session the report did not lead to sign-in: " + page.url)
        expect(page.locator("[data-figure]").count() == 0, "figures shown without a session")
        expect(page.get_by_label("Admin token").count() == 1, "the sign-in form has no labelled token input")
        shot(page, "01-signin")

        # A forged cookie: still the sign-in form.
        context.add_cookies([{"name": "push_console_session", "value": "v1.9999999999.AAAA.forged", "url": args.url}])
        goto(report_path)
        expect(page.url.startswith(args.url + "/signin"), "a forged session cookie was accepted")
        expect(page.locator("[data-figure]").count() == 0, "figures shown with a forged cookie")
        context.clear_cookies()

        # A wrong token: the form again, saying so.
        goto(report_path)
        page.get_by_label("Admin token").fill("not-the-admin-token-at-all")
        allowed.append(401)
        with page.expect_navigation():
            page.keyboard.press("Enter")
        page.wait_for_load_state("load")
        allowed.remove(401)
        expect("wrong admin token" in page.locator("[role=alert]").inner_text(), "no 'wrong admin token' alert")
        expect(page.locator("[data-figure]").count() == 0, "figures shown after a wrong token")
        shot(page, "02-signin-wrong-token")

        # The right token, typed and submitted from the keyboard: back to the report.
        page.get_by_label("Admin token").fill(token)
        with page.expect_navigation():
            page.keyboard.press("Enter")
        expect(page.url == args.url + report_path, "signing in did not return to the report: " + page.url)
        cookie = [c for c in context.cookies() if c["name"] == "push_console_session"]
        expect(len(cookie) == 1 and cookie[0]["httpOnly"] and cookie[0]["sameSite"] == "Strict",
               "the session cookie is not HttpOnly and SameSite=Strict: %s" % cookie)
        expect(token not in page.content(), "the admin token is echoed in the page")

        # Deliveries list.
        goto("/deliveries")
        expect(page.locator("#deliveries tr[data-delivery='%s']" % args.delivery).count() == 1, "the delivery is not in the list")
        shot(page, "03-deliveries")
        # Keyboard: the first Tab reaches the skip link, Enter moves to the main content.
        page.keyboard.press("Tab")
        expect(page.evaluate("document.activeElement.textContent") == "Skip to content", "the first Tab does not reach the skip link")
        page.keyboard.press("Enter")
        expect(page.evaluate("document.activeElement.id") == "main", "the skip link does not move to the main content")

        # The report, refreshing itself until its final figures.
        goto(report_path)
        first_state = page.locator("[data-figure=state]").inner_text()
        result["initialState"] = first_state
        result["initialPending"] = page.locator("[data-figure=pending]").inner_text()
        shot(page, "04-report-running")
        page.evaluate("window.consoleTestMarker = 'kept'")
        print("report-open", flush=True)
        deadline = time.time() + args.final_within
        while time.time() < deadline and page.locator("#report[data-final=true]").count() == 0:
            page.wait_for_timeout(250)
        expect(page.locator("#report[data-final=true]").count() == 1, "the report did not reach its final figures by itself")
        result["reloaded"] = page.evaluate("window.consoleTestMarker !== 'kept'")
        shot(page, "05-report-final")
        figures = {}
        for element in page.locator("#report [data-figure]").all():
            figures[element.get_attribute("data-figure")] = element.inner_text()
        result["figures"] = figures

        def table(selector):
            return [[cell.text_content().strip() for cell in row.locator("th, td").all()] for row in page.locator(selector + " tbody tr").all()]

        for name in ["sends", "tracking", "failures", "apps", "variants"]:
            result[name] = table("#" + name)
        result["charts"] = page.locator("#report svg[role=img]").count()
        for details in page.locator("#report details summary").all():
            details.click()
        shot(page, "06-report-tables")

        # A form posted without its CSRF token is refused.
        allowed.append(403)
        status = page.evaluate("fetch('/signout', {method: 'POST', body: 'csrf=wrong', headers: {'Content-Type': 'application/x-www-form-urlencoded'}}).then(r => r.text().then(() => r.status))")
        page.wait_for_timeout(200)
        allowed.remove(403)
        expect(status == 403, "a sign-out without the CSRF token answered %s, expected 403" % status)

        # Catalog: the delivery's service with its two apps and their integration keys.
        goto("/catalog")
        section = page.locator("section[data-service='%s']" % args.service)
        result["catalogKeys"] = sorted(r.get_attribute("data-integration-key") for r in section.locator("tr[data-integration-key]").all())
        result["copyButtons"] = section.get_by_role("button", name="Copy").count()
        shot(page, "07-catalog")

        # Compose: a preview (nothing sent), then a proof to one user key.
        goto("/deliveries")
        with page.expect_navigation():
            page.get_by_role("link", name="New delivery").click()
        result["zoneDefault"] = page.get_by_label("in the time zone").input_value()

        # The sound inputs suggest the selected service's sounds, and follow the service chosen.
        def suggested(input_id):
            list_id = page.locator("#" + input_id).get_attribute("list")
            return [o.get_attribute("value") for o in page.locator("datalist#%s option" % list_id).all()]

        page.get_by_label("Service", exact=True).select_option(args.other_service)
        result["otherIosSounds"] = suggested("iosSound")
        page.get_by_label("Service", exact=True).select_option(args.service)
        result["iosSounds"] = suggested("iosSound")
        result["androidSounds"] = suggested("androidSound")
        page.get_by_label("Title", exact=True).fill("Lisbon is waiting")
        page.get_by_label("Message", exact=True).fill("Hello {{userKey}}")
        with page.expect_navigation():
            page.get_by_role("button", name="Preview").click()
        result["previewTargeted"] = page.locator("[data-figure=preview-targeted]").inner_text()
        result["previewExcluded"] = page.locator("[data-figure=preview-excluded]").inner_text()
        result["previewSamples"] = sorted(
            [s.get_attribute("data-platform"), int(s.locator("[data-figure=bytes]").inner_text())] for s in page.locator(".sample").all())
        result["previewKeepsForm"] = page.get_by_label("Message", exact=True).input_value()
        shot(page, "08-compose-preview")
        # Conditions: the live preview counts the devices the rows match as they are typed, and
        # a refusal names the row; then back to every device for the proof below.
        page.get_by_label("Devices matching").check()
        page.get_by_label("Condition 1: parameter name").fill("tier")
        page.get_by_label("Condition 1: operator").select_option("=")
        page.get_by_label("Condition 1: value").fill("gold")
        page.get_by_label("Condition 2: field").select_option("platform")
        page.get_by_label("Condition 2: operator").select_option("=")
        page.get_by_label("Condition 2: value").fill("ios")
        # Polled from here: the page's CSP forbids the evaluated strings wait_for_function uses.
        def wait_for_text(locator, text, seconds=15):
            deadline = time.time() + seconds
            while time.time() < deadline and not (locator.count() and locator.inner_text() == text):
                page.wait_for_timeout(200)

        targeted = page.locator("[data-figure=preview-targeted]")
        wait_for_text(targeted, "3")
        result["filterTargeted"] = targeted.inner_text() if targeted.count() else None
        shot(page, "08b-compose-conditions")
        page.get_by_label("Condition 2: operator").select_option("between")
        try:
            page.wait_for_selector("#preview-problem", timeout=15000)
        except Exception:
            pass
        result["filterProblem"] = page.locator("#preview-problem").inner_text() if page.locator("#preview-problem").count() else None
        # A stored segment by name (the test defined "silver": tier = silver).
        page.get_by_label("Devices in the segment").check()
        page.get_by_label("Segment name").fill("silver")
        wait_for_text(targeted, "5")
        result["segmentTargeted"] = targeted.inner_text() if targeted.count() else None
        page.get_by_label("Every subscribed device of the service").check()
        # A language row: the live preview counts the devices per language texts.
        # A language row with a title and no message: the live preview's refusal is shown at the
        # row's message input, and goes when the row is emptied.
        page.get_by_label("Language 2: tag").fill("de")
        page.get_by_label("Language 2: title").fill("Hallo")
        deadline = time.time() + 15
        while time.time() < deadline and not page.locator("#lang1Body-problem").count():
            page.wait_for_timeout(200)
        result["languageProblem"] = page.locator("#lang1Body-problem").inner_text() if page.locator("#lang1Body-problem").count() else None
        result["languageProblemInvalid"] = page.get_by_label("Language 2: message").get_attribute("aria-invalid")
        shot(page, "08c-compose-language-problem")
        page.get_by_label("Language 2: tag").fill("")
        page.get_by_label("Language 2: title").fill("")
        deadline = time.time() + 15
        while time.time() < deadline and page.locator("#lang1Body-problem").count():
            page.wait_for_timeout(200)
        result["languageProblemGone"] = page.locator("#lang1Body-problem").count() == 0
        result["languageProblemInvalidAfter"] = page.get_by_label("Language 2: message").get_attribute("aria-invalid")
        page.get_by_label("Language 1: tag").fill("fr")
        page.get_by_label("Language 1: message").fill("Bonjour {{userKey}}")
        wait_for_text(page.locator("#preview-languages td[data-language=fr]"), "4")
        result["languageDevices"] = {
            cell.get_attribute("data-language"): cell.inner_text() for cell in page.locator("#preview-languages td[data-language]").all()}
        shot(page, "08c-compose-languages")
        page.get_by_label("Language 1: tag").fill("")
        # An A/B test: a second variant; the live preview counts the devices per variant.
        page.get_by_label("Variant 1: share").fill("50")
        page.get_by_label("Variant 2: name").fill("B")
        page.get_by_label("Variant 2: share").fill("50")
        page.get_by_label("Variant 2: message").fill("Psst {{userKey}}")
        wait_for_text(page.locator("#preview-variants td[data-variant=B]"), "5")
        result["variantDevices"] = {
            cell.get_attribute("data-variant"): cell.inner_text() for cell in page.locator("#preview-variants td[data-variant]").all()}
        shot(page, "08d-compose-variants")
        page.get_by_label("Variant 2: name").fill("")
        # A send time typed in the operator's zone: the live preview shows it in UTC beside it.
        # Two days ahead (the planner takes a send time within the 28 days FCM keeps a message);
        # Tokyo is UTC+9 all year, so 09:30 there is 00:30 UTC the same day.
        day = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)).strftime("%Y-%m-%d")
        result["sendAtDay"] = day
        page.locator("#sendAt").fill(day + "T09:30")
        wait_for_text(page.locator("#preview-send-at"), day + " 00:30 UTC (09:30 Asia/Tokyo)")
        result["sendAtPreview"] = page.locator("#preview-send-at").inner_text() if page.locator("#preview-send-at").count() else None
        result["sendAtProblem"] = page.locator("#preview-problem").inner_text() if page.locator("#preview-problem").count() else None
        shot(page, "08f-compose-send-time")
        page.locator("#sendAt").fill("")
        # The rarer options: an interruption level, and a colour the planner refuses, shown next to
        # its input after a Preview (and the form kept); then the colour is taken back.
        page.get_by_label("interruption level").select_option("time-sensitive")
        page.get_by_label("message", exact=True).select_option("notification")
        page.get_by_label("colour (#rrggbb)").fill("red")
        allowed.append(422)  # the refused draft's page
        with page.expect_navigation():
            page.get_by_role("button", name="Preview").click()
        page.wait_for_load_state("load")
        allowed.remove(422)
        result["colorProblem"] = page.locator("#androidColor-problem").inner_text() if page.locator("#androidColor-problem").count() else None
        result["colorDescribedBy"] = page.get_by_label("colour (#rrggbb)").get_attribute("aria-describedby")
        result["levelKept"] = page.get_by_label("interruption level").input_value()
        shot(page, "08e-compose-field-problem")
        page.get_by_label("colour (#rrggbb)").fill("")
        page.get_by_label("message", exact=True).select_option("data")
        page.get_by_label("Proof recipients: user keys (one per line, for \"Send a proof\")").fill("user2")
        with page.expect_navigation():
            page.get_by_role("button", name="Send a proof").click()
        result["proofURL"] = page.url
        result["proofMessage"] = page.locator("#control-message").inner_text()
        shot(page, "09-proof-report")


        # Devices: the quarantined subscription and its reason.
        goto("/devices")
        page.get_by_label("User key or registration token").fill(args.device_search)
        with page.expect_navigation():
            page.get_by_role("button", name="Search").click()
        result["devices"] = [
            {"quarantined": s.get_attribute("data-quarantined"), "quarantine": s.locator("[data-figure=quarantine]").inner_text()}
            for s in page.locator("section.device").all()
        ]
        shot(page, "10-devices")

        # The audit trail, filtered from its form: one operator's calls needing deliveries:write.
        with page.expect_navigation():
            page.get_by_role("link", name="Audit").click()
        page.get_by_label("Operator").fill(args.audit_operator)
        page.get_by_label("Permission").select_option("deliveries:write")
        with page.expect_navigation():
            page.get_by_role("button", name="Filter").click()
        result["auditURL"] = page.url
        result["audit"] = [[cell.text_content().strip() for cell in row.locator("td").all()] for row in page.locator("#audit tbody tr").all()]
        result["auditRefusedRows"] = page.locator("#audit tbody tr.refused").count()
        shot(page, "10b-audit")

        # Cancel the other delivery from its report: not without ticking the confirmation box.
        goto("/deliveries/%s" % args.cancel_delivery)
        cancel = page.get_by_role("button", name="Cancel the delivery")
        cancel.click()
        page.wait_for_timeout(300)
        result["cancelRefusedUnconfirmed"] = page.url == args.url + "/deliveries/%s" % args.cancel_delivery
        shot(page, "11-cancel-confirm")
        page.get_by_label("Yes, cancel this delivery for good").check()
        with page.expect_navigation():
            cancel.click()
        result["cancelMessage"] = page.locator("#control-message").inner_text()
        result["cancelState"] = page.locator("[data-figure=state]").inner_text()
        result["controlsAfterCancel"] = page.locator("section.controls").count()
        shot(page, "12-cancelled")

        # Sign out: the report's address leads to the sign-in form again.
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(args.url + "/signin*")
        goto(report_path)
        expect(page.url.startswith(args.url + "/signin"), "after signing out the report was still shown")
        browser.close()



def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--delivery", required=True)
    parser.add_argument("--device-search", required=True)
    parser.add_argument("--cancel-delivery", required=True)
    parser.add_argument("--service", required=True)
    parser.add_argument("--other-service", required=True)
    parser.add_argument("--audit-operator", required=True)
    parser.add_argument("--screenshots", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--final-within", type=float, default=90)
    run_checked("console-browser", parser.parse_args(), run)


if __name__ == "__main__":
    main()
