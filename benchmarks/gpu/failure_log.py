"""A pytest plugin for runs on a GPU machine with a time limit: each failure's test id and the
last lines of its report are appended to $FAILURE_LOG as they happen, so a run cut short by its
time limit still says what failed and why. Use: PYTHONPATH=benchmarks/gpu pytest -p failure_log ..."""
import os


def pytest_runtest_logreport(report):
    if not report.failed:
        return
    text = report.longreprtext.strip().splitlines()
    errors = [line for line in text if line.startswith("E ")][:6]
    location = text[-1] if text else ""
    with open(os.environ.get("FAILURE_LOG", "failures.txt"), "a") as out:
        out.write(f"FAILED {report.nodeid} [{report.when}]\n")
        out.writelines(f"    {line[:400]}\n" for line in errors + [location])
