"""What the console's browser scripts (console-browser.py, console-scenario.py) share: read the
admin token, run the steps with `expect` and `shot`, name a step that could not run, write the
result as JSON for the Swift test that started the script, and exit 1 on any problem."""
import json
import os
import sys


def run_checked(name, args, run):
    token = open(args.token_file).read().strip()
    os.makedirs(args.screenshots, exist_ok=True)
    problems = []
    result = {"problems": problems}

    def shot(page, label):
        page.screenshot(path=os.path.join(args.screenshots, label + ".png"), full_page=True)

    def expect(condition, what):
        if not condition:
            problems.append(what)
            print(name + ": " + what, file=sys.stderr)

    try:
        run(args, token, problems, result, expect, shot)
    except Exception as error:  # a step that could not run: a failure, named
        problems.append("step failed: %r" % error)
        print(name + ": step failed: %r" % error, file=sys.stderr)
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)
    if problems:
        sys.exit(1)
