#!/usr/bin/env python3
"""The issue's whole console scenario in headless Chromium (Debian's /usr/bin/chromium, through
Playwright for Python), against the real services, for ConsoleScenarioTests (docs/testing.md):

  console-scenario.py --url CONSOLE --registration URL --token-file F --service NAME \
      --bundle-id ID --fcm-project ID --p8 FILE --key-id K --team-id T --service-account FILE \
      --wrong-pem FILE (a PEM key that is not P-256) --tracking URL \
      --apns-url URL --apns-ca PEM --fcm-url URL --fcm-ca PEM (the simulators, for their logs) \
      --screenshots DIR --out result.json

As a new user would: signs in; creates a service (and is refused a second one of the same name);
adds an iOS and an Android app; uploads wrong files first (a service account as a .p8, an RSA
key as a .p8, a .p8 as a service account: each problem is named, the file's content is not
echoed), then each app's real credentials (the simulators trust them); edits the
iOS app's label and sounds; copies the integration keys from the catalog. Then, as the SDKs
would (plain HTTP, not the console), registers 3 iOS devices, 1 iOS device whose token the APNs
simulator answers 410 Unregistered, and 3 Android devices. Composes a delivery while the live
preview follows the typing (and says why an empty message is not valid), sends it, watches its
report refresh itself to the final figures; sends the SDKs' tracking hits (received, opened)
for the notifications the simulators took, and reloads the report until it shows them; composes a second one for an hour later and cancels
it from its report; finds the quarantined device in the devices search. Screenshots of every
page go to DIR; the figures and the ids go to --out as JSON for the Swift test to compare with
docs/analysts.md's queries.

Fails (exit 1, the reasons on stderr and in the JSON) on a page that does not load, a JavaScript
error or console error, or an unexpected page.
"""
import argparse
import datetime
import importlib.util
import json
import os
import subprocess
import time
import urllib.request

from playwright.sync_api import sync_playwright

from console_harness import run_checked

CHROMIUM = os.environ.get("CONSOLE_TEST_CHROMIUM", "/usr/bin/chromium")
HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("demo_devices", os.path.join(HERE, "demo-devices.py"))
devices_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(devices_module)


def register(url, platform, key, device):
    """One SDK registration (POST /nms/mobile/1/register{IOS,Android}.jssp), as the Campaign SDKs send it."""
    body = devices_module.ios_body(device, key) if platform == "ios" else devices_module.android_body(device, key)
    path = "/nms/mobile/1/registerIOS.jssp" if platform == "ios" else "/nms/mobile/1/registerAndroid.jssp"
    request = urllib.request.Request(url + path, data=body.encode(), method="POST", headers={"Content-Type": devices_module.CONTENT_TYPE})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


def device(platform, token, user_key):
    d = {"token": token, "userKey": user_key, "name": "Test device", "model": "iPhone15,2" if platform == "ios" else "Pixel 8",
         "osVersion": "iOS 18.1" if platform == "ios" else "14", "language": "en", "params": [("email", user_key)]}
    if platform == "android":
        d.update({"imei": "", "brand": "Google", "manufacturer": "Google"})
    return d


def run(args, token, problems, result, expect, shot):
    secret_lines = [line for line in open(args.p8).read().splitlines() if line and not line.startswith("-----")]
    account = json.load(open(args.service_account))
    secret_lines += [line for line in account["private_key"].splitlines() if line and not line.startswith("-----")]
    secret_lines += [line for line in open(args.wrong_pem).read().splitlines() if line and not line.startswith("-----")]

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        page = context.new_page()
        page.on("pageerror", lambda error: problems.append("JavaScript error: %s" % error))
        # A refused form (409, 422) is logged by Chromium as a console error: allowed only
        # while `allowed` names its status.
        allowed = []

        def on_console(message):
            if message.type == "error" and not any("status of %d" % code in message.text for code in allowed):
                problems.append("console error: %s" % message.text)

        page.on("console", on_console)

        def on_request_failed(request):
            aborted = "ERR_ABORTED" in str(request.failure)
            if aborted and (request.url.endswith("/assets/icon.svg") or request.resource_type == "fetch"):
                return
            problems.append("request failed: %s %s" % (request.url, request.failure))

        page.on("requestfailed", on_request_failed)

        def goto(path, status=200):
            response = page.goto(args.url + path, wait_until="load")
            expect(response is not None and response.status == status,
                   "%s answered %s, expected %d" % (path, response.status if response else "nothing", status))

        def submit(button, status=200):
            """Clicks a form's button and waits for the answer page; checks its status."""
            with page.expect_navigation() as navigation:
                button.click()
            response = navigation.value
            expect(response is not None and response.status == status,
                   "%s answered %s, expected %d" % (page.url, response.status if response else "nothing", status))

        def no_secret(where):
            content = page.content()
            expect(not any(line in content for line in secret_lines), "a credential's content is shown on " + where)

        # Sign in.
        goto("/catalog")
        expect(page.url.startswith(args.url + "/signin"), "the catalog without a session did not lead to sign-in")
        page.get_by_label("Admin token").fill(token)
        with page.expect_navigation():
            page.keyboard.press("Enter")
        expect(page.url == args.url + "/catalog", "signing in did not return to the catalog: " + page.url)
        shot(page, "s01-catalog-empty")

        # A service; the same name again is refused next to the form, with what was typed kept.
        # From the keyboard: typed, then Enter in the last field submits the form.
        page.get_by_label("Service name").fill(args.service)
        page.get_by_label("Service name").press("Tab")
        expect(page.evaluate("document.activeElement.id") == "service-label", "Tab from the service name does not reach its label")
        page.keyboard.type("Neo Trips (console)")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        expect(page.locator("#form-message").inner_text() == "Service created.", "no 'Service created.' message")
        expect(page.locator("section[data-service='%s']" % args.service).count() == 1, "the new service is not in the catalog")
        page.get_by_label("Service name").fill(args.service)
        page.get_by_label("Service label").fill("Twice")
        allowed.append(422)
        submit(page.get_by_role("button", name="Create the service"), status=422)
        allowed.remove(422)
        result["duplicateServiceProblem"] = page.locator("#new-service-problem").inner_text()
        expect(page.get_by_label("Service label").input_value() == "Twice", "the refused form lost what was typed")
        shot(page, "s02-service-refused")

        def add_app(platform, label, fill):
            goto("/catalog")
            with page.expect_navigation():
                page.get_by_role("link", name="Add an app to %s" % args.service).click()
            page.get_by_label("iOS (APNs)" if platform == "ios" else "Android (FCM)").check()
            page.get_by_label("Label", exact=True).fill(label)
            fill()
            submit(page.get_by_role("button", name="Create the app"))
            expect(page.locator("#form-message").inner_text().startswith("App created"), "no 'App created' message for " + label)
            return page.url.split("/catalog/apps/")[1].split("?")[0].lower()

        def ios_fields():
            page.get_by_label("APNs environment (iOS)").select_option("production")
            page.get_by_label("Bundle id (iOS: the APNs topic)").fill(args.bundle_id)
            page.get_by_label("Application variables (one name per line)").fill("url")
            page.get_by_label("Subscription parameters (one per line, name: type among string, integer, decimal, boolean, date)").fill("email: string")

        def android_fields():
            page.get_by_label("FCM project id (Android)").fill(args.fcm_project)
            page.get_by_label("Application variables (one name per line)").fill("url")
            page.get_by_label("Subscription parameters (one per line, name: type among string, integer, decimal, boolean, date)").fill("email: string")

        # The iOS app: a wrong sound line first, named; then the app.
        goto("/catalog/services/%s/apps/new" % args.service)
        page.get_by_label("iOS (APNs)").check()
        page.get_by_label("Label", exact=True).fill("Neo Trips iOS")
        page.get_by_label("Bundle id (iOS: the APNs topic)").fill(args.bundle_id)
        page.get_by_label("Sounds the iOS app ships (one per line, name: label)").fill("chime")
        allowed.append(422)
        submit(page.get_by_role("button", name="Create the app"), status=422)
        allowed.remove(422)
        result["soundProblem"] = page.locator("#app-problem").inner_text()
        shot(page, "s03-app-refused")
        ios_id = add_app("ios", "Neo Trips iOS", ios_fields)
        shot(page, "s04-ios-app-created")

        # Its credentials: the service account's JSON as a .p8 first (named, not echoed).
        page.get_by_label("APNs key (.p8, with its key id and team id)").check()
        page.get_by_label("Key id", exact=True).fill(args.key_id)
        page.get_by_label("Team id", exact=True).fill(args.team_id)
        page.get_by_label("Key or certificate file (.p8 or .p12)").set_input_files(args.service_account)
        allowed.append(422)
        submit(page.get_by_role("button", name="Upload the credentials"), status=422)
        allowed.remove(422)
        result["wrongP8Problem"] = page.locator("#credential-problem").inner_text()
        no_secret("the refused .p8 upload")
        shot(page, "s05-ios-wrong-file")
        # A PEM key that is not a P-256 one: the console lets it through, the admin API refuses it.
        expect(page.get_by_label("Key id", exact=True).input_value() == args.key_id, "the key id was not kept after the refusal")
        page.get_by_label("Key or certificate file (.p8 or .p12)").set_input_files(args.wrong_pem)
        allowed.append(422)
        submit(page.get_by_role("button", name="Upload the credentials"), status=422)
        allowed.remove(422)
        result["wrongKeyProblem"] = page.locator("#credential-problem").inner_text()
        no_secret("the refused RSA key upload")
        page.get_by_label("Key or certificate file (.p8 or .p12)").set_input_files(args.p8)
        submit(page.get_by_role("button", name="Upload the credentials"))
        expect(page.locator("#form-message").inner_text().startswith("Credentials stored"), "no 'Credentials stored' message (iOS)")
        result["iosCredentials"] = [[c.text_content().strip() for c in row.locator("td").all()] for row in page.locator("#credential-list tbody tr").all()]
        no_secret("the iOS app's page")
        shot(page, "s06-ios-credentials")

        # Edit the iOS app: its label and a sound.
        page.get_by_label("Label", exact=True).fill("Neo Trips for iPhone")
        page.get_by_label("Sounds the iOS app ships (one per line, name: label)").fill("chime: Chime")
        submit(page.get_by_role("button", name="Save the settings"))
        expect(page.locator("#form-message").inner_text() == "Settings saved.", "no 'Settings saved.' message")
        result["editedLabel"] = page.get_by_label("Label", exact=True).input_value()
        result["editedSounds"] = page.get_by_label("Sounds the iOS app ships (one per line, name: label)").input_value()
        shot(page, "s07-ios-edited")

        # The Android app: a .p8 as a service account first, then the real one.
        android_id = add_app("android", "Neo Trips Android", android_fields)
        page.get_by_label("Service account file (.json, from the Firebase console)").set_input_files(args.p8)
        allowed.append(422)
        submit(page.get_by_role("button", name="Upload the credentials"), status=422)
        allowed.remove(422)
        result["wrongJSONProblem"] = page.locator("#credential-problem").inner_text()
        no_secret("the refused service-account upload")
        page.get_by_label("Service account file (.json, from the Firebase console)").set_input_files(args.service_account)
        submit(page.get_by_role("button", name="Upload the credentials"))
        expect(page.locator("#form-message").inner_text().startswith("Credentials stored"), "no 'Credentials stored' message (Android)")
        result["androidCredentials"] = [[c.text_content().strip() for c in row.locator("td").all()] for row in page.locator("#credential-list tbody tr").all()]
        no_secret("the Android app's page")
        shot(page, "s08-android-credentials")

        # The integration keys, from the catalog.
        goto("/catalog")
        section = page.locator("section[data-service='%s']" % args.service)
        keys = {}
        for row in section.locator("tr[data-integration-key]").all():
            keys[row.get_attribute("data-app-id").lower()] = row.get_attribute("data-integration-key")
        result["apps"] = {"ios": ios_id, "android": android_id}
        result["integrationKeys"] = keys
        result["credentialCells"] = [c.get_attribute("data-credential") for c in section.locator("td[data-credential]").all()]
        no_secret("the catalog")
        shot(page, "s09-catalog")

        # The devices register, as the SDKs do (not the console's part).
        dead = "dead" + os.urandom(30).hex()
        registered = []
        for i in range(3):
            registered.append(("ios", device("ios", devices_module.apns_token(), "ios-user-%d" % i)))
            registered.append(("android", device("android", devices_module.valid_fcm_token(), "android-user-%d" % i)))
        registered.append(("ios", device("ios", dead, "ios-user-dead")))
        for platform, d in registered:
            status = register(args.registration, platform, keys[ios_id if platform == "ios" else android_id], d)
            expect(status == 200, "registration answered %s" % status)
        result["deadToken"] = dead

        # A segment, defined through the registration's admin API as an upstream tool would, and
        # its live count on the console's Segments page: the four iOS devices, none left out yet.
        request = urllib.request.Request(
            "%s/admin/v1/services/%s/segments/iphones" % (args.registration, args.service), method="PUT",
            data=json.dumps({"filter": {"device": "platform", "op": "=", "value": "ios"}, "description": "Every iPhone"}).encode(),
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            expect(response.status == 200, "defining the segment answered %s" % response.status)
        # The registrations are projected meanwhile: the page is read again until it counts them.
        deadline = time.time() + 60
        while True:
            goto("/segments")
            row = page.locator("tr[data-segment='%s/iphones']" % args.service)
            result["segmentDevices"] = row.locator("[data-figure=segment-devices]").inner_text() if row.count() == 1 else ""
            if result["segmentDevices"] == "4" or time.time() > deadline:
                break
            page.wait_for_timeout(500)
        expect(row.count() == 1, "the segment is not on the Segments page")

        # The service's frequency cap, set and lifted on the catalog page.
        goto("/catalog")
        section = page.locator("section[data-service='%s']" % args.service)
        section.get_by_label("At most").fill("2")
        section.get_by_label("bulk deliveries per person in (hours)").fill("24")
        submit(section.get_by_role("button", name="Set the cap"))
        section = page.locator("section[data-service='%s']" % args.service)
        result["capSet"] = [page.locator("#form-message").inner_text(), section.locator("[data-frequency-cap]").inner_text()]
        submit(section.get_by_role("button", name="Lift the cap"))
        section = page.locator("section[data-service='%s']" % args.service)
        result["capLifted"] = [page.locator("#form-message").inner_text(), section.locator("[data-frequency-cap]").inner_text()]
        shot(page, "s09b-segments")

        # Compose: the live preview follows the typing.
        goto("/deliveries/new")
        page.get_by_label("Service", exact=True).select_option(args.service)
        page.get_by_label("Title", exact=True).fill("Lisbon is waiting")
        deadline = time.time() + 60
        targeted = ""
        attempt = 0
        while time.time() < deadline:
            attempt += 1
            page.get_by_label("Message", exact=True).fill("Hello {{userKey}} %d" % attempt)
            page.wait_for_timeout(1500)
            figure = page.locator("#live-preview [data-figure=preview-targeted]")
            targeted = figure.inner_text() if figure.count() == 1 else ""
            if targeted == str(len(registered)):
                break
        result["livePreviewTargeted"] = targeted
        result["livePreviewSamples"] = sorted(
            [s.get_attribute("data-platform"), int(s.locator("[data-figure=bytes]").inner_text()), "Hello ios-user" in s.inner_text() or "Hello android-user" in s.inner_text()]
            for s in page.locator("#live-preview .sample").all())
        shot(page, "s10-compose-live-preview")
        page.get_by_label("Message", exact=True).fill("")
        page.wait_for_timeout(1500)
        problem = page.locator("#live-preview #preview-problem")
        result["livePreviewProblem"] = problem.inner_text() if problem.count() == 1 else ""
        shot(page, "s11-compose-live-invalid")
        page.get_by_label("Message", exact=True).fill("Hello {{userKey}}")
        submit(page.get_by_role("button", name="Send", exact=True))
        result["deliveryURL"] = page.url
        delivery = page.url.split("/deliveries/")[1].split("?")[0]
        result["delivery"] = delivery
        shot(page, "s12-report-running")
        page.evaluate("window.consoleTestMarker = 'kept'")
        deadline = time.time() + 90
        while time.time() < deadline and page.locator("#report[data-final=true]").count() == 0:
            page.wait_for_timeout(250)
        expect(page.locator("#report[data-final=true]").count() == 1, "the report did not reach its final figures by itself")
        result["reloaded"] = page.evaluate("window.consoleTestMarker !== 'kept'")
        shot(page, "s13-report-sent")

        # The devices that got the notification report it as the SDKs do (GET /r/ on the
        # tracking endpoint): every Android device and one iPhone "received", one of each
        # "opened". The message ids are those the simulators took.
        delivered = []
        for url, ca in [(args.apns_url, args.apns_ca), (args.fcm_url, args.fcm_ca)]:
            out = subprocess.run(["curl", "-sS", "--fail", "--http2", "--cacert", ca, url + "/_control/log?limit=1000"],
                                 capture_output=True, check=True).stdout
            delivered += [(e["provider"], e["mId"]) for e in json.loads(out)["entries"] if e.get("mId")]
        delivered = sorted(set(delivered))
        android = [m for provider, m in delivered if provider == "fcm"]
        ios = [m for provider, m in delivered if provider != "fcm"]
        hits = [(m, 1) for m in android + ios[:1]] + [(android[0], 2), (ios[0], 2)] if android and ios else []
        for message_id, tag in hits:
            sdk_id = "%x" % (int(message_id) & 0xFFFFFFFF) if message_id.lstrip("-").isdigit() else message_id
            with urllib.request.urlopen("%s/r/?id=h%s,%s,%d" % (args.tracking, sdk_id, delivery, tag), timeout=30) as response:
                expect(response.status == 200, "a tracking hit answered %s" % response.status)
        result["delivered"] = len(delivered)
        result["hits"] = {"received": len(android) + min(1, len(ios)), "opened": 2 if hits else 0}
        # The report stopped refreshing once every message had its outcome: reload it until
        # the tracking projection shows the hits.
        deadline = time.time() + 30
        while time.time() < deadline:
            goto("/deliveries/" + delivery)
            if (page.locator("[data-figure=received]").inner_text() == str(result["hits"]["received"])
                    and page.locator("[data-figure=opened]").inner_text() == "2"):
                break
            page.wait_for_timeout(500)
        figures = {}
        for element in page.locator("#report [data-figure]").all():
            figures[element.get_attribute("data-figure")] = element.inner_text()
        result["figures"] = figures

        def table(selector):
            return [[cell.text_content().strip() for cell in row.locator("th, td").all()] for row in page.locator(selector + " tbody tr").all()]

        for name in ["sends", "tracking", "failures", "apps"]:
            result["table_" + name] = table("#" + name)
        for details in page.locator("#report details summary").all():
            details.click()
        shot(page, "s13-report-tracked")

        # A delivery composed whole: a condition, two languages, two variants; sent through the
        # simulators, its report's table per variant reaches its final figures.
        goto("/deliveries/new")
        page.get_by_label("Service", exact=True).select_option(args.service)
        page.get_by_label("Title", exact=True).fill("Lisbon is waiting")
        page.get_by_label("Message", exact=True).fill("Hello {{userKey}}")
        page.get_by_label("Devices matching").check()
        page.get_by_label("Condition 1: field").select_option("platform")
        page.get_by_label("Condition 1: operator").select_option("=")
        page.get_by_label("Condition 1: value").fill("android")
        page.get_by_label("Language 1: tag").fill("fr")
        page.get_by_label("Language 1: message").fill("Bonjour {{userKey}}")
        page.get_by_label("Language 2: tag").fill("de")
        page.get_by_label("Language 2: message").fill("Hallo {{userKey}}")
        page.get_by_label("Variant 1: share").fill("50")
        page.get_by_label("Variant 2: name").fill("B")
        page.get_by_label("Variant 2: share").fill("50")
        page.get_by_label("Variant 2: message").fill("Psst {{userKey}}")
        deadline = time.time() + 30
        while time.time() < deadline and not (
                page.locator("#live-preview [data-figure=preview-targeted]").count() == 1
                and page.locator("#live-preview [data-figure=preview-targeted]").inner_text() == "3"
                and page.locator("#live-preview #preview-variants").count() == 1):
            page.wait_for_timeout(250)
        result["wholeTargeted"] = page.locator("#live-preview [data-figure=preview-targeted]").inner_text()
        shot(page, "s14-compose-whole")
        submit(page.get_by_role("button", name="Send", exact=True))
        whole = page.url.split("/deliveries/")[1].split("?")[0]
        result["wholeDelivery"] = whole
        deadline = time.time() + 90
        while time.time() < deadline and page.locator("#report[data-final=true]").count() == 0:
            page.wait_for_timeout(250)
        expect(page.locator("#report[data-final=true]").count() == 1, "the composed delivery's report did not reach its final figures")
        result["wholeVariants"] = table("#variants")
        shot(page, "s14-report-variants")

        # A second delivery, for an hour later, cancelled from its report.
        goto("/deliveries/new")
        page.get_by_label("Service", exact=True).select_option(args.service)
        page.get_by_label("Title", exact=True).fill("Later")
        page.get_by_label("Message", exact=True).fill("See you later {{userKey}}")
        later = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
        page.locator("#sendAt").fill(later)
        page.get_by_label("in the time zone").fill("UTC")
        submit(page.get_by_role("button", name="Send", exact=True))
        cancelled = page.url.split("/deliveries/")[1].split("?")[0]
        result["cancelledDelivery"] = cancelled
        result["laterStateBefore"] = page.locator("[data-figure=state]").inner_text()
        shot(page, "s15-later-delivery")
        page.get_by_label("Yes, cancel this delivery for good").check()
        submit(page.get_by_role("button", name="Cancel the delivery"))
        result["cancelMessage"] = page.locator("#control-message").inner_text()
        result["cancelState"] = page.locator("[data-figure=state]").inner_text()
        shot(page, "s16-cancelled")

        # The quarantined device, by its token.
        deadline = time.time() + 30
        found = []
        while time.time() < deadline:
            goto("/devices?q=" + dead)
            found = [{"quarantined": s.get_attribute("data-quarantined"), "quarantine": s.locator("[data-figure=quarantine]").inner_text()}
                     for s in page.locator("section.device").all()]
            if found and found[0]["quarantined"] == "true":
                break
            page.wait_for_timeout(500)
        result["devices"] = found
        result["deviceNotifications"] = [[c.text_content().strip() for c in row.locator("td").all()]
                                         for row in page.locator("section.device table.notifications tbody tr").all()]
        result["deviceSystem"] = [d.inner_text() for d in page.locator("section.device dt:text-is('System') + dd").all()]
        shot(page, "s17-devices-quarantined")

        # Support's actions on it: lift the quarantine, unsubscribe, subscribe again; each answered
        # on the same search with what was done. Then the audit page lists the three calls.
        actions = []
        for name in ["Lift the quarantine", "Unsubscribe this device", "Subscribe again"]:
            submit(page.get_by_role("button", name=name))
            section = page.locator("section.device").first
            actions.append({
                "message": page.locator("#device-message").inner_text() if page.locator("#device-message").count() else None,
                "quarantined": section.get_attribute("data-quarantined"),
                "subscription": section.locator("[data-figure=subscription]").inner_text(),
            })
        result["deviceActions"] = actions
        shot(page, "s17b-device-actions")
        deadline = time.time() + 30
        audit = []
        while time.time() < deadline:
            goto("/audit?permission=devices%3Awrite")
            # Other tests share the table: this run's calls name its service or its iOS app.
            audit = [cells for cells in ([c.text_content().strip() for c in row.locator("td").all()] for row in page.locator("#audit tbody tr").all())
                     if "/services/%s/" % args.service in cells[3] or "/apps/%s/" % result["apps"]["ios"] in cells[3]]
            if len(audit) >= 3:
                break
            page.wait_for_timeout(500)
        result["auditDeviceCalls"] = audit
        shot(page, "s17c-audit")

        # The deliveries list.
        goto("/deliveries")
        result["listed"] = [delivery in page.content(), cancelled in page.content()]
        shot(page, "s18-deliveries")
        browser.close()


def main():
    parser = argparse.ArgumentParser()
    for name in ["url", "registration", "token-file", "service", "bundle-id", "fcm-project", "p8", "key-id", "team-id", "service-account", "wrong-pem", "apns-url", "apns-ca", "fcm-url", "fcm-ca", "tracking", "screenshots", "out"]:
        parser.add_argument("--" + name, required=True)
    run_checked("console-scenario", parser.parse_args(), run)


if __name__ == "__main__":
    main()
